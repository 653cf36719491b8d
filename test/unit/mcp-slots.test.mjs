/**
 * The slots of POST /mcp (issue 34; src/api/mcp/slots.ts) with small limits: how many requests
 * run at once in total and per agent, how many wait, who is refused with 503, and that slots are
 * granted one per turn of the event loop.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Slots } from '../../dist/api/mcp/slots.js';

const turn = () => new Promise((resolve) => setImmediate(resolve));
const limits = (over) => ({ inFlight: 2, inFlightPerAgent: 2, queue: 2, queuePerAgent: 2, retryAfterSeconds: 1, ...over });

/** Acquires a slot for `agent`; the returned record says whether it has been granted. */
function take(slots, agent) {
  const r = { agent, granted: false };
  slots.acquire(agent).then(() => (r.granted = true));
  return r;
}

test('slots are granted one per turn of the event loop, up to the in-flight limit, and a release passes one on', async () => {
  const slots = new Slots(limits({ inFlight: 3, inFlightPerAgent: 3 }));
  const rs = ['a', 'b', 'c', 'd'].map((agent) => take(slots, agent));
  assert.equal(rs.filter((r) => r.granted).length, 0, 'nothing is granted in the caller\'s own turn');
  for (let n = 1; n <= 3; n++) {
    await turn();
    assert.equal(rs.filter((r) => r.granted).length, n, `after ${n} turns, ${n} granted`);
  }
  await turn();
  await turn();
  assert.equal(rs[3].granted, false, 'the fourth waits: three are in flight');
  slots.release('a');
  await turn();
  assert.equal(rs[3].granted, true);
});

test('one agent holds at most its share of the slots, and other agents are served past its waiting requests', async () => {
  const slots = new Slots(limits({ inFlight: 4, inFlightPerAgent: 1, queuePerAgent: 3 }));
  const a1 = take(slots, 'a');
  const a2 = take(slots, 'a');
  const b1 = take(slots, 'b');
  for (let i = 0; i < 4; i++) await turn();
  assert.deepEqual([a1.granted, a2.granted, b1.granted], [true, false, true], 'b is served although a\'s second request came first');
  slots.release('a');
  await turn();
  assert.equal(a2.granted, true);
});

test('a request over the agent\'s part of the queue, or over the whole queue, is refused with 503 and Retry-After', async () => {
  const slots = new Slots(limits({ inFlight: 1, inFlightPerAgent: 1, queue: 2, queuePerAgent: 1, retryAfterSeconds: 3 }));
  take(slots, 'a');
  await turn();
  take(slots, 'a');
  assert.throws(() => slots.acquire('a'), (err) => err.status === 503 && err.code === 'UNAVAILABLE' && err.headers['Retry-After'] === '3' && /1 of this agent's requests are already waiting/.test(err.message));
  take(slots, 'b');
  assert.throws(() => slots.acquire('c'), (err) => err.status === 503 && /2 requests are already waiting/.test(err.message));
});

test('requests a free slot awaits are not refused as queued: a burst up to the agent\'s share plus its queue is accepted on an idle server', async () => {
  const slots = new Slots(limits({ inFlight: 4, inFlightPerAgent: 2, queue: 8, queuePerAgent: 2 }));
  const burst = Array.from({ length: 4 }, () => take(slots, 'a'));
  assert.throws(() => slots.acquire('a'), (err) => err.status === 503, 'the fifth is over 2 in flight + 2 waiting');
  for (let i = 0; i < 4; i++) await turn();
  assert.equal(burst.filter((r) => r.granted).length, 2);
});
