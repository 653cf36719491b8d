/**
 * Replication settings, header safety, messages and the split-brain guards (issue 50), black box:
 * the built server and CLI as real processes; the replication cases on a real object store
 * (Ceph RGW in CI), the async-loss case behind the fault proxy (test/helpers/s3-proxy.mjs).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { loadConfig } from '../../dist/config.js';
import { urlHeaderValue } from '../../dist/header-value.js';
import { readSigningKey } from '../../dist/store/replica/keys.js';
import { decodeManifest, encodeManifest } from '../../dist/store/replica/format.js';
import { cli, logText, startServer, tempDir, SERVER_JS } from '../helpers/server.mjs';
import { ok } from '../helpers/reads.mjs';
import { promoteOverChannel, replicaTarget, replicationStatus, waitFor } from '../helpers/replica.mjs';

const IDN_URL = 'https://форум.example';
const IDN_ASCII = 'https://xn--l1adgmc.example';

/** Starts the server expecting it to refuse: resolves to { code, stderr } (the log's messages). */
function refusedStart(t, env, dataDir = tempDir(t)) {
  const r = spawnSync(process.execPath, [SERVER_JS], { env: { ...process.env, PORT: '0', HOST: '127.0.0.1', FORUM_DATA_DIR: dataDir, ...env }, encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, stderr: logText(r.stderr), raw: r.stderr + r.stdout };
}

const promote = promoteOverChannel;

const status = replicationStatus;

/** Waits until the leader has shipped every durable record; resolves to its shipped seq. */
const shipped = (leader) => waitFor(async () => {
  const s = await status(leader);
  return s.lag.records === 0 && s.state === 'leading' ? s.shippedSeq : null;
}, 15_000, 'the leader to ship everything');

/** Starts a follower of `target` on a fresh folder. */
const follower = (t, target, env = {}) => startServer(t, { dataDir: tempDir(t, 'forum-follower-'), env: { ...target.storeEnv, FORUM_FOLLOW: target.url, FORUM_FOLLOW_POLL_MS: '50', ...env } });

test('FORUM_REPLICA_SHIP_MS, FORUM_REPLICA_ACK_TIMEOUT_MS and FORUM_FOLLOW_POLL_MS outside their range or not integers refuse the start, naming the variable and the range', (t) => {
  const cases = [
    ['FORUM_REPLICA_SHIP_MS', { FORUM_REPLICA_URL: 's3://some-bucket/x' }, 'from 10 to 60000'],
    ['FORUM_REPLICA_ACK_TIMEOUT_MS', { FORUM_REPLICA_URL: 's3://some-bucket/x', FORUM_REPLICA_MODE: 'sync' }, 'from 100 to 600000'],
    ['FORUM_FOLLOW_POLL_MS', { FORUM_FOLLOW: 's3://some-bucket/x' }, 'from 10 to 60000'],
  ];
  for (const [name, base, range] of cases) {
    for (const value of ['0', '100000000000000', 'soon']) {
      const r = refusedStart(t, { ...base, [name]: value });
      assert.equal(r.code, 1, `${name}=${value}: ${r.stderr}`);
      assert.match(r.stderr, new RegExp(`${name} must be an integer number of milliseconds ${range}`), `${name}=${value}`);
    }
  }
});

test('the interval bounds themselves are accepted', () => {
  const lo = loadConfig({ FORUM_REPLICA_URL: 's3://some-bucket/x', FORUM_REPLICA_SHIP_MS: '10', FORUM_REPLICA_ACK_TIMEOUT_MS: '100' });
  assert.deepEqual([lo.replica.shipIntervalMs, lo.replica.ackTimeoutMs], [10, 100]);
  const hi = loadConfig({ FORUM_FOLLOW: 's3://some-bucket/x', FORUM_REPLICA_SHIP_MS: '60000', FORUM_REPLICA_ACK_TIMEOUT_MS: '600000', FORUM_FOLLOW_POLL_MS: '60000' });
  assert.deepEqual([hi.replica.shipIntervalMs, hi.replica.ackTimeoutMs, hi.follow.pollMs], [60000, 600000, 60000]);
});

test('a replica URL holding credentials is refused without echoing them (server start and CLI)', async (t) => {
  for (const [name, url] of [
    ['FORUM_REPLICA_URL', 's3://AKIAKEY:S3CR3TVALUE@bucket/x'],
    ['FORUM_REPLICA_URL', 'http://AKIAKEY:S3CR3TVALUE@bucket.example/x'],
    ['FORUM_FOLLOW', 's3://some-bucket/AKIAKEY:S3CR3TVALUE@x'],
    ['FORUM_REPLICA_URL', 'https://s3.example/bucket?X-Amz-Credential=S3CR3TVALUE'],
  ]) {
    const r = refusedStart(t, { [name]: url });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, new RegExp(`${name}: a replica URL must be s3://BUCKET`));
    assert.doesNotMatch(r.raw, /S3CR3TVALUE/, `${name}=${url} was echoed`);
  }
  for (const args of [['restore', '--from', 's3://AKIAKEY:S3CR3TVALUE@bucket/x', '--yes'], ['replication', 'lost', '--from', 's3://AKIAKEY:S3CR3TVALUE@bucket/x']]) {
    const r = await cli(['--data-dir', tempDir(t), ...args]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /--from: a replica URL must be s3:\/\/BUCKET/);
    assert.doesNotMatch(r.stderr + r.stdout, /S3CR3TVALUE/);
  }
});

test('an IDN FORUM_PUBLIC_URL is published in its ASCII (punycode) form; control characters in it refuse the start', async (t) => {
  const s = await startServer(t, { env: { FORUM_PUBLIC_URL: `${IDN_URL}/` } });
  const card = await s.get('/.well-known/agent-card.json');
  assert.equal(card.status, 200);
  const text = JSON.stringify(card.body);
  assert.ok(text.includes(IDN_ASCII), text.slice(0, 300));
  assert.ok(!text.includes('форум'));
  const r = refusedStart(t, { FORUM_PUBLIC_URL: 'https://forum.example/\r\nX-Injected: 1' });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /FORUM_PUBLIC_URL must not hold control characters/);
});

test('urlHeaderValue: punycode for an IDN host, null for CR/LF, non-http(s) or non-URL text, never a throw', () => {
  assert.equal(urlHeaderValue(IDN_URL), IDN_ASCII);
  assert.equal(urlHeaderValue('https://forum.example/base'), 'https://forum.example/base');
  for (const bad of ['http://a.example\r\nSet-Cookie: x=1', 'http://a.example/\n', 'javascript:alert(1)', 'not a url', '', 'ftp://a.example', 'http://u:p@a.example', null, 42]) {
    assert.equal(urlHeaderValue(bad), null, JSON.stringify(bad));
  }
});

test('a write to a follower whose leader has an IDN FORUM_PUBLIC_URL gets 503 FOLLOWER_READ_ONLY with X-Forum-Leader in punycode, and the follower stays up', async (t) => {
  const target = await replicaTarget(t, { env: { FORUM_PUBLIC_URL: IDN_URL, FORUM_REPLICA_SHIP_MS: '50' } });
  if (target === null) return;
  const leader = await startServer(t, { env: target.serverEnv });
  const a = await leader.register('writer');
  await shipped(leader);
  const f = await follower(t, target, { FORUM_PUBLIC_URL: 'https://follower-ü.example' });
  for (let i = 0; i < 3; i++) {
    const w = await f.post('/api/topics', { title: 'refused' }, a.token);
    assert.equal(w.status, 503);
    assert.equal(w.body.code, 'FOLLOWER_READ_ONLY');
    assert.equal(w.headers['x-forum-leader'], IDN_ASCII);
  }
  const st = await f.get('/api/status');
  assert.equal(st.status, 200);
  assert.equal(st.body.replication.role, 'follower');
  assert.equal(st.body.replication.leaderUrl, IDN_ASCII);
  assert.equal(f.proc.exitCode, null);
});

test('a manifest whose leaderUrl holds CR/LF: the follower answers writes 503 without X-Forum-Leader, shows the text escaped, and stays up', async (t) => {
  const target = await replicaTarget(t, { env: { FORUM_REPLICA_SHIP_MS: '50' } });
  if (target === null) return;
  const leader = await startServer(t, { env: target.serverEnv });
  const a = await leader.register('writer');
  await shipped(leader);
  await leader.stop();
  const { client, bucket } = target.store;
  const key = `${target.prefix}/manifest.json`;
  const got = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  // Signed with the replica key (the bucket authenticates itself, issue 50): what a holder of the
  // key — a leader started with a bad FORUM_PUBLIC_URL — could publish; the follower must still
  // keep it out of every header.
  const signing = readSigningKey(target.keys.signingKeyPath);
  const manifest = decodeManifest(Buffer.from(await got.Body.transformToByteArray()), key, signing);
  const planted = 'http://evil.example\r\nSet-Cookie: session=stolen';
  await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: encodeManifest({ ...manifest, leaderUrl: planted }, signing) }));
  const f = await follower(t, target);
  for (let i = 0; i < 3; i++) {
    const w = await f.post('/api/topics', { title: 'refused' }, a.token);
    assert.equal(w.status, 503);
    assert.equal(w.body.code, 'FOLLOWER_READ_ONLY');
    assert.equal(w.headers['x-forum-leader'], undefined);
    assert.equal(w.headers['set-cookie'], undefined);
    assert.ok(w.body.error.includes(JSON.stringify(planted)), w.body.error);
  }
  const st = await f.get('/api/status');
  assert.equal(st.status, 200);
  assert.equal(st.body.replication.leaderUrl, planted);
  assert.equal(f.proc.exitCode, null);
});

test('a folder that led a bucket refuses to start without FORUM_REPLICA_URL until `replication detach --yes`; then it takes writes, and a start with the setting replicates again', async (t) => {
  const target = await replicaTarget(t, { env: { FORUM_REPLICA_SHIP_MS: '50' } });
  if (target === null) return;
  const dataDir = tempDir(t, 'forum-old-leader-');
  const leader = await startServer(t, { dataDir, env: target.serverEnv });
  const a = await leader.register('writer');
  await ok(leader.post('/api/topics', { title: 'shipped' }, a.token), 201);
  await shipped(leader);
  await leader.stop();

  const refused = refusedStart(t, target.storeEnv, dataDir);
  assert.equal(refused.code, 1, refused.stderr);
  assert.ok(refused.stderr.includes(target.url), refused.stderr);
  assert.match(refused.stderr, /split brain/);
  assert.match(refused.stderr, /replication detach --yes/);

  const unconfirmed = await cli(['--data-dir', dataDir, 'replication', 'detach']);
  assert.equal(unconfirmed.code, 2, unconfirmed.stderr);
  assert.equal(refusedStart(t, target.storeEnv, dataDir).code, 1, 'detach without --yes changed nothing');

  const detached = await cli(['--data-dir', dataDir, 'replication', 'detach', '--yes']);
  assert.equal(detached.code, 0, detached.stderr);
  assert.equal(detached.json.detached, true);
  assert.equal(detached.json.url, target.url);

  const alone = await startServer(t, { dataDir, env: target.storeEnv });
  await ok(alone.post('/api/topics', { title: 'after detach' }, a.token), 201);
  await alone.stop();

  const again = await startServer(t, { dataDir, env: target.serverEnv });
  assert.equal((await shipped(again)) > 0, true);
  await again.stop();
  // The bucket held nothing beyond this folder: no "took back records N..N-1 (0)" line.
  assert.doesNotMatch(logText(again.stdout + again.stderr), /took back records/);
  assert.equal(refusedStart(t, target.storeEnv, dataDir).code, 1, 'leading again re-arms the guard');
});

test('`replication promote` on a follower that stopped on an object that does not prove answers 400 saying why and what to do, and the follower stays up', async (t) => {
  const target = await replicaTarget(t, { env: { FORUM_REPLICA_SHIP_MS: '50' } });
  if (target === null) return;
  const leader = await startServer(t, { env: target.serverEnv });
  const a = await leader.register('writer');
  const head = await shipped(leader);
  const f = await follower(t, target);
  await waitFor(async () => (await status(f)).appliedSeq >= head, 10_000, 'the follower to catch up');
  await leader.stop();
  // A chunk at the next key whose line does not prove.
  const header = { format: 'agent-forum-chunk-v1', originId: JSON.parse(readFileSync(join(f.dataDir, 'meta.json'), 'utf8')).originId, epoch: 1, writer: 'x', firstSeq: head + 1, lastSeq: head + 1, prevHash: '0'.repeat(64), segment: 1, offset: 0 };
  const { client, bucket } = target.store;
  await client.send(new PutObjectCommand({ Bucket: bucket, Key: `${target.prefix}/chunks/${String(head + 1).padStart(16, '0')}`, Body: `${JSON.stringify(header)}\n{"not":"a record"}\n` }));
  await waitFor(async () => (await status(f)).state === 'stopped', 15_000, 'the follower to stop on the bad chunk');
  const r = await promote(f);
  assert.equal(r.status, 400, JSON.stringify(r.body));
  assert.equal(r.body.code, 'UNSUPPORTED_OPERATION');
  assert.match(r.body.error, new RegExp(`cannot be promoted: it stopped applying .* after record ${head}`));
  assert.match(r.body.error, /Promote a follower whose `replication status` says "following"/);
  assert.equal((await f.get('/api/status')).status, 200);
  assert.equal(f.proc.exitCode, null);
});

test('a fenced leader says so on /api/status: writeStop true and replication.state fenced', async (t) => {
  const target = await replicaTarget(t, { env: { FORUM_REPLICA_SHIP_MS: '50' } });
  if (target === null) return;
  const leader = await startServer(t, { env: target.serverEnv });
  const a = await leader.register('writer');
  const before = await leader.get('/api/status');
  assert.deepEqual([before.body.writeStop, before.body.replication.role, before.body.replication.state], [false, 'leader', 'leading']);
  const head = await shipped(leader);
  const f = await follower(t, target, { FORUM_REPLICA_SHIP_MS: '50', FORUM_PUBLIC_URL: 'http://new-leader.example' });
  await waitFor(async () => (await status(f)).appliedSeq >= head, 10_000, 'the follower to catch up');
  assert.equal((await promote(f)).status, 200);
  // The old leader learns it lost at its next chunk.
  await leader.post('/api/topics', { title: 'after the takeover' }, a.token);
  await waitFor(async () => (await leader.get('/api/status')).body.replication.state === 'fenced', 15_000, 'the old leader to be fenced');
  const st = (await leader.get('/api/status')).body;
  assert.equal(st.writeStop, true);
  assert.equal(st.replication.role, 'leader');
  assert.equal(st.replication.leaderUrl, 'http://new-leader.example', 'it names the leader that fenced it, not itself');
  assert.equal(leader.proc.exitCode, null);
});

test('`replication lost` on an async leader\'s folder after a failover lists exactly the acknowledged writes the bucket never got, with their clientIds, as a replay file', async (t) => {
  const target = await replicaTarget(t, { proxy: true, env: { FORUM_REPLICA_SHIP_MS: '50' } });
  if (target === null) return;
  const dataDir = tempDir(t, 'forum-old-leader-');
  const leader = await startServer(t, { dataDir, env: target.serverEnv });
  const a = await leader.register('writer');
  const topic = await ok(leader.post('/api/topics', { title: 'before' }, a.token), 201);
  await ok(leader.post('/api/messages', { topicId: topic.id, content: 'shipped', clientId: 'kept-1' }, a.token), 201);
  const head = await shipped(leader);
  const f = await follower(t, target, { FORUM_REPLICA_SHIP_MS: '50' });
  await waitFor(async () => (await status(f)).appliedSeq >= head, 10_000, 'the follower to catch up');
  target.proxy.setMode('down');
  const lostIds = [];
  for (let i = 0; i < 4; i++) {
    const m = await ok(leader.post('/api/messages', { topicId: topic.id, content: `acknowledged ${i}`, clientId: `lost-${i}` }, a.token), 201);
    lostIds.push(m.id);
  }
  assert.equal((await promote(f)).status, 200);
  await leader.stop();
  const out = join(tempDir(t, 'forum-lost-'), 'lost.jsonl');
  const r = await cli(['--data-dir', dataDir, 'replication', 'lost', '--from', target.url, '--out', out], target.storeEnv);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.json.agreeThrough, head);
  assert.equal(r.json.lost, 4);
  assert.deepEqual(r.json.replayable.map((x) => [x.type, x.agentId, x.clientId]), [0, 1, 2, 3].map((i) => ['message.create', a.id, `lost-${i}`]));
  assert.deepEqual(r.json.notReplayable, []);
  const lines = readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(lines.map((l) => [l.method, l.path, l.body.clientId, l.body.content, l.body.topicId, l.idempotent]), [0, 1, 2, 3].map((i) => ['POST', '/api/messages', `lost-${i}`, `acknowledged ${i}`, topic.id, true]));
  // A replay against the new leader posts each once (clientIds kept).
  for (const l of [...lines, ...lines]) assert.equal((await f.post(l.path, l.body, a.token)).status, 201);
  const msgs = (await f.get(`/api/messages?topicId=${topic.id}&limit=100`, a.token)).body;
  const contents = (msgs.messages ?? msgs.items ?? msgs).map((m) => m.content);
  for (let i = 0; i < 4; i++) assert.equal(contents.filter((c) => c === `acknowledged ${i}`).length, 1);
});
