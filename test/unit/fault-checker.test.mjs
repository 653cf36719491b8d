/**
 * The fault suite's history checker (test/fault/checker.mjs; issue 50) on small hand-made
 * histories: one that keeps every rule, and one per rule that breaks it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import stableStringify from 'fast-json-stable-stringify';
import { checkHistory, compactPage, parseBucket, parseJsonl } from '../fault/checker.mjs';

const ORIGIN = '11111111-1111-4111-8111-111111111111';
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const iso = (ms) => new Date(ms).toISOString();

/** Log lines (agent-forum-log-v1) for `records` from `seq` after `prevHash`: { lines, hash }. */
function logLines(records, seq, prevHash) {
  let hash = prevHash;
  const out = [];
  for (const r of records) {
    const body = stableStringify({ payload: r.payload, seq: seq++, time: r.time, type: r.type });
    hash = createHash('sha256').update(hash + body).digest('hex');
    out.push(`${body.slice(0, -1)},"hash":"${hash}"}\n`);
  }
  return { lines: out.join(''), hash };
}

/**
 * A bucket holding `records` (seq 1..n) as one chunk per record, the manifest naming
 * `http://s1.fault.test` at epoch 1; `extra` fields go into every chunk header and the manifest.
 */
function bucketOf(records, extra = {}) {
  const objects = [];
  let hash = '0'.repeat(64);
  records.forEach((r, i) => {
    const seq = i + 1;
    const { lines, hash: next } = logLines([r], seq, hash);
    const header = { epoch: 1, firstSeq: seq, format: 'agent-forum-chunk-v1', lastSeq: seq, offset: 0, originId: ORIGIN, prevHash: hash, segment: 1, writer: 'w', ...extra };
    objects.push({ key: `chunks/${String(seq).padStart(16, '0')}`, body: Buffer.from(`${JSON.stringify(header)}\n${lines}`) });
    hash = next;
  });
  objects.push({ key: 'manifest.json', body: Buffer.from(JSON.stringify({ format: 'agent-forum-replica-v1', originId: ORIGIN, epoch: 1, segments: [], leaderUrl: 'http://s1.fault.test', ...extra })) });
  return objects;
}

const epochRecord = (epoch, server, t) => ({ type: 'replication.epoch', time: iso(t), payload: { epoch, leaderUrl: `http://${server}.fault.test`, writer: `${server}-writer` } });
const message = (seq, clientId, content, t) => ({ id: `msg_${String(seq).padStart(10, '0')}`, authorId: 'ag_1', clientId, content, topicId: 'tp_2', replyTo: null, created: iso(t) });
const messageRecord = (m) => ({ type: 'message.create', time: m.created, payload: m });
/** A client's acknowledged write of message `m` to `server`, sent at `start` and answered at `end`. */
const ack = (m, server, start, end, client = 'writer-1') => ({ client, server, op: 'message', method: 'POST', path: '/api/messages', start, end, request: { clientId: m.clientId, content: m.content }, status: 201, body: m });

/** A run that keeps every rule: s1 leads at epoch 1, s2 takes epoch 2 after a failover; a reader sees both. */
function goodRun(mode = 'sync') {
  const m3 = message(3, 'c1', 'one', T0 + 100);
  const m5 = message(5, 'c2', 'two', T0 + 9000);
  const records = [
    { type: 'room.create', time: iso(T0), payload: { id: 'commons', created: iso(T0) } },
    epochRecord(1, 's1', T0 + 10),
    messageRecord(m3),
    epochRecord(2, 's2', T0 + 8000),
    messageRecord(m5),
  ];
  const entries = [
    ack(m3, 's1', T0 + 90, T0 + 120),
    { client: 'writer-1', server: 's1', op: 'message', method: 'POST', path: '/api/messages', start: T0 + 5000, end: T0 + 5100, request: { clientId: 'c2', content: 'two' }, status: 503, body: { code: 'REPLICA_FENCED' } },
    ack(m5, 's2', T0 + 8990, T0 + 9050),
    { client: 'reader-1', server: 's3', op: 'changes', method: 'GET', path: '/api/changes', start: T0 + 9500, end: T0 + 9600, status: 200, body: compactPage({ cursor: { originId: ORIGIN, after: 5 }, events: [{ seq: 3, kind: 'message', message: m3 }, { seq: 5, kind: 'message', message: m5 }] }) },
  ];
  const events = [
    { t: T0 + 4000, kind: 'fault', id: 1, fault: 'failover', server: 's1', start: T0 + 4000, end: T0 + 8000, losesLeader: true },
    { t: T0 + 4000, kind: 'kill', server: 's1', pid: 100, signal: 'SIGSTOP' },
    { t: T0 + 20000, kind: 'kill', server: 's1', pid: 100, signal: 'SIGKILL' },
    { t: T0 + 20010, kind: 'exit', server: 's1', pid: 100, code: null, signal: 'SIGKILL', stderr: '' },
    { t: T0 + 20000, kind: 'end' },
  ];
  return { mode, entries, events, bucket: parseBucket(bucketOf(records)), records, m3, m5 };
}

const rules = (result) => result.violations.map((v) => v.rule);

test('a history that keeps every rule has no violations, and the counts say what happened', () => {
  const run = goodRun();
  assert.deepEqual(run.bucket.problems, []);
  assert.equal(run.bucket.records.length, 5);
  const r = checkHistory(run);
  assert.deepEqual(r.violations, []);
  assert.deepEqual(r.counts.writes.message, { sent: 3, acked: 2, failed: 1, statuses: { 201: 2, 503: 1 } });
  assert.equal(r.counts.faults.failover, 1);
  assert.equal(r.counts.recoveryChecked, 1);
  assert.equal(r.counts.epochs, 2);
});

test('the bucket is read tolerantly: unknown header and manifest fields (a sig) are ignored, and chunks a segment covers are skipped', () => {
  const run = goodRun();
  const objects = bucketOf(run.records, { sig: 'ed25519:abc' });
  // Records 1..3 sealed as a segment the manifest lists; their chunks were not yet deleted.
  const seg = logLines(run.records.slice(0, 3), 1, '0'.repeat(64));
  const manifest = objects.find((o) => o.key === 'manifest.json');
  manifest.body = Buffer.from(JSON.stringify({ ...JSON.parse(manifest.body), segments: [{ firstSeq: 1, lastSeq: 3, bytes: seg.lines.length, lastHash: seg.hash, sig: 'x' }] }));
  objects.push({ key: 'segments/0000000000000001.jsonl', body: Buffer.from(seg.lines) });
  const bucket = parseBucket(objects);
  assert.deepEqual(bucket.problems, []);
  assert.deepEqual(bucket.records.map((r) => r.seq), [1, 2, 3, 4, 5]);
  assert.deepEqual(checkHistory({ ...run, bucket }).violations, []);
});

test('bucket-chain: a changed byte, a missing chunk and a chunk that does not link are each named', () => {
  const run = goodRun();
  const tampered = bucketOf(run.records).map((o) => (o.key.endsWith('3') ? { ...o, body: Buffer.from(o.body.toString().replace('"one"', '"One"')) } : o));
  assert.match(parseBucket(tampered).problems[0], /chunks\/0+3: record 3 does not prove/);
  const holed = bucketOf(run.records).filter((o) => !o.key.endsWith('0000000000000002'));
  assert.match(parseBucket(holed).problems[0], /expected the chunk starting at 2/);
  const r = checkHistory({ ...run, bucket: parseBucket(holed) });
  assert.ok(rules(r).includes('bucket-chain'));
});

test('sync-ack-lost: an acknowledged sync write missing from the bucket is a violation', () => {
  const run = goodRun('sync');
  const bucket = parseBucket(bucketOf(run.records.slice(0, 4)));
  const r = checkHistory({ ...run, bucket });
  assert.deepEqual(rules(r), ['sync-ack-lost']);
  assert.equal(r.violations[0].evidence.write.clientId, 'c2');
});

test('async losses are reported with their time relative to the failover; within the bound they pass, outside it they are violations', () => {
  const run = goodRun('async');
  // m3 (acked at T0+120) was lost: the failover began 3.88 s later.
  const bucket = parseBucket(bucketOf([run.records[0], run.records[1], { type: 'topic.create', time: iso(T0 + 50), payload: { id: 'tp_3', created: iso(T0 + 50) } }, run.records[3], run.records[4]]));
  const far = checkHistory({ ...run, bucket });
  assert.equal(far.asyncLosses.length, 1);
  assert.equal(far.asyncLosses[0].relativeMs, 120 - 4000);
  assert.deepEqual(rules(far), ['async-loss-unbounded']);
  const near = checkHistory({ ...run, bucket, bounds: { asyncLossBeforeMs: 5000 } });
  assert.equal(near.asyncLosses.length, 1, 'a loss within the bound is still reported');
  assert.deepEqual(rules(near), []);
  // The same loss in sync mode is never allowed.
  assert.deepEqual(rules(checkHistory({ ...run, mode: 'sync', bucket })), ['sync-ack-lost']);
});

test('an async loss is judged by when it was sent, up to the epoch check after the failover ended: the old leader acknowledges until it sees the new epoch', () => {
  const run = goodRun('async');
  const bucket = parseBucket(bucketOf([run.records[0], run.records[1], { type: 'topic.create', time: iso(T0 + 50), payload: { id: 'tp_3', created: iso(T0 + 50) } }, run.records[3], run.records[4]]));
  // Sent 100 ms before the failover, answered 2.5 s after it began (the leader was paused).
  const entries = [ack(run.m3, 's1', T0 + 3900, T0 + 6500), ...run.entries.slice(1)];
  const r = checkHistory({ ...run, entries, bucket });
  assert.equal(r.asyncLosses.length, 1);
  assert.deepEqual(rules(r), []);
  // Sent after the failover ended (T0+8000) plus the epoch check and the bound (1 s each): outside it.
  const late = checkHistory({ ...run, entries: [ack(run.m3, 's1', T0 + 10_100, T0 + 10_200), ...run.entries.slice(1)], bucket });
  assert.deepEqual(rules(late), ['async-loss-unbounded']);
  // Sent 1.5 s after the failover ended, before the old leader could have seen the new epoch: within it.
  const seen = checkHistory({ ...run, entries: [ack(run.m3, 's1', T0 + 9500, T0 + 9600), ...run.entries.slice(1)], bucket });
  assert.deepEqual(rules(seen), []);
});

test('an async loss after a store outage that ran into the failover is within the bound: the backlog the outage left goes with the leader', () => {
  const run = goodRun('async');
  const bucket = parseBucket(bucketOf([run.records[0], run.records[1], { type: 'topic.create', time: iso(T0 + 50), payload: { id: 'tp_3', created: iso(T0 + 50) } }, run.records[3], run.records[4]]));
  // m3 was sent 3.9 s before the failover (T0+4000): outside the 1 s bound on its own.
  assert.deepEqual(rules(checkHistory({ ...run, bucket })), ['async-loss-unbounded']);
  // The store refused the leader from T0+100 to T0+2500, then reset its connections until the
  // failover began: one outage, back to back, so what it left unshipped may be lost.
  const outage = [
    { t: T0 + 2500, kind: 'fault', id: 10, fault: 'proxy:refuse', server: 's1', start: T0 + 100, end: T0 + 2500, losesLeader: false },
    { t: T0 + 4000, kind: 'fault', id: 11, fault: 'proxy:reset', server: 's1', start: T0 + 2800, end: T0 + 4000, losesLeader: false },
  ];
  assert.deepEqual(rules(checkHistory({ ...run, bucket, events: [...outage, ...run.events] })), []);
  // A store fault that ended long before the failover, or one on another server, does not count.
  const earlier = [{ ...outage[1], start: T0 + 200, end: T0 + 1500 }];
  assert.deepEqual(rules(checkHistory({ ...run, bucket, events: [...earlier, ...run.events] })), ['async-loss-unbounded']);
  const elsewhere = outage.map((f) => ({ ...f, server: 's2' }));
  assert.deepEqual(rules(checkHistory({ ...run, bucket, events: [...elsewhere, ...run.events] })), ['async-loss-unbounded']);
});

test('an id the new leader gives again after an async failover lost its first record is a violation (issue 50: positions jump instead)', () => {
  const run = goodRun('async');
  // s1 acknowledged msg_…5 just before the failover and lost it (within the bound); a new leader
  // (its epoch record at seq 4) that gave msg_…5 to another writer's message names two records.
  const lost = message(5, 'c7', 'lost with s1', T0 + 3980);
  const other = { ...message(5, 'c8', 'another writer', T0 + 8500), authorId: 'ag_9' };
  const bucket = parseBucket(bucketOf([run.records[0], run.records[1], run.records[2], epochRecord(2, 's2', T0 + 8000), messageRecord(other)]));
  const entries = [run.entries[0], ack(lost, 's1', T0 + 3950, T0 + 3990), ack(other, 's2', T0 + 8400, T0 + 8510, 'writer-2')];
  const r = checkHistory({ ...run, entries, bucket });
  assert.equal(r.asyncLosses.length, 1);
  assert.deepEqual(rules(r), ['id-conflict']);
  assert.equal(r.violations[0].evidence.name, 'id msg_0000000005');
  // The same failover where the new leader's epoch record jumped positions (positionBase): its
  // message is msg_2000000001, and the lost msg_…5 names one record only.
  const jumped = { ...other, id: 'msg_2000000001' };
  const rebased = { ...epochRecord(2, 's2', T0 + 8000) };
  rebased.payload = { ...rebased.payload, positionBase: 2000000000 };
  const bucket2 = parseBucket(bucketOf([run.records[0], run.records[1], run.records[2], rebased, messageRecord(jumped)]));
  const r2 = checkHistory({ ...run, entries: [run.entries[0], ack(lost, 's1', T0 + 3950, T0 + 3990), ack(jumped, 's2', T0 + 8400, T0 + 8510, 'writer-2')], bucket: bucket2 });
  assert.equal(r2.asyncLosses.length, 1, 'the loss itself is still reported');
  assert.deepEqual(rules(r2), []);
});

test('ack-duplicated and ack-mismatch: an acknowledged write is in the bucket once, as the record its answer named', () => {
  const run = goodRun();
  const twice = [...run.records, messageRecord({ ...run.m3, id: 'msg_0000000006' })];
  assert.deepEqual(rules(checkHistory({ ...run, bucket: parseBucket(bucketOf(twice)) })), ['ack-duplicated']);
  const other = [...run.records];
  other[2] = messageRecord({ ...run.m3, content: 'not what was acknowledged' });
  assert.deepEqual(rules(checkHistory({ ...run, bucket: parseBucket(bucketOf(other)) })), ['ack-mismatch']);
});

test('id-conflict: one message id, or one feed position, naming two different records in what clients received', () => {
  const run = goodRun('async');
  const reused = { ...message(5, 'c9', 'someone else', T0 + 9100), authorId: 'ag_7' };
  const entries = [...run.entries, { client: 'reader-2', server: 's3', op: 'changes', start: T0 + 9700, end: T0 + 9800, status: 200, body: compactPage({ cursor: { originId: ORIGIN, after: 5 }, events: [{ seq: 5, kind: 'message', message: reused }] }) }];
  const r = checkHistory({ ...run, entries });
  assert.deepEqual(rules(r).sort(), ['id-conflict', 'id-conflict']);
  assert.deepEqual(r.violations.map((v) => v.evidence.name).sort(), ['id msg_0000000005', `position ${ORIGIN}:5 (changes)`]);
});

test('epoch-two-writers: fresh writes of one epoch acknowledged by a server that did not take it', () => {
  const run = goodRun();
  const m4 = message(4, 'c3', 'three', T0 + 200);
  const records = [...run.records.slice(0, 3), messageRecord(m4), epochRecord(2, 's2', T0 + 8000), messageRecord({ ...run.m5, id: 'msg_0000000006' })];
  const m5 = { ...run.m5, id: 'msg_0000000006' };
  const entries = [run.entries[0], ack(m4, 's2', T0 + 190, T0 + 250, 'writer-2'), ack(m5, 's2', T0 + 8990, T0 + 9050)];
  const r = checkHistory({ ...run, entries, bucket: parseBucket(bucketOf(records)) });
  assert.deepEqual(rules(r), ['epoch-two-writers']);
  assert.deepEqual(r.violations[0].evidence.servers.sort(), ['s1', 's2']);
  // A replay (the answer's record was created before the request) is not a fresh commit.
  const replay = [run.entries[0], ack(m4, 's2', T0 + 300, T0 + 350, 'writer-2'), ack(m5, 's2', T0 + 8990, T0 + 9050)];
  assert.deepEqual(rules(checkHistory({ ...run, entries: replay, bucket: parseBucket(bucketOf(records)) })), []);
});

test('no-recovery: no write acknowledged within the bound after a fault ended', () => {
  const run = goodRun();
  const r = checkHistory({ ...run, bounds: { recoveryBoundMs: 500 } });
  assert.deepEqual(rules(r), ['no-recovery']);
  assert.equal(r.violations[0].evidence.nextAckAfterMs, 1050);
  // A fault that starts within the bound of the one before is judged with it, after the last one ends.
  const overlapped = [...run.events, { t: T0 + 8200, kind: 'fault', id: 2, fault: 'proxy:slowDown', server: 's2', start: T0 + 8200, end: T0 + 8300 }];
  const joined = checkHistory({ ...run, events: overlapped, bounds: { recoveryBoundMs: 500 } });
  assert.deepEqual(rules(joined), ['no-recovery']);
  assert.deepEqual(joined.violations[0].evidence.faults, ['1 failover on s1', '2 proxy:slowDown on s2']);
  assert.equal(joined.violations[0].evidence.nextAckAfterMs, 750);
  assert.deepEqual(rules(checkHistory({ ...run, events: overlapped, bounds: { recoveryBoundMs: 800 } })), [], 'an ack 0.75 s after the second fault is within 0.8 s');
  // A window past the end of the load is not judged.
  assert.equal(checkHistory({ ...run, bounds: { recoveryBoundMs: 15_000 } }).counts.recoveryChecked, 0);
});

test('crash: a server that exited without the schedule signalling it', () => {
  const run = goodRun();
  const events = [...run.events, { t: T0 + 6000, kind: 'exit', server: 's3', pid: 300, code: 1, signal: null, stderr: 'TypeError [ERR_INVALID_CHAR]' }];
  const r = checkHistory({ ...run, events });
  assert.deepEqual(rules(r), ['crash']);
  assert.match(r.violations[0].evidence.stderr, /ERR_INVALID_CHAR/);
});

test('promote-bound: a promotion that never answered, or answered past the bound; a refusal in time is an answer', () => {
  const run = goodRun();
  const events = [...run.events, { t: T0 + 7000, kind: 'promote', server: 's2', ok: false, status: 0, ms: 15_000, answer: 'timeout' }, { t: T0 + 7500, kind: 'promote', server: 's3', ok: false, status: 409, ms: 300, answer: { error: 'lost the race' } }];
  const r = checkHistory({ ...run, events });
  assert.deepEqual(rules(r), ['promote-bound']);
  assert.equal(r.violations[0].evidence.server, 's2');
});

test('end-state: the forum ends with exactly one leader and no stopped follower', () => {
  const run = goodRun();
  const final = (server, role, state) => ({ t: T0 + 19_000, kind: 'final-status', server, role, state, lastError: null });
  assert.deepEqual(rules(checkHistory({ ...run, events: [...run.events, final('s2', 'leader', 'leading'), final('s3', 'follower', 'following')] })), []);
  const none = checkHistory({ ...run, events: [...run.events, final('s2', 'follower', 'stopped'), final('s3', 'follower', 'following')] });
  assert.deepEqual(rules(none), ['end-state', 'end-state']);
  assert.match(none.violations[0].evidence.problem, /0 servers lead/);
  assert.match(none.violations[1].evidence.problem, /follower s2 stopped/);
});

test('client logs are JSONL; a torn last line (a killed writer) is skipped, a torn middle line is an error', () => {
  assert.deepEqual(parseJsonl('{"a":1}\n\n{"b":2}\n{"c"'), [{ a: 1 }, { b: 2 }]);
  assert.throws(() => parseJsonl('{"a":1}\n{"b"\n{"c":3}\n'), /line 2 is not JSON/);
});
