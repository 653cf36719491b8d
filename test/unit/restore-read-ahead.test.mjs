/**
 * readAhead (src/store/replica/restore.ts; issue 50): a restore's objects fetched several at a
 * time and handed over in order, within a count and a byte bound.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readAhead } from '../../dist/store/replica/restore.js';

/** Fetches that settle only when the test says so; records how many were in flight at most. */
function controlled() {
  const pending = new Map();
  const state = { inFlight: 0, most: 0, started: [] };
  const fetch = (item) => {
    state.inFlight++;
    state.most = Math.max(state.most, state.inFlight);
    state.started.push(item.id);
    return new Promise((resolve, reject) => pending.set(item.id, { resolve, reject })).finally(() => state.inFlight--);
  };
  return { fetch, state, pending };
}

test('readAhead hands over every item in order with its own fetch, never more than the window in flight', async () => {
  const items = Array.from({ length: 40 }, (_, i) => ({ id: i }));
  const { fetch, state, pending } = controlled();
  // Settle the fetches in reverse order of start, a few at a time, as a store might answer.
  const settler = setInterval(() => {
    for (const id of [...pending.keys()].reverse().slice(0, 3)) {
      pending.get(id).resolve(`body ${id}`);
      pending.delete(id);
    }
  }, 1);
  const got = [];
  for await (const [item, body] of readAhead(items, fetch, 5)) got.push([item.id, body]);
  clearInterval(settler);
  assert.deepEqual(got, items.map((it) => [it.id, `body ${it.id}`]));
  assert.equal(state.most, 5);
});

test('readAhead keeps the bytes in flight within the bound, but always fetches the item waited for', async () => {
  const items = [{ id: 0, bytes: 40 }, { id: 1, bytes: 40 }, { id: 2, bytes: 40 }, { id: 3, bytes: 500 }, { id: 4, bytes: 10 }];
  const { fetch, state, pending } = controlled();
  const it = readAhead(items, fetch, 16, (x) => x.bytes, 100)[Symbol.asyncIterator]();
  const first = it.next();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(state.started, [0, 1], 'two of 40 bytes fit in 100, the third does not');
  pending.get(0).resolve('a');
  assert.equal((await first).value[1], 'a');
  const second = it.next();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(state.started, [0, 1, 2], 'the third fits once the first is handed over');
  for (const id of [1, 2]) pending.get(id).resolve(`x${id}`);
  await second;
  await it.next();
  const fourth = it.next();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(state.started, [0, 1, 2, 3], 'an item larger than the bound is fetched alone when its turn comes');
  pending.get(3).resolve('big');
  assert.equal((await fourth).value[1], 'big');
  const fifth = it.next();
  await new Promise((r) => setImmediate(r));
  pending.get(4).resolve('last');
  assert.equal((await fifth).value[1], 'last');
  assert.equal((await it.next()).done, true);
});

test('readAhead rejects when the failed fetch comes to its turn, and a consumer that stops leaves no unhandled rejection', async () => {
  const items = Array.from({ length: 6 }, (_, i) => ({ id: i }));
  const fetch = async (item) => {
    if (item.id === 2 || item.id === 4) throw new Error(`no ${item.id}`);
    return item.id;
  };
  const got = [];
  await assert.rejects(
    (async () => {
      for await (const [item] of readAhead(items, fetch, 4)) got.push(item.id);
    })(),
    /no 2/,
  );
  assert.deepEqual(got, [0, 1]);
});
