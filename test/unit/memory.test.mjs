/**
 * src/memory.ts: the full garbage collection a server runs once after loading (issue 17).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { collectGarbageNow } from '../../dist/memory.js';

test('collectGarbageNow runs a full collection without node flags: an unreachable object is gone afterwards', async () => {
  let garbage = { payload: new Array(1000).fill('x') };
  const ref = new WeakRef(garbage);
  garbage = null;
  // Creating a WeakRef, or deref() on it, keeps the target alive until the current job ends.
  await nextTurn();
  assert.notEqual(ref.deref(), undefined, 'no collection has happened yet');
  await nextTurn();
  const ms = collectGarbageNow();
  assert.equal(typeof ms, 'number');
  assert.ok(ms >= 0);
  assert.equal(ref.deref(), undefined, 'the full collection reclaimed the object');
});

test('collectGarbageNow frees an unreachable Buffer outside the heap, as the snapshot body after a start', async () => {
  collectGarbageNow();
  const before = process.memoryUsage().arrayBuffers;
  let body = Buffer.alloc(64 * 1024 * 1024, 1);
  assert.ok(process.memoryUsage().arrayBuffers >= before + 64 * 1024 * 1024);
  body = null;
  await nextTurn();
  collectGarbageNow();
  assert.ok(process.memoryUsage().arrayBuffers < before + 8 * 1024 * 1024, 'the 64 MiB buffer was released');
});
