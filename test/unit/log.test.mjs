import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, cpSync, readFileSync, writeFileSync, readdirSync, unlinkSync, truncateSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Log, replaySegments } from '../../dist/store/log.js';
import { listSegments } from '../../dist/store/segment.js';
import { readMeta } from '../../dist/store/meta.js';
import { LogCorruptError, StoreStateError } from '../../dist/store/errors.js';
import { tempDir } from '../helpers/server.mjs';

async function openLog(dir, opts = {}) {
  const records = [];
  const log = await Log.open(dir, (r) => records.push(r), opts);
  return { log, records };
}

async function writeRecords(dir, n, opts = {}) {
  const { log } = await openLog(dir, opts);
  for (let i = 0; i < n; i++) log.append('test.record', { i, text: `record ${i} ✓` }, Date.now());
  await log.sync();
  await log.close();
}

/** Appends `n` records one flush at a time, so a small `segmentBytesMax` makes many segments. */
async function writeSegmented(dir, n, segmentBytesMax) {
  const { log } = await openLog(dir, { segmentBytesMax });
  for (let i = 0; i < n; i++) {
    log.append('test.record', { i }, Date.now());
    await log.sync();
  }
  await log.close();
}

function segmentFiles(dir) {
  return readdirSync(join(dir, 'log')).filter((f) => f.endsWith('.jsonl')).sort().map((f) => join(dir, 'log', f));
}

test('appended records replay in order with their payloads after reopening', async (t) => {
  const dir = tempDir(t);
  await writeRecords(dir, 5);
  const { log, records } = await openLog(dir);
  assert.deepEqual(records.map((r) => r.seq), [1, 2, 3, 4, 5]);
  assert.deepEqual(records[4].payload, { i: 4, text: 'record 4 ✓' });
  assert.equal(log.headSeq, 5);
  assert.equal(log.durableSeq, 5);
  await log.close();
});

test('group commit: appends made while a flush runs share one fdatasync', async (t) => {
  const dir = tempDir(t);
  let fsyncs = 0;
  const { log } = await openLog(dir, { onFsync: () => fsyncs++ });
  const first = log.append('test.record', { i: 0 }, Date.now());
  const p1 = log.sync();
  // These arrive while the first flush is in flight and must be batched into one more fsync.
  for (let i = 1; i <= 50; i++) log.append('test.record', { i }, Date.now());
  const p2 = log.sync();
  await Promise.all([p1, p2]);
  assert.equal(first.record.seq, 1);
  assert.ok(fsyncs <= 2, `expected at most 2 fsyncs for 51 records, got ${fsyncs}`);
  assert.equal(log.stats.records, 51);
  await log.close();
});

test('sync resolves only after the record was fdatasynced', async (t) => {
  const dir = tempDir(t);
  let synced = 0;
  const { log } = await openLog(dir, { onFsync: (n) => (synced += n) });
  log.append('test.record', {}, Date.now());
  assert.equal(log.durableSeq, 0, 'not durable before the flush');
  await log.sync();
  assert.equal(synced, 1);
  assert.equal(log.durableSeq, 1);
  await log.close();
});

test('a torn final line is truncated and the store opens', async (t) => {
  const dir = tempDir(t);
  await writeRecords(dir, 3);
  const [seg] = segmentFiles(dir);
  const good = statSync(seg).size;
  appendFileSync(seg, '{"payload":{"i":3},"seq":4,"ti');
  let truncated = null;
  const { log, records } = await openLog(dir, { onTruncate: (file, offset, bytes) => (truncated = { file, offset, bytes }) });
  assert.equal(records.length, 3);
  assert.deepEqual(truncated, { file: seg, offset: good, bytes: 30 });
  assert.equal(statSync(seg).size, good);
  log.append('test.record', { after: true }, Date.now());
  await log.sync();
  await log.close();
  const again = await openLog(dir);
  assert.equal(again.records.length, 4);
  await again.log.close();
});

test('a damaged record in the middle stops opening with the file and offset', async (t) => {
  const dir = tempDir(t);
  await writeRecords(dir, 5);
  const [seg] = segmentFiles(dir);
  const text = readFileSync(seg, 'utf8');
  const lines = text.split('\n');
  const offset = Buffer.byteLength(lines.slice(0, 2).join('\n') + '\n');
  lines[2] = lines[2].replace('record 2', 'record X');
  writeFileSync(seg, lines.join('\n'));
  await assert.rejects(openLog(dir), (err) => {
    assert.ok(err instanceof LogCorruptError);
    assert.equal(err.file, seg);
    assert.equal(err.offset, offset);
    assert.match(err.message, /record 3 fails its hash check/);
    return true;
  });
  assert.equal(readFileSync(seg, 'utf8'), lines.join('\n'), 'nothing was modified');
});

test('the hash chain links records: a consistently re-hashed record still breaks the next link', async (t) => {
  const dir = tempDir(t);
  await writeRecords(dir, 3);
  const [seg] = segmentFiles(dir);
  const lines = readFileSync(seg, 'utf8').split('\n');
  // Replace record 2 with a self-consistent record from another log (valid hash for a different chain).
  const other = tempDir(t);
  const { log } = await openLog(other);
  log.append('test.record', { forged: true }, Date.now());
  log.append('test.record', { forged: true }, Date.now());
  await log.sync();
  await log.close();
  const forged = readFileSync(segmentFiles(other)[0], 'utf8').split('\n')[1];
  lines[1] = forged;
  writeFileSync(seg, lines.join('\n'));
  await assert.rejects(openLog(dir), /record 2 fails its hash check/);
});

test('segments roll over at the size limit and replay across them', async (t) => {
  const dir = tempDir(t);
  await writeSegmented(dir, 20, 400);
  const segs = listSegments(join(dir, 'log'));
  assert.ok(segs.length > 3, `expected several segments, got ${segs.length}`);
  assert.equal(segs[0].firstSeq, 1);
  const { records, log: l2 } = await openLog(dir, { segmentBytesMax: 400 });
  assert.deepEqual(records.map((r) => r.seq), Array.from({ length: 20 }, (_, i) => i + 1));
  await l2.close();
});

test("a log that follows a bucket rolls over only where the leader's segments begin, never at its own size; turned off, by size again", async (t) => {
  const dir = tempDir(t);
  const { log } = await openLog(dir, { segmentBytesMax: 300 });
  const starts = () => listSegments(join(dir, 'log')).map((s) => s.firstSeq);
  log.followsSegments(true);
  for (let i = 0; i < 12; i++) {
    log.append('test.record', { i }, Date.now());
    await log.sync();
  }
  assert.deepEqual(starts(), [1], 'no roll-over at its own size: the segment grows past it');
  const grown = log.durableSegments()[0].sizeBytes;
  assert.ok(grown > 300, `segment 1 holds ${grown} bytes`);
  assert.deepEqual(log.nextPosition(50), { segmentFirstSeq: 1, offset: grown }, 'nextPosition says the same');
  await log.startSegmentAt(13);
  for (let i = 12; i < 16; i++) {
    log.append('test.record', { i }, Date.now());
    await log.sync();
  }
  assert.deepEqual(starts(), [1, 13], 'a segment begins where the leader began one');
  log.followsSegments(false);
  assert.deepEqual(log.nextPosition(50), { segmentFirstSeq: 17, offset: 0 }, 'a leader again: the full segment rolls over');
  log.append('test.record', { i: 16 }, Date.now());
  await log.sync();
  assert.deepEqual(starts(), [1, 13, 17]);
  await log.close();
  const { records, log: again } = await openLog(dir, { segmentBytesMax: 300 });
  assert.deepEqual(records.map((r) => r.seq), Array.from({ length: 17 }, (_, i) => i + 1));
  await again.close();
});

test('a missing segment stops opening with the missing seq range', async (t) => {
  const dir = tempDir(t);
  await writeSegmented(dir, 12, 300);
  const files = segmentFiles(dir);
  unlinkSync(files[1]);
  await assert.rejects(openLog(dir), (err) => err instanceof LogCorruptError && /are missing/.test(err.message) && err.file === files[2]);
});

test('the checkpoint in meta.json follows the durable head at roll-over, close and open', async (t) => {
  const dir = tempDir(t);
  const { log } = await openLog(dir, { segmentBytesMax: 300 });
  for (let i = 0; i < 12; i++) {
    log.append('test.record', { i }, Date.now());
    await log.sync();
  }
  // No close (as after a crash): the checkpoint is where the last full segment ended.
  const segs = listSegments(join(dir, 'log'));
  assert.ok(segs.length >= 3, `several segments (${segs.length})`);
  const atCrash = readMeta(dir).checkpoint;
  assert.equal(atCrash.seq, segs[segs.length - 1].firstSeq - 1, 'checkpointed when the previous segment was closed');
  await log.close();
  assert.equal(readMeta(dir).checkpoint.seq, 12, 'close checkpoints the durable head');
  const reopened = await openLog(dir);
  assert.equal(readMeta(dir).checkpoint.seq, 12);
  await reopened.log.close();
});

test('a log whose last segment was removed refuses to open and names the missing records', async (t) => {
  const dir = tempDir(t);
  await writeSegmented(dir, 12, 300);
  const files = segmentFiles(dir);
  const lastFirstSeq = listSegments(join(dir, 'log')).at(-1).firstSeq;
  unlinkSync(files.at(-1));
  await assert.rejects(
    openLog(dir),
    (err) =>
      err instanceof StoreStateError &&
      new RegExp(`ends at record ${lastFirstSeq - 1}`).test(err.message) &&
      /reached record 12/.test(err.message) &&
      /repair --truncate/.test(err.message),
  );
  assert.equal(segmentFiles(dir).length, files.length - 1, 'nothing was changed');
});

test('an emptied log under an existing meta.json refuses to open instead of starting over', async (t) => {
  const dir = tempDir(t);
  await writeRecords(dir, 4);
  for (const f of segmentFiles(dir)) unlinkSync(f);
  await assert.rejects(openLog(dir), (err) => err instanceof StoreStateError && /ends at record 0/.test(err.message));
  assert.deepEqual(segmentFiles(dir), [], 'no new log was started');
});

test('a log replaced by another archive\'s log refuses to open', async (t) => {
  const dir = tempDir(t);
  const other = tempDir(t);
  await writeRecords(dir, 3);
  const { log } = await openLog(other);
  for (let i = 0; i < 5; i++) log.append('test.record', { other: i }, Date.now());
  await log.sync();
  await log.close();
  writeFileSync(segmentFiles(dir)[0], readFileSync(segmentFiles(other)[0]));
  await assert.rejects(openLog(dir), (err) => err instanceof StoreStateError && /replaced by another archive/.test(err.message));
});

test('a whole final record that lacks only its newline is kept and given its newline', async (t) => {
  const dir = tempDir(t);
  await writeRecords(dir, 3);
  const [seg] = segmentFiles(dir);
  const size = statSync(seg).size;
  truncateSync(seg, size - 1); // cut exactly before the last newline
  let completed = null;
  const { log, records } = await openLog(dir, { onComplete: (file, offset) => (completed = { file, offset }), onTruncate: () => assert.fail('nothing may be dropped') });
  assert.equal(records.length, 3, 'the third record is kept');
  assert.deepEqual(completed, { file: seg, offset: size - 1 });
  assert.equal(statSync(seg).size, size);
  log.append('test.record', { after: true }, Date.now());
  await log.sync();
  await log.close();
  assert.deepEqual((await openLog(dir)).records.map((r) => r.seq), [1, 2, 3, 4]);
});

test('a whole final record that lacks only its newline, followed by zeroed space, is kept and given its newline', async (t) => {
  const dir = tempDir(t);
  await writeRecords(dir, 3);
  const [seg] = segmentFiles(dir);
  const size = statSync(seg).size;
  truncateSync(seg, size - 1);
  appendFileSync(seg, Buffer.alloc(8192));
  let completed = null;
  const { log, records } = await openLog(dir, { onComplete: (file, offset) => (completed = { file, offset }), onTruncate: () => assert.fail('nothing may be dropped') });
  assert.equal(records.length, 3, 'the third record is kept');
  assert.deepEqual(completed, { file: seg, offset: size - 1 });
  assert.equal(statSync(seg).size, size, 'the newline is written and the zeros cut off');
  log.append('test.record', { after: true }, Date.now());
  await log.sync();
  await log.close();
  assert.deepEqual((await openLog(dir)).records.map((r) => r.seq), [1, 2, 3, 4]);
});

test('a whole final record followed by a stray byte instead of its newline is damage, not a torn write', async (t) => {
  const dir = tempDir(t);
  await writeRecords(dir, 3);
  const [seg] = segmentFiles(dir);
  const bytes = readFileSync(seg);
  bytes[bytes.length - 1] = 0x58; // 'X' where the last newline was
  writeFileSync(seg, bytes);
  await assert.rejects(
    openLog(dir),
    (err) => err instanceof LogCorruptError && err.file === seg && err.offset === bytes.length - 1 && /record 3 is whole but ends in byte 0x58/.test(err.message),
  );
  assert.equal(statSync(seg).size, bytes.length, 'the record was not dropped');
});

test('bytes after the last newline that do not start like a record line are damage, not a torn write', async (t) => {
  for (const garbage of ['garbage', 'x', '{"seq":4,"payload":{}', ' {"payload":', '{"payloaX']) {
    const dir = tempDir(t);
    await writeRecords(dir, 3);
    const [seg] = segmentFiles(dir);
    const good = statSync(seg).size;
    appendFileSync(seg, garbage);
    await assert.rejects(
      openLog(dir, { onTruncate: () => assert.fail('nothing may be dropped') }),
      (err) => err instanceof LogCorruptError && err.file === seg && err.offset === good && /neither start like a record line/.test(err.message),
      JSON.stringify(garbage),
    );
    assert.equal(statSync(seg).size, good + Buffer.byteLength(garbage), `${JSON.stringify(garbage)} was not dropped`);
  }
});

test('a torn write is any prefix of a record line, down to its first byte, and is truncated', async (t) => {
  const dir = tempDir(t);
  await writeRecords(dir, 1);
  const [seg] = segmentFiles(dir);
  const good = statSync(seg).size;
  // Every cut of the line the log would write next: a proper prefix of {"payload": as well as longer ones.
  const whole = readFileSync(seg); // record 1's line, which has the shape of every record line
  for (const cut of [1, 5, 10, 11, 12, 40, whole.length - 2]) {
    appendFileSync(seg, whole.subarray(0, cut));
    let truncated = null;
    const { log, records } = await openLog(dir, { onTruncate: (file, offset, bytes) => (truncated = { file, offset, bytes }) });
    await log.close();
    assert.equal(records.length, 1, `cut ${cut}`);
    assert.deepEqual(truncated, { file: seg, offset: good, bytes: cut }, `cut ${cut}`);
    assert.equal(statSync(seg).size, good);
  }
});

test('a tail of only NUL bytes (space zeroed ahead, or zero-fill after power loss) is cut off at open, not reported as a torn write', async (t) => {
  const dir = tempDir(t);
  await writeRecords(dir, 3);
  const [seg] = segmentFiles(dir);
  const good = statSync(seg).size;
  appendFileSync(seg, Buffer.alloc(4096));
  const { log, records } = await openLog(dir, { onTruncate: () => assert.fail('zeroed space is not a torn write') });
  assert.equal(records.length, 3);
  assert.equal(statSync(seg).size, good);
  log.append('test.record', { after: true }, Date.now());
  await log.sync();
  await log.close();
  assert.deepEqual((await openLog(dir)).records.map((r) => r.seq), [1, 2, 3, 4]);
});

test('NUL bytes at a line start followed by other bytes are a torn write into zeroed space (a later page reached the disk first) and are truncated', async (t) => {
  const dir = tempDir(t);
  await writeRecords(dir, 3);
  const [seg] = segmentFiles(dir);
  const good = statSync(seg).size;
  const whole = readFileSync(seg);
  const tail = Buffer.concat([Buffer.alloc(100), whole.subarray(10, whole.indexOf(10) + 1), whole.subarray(0, whole.indexOf(10) + 1), Buffer.alloc(50)]);
  appendFileSync(seg, tail);
  let truncated = null;
  const { log, records } = await openLog(dir, { onTruncate: (file, offset, bytes) => (truncated = { file, offset, bytes }) });
  await log.close();
  assert.equal(records.length, 3);
  assert.deepEqual(truncated, { file: seg, offset: good, bytes: tail.length });
  assert.equal(statSync(seg).size, good);
});

test('a line of the last segment with NUL bytes inside is a torn write into zeroed space and is truncated; in an earlier segment it is damage', async (t) => {
  const dir = tempDir(t);
  await writeRecords(dir, 3);
  const [seg] = segmentFiles(dir);
  const good = statSync(seg).size;
  const whole = readFileSync(seg);
  const line = Buffer.from(whole.subarray(0, whole.indexOf(10) + 1));
  line.fill(0, 20, 60); // the middle of the line never reached the disk
  appendFileSync(seg, Buffer.concat([line, Buffer.alloc(30)]));
  let truncated = null;
  const { log, records } = await openLog(dir, { onTruncate: (file, offset, bytes) => (truncated = { file, offset, bytes }) });
  await log.close();
  assert.equal(records.length, 3);
  assert.deepEqual(truncated, { file: seg, offset: good, bytes: line.length + 30 });

  const dir2 = tempDir(t);
  await writeSegmented(dir2, 12, 300);
  const files = segmentFiles(dir2);
  const first = readFileSync(files[0]);
  first.fill(0, 20, 30);
  writeFileSync(files[0], first);
  await assert.rejects(openLog(dir2), (err) => err instanceof LogCorruptError && err.file === files[0] && err.offset === 0);
});

test('the active segment is zeroed ahead of its appends, and closing cuts it back to its last record', async (t) => {
  const dir = tempDir(t);
  const { log } = await openLog(dir, { segmentZeroAheadBytes: 64 * 1024 });
  log.append('test.record', { i: 0 }, Date.now());
  await log.sync();
  const [seg] = segmentFiles(dir);
  const bytes = readFileSync(seg);
  const end = bytes.indexOf(10) + 1;
  assert.equal(bytes.length, end + 64 * 1024, 'the file holds the record and the zeros written ahead');
  assert.ok(bytes.subarray(end).every((b) => b === 0));
  assert.equal(log.durableSegments()[0].sizeBytes, end, 'backups copy only the records');
  for (let i = 1; i < 10; i++) log.append('test.record', { i }, Date.now());
  await log.sync();
  const data = log.durableSegments()[0].sizeBytes;
  assert.equal(statSync(seg).size, end + 64 * 1024, 'appends overwrite the zeros; the file did not grow');
  await log.close();
  assert.equal(statSync(seg).size, data);
  assert.equal(readFileSync(seg).at(-1), 10);
});

test('a log that stopped without closing (zeros past its last record) reopens with every record, read-only too', async (t) => {
  const dir = tempDir(t);
  const { log } = await openLog(dir, { segmentZeroAheadBytes: 64 * 1024 });
  for (let i = 0; i < 5; i++) log.append('test.record', { i }, Date.now());
  await log.sync();
  const data = log.durableSegments()[0].sizeBytes;
  const crashed = tempDir(t);
  cpSync(dir, crashed, { recursive: true }); // the folder as a kill -9 leaves it
  await log.close();
  const [seg] = segmentFiles(crashed);
  assert.equal(statSync(seg).size, data + 64 * 1024);
  const readOnly = await openLog(crashed, { readOnly: true });
  assert.equal(readOnly.records.length, 5);
  assert.equal(readOnly.log.durableSegments()[0].sizeBytes, data);
  await readOnly.log.close();
  assert.equal(statSync(seg).size, data + 64 * 1024, 'a read-only open changes nothing');
  const again = await openLog(crashed, { onTruncate: () => assert.fail('zeroed space is not a torn write') });
  assert.equal(again.records.length, 5);
  assert.equal(statSync(seg).size, data, 'opened for writing, the segment ends at its last record');
  again.log.append('test.record', { i: 5 }, Date.now());
  await again.log.sync();
  await again.log.close();
  assert.deepEqual((await openLog(crashed)).records.map((r) => r.seq), [1, 2, 3, 4, 5, 6]);
});

test('a roll-over cuts the sealed segment back to its last record before the next segment exists', async (t) => {
  const dir = tempDir(t);
  const { log } = await openLog(dir, { segmentBytesMax: 1024, segmentZeroAheadBytes: 64 * 1024 });
  for (let i = 0; i < 40; i++) {
    log.append('test.record', { i }, Date.now());
    await log.sync();
  }
  const files = segmentFiles(dir);
  assert.ok(files.length >= 3, `${files.length} segments`);
  for (const f of files.slice(0, -1)) assert.equal(readFileSync(f).at(-1), 10, `${f} ends with its last record's newline`);
  assert.ok(statSync(files.at(-1)).size <= 1024 + 200, 'zeroing ahead never passes the roll-over size by more than a batch');
  await log.close();
  assert.equal(replaySegments(join(dir, 'log'), () => undefined).lastSeq, 40);
});

test('with zeroing ahead off, the segment grows with each write', async (t) => {
  const dir = tempDir(t);
  const { log } = await openLog(dir, { segmentZeroAheadBytes: 0 });
  log.append('test.record', { i: 0 }, Date.now());
  await log.sync();
  const [seg] = segmentFiles(dir);
  assert.equal(statSync(seg).size, log.durableSegments()[0].sizeBytes);
  await log.close();
});

test('an incomplete line in a segment that is not the last one is damage, not a torn tail', async (t) => {
  const dir = tempDir(t);
  await writeSegmented(dir, 12, 300);
  const files = segmentFiles(dir);
  truncateSync(files[0], statSync(files[0]).size - 5);
  await assert.rejects(openLog(dir), LogCorruptError);
});

test('a missing metadata file with records present refuses to open and says what to do', async (t) => {
  const dir = tempDir(t);
  await writeRecords(dir, 2);
  unlinkSync(join(dir, 'meta.json'));
  await assert.rejects(openLog(dir), (err) => err instanceof StoreStateError && /meta.json is missing/.test(err.message) && /repair --new-lineage/.test(err.message));
});

test('the origin id is created once and kept across reopenings', async (t) => {
  const dir = tempDir(t);
  const a = await openLog(dir);
  const origin = a.log.originId;
  assert.match(origin, /^[0-9a-f-]{36}$/);
  await a.log.close();
  const b = await openLog(dir);
  assert.equal(b.log.originId, origin);
  await b.log.close();
});

test('strict replay refuses a record that is not in canonical form', async (t) => {
  const dir = tempDir(t);
  await writeRecords(dir, 1);
  const [seg] = segmentFiles(dir);
  const { chainHash } = await import('../../dist/store/record-format.js');
  const rec = JSON.parse(readFileSync(seg, 'utf8').trimEnd());
  // Payload keys out of order, framed and chained correctly: a valid chain, not canonical.
  const body = `{"payload":{"text":${JSON.stringify(rec.payload.text)},"i":${rec.payload.i}},"seq":1,"time":"${rec.time}","type":"${rec.type}"}`;
  writeFileSync(seg, body.slice(0, -1) + `,"hash":"${chainHash('0'.repeat(64), body)}"}\n`);
  assert.equal(replaySegments(join(dir, 'log'), () => {}).records, 1, 'the chain itself is valid');
  assert.throws(() => replaySegments(join(dir, 'log'), () => {}, { strict: true }), /canonical/);
});

test('a record whose top-level fields are not in canonical order is refused as unframed', async (t) => {
  const dir = tempDir(t);
  await writeRecords(dir, 1);
  const [seg] = segmentFiles(dir);
  const { chainHash } = await import('../../dist/store/record-format.js');
  const rec = JSON.parse(readFileSync(seg, 'utf8').trimEnd());
  const body = JSON.stringify({ type: rec.type, seq: rec.seq, time: rec.time, payload: rec.payload });
  writeFileSync(seg, body.slice(0, -1) + `,"hash":"${chainHash('0'.repeat(64), body)}"}\n`);
  assert.throws(() => replaySegments(join(dir, 'log'), () => {}), /not framed/);
});

test('the payload JSON handed to apply is cut exactly from the canonical record, live and on replay', async (t) => {
  const dir = tempDir(t);
  const { log } = await openLog(dir);
  const payload = { z: 1, a: { y: 'x"y ✓', b: [1, { seq: 3 }] }, s: ',"seq":1,"hash":"' };
  const expected = '{"a":{"b":[1,{"seq":3}],"y":"x\\"y ✓"},"s":",\\"seq\\":1,\\"hash\\":\\"","z":1}';
  const { payloadJson } = log.append('test.record', payload, Date.now());
  assert.equal(payloadJson, expected);
  assert.deepEqual(JSON.parse(payloadJson), payload);
  await log.sync();
  await log.close();
  const replayed = [];
  const again = await Log.open(dir, (r, json) => replayed.push(json));
  assert.deepEqual(replayed, [expected]);
  await again.close();
});

test('replay reads seq, time and type from the tail and refuses every malformed tail, even with a valid chain', async (t) => {
  const dir = tempDir(t);
  await writeRecords(dir, 1);
  const [seg] = segmentFiles(dir);
  const { chainHash } = await import('../../dist/store/record-format.js');
  const rec = JSON.parse(readFileSync(seg, 'utf8').trimEnd());
  const payload = JSON.stringify(rec.payload);
  const write = (tail) => {
    const body = `{"payload":${payload}${tail}}`;
    writeFileSync(seg, body.slice(0, -1) + `,"hash":"${chainHash('0'.repeat(64), body)}"}\n`);
  };
  const seen = [];
  write(`,"seq":1,"time":"${rec.time}","type":"${rec.type}"`);
  replaySegments(join(dir, 'log'), (r, json) => seen.push([r.seq, r.time, r.type, json]));
  assert.deepEqual(seen, [[1, rec.time, rec.type, payload]]);
  for (const tail of [
    `,"seq":1,"time":"${rec.time}","type":"Test.Upper"`,
    `,"seq":1,"time":"${rec.time}","type":""`,
    `,"seq":1,"time":"${rec.time}","kind":"${rec.type}"`,
    `,"seq":1,"time":"${rec.time} ","type":"${rec.type}"`,
    `,"seq":1,"time":"","type":"${rec.type}"`,
    `,"seq":1,"when":"${rec.time}","type":"${rec.type}"`,
    `,"seq":-1,"time":"${rec.time}","type":"${rec.type}"`,
    `,"seq":,"time":"${rec.time}","type":"${rec.type}"`,
    `,"seq":"1","time":"${rec.time}","type":"${rec.type}"`,
    `,"n":1,"time":"${rec.time}","type":"${rec.type}"`,
    `"seq":1,"time":"${rec.time}","type":"${rec.type}"`,
  ]) {
    write(tail);
    assert.throws(() => replaySegments(join(dir, 'log'), () => {}), /not framed/, tail);
  }
  write(`,"seq":2,"time":"${rec.time}","type":"${rec.type}"`);
  assert.throws(() => replaySegments(join(dir, 'log'), () => {}), /seq 2 but 1 was expected/);
});

test('a chained record whose payload is not JSON is reported with its file and offset when read', async (t) => {
  const dir = tempDir(t);
  await writeRecords(dir, 1);
  const [seg] = segmentFiles(dir);
  const { chainHash } = await import('../../dist/store/record-format.js');
  const rec = JSON.parse(readFileSync(seg, 'utf8').trimEnd());
  const body = `{"payload":{"i":1,,},"seq":1,"time":"${rec.time}","type":"${rec.type}"}`;
  writeFileSync(seg, body.slice(0, -1) + `,"hash":"${chainHash('0'.repeat(64), body)}"}\n`);
  assert.throws(
    () => replaySegments(join(dir, 'log'), (r) => r.payload),
    (err) => err instanceof LogCorruptError && /record 1 is not valid JSON/.test(err.message) && err.message.includes(seg),
  );
  assert.throws(() => replaySegments(join(dir, 'log'), () => {}, { strict: true }), /record 1 is not valid JSON/);
});
