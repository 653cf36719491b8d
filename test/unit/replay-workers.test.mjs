/**
 * Issue 30, parallel whole replay: a replay whose segments are checked on worker threads
 * (store/replay-worker.ts) hands the index exactly what the single-threaded replay hands it —
 * the same records, payload text, locations, erased flags, in the same order — and ends the
 * same way: the same head, the same torn-tail truncation, and for damage the same error after
 * the same records. Every case opens two copies of one log, one per path, and compares.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, cpSync, readFileSync, readdirSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Log } from '../../dist/store/log.js';
import { listSegments } from '../../dist/store/segment.js';
import { tombstoneLine } from '../../dist/store/record-format.js';
import { tempDir } from '../helpers/server.mjs';

const SEGMENT_BYTES = 2048;
const WORDS = ['alpha', 'beta', 'Ünïcode ✓', 'lease', 'shard', 'needle "quoted"', 'back\\slash', 'zeta'];

/**
 * A closed log in `dir` over many small segments: batches of 1..5 records of a few types with
 * varied payloads, an erasure (tombstones in early segments, vouched for by a later
 * `moderation.erase` record), then more records.
 */
async function writeVariedLog(dir) {
  const log = await Log.open(dir, () => undefined, { segmentBytesMax: SEGMENT_BYTES, replayWorkers: 0 });
  let n = 0;
  let ms = Date.UTC(2026, 0, 1);
  const batch = async (count) => {
    for (let i = 0; i < count; i++, n++) {
      const type = ['message.create', 'knowledge.create', 'work.create'][n % 3];
      log.append(type, { n, text: Array.from({ length: 1 + (n % 7) }, (_, k) => WORDS[(n + k) % WORDS.length]).join(' '), nested: { list: [n, null, true] } }, ms);
    }
    ms += 1000;
    await log.sync();
  };
  for (let b = 0; b < 60; b++) await batch(1 + (b % 5));
  const targets = [5, 17, 40].map((seq) => ({ seq, hash: log.records.storedHashOf(seq) }));
  log.append('moderation.erase', { targets, reason: 'test', operatorId: 'ag_op' }, ms);
  await log.sync();
  await log.erase(targets);
  for (let b = 0; b < 30; b++) await batch(1 + (b % 4));
  await log.close();
  assert.ok(listSegments(join(dir, 'log')).length >= 10, 'many segments');
}

/** Every segment file of `dir` with its bytes (hex-free: latin1 text). */
function segmentBytes(dir) {
  const logDir = join(dir, 'log');
  return Object.fromEntries(readdirSync(logDir).sort().map((name) => [name, readFileSync(join(logDir, name), 'latin1')]));
}

/**
 * Opens a copy of `base` with `workers` replay workers (0: the main thread only; the byte
 * threshold set to 0 so that even small logs use them). Output: everything the index and the
 * operator see — each visitor call (record, payload text, location), the outcome (head or
 * error), the truncation reports, and the segment files afterwards.
 */
async function replayCopy(t, base, workers) {
  const dir = tempDir(t);
  cpSync(base, dir, { recursive: true });
  const calls = [];
  const reports = [];
  let outcome;
  try {
    const log = await Log.open(
      dir,
      (record, payloadJson, segmentFirstSeq, offset, length) => {
        calls.push(JSON.stringify([record.seq, record.time, record.type, record.erased === true, record.payload, payloadJson, segmentFirstSeq, offset, length]));
      },
      {
        replayWorkers: workers,
        replayWorkersBytesMin: 0,
        segmentBytesMax: SEGMENT_BYTES,
        onTruncate: (file, offset, bytes) => reports.push(['truncate', file.slice(dir.length), offset, bytes]),
        onComplete: (file, offset) => reports.push(['complete', file.slice(dir.length), offset]),
      },
    );
    outcome = { headSeq: log.headSeq, headHash: log.headHash, vouched: [...log.records.locations.vouched], usedWorkers: log.replayWorkers > 0 };
    await log.close();
  } catch (err) {
    outcome = { error: err.name, message: err.message.split(dir).join('<dir>') };
  }
  return { calls, outcome, reports, files: segmentBytes(dir) };
}

/** Replays `base` on both paths and checks they agree; returns the single-threaded result. */
async function bothPathsAgree(t, base) {
  const single = await replayCopy(t, base, 0);
  for (const workers of [1, 2]) {
    const parallel = await replayCopy(t, base, workers);
    assert.equal(single.outcome.usedWorkers, single.outcome.error === undefined ? false : undefined);
    if (parallel.outcome.error === undefined) assert.equal(parallel.outcome.usedWorkers, true, 'the workers path was taken');
    const strip = (o) => ({ ...o, usedWorkers: undefined });
    assert.deepEqual(strip(parallel.outcome), strip(single.outcome));
    assert.equal(parallel.calls.length, single.calls.length);
    assert.deepEqual(parallel.calls, single.calls);
    assert.deepEqual(parallel.reports, single.reports);
    assert.deepEqual(parallel.files, single.files);
  }
  return single;
}

/** A fresh varied log; `damage(dir, segments)` changes it before both paths replay it. */
async function damagedLog(t, damage) {
  const base = tempDir(t);
  await writeVariedLog(base);
  const logDir = join(base, 'log');
  damage(logDir, listSegments(logDir).map((s) => join(logDir, s.name)));
  return base;
}

/** Flips one byte of `file` at `offset`. */
function flipByte(file, offset) {
  const buf = readFileSync(file);
  buf[offset] ^= 0x01;
  writeFileSync(file, buf);
}

/** Offset of the start of line `index` (0-based) of `file`. */
function lineStart(file, index) {
  const buf = readFileSync(file);
  let pos = 0;
  for (let i = 0; i < index; i++) pos = buf.indexOf(10, pos) + 1;
  return pos;
}

test('a replay checked in worker threads hands the index the same records, text, locations and tombstones as the single-threaded replay', async (t) => {
  const base = await damagedLog(t, () => undefined);
  const single = await bothPathsAgree(t, base);
  assert.equal(single.outcome.error, undefined);
  assert.ok(single.calls.length > 250);
  assert.ok(single.calls.some((c) => JSON.parse(c)[3] === true), 'tombstones replayed');
  assert.deepEqual(single.outcome.vouched.map(([seq]) => seq), [5, 17, 40]);
});

test('a damaged byte inside a middle segment is refused by both replays with the same error after the same records', async (t) => {
  const base = await damagedLog(t, (_, segs) => flipByte(segs[4], lineStart(segs[4], 1) + 20));
  const single = await bothPathsAgree(t, base);
  assert.equal(single.outcome.error, 'LogCorruptError');
  assert.match(single.outcome.message, /fails its hash check/);
});

test('a damaged first record of a middle segment (the link between segments) is refused the same way by both replays', async (t) => {
  const base = await damagedLog(t, (_, segs) => flipByte(segs[5], 15));
  const single = await bothPathsAgree(t, base);
  assert.equal(single.outcome.error, 'LogCorruptError');
  assert.match(single.outcome.message, /fails its hash check/);
});

test('a broken frame, a cut-short line and a missing segment in the middle are refused the same way by both replays', async (t) => {
  const frame = await damagedLog(t, (_, segs) => flipByte(segs[3], lineStart(segs[3], 2)));
  assert.match((await bothPathsAgree(t, frame)).outcome.message, /is not framed/);
  const cut = await damagedLog(t, (_, segs) => truncateSync(segs[6], lineStart(segs[6], 1) + 30));
  assert.match((await bothPathsAgree(t, cut)).outcome.message, /incomplete line in a segment that is not the last one/);
  const missing = await damagedLog(t, (_, segs) => unlinkSync(segs[2]));
  assert.match((await bothPathsAgree(t, missing)).outcome.message, /are missing/);
});

test('a tombstone nobody vouched for in a middle segment is refused the same way by both replays', async (t) => {
  const base = await damagedLog(t, (_, segs) => {
    const file = segs[7];
    const buf = readFileSync(file);
    const start = lineStart(file, 1);
    const end = buf.indexOf(10, start) + 1;
    const seq = Number([...buf.toString('utf8', start, end).matchAll(/"seq":(\d+)/g)].at(-1)[1]);
    tombstoneLine(buf.subarray(start, end), seq).copy(buf, start);
    writeFileSync(file, buf);
  });
  const single = await bothPathsAgree(t, base);
  assert.equal(single.outcome.error, 'LogCorruptError');
  assert.match(single.outcome.message, /no later moderation.erase record names it/);
});

test('a torn tail of the last segment is truncated, and a whole final record given its newline, the same way by both replays', async (t) => {
  const torn = await damagedLog(t, (_, segs) => appendFileSync(segs.at(-1), '{"payload":{"n":99'));
  const single = await bothPathsAgree(t, torn);
  assert.equal(single.outcome.error, undefined);
  assert.equal(single.reports.length, 1);
  assert.equal(single.reports[0][0], 'truncate');
  const whole = await damagedLog(t, (_, segs) => {
    const last = segs.at(-1);
    truncateSync(last, readFileSync(last).length - 1);
  });
  assert.equal((await bothPathsAgree(t, whole)).reports[0][0], 'complete');
  const garbage = await damagedLog(t, (_, segs) => appendFileSync(segs.at(-1), 'garbage'));
  assert.match((await bothPathsAgree(t, garbage)).outcome.message, /neither start like a record line/);
});

test('a log that ends before its checkpoint is refused the same way by both replays', async (t) => {
  const base = await damagedLog(t, (_, segs) => unlinkSync(segs.at(-1)));
  const single = await bothPathsAgree(t, base);
  assert.equal(single.outcome.error, 'StoreStateError');
});

test('a log whose segments before the last hold less than REPLAY_WORKERS_BYTES_MIN replays on the main thread, and one above it on workers', async (t) => {
  const dir = tempDir(t);
  await writeVariedLog(dir);
  const small = await Log.open(dir, () => undefined, { replayWorkers: 2, segmentBytesMax: SEGMENT_BYTES });
  assert.equal(small.replayWorkers, 0);
  await small.close();
  const large = await Log.open(dir, () => undefined, { replayWorkers: 2, replayWorkersBytesMin: SEGMENT_BYTES, segmentBytesMax: SEGMENT_BYTES });
  assert.equal(large.replayWorkers, 2);
  await large.close();
});
