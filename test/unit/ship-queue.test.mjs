/**
 * The async leader's shipping queue (issue 35; src/store/replica/ship-queue.ts): a run cut from the
 * group commits' bytes kept in memory is exactly the run Log#readLines reads back from the segment
 * files (same seqs, hashes, segment, offset and bytes), so the chunks shipped from memory are
 * byte-identical to the ones shipped from disk; and the queue stays within its byte bound.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Log } from '../../dist/store/log.js';
import { ShipQueue } from '../../dist/store/replica/ship-queue.js';
import { tempDir } from '../helpers/server.mjs';

/**
 * A log in a temp folder whose every written batch goes to `queue` and to the returned list:
 * `batches` group commits of 1–9 records of varied sizes, small segments so that runs meet
 * segment ends.
 */
async function queuedLog(t, queue, batches, segmentBytesMax = 4000) {
  const log = await Log.open(tempDir(t), () => {}, { segmentBytesMax });
  t.after(() => log.close());
  const written = [];
  log.replicate = (batch) => {
    written.push(batch);
    queue.push(batch);
    return undefined;
  };
  for (let b = 0; b < batches; b++) {
    const n = 1 + ((b * 7) % 9);
    for (let i = 0; i < n; i++) log.append('test.record', { b, i, text: 'x'.repeat((b * 31 + i * 17) % 200) + ' ✓' }, Date.now());
    await log.sync();
  }
  return { log, written };
}

/** The parts of a run compared (its bytes as a plain Buffer). */
const plain = (run) => run && { ...run, bytes: Buffer.from(run.bytes) };

test('a run cut from the shipping queue equals Log#readLines of the same seqs and byte bound: same lines, hashes, segment, offset and bytes', async (t) => {
  const { log, written } = await queuedLog(t, new ShipQueue(64 * 1024 * 1024), 60);
  const durable = log.durableSeq;
  assert.ok(new Set(written.map((b) => b.segmentFirstSeq)).size > 3, 'the batches span several segments');
  let compared = 0;
  for (const from of [1, 2, 5, 17, 40, durable - 3, durable]) {
    for (const to of [from, from + 1, from + 12, durable]) {
      if (to > durable) continue;
      for (const maxBytes of [1, 150, 700, 3000, 1e9]) {
        // A queue holding every batch, that has shipped everything before `from` (a batch shipped
        // in part keeps its later lines).
        const queue = new ShipQueue(64 * 1024 * 1024);
        for (const b of written) queue.push(b);
        queue.shipped(from - 1);
        const mem = queue.take(from, to, maxBytes);
        assert.notEqual(mem, null);
        assert.deepEqual(plain(mem), plain(await log.readLines(from, to, maxBytes)), `from ${from} to ${to} within ${maxBytes} bytes`);
        compared++;
      }
    }
  }
  assert.ok(compared > 100);
});

test('a run is taken from memory only from the queue’s first seq: a seq before it (dropped or never queued) reads from disk', async (t) => {
  const queue = new ShipQueue(64 * 1024 * 1024);
  const { log } = await queuedLog(t, queue, 5);
  queue.shipped(3);
  assert.equal(queue.take(3, log.durableSeq, 1e9), null);
  assert.notEqual(queue.take(4, log.durableSeq, 1e9), null);
  queue.shipped(log.durableSeq);
  assert.equal(queue.size, 0);
  assert.equal(queue.take(log.durableSeq, log.durableSeq, 1e9), null);
});

test('past its byte bound the queue drops what it holds and keeps only the newest batch, so memory stays bounded', async (t) => {
  const bound = 3000;
  const queue = new ShipQueue(bound);
  let peak = 0;
  const log = await Log.open(tempDir(t), () => {}, {});
  t.after(() => log.close());
  log.replicate = (batch) => {
    queue.push(batch);
    peak = Math.max(peak, queue.size);
    return undefined;
  };
  for (let b = 0; b < 40; b++) {
    log.append('test.record', { b, text: 'y'.repeat(300) }, Date.now());
    await log.sync();
  }
  assert.ok(peak <= bound, `peak ${peak} ≤ ${bound}`);
  assert.ok(queue.stats.dropped > 0);
  // The oldest records are no longer in memory (read back from disk), the newest still are.
  const first = queue.firstSeq;
  assert.ok(first > 1 && first <= log.durableSeq);
  assert.equal(queue.take(1, log.durableSeq, 1e9), null);
  assert.deepEqual(plain(queue.take(first, log.durableSeq, 1e9)), plain(await log.readLines(first, log.durableSeq, 1e9)));
});
