/**
 * Issue 56, a lone write: one record that begins its flush while the server has nothing else to
 * do calls fdatasync on the main thread; everything else keeps the thread pool and the group
 * commit (src/store/group-commit.ts `isLoneWrite`, docs/internals/storage.md#durability).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Log } from '../../dist/store/log.js';
import { isLoneWrite } from '../../dist/store/group-commit.js';
import { LONE_WRITE_IDLE_MS } from '../../dist/constants.js';
import { tempDir } from '../helpers/server.mjs';

/** Facts of a write that is lone; each test below changes one of them. */
const LONE = { lineCount: 1, fresh: true, replicating: false, lastFsyncMs: 0.3, syncMaxMs: 1, requestsSince: 1, idleSinceMs: 5 };

test('one fresh line, nothing else begun, the loop idle and a quick last sync: a lone write', () => {
  assert.equal(isLoneWrite(LONE), true);
  assert.equal(isLoneWrite({ ...LONE, requestsSince: null }), true, 'no server (a tool): requests are not counted');
  assert.equal(isLoneWrite({ ...LONE, requestsSince: 0 }), true);
});

test('a write is not lone when anything else shares the moment or the disk is slow', () => {
  for (const [change, why] of [
    [{ lineCount: 2 }, 'two lines form a group commit'],
    [{ fresh: false }, 'a batch that follows another (writes kept arriving)'],
    [{ replicating: true }, 'sync replication gates the batch'],
    [{ requestsSince: 2 }, 'another request began since the last batch became durable'],
    [{ idleSinceMs: LONE_WRITE_IDLE_MS / 2 }, 'the loop never waited for work (requests were ready)'],
    [{ lastFsyncMs: 1.5 }, 'the last fdatasync took longer than syncMaxMs'],
    [{ syncMaxMs: 0, lastFsyncMs: 0 }, 'lone writes are off'],
  ]) {
    assert.equal(isLoneWrite({ ...LONE, ...change }), false, why);
  }
});

/**
 * A log whose lone writes do not depend on this disk's speed (any last fdatasync qualifies), past
 * its first batch: that one also writes the log's first checkpoint, and an append made while it
 * does so joins the running flush instead of starting a fresh one.
 */
async function openLog(t, opts = {}) {
  const log = await Log.open(tempDir(t), () => {}, { loneWriteSyncMaxMs: 60_000, ...opts });
  t.after(() => log.close());
  log.append('test.first', {}, Date.now());
  await log.sync();
  return log;
}

test('a write after the loop waited for work syncs on the main thread and is durable when sync resolves', async (t) => {
  const log = await openLog(t);
  log.append('test.record', { i: 0 }, Date.now());
  await log.sync();
  await sleep(5); // the event loop waits for the timer: nothing else to do
  const before = log.stats.loneFsyncs;
  const { record } = log.append('test.record', { i: 1 }, Date.now());
  assert.equal(log.durableSeq, record.seq - 1, 'not durable before its flush');
  await log.sync();
  assert.equal(log.stats.loneFsyncs, before + 1);
  assert.equal(log.durableSeq, record.seq);
});

test('appends of one turn share one thread-pool fdatasync: a group commit is never lone', async (t) => {
  const log = await openLog(t);
  log.append('test.record', { i: 0 }, Date.now());
  await log.sync();
  await sleep(5);
  const before = { ...log.stats };
  for (let i = 1; i <= 20; i++) log.append('test.record', { i }, Date.now());
  await log.sync();
  assert.equal(log.stats.fsyncs, before.fsyncs + 1, 'one fdatasync for the 20 records');
  assert.equal(log.stats.loneFsyncs, before.loneFsyncs, 'on the thread pool');
});

test('a write while other requests began since the last batch keeps the thread pool', async (t) => {
  const log = await openLog(t);
  let requests = 0;
  log.requestsBegun = () => requests;
  log.append('test.record', { i: 0 }, Date.now());
  await log.sync();
  await sleep(5);
  const before = log.stats.loneFsyncs;
  requests += 3; // reads served since, and this write's own request
  log.append('test.record', { i: 1 }, Date.now());
  await log.sync();
  assert.equal(log.stats.loneFsyncs, before, 'beside other requests the loop keeps serving them');
  await sleep(5);
  requests += 1; // only this write's own request
  log.append('test.record', { i: 2 }, Date.now());
  await log.sync();
  assert.equal(log.stats.loneFsyncs, before + 1);
});

test('with lone writes off (loneWriteSyncMaxMs 0) every fdatasync runs on the thread pool', async (t) => {
  const log = await openLog(t, { loneWriteSyncMaxMs: 0 });
  const before = log.stats.fsyncs;
  for (let i = 0; i < 3; i++) {
    await sleep(5);
    log.append('test.record', { i }, Date.now());
    await log.sync();
  }
  assert.equal(log.stats.fsyncs, before + 3);
  assert.equal(log.stats.loneFsyncs, 0);
});
