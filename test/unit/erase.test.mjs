import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { Log, replaySegments } from '../../dist/store/log.js';
import { listSegments } from '../../dist/store/segment.js';
import { LogCorruptError } from '../../dist/store/errors.js';
import { tombstoneLine } from '../../dist/store/record-format.js';
import { tempDir, cli } from '../helpers/server.mjs';
import { filesContaining } from '../helpers/files.mjs';

const secret = (i) => `secret-text-${i}-${'x'.repeat(40)}`;

/** A log in `dir` with `n` message records (content secret(i)), closed. */
async function writeLog(dir, n, opts = {}) {
  const log = await Log.open(dir, () => undefined, opts);
  for (let i = 1; i <= n; i++) log.append('message.create', { content: secret(i), topicId: 'top_1' }, Date.UTC(2026, 0, 1, 0, 0, i));
  await log.sync();
  return log;
}

/** Appends the erase record for `seqs` (original hashes read back from the log) and syncs. */
async function appendErase(log, seqs) {
  const targets = seqs.map((seq) => ({ seq, hash: log.records.storedHashOf(seq) }));
  log.append('moderation.erase', { targets, reason: 'test', operatorId: 'ag_op' }, Date.UTC(2026, 0, 2));
  await log.sync();
  return targets;
}

/** Replaces record 2's line in the first segment of `dir`'s log by its tombstone, as an erasure would; returns the segment and the line's offset. */
function tombstoneSecondRecord(dir) {
  const seg = join(dir, 'log', listSegments(join(dir, 'log'))[0].name);
  const buf = readFileSync(seg);
  const start = buf.indexOf(10) + 1;
  const end = buf.indexOf(10, start) + 1;
  tombstoneLine(buf.subarray(start, end), 2).copy(buf, start);
  writeFileSync(seg, buf);
  return { seg, start };
}

test('an erased record becomes a tombstone of the same length with the same hash; the log replays, verifies and reads it back as erased', async (t) => {
  const dir = tempDir(t);
  const log = await writeLog(dir, 5);
  const seg = join(dir, 'log', listSegments(join(dir, 'log'))[0].name);
  const targets = await appendErase(log, [2, 4]);
  // The records' bytes (the open segment's zeros written ahead are not records, and are not rewritten).
  const before = readFileSync(seg).subarray(0, log.durableSegments()[0].sizeBytes);
  await log.erase(targets);
  const after = readFileSync(seg);
  assert.equal(after.length, before.length, 'the segment keeps its length');
  const lines = after.toString('utf8').split('\n');
  assert.match(lines[1], /^\{"erased":true,"seq":2,"time":"2026-01-01T00:00:02.000Z","type":"message.create" *,"hash":"[0-9a-f]{64}"\}$/);
  assert.equal(lines[1].length, before.toString('utf8').split('\n')[1].length);
  assert.ok(lines[1].endsWith(`,"hash":"${targets[0].hash}"}`), 'the original hash stays');
  assert.deepEqual(log.records.read(2), { payloadJson: 'null', time: '2026-01-01T00:00:02.000Z', type: 'message.create', erased: true });
  assert.equal(log.records.storedHashOf(2), targets[0].hash);
  assert.match(log.records.read(3).payloadJson, /secret-text-3-/);
  assert.deepEqual(filesContaining(dir, secret(2)), [], 'the erased text is nowhere under the data folder');
  await log.close();

  const replayed = [];
  const again = await Log.open(dir, (r) => replayed.push(r));
  assert.equal(replayed.length, 6);
  assert.equal(replayed[1].erased, true);
  assert.equal(replayed[1].payload, null);
  assert.equal(again.records.read(4).erased, true);
  assert.deepEqual(again.erasedAtOpen, []);
  await again.close();
  const verified = replaySegments(join(dir, 'log'), () => undefined, { strict: true });
  assert.equal(verified.lastSeq, 6);
  const res = await cli(['--data-dir', dir, 'verify']);
  assert.equal(res.code, 0, res.stderr);
  assert.equal(res.json.ok, true);
});

test('a tombstone that no later erase record vouches for is damage naming its file and offset', async (t) => {
  const dir = tempDir(t);
  const log = await writeLog(dir, 3);
  await log.close();
  const { seg, start } = tombstoneSecondRecord(dir);
  assert.throws(
    () => replaySegments(join(dir, 'log'), () => undefined),
    (err) => err instanceof LogCorruptError && err.file === seg && err.offset === start && /tombstone/.test(err.reason),
  );
  await assert.rejects(Log.open(dir, () => undefined), LogCorruptError);
  const res = await cli(['--data-dir', dir, 'verify']);
  assert.equal(res.code, 1);
  assert.match(res.stderr, /tombstone/);
});

test('a tombstone vouched for with another hash is damage', async (t) => {
  const dir = tempDir(t);
  const log = await writeLog(dir, 3);
  log.append('moderation.erase', { targets: [{ seq: 2, hash: 'a'.repeat(64) }] }, Date.UTC(2026, 0, 2));
  await log.sync();
  await log.close();
  const { seg, start } = tombstoneSecondRecord(dir);
  assert.throws(() => replaySegments(join(dir, 'log'), () => undefined), (err) => err instanceof LogCorruptError && err.offset === start);
});

test('erase refuses a target no erase record names, and changes nothing', async (t) => {
  const dir = tempDir(t);
  const log = await writeLog(dir, 3);
  const seg = join(dir, 'log', listSegments(join(dir, 'log'))[0].name);
  const before = readFileSync(seg);
  await assert.rejects(log.erase([{ seq: 2, hash: log.records.storedHashOf(2) }]), /not named/);
  assert.deepEqual(readFileSync(seg), before);
  await log.close();
});

test('erasing a record in the active segment rolls the log over: later appends go to a new segment', async (t) => {
  const dir = tempDir(t);
  const log = await writeLog(dir, 3);
  const targets = await appendErase(log, [3]);
  await log.erase(targets);
  log.append('message.create', { content: 'after' }, Date.UTC(2026, 0, 3));
  await log.sync();
  const segs = listSegments(join(dir, 'log'));
  assert.deepEqual(segs.map((s) => s.firstSeq), [1, 5]);
  assert.equal(log.records.read(5).payloadJson, '{"content":"after"}');
  await log.close();
  const again = await Log.open(dir, () => undefined);
  assert.equal(again.headSeq, 5);
  await again.close();
});

test('a log that follows a bucket erases a record of its active segment in place: no roll-over, and appends before and after stay in that segment', async (t) => {
  const dir = tempDir(t);
  const log = await writeLog(dir, 3);
  log.followsSegments(true);
  const targets = await appendErase(log, [3]);
  // An append that arrives as the erasure begins is written before the segment is rewritten.
  log.onErase = () => log.append('message.create', { content: 'during' }, Date.UTC(2026, 0, 3));
  await log.erase(targets);
  log.append('message.create', { content: 'after' }, Date.UTC(2026, 0, 4));
  await log.sync();
  assert.deepEqual(listSegments(join(dir, 'log')).map((s) => s.firstSeq), [1], 'one segment: the leader began no other');
  assert.equal(log.records.read(3).erased, true);
  assert.equal(log.records.read(5).payloadJson, '{"content":"during"}');
  assert.equal(log.records.read(6).payloadJson, '{"content":"after"}');
  assert.deepEqual(filesContaining(dir, secret(3)), []);
  await log.close();
  const seqs = [];
  const again = await Log.open(dir, (r) => seqs.push(r.seq));
  assert.deepEqual(seqs, [1, 2, 3, 4, 5, 6]);
  assert.equal(again.records.read(6).payloadJson, '{"content":"after"}');
  await again.close();
  assert.equal(replaySegments(join(dir, 'log'), () => undefined, { strict: true }).lastSeq, 6);
});

test('an erasure completed at the next start rewrites the active segment in place: the next append stays in it', async (t) => {
  const dir = tempDir(t);
  const log = await writeLog(dir, 4);
  await appendErase(log, [4]);
  await log.close(); // the crash: erase() never ran
  const again = await Log.open(dir, () => undefined);
  assert.deepEqual([...again.erasedAtOpen], [4]);
  again.append('message.create', { content: 'after' }, Date.UTC(2026, 0, 3));
  await again.sync();
  assert.deepEqual(listSegments(join(dir, 'log')).map((s) => s.firstSeq), [1], 'a restarted follower keeps the leader\'s segments');
  await again.close();
  const seqs = [];
  const third = await Log.open(dir, (r) => seqs.push(r.seq));
  assert.deepEqual(seqs, [1, 2, 3, 4, 5, 6]);
  assert.deepEqual(filesContaining(dir, secret(4)), []);
  await third.close();
});

test('a temp file left by an interrupted rewrite is removed at the next start and the log is intact', async (t) => {
  const dir = tempDir(t);
  const log = await writeLog(dir, 3);
  await log.close();
  const seg = join(dir, 'log', listSegments(join(dir, 'log'))[0].name);
  const tmp = `${seg}.tmp-999999`;
  writeFileSync(tmp, readFileSync(seg).subarray(0, 50)); // a copy cut short by the crash
  const again = await Log.open(dir, () => undefined);
  assert.equal(existsSync(tmp), false);
  assert.equal(again.headSeq, 3);
  assert.match(again.records.read(2).payloadJson, /secret-text-2-/);
  await again.close();
});

test('a durable erase record whose target was not rewritten (crash before the rename) is completed at the next start', async (t) => {
  const dir = tempDir(t);
  const log = await writeLog(dir, 4);
  await appendErase(log, [2, 3]);
  await log.close(); // the crash: erase() never ran
  assert.equal(filesContaining(dir, secret(2)).length, 1);
  const again = await Log.open(dir, () => undefined);
  assert.deepEqual([...again.erasedAtOpen].sort(), [2, 3]);
  assert.equal(again.records.read(2).erased, true);
  assert.equal(again.records.read(3).erased, true);
  assert.deepEqual(filesContaining(dir, secret(2)), []);
  assert.deepEqual(filesContaining(dir, secret(3)), []);
  await again.close();
});

test('after an erasure, cli backup of the stopped folder holds none of the erased bytes and verifies', async (t) => {
  const dir = tempDir(t);
  const log = await writeLog(dir, 4);
  await log.erase(await appendErase(log, [1, 4]));
  await log.close();
  const target = join(tempDir(t), 'copy');
  const res = await cli(['--data-dir', dir, 'backup', target]);
  assert.equal(res.code, 0, res.stderr);
  assert.deepEqual(filesContaining(target, secret(1)), []);
  assert.deepEqual(filesContaining(target, secret(4)), []);
  assert.equal(filesContaining(target, secret(2)).length, 1, 'the other records are in the backup');
  const verified = replaySegments(join(target, 'log'), () => undefined, { strict: true });
  assert.equal(verified.lastSeq, 5);
});

test('a backup taken before an erasure reached its segment erases the record in the copy: no backup carries erased bytes', async (t) => {
  const dir = tempDir(t);
  const log = await writeLog(dir, 4);
  await appendErase(log, [3]);
  await log.close(); // the erase record is durable, the segment still holds the original line
  const target = join(tempDir(t), 'copy');
  const res = await cli(['--data-dir', dir, 'backup', target]);
  assert.equal(res.code, 0, res.stderr);
  assert.equal(res.json.erasedInCopy, 1);
  assert.deepEqual(filesContaining(target, secret(3)), []);
  const verify = await cli(['--data-dir', target, 'verify']);
  assert.equal(verify.code, 0, verify.stderr);
  assert.equal(verify.json.erasedRecords, 1);
});

test('repair --truncate cuts before a tombstone whose vouching erase record lay after the damage, keeping everything cut aside', async (t) => {
  const dir = tempDir(t);
  const log = await writeLog(dir, 5);
  await log.erase(await appendErase(log, [2]));
  await log.close();
  const seg = join(dir, 'log', listSegments(join(dir, 'log'))[0].name);
  const buf = readFileSync(seg);
  const at = buf.indexOf(Buffer.from(secret(4)));
  buf[at] ^= 1; // damage record 4: the erase record (6) is cut away with it
  writeFileSync(seg, buf);
  const res = await cli(['--data-dir', dir, 'repair', '--truncate']);
  assert.equal(res.code, 0, res.stderr);
  assert.equal(res.json.keptRecords, 1, 'only record 1 is proven without the cut-away erase record');
  assert.equal(res.json.quarantined.length, 2);
  assert.equal((await cli(['--data-dir', dir, 'verify'])).code, 0);
  const kept = Buffer.concat(res.json.quarantined.map((f) => readFileSync(f)));
  assert.ok(kept.includes(Buffer.from(secret(3))) && kept.includes(Buffer.from('moderation.erase')), 'the cut records are in quarantine');
});
