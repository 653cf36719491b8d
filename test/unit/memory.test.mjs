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
  // Creating a WeakRef keeps its target alive until the current job ends. (No deref() before the
  // collection: it would keep the target alive again, and a scavenge in between would fail it.)
  await nextTurn();
  const ms = collectGarbageNow();
  assert.equal(typeof ms, 'number');
  assert.ok(ms >= 0);
  assert.equal(ref.deref(), undefined, 'the full collection reclaimed the object');
});
