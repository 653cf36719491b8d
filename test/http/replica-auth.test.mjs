/**
 * The bucket authenticates itself (issue 50 High 3;
 * docs/operate/replication.md#keys-and-the-threat-model), black box on a real object store: with only write access to the bucket, an attacker
 * appends a chunk at head+1 that links to the real head and "proves" an `agent.register` record
 * with role operator. Followers, `restore --from` and a restarting leader refuse it, because it is
 * not signed by the replica key; a follower with the wrong public key refuses to start; a follower
 * with only the public key follows and never writes; and the signed head watermark makes a holed
 * or rolled-back bucket loud, naming the missing object.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { DeleteObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import stableStringify from 'fast-json-stable-stringify';
import { decideOperator } from '../../dist/domain/agents/agents.js';
import { encodeRecordLine, recordJson } from '../../dist/store/record-format.js';
import { encodeChunk, lastHashOf } from '../../dist/store/replica/format.js';
import { ReplicaKey } from '../../dist/store/replica/keys.js';
import { cli, startServer, tempDir } from '../helpers/server.mjs';
import { ok } from '../helpers/reads.mjs';
import { bucketObjects, followersCaughtUp, replicaTarget, replicationStatus, restoreFrom, segmentFiles, waitFor } from '../helpers/replica.mjs';

const status = replicationStatus;

/** Starts a follower of `target` on a fresh folder with `env` (default: the standby's keys). */
function follower(t, target, env = target.storeEnv) {
  return startServer(t, { dataDir: tempDir(t, 'forum-follower-'), env: { ...env, FORUM_FOLLOW: target.url, FORUM_FOLLOW_POLL_MS: '50' } });
}

const caughtUp = followersCaughtUp;

/** The chunks in the bucket, in key order: [{ key, header, lines }]. */
async function chunks(target) {
  return (await bucketObjects(target))
    .filter((o) => o.key.startsWith('chunks/'))
    .map((o) => {
      const nl = o.body.indexOf(10);
      return { key: o.key, header: JSON.parse(o.body.toString('utf8', 0, nl)), lines: o.body.subarray(nl + 1) };
    });
}

/**
 * What an attacker with bucket write access (and no replica key) can build: a chunk at head+1
 * whose `prevHash` is the real head's hash and whose one line is an `agent.register` record with
 * role operator and a token the attacker knows, chained correctly, in the v2 format — signed with
 * the attacker's own Ed25519 key. Output: { key, token } (the object's name, the forged token).
 */
async function forgeOperatorChunk(target) {
  const all = await chunks(target);
  const last = all.at(-1);
  const seq = last.header.lastSeq + 1;
  const prevHash = lastHashOf(last.lines);
  const { payload, token } = decideOperator('intruder', { position: seq, created: new Date().toISOString() });
  const { line } = encodeRecordLine(prevHash, recordJson(stableStringify(payload), seq, new Date().toISOString(), 'agent.register'));
  const attacker = ReplicaKey.fromPrivate(generateKeyPairSync('ed25519').privateKey);
  const header = { ...last.header, firstSeq: seq, lastSeq: seq, prevHash, offset: last.header.offset + last.lines.length };
  const key = `chunks/${String(seq).padStart(16, '0')}`;
  await target.store.client.send(new PutObjectCommand({ Bucket: target.store.bucket, Key: `${target.prefix}/${key}`, Body: encodeChunk(header, line, attacker) }));
  return { key, token, seq };
}

/** Deletes one object of the target's prefix. */
async function deleteObject(target, key) {
  await target.store.client.send(new DeleteObjectCommand({ Bucket: target.store.bucket, Key: `${target.prefix}/${key}` }));
}

test('a forged operator record at head+1, linked to the real head, is refused by a follower (it stays up, stopped, naming the object), by restore --from and by the restarting leader', async (t) => {
  const target = await replicaTarget(t, { mode: 'sync' });
  if (target === null) return;
  const leader = await startServer(t, { env: target.serverEnv });
  const a = await leader.register('writer');
  const topic = await ok(leader.post('/api/topics', { title: 'authentic' }, a.token), 201);
  await ok(leader.post('/api/messages', { topicId: topic.id, content: 'genuine', clientId: 'g1' }, a.token), 201);
  const f = await follower(t, target);
  const head = await caughtUp(leader, [f]);
  await leader.stop();
  const leaderLog = segmentFiles(leader.dataDir);

  const forged = await forgeOperatorChunk(target);
  assert.equal(forged.seq, head + 1);
  // The follower: stopped, the object named, nothing applied, still serving what it proved.
  const stopped = await waitFor(async () => {
    const s = await status(f);
    return s.state === 'stopped' ? s : null;
  }, 10_000, 'the follower to stop on the forged chunk');
  assert.ok(stopped.lastError.includes(forged.key), stopped.lastError);
  assert.match(stopped.lastError, new RegExp(`not signed by the replica key ${target.keys.publicKey}`));
  assert.equal(stopped.appliedSeq, head);
  assert.equal((await f.get('/api/status')).status, 200, 'the follower stays up');
  assert.equal((await f.get('/api/topics', forged.token)).status, 401, 'the forged operator token is unknown to the follower');
  assert.ok(!Object.values(segmentFiles(f.dataDir)).some((b) => b.includes('intruder')));

  // restore --from: refused, naming the object; the target folder is not given an archive.
  const { run } = await restoreFrom(t, target);
  assert.notEqual(run.code, 0);
  assert.ok(run.stderr.includes(forged.key), run.stderr);
  assert.match(run.stderr, /not signed by the replica key ed25519:/);

  // The leader's restart: it refuses to start, names the object, and takes nothing back.
  await assert.rejects(startServer(t, { dataDir: leader.dataDir, env: target.serverEnv }), (err) => {
    assert.ok(err.message.includes(forged.key), err.message);
    assert.match(err.message, /not signed by the replica key/);
    return true;
  });
  assert.deepEqual(segmentFiles(leader.dataDir), leaderLog, "the leader's log is unchanged");
});

test('a follower started with another public key refuses to start, naming the key; one with a malformed key is refused with the rule', async (t) => {
  const target = await replicaTarget(t, { mode: 'sync' });
  if (target === null) return;
  const leader = await startServer(t, { env: target.serverEnv });
  await leader.register('writer');
  const other = `ed25519:${generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x}`;
  await assert.rejects(follower(t, target, { ...target.readerEnv, FORUM_REPLICA_PUBLIC_KEY: other }), (err) => {
    assert.ok(err.message.includes(`not by the replica key ${other}`), err.message);
    return true;
  });
  await assert.rejects(follower(t, target, { ...target.readerEnv, FORUM_REPLICA_PUBLIC_KEY: 'ed25519:short' }), /FORUM_REPLICA_PUBLIC_KEY: a replica public key is ed25519: followed by the base64url/);
  await assert.rejects(follower(t, target, { ...target.readerEnv, FORUM_REPLICA_PUBLIC_KEY: '' }), /FORUM_REPLICA_PUBLIC_KEY=ed25519:/);
  // A follower whose signing key file is not the public key's pair is refused too.
  await assert.rejects(follower(t, target, { ...target.storeEnv, FORUM_REPLICA_PUBLIC_KEY: other }), /must be one key pair/);
  // restore --from with another key: refused, nothing restored.
  const dir = tempDir(t, 'forum-restored-');
  const wrong = await cli(['--data-dir', dir, 'restore', '--from', target.url, '--yes', '--public-key', other], target.readerEnv);
  assert.notEqual(wrong.code, 0);
  assert.ok(wrong.stderr.includes(`not by the replica key ${other}`), wrong.stderr);
  const right = await cli(['--data-dir', dir, 'restore', '--from', target.url, '--yes', '--public-key', target.keys.publicKey], target.readerEnv);
  assert.equal(right.code, 0, right.stderr);
});

test('a follower with only the public key follows, makes no write request to the bucket, and cannot be promoted; the leader prints the key', async (t) => {
  const target = await replicaTarget(t, { mode: 'async', env: { FORUM_REPLICA_SHIP_MS: '20' } });
  if (target === null) return;
  const leader = await startServer(t, { env: target.serverEnv });
  const ls = await status(leader);
  assert.equal(ls.publicKey, target.keys.publicKey, 'replication status shows the public key');
  assert.ok((leader.stdout + leader.stderr).includes(target.keys.publicKey), 'the start log line names the public key');
  const a = await leader.register('writer');
  const topic = await ok(leader.post('/api/topics', { title: 'read-only' }, a.token), 201);
  const f = await follower(t, target, target.readerEnv);
  for (let i = 0; i < 5; i++) await ok(leader.post('/api/messages', { topicId: topic.id, content: `m${i}`, clientId: `m${i}` }, a.token), 201);
  await caughtUp(leader, [f]);
  const fs = await status(f);
  assert.equal(fs.state, 'following');
  assert.equal(fs.publicKey, target.keys.publicKey);
  assert.equal(fs.requests.puts, 0, 'no PUT');
  assert.equal(fs.requests.deletes, 0, 'no DELETE');
  assert.equal((await ok(f.get(`/api/messages?topicId=${topic.id}`, a.token))).messages.length, 5);
  const r = await f.cli('replication', 'promote');
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /no replica signing key/);
  assert.equal((await status(f)).state, 'following', 'it stays a follower');
});

test('the signed head watermark: a deleted middle chunk and a deleted newest chunk are named by followers and restore; a restarting leader re-ships the rolled-back tail', async (t) => {
  const target = await replicaTarget(t, { mode: 'sync' });
  if (target === null) return;
  const leader = await startServer(t, { env: target.serverEnv });
  const a = await leader.register('writer');
  const topic = await ok(leader.post('/api/topics', { title: 'holes' }, a.token), 201);
  const early = await follower(t, target);
  const earlyHead = await caughtUp(leader, [early]);
  await early.stop();
  for (let i = 0; i < 6; i++) await ok(leader.post('/api/messages', { topicId: topic.id, content: `m${i}`, clientId: `m${i}` }, a.token), 201);
  await leader.stop(); // a clean stop raises the watermark to the head
  const all = await chunks(target);
  const head = all.at(-1).header.lastSeq;
  const middle = all.at(-3);
  assert.ok(middle.header.firstSeq > earlyHead, 'the early follower is behind the middle chunk');

  // A chunk deleted in the middle: restore and a new follower name it; so does a follower behind it.
  await deleteObject(target, middle.key);
  const holed = await restoreFrom(t, target);
  assert.notEqual(holed.run.code, 0);
  assert.ok(holed.run.stderr.includes(middle.key), holed.run.stderr);
  assert.match(holed.run.stderr, /holed or rolled back/);
  await assert.rejects(follower(t, target), (err) => err.message.includes(middle.key));
  const behind = await startServer(t, { dataDir: early.dataDir, env: { ...target.storeEnv, FORUM_FOLLOW: target.url, FORUM_FOLLOW_POLL_MS: '20' } });
  const stopped = await waitFor(async () => {
    const s = await status(behind);
    return s.state === 'stopped' ? s : null;
  }, 20_000, 'the follower behind the hole to stop');
  assert.ok(stopped.lastError.includes(middle.key), stopped.lastError);
  assert.equal(stopped.appliedSeq, middle.header.firstSeq - 1);
  await behind.stop();
  // Put it back: the bucket is whole again.
  await target.store.client.send(new PutObjectCommand({ Bucket: target.store.bucket, Key: `${target.prefix}/${middle.key}`, Body: Buffer.concat([Buffer.from(`${stableStringify(middle.header)}\n`), middle.lines]) }));
  assert.equal((await restoreFrom(t, target)).run.code, 0);

  // The newest chunk deleted (a rollback): restore names it instead of restoring a shorter log as the same lineage.
  const newest = all.at(-1);
  await deleteObject(target, newest.key);
  const rolled = await restoreFrom(t, target);
  assert.notEqual(rolled.run.code, 0);
  assert.ok(rolled.run.stderr.includes(newest.key), rolled.run.stderr);
  // The leader's restart names it and re-ships it from its own log; then restore succeeds to the head.
  const again = await startServer(t, { dataDir: leader.dataDir, env: target.serverEnv });
  assert.ok((again.stdout + again.stderr).includes(newest.key), 'the leader names the missing chunk');
  await again.stop();
  const whole = await restoreFrom(t, target);
  assert.equal(whole.run.code, 0, whole.run.stderr);
  assert.ok(whole.result.lastSeq > head);
  assert.equal(whole.result.sameLineage, true);
});

/** Rewrites the target's bucket as a v1 (unsigned, pre-issue-50) bucket would hold it. */
async function downgradeToV1(target) {
  for (const o of await bucketObjects(target)) {
    let body;
    if (o.key === 'manifest.json') {
      const { keyId: _k, sig: _s, head: _h, ...m } = JSON.parse(o.body.toString('utf8'));
      body = Buffer.from(`${JSON.stringify({ ...m, format: 'agent-forum-replica-v1', segments: m.segments.map(({ sha256: _d, ...s }) => s) }, null, 1)}\n`);
    } else if (o.key.startsWith('chunks/')) {
      const nl = o.body.indexOf(10);
      const { linesSha256: _d, sig: _s, ...h } = JSON.parse(o.body.toString('utf8', 0, nl));
      body = Buffer.concat([Buffer.from(`${stableStringify({ ...h, format: 'agent-forum-chunk-v1' })}\n`), o.body.subarray(nl + 1)]);
    } else continue;
    await target.store.client.send(new PutObjectCommand({ Bucket: target.store.bucket, Key: `${target.prefix}/${o.key}`, Body: body }));
  }
}

test('a v1 (unsigned) bucket: followers and restore refuse it, saying to start the leader once; the leader refuses unsigned records beyond its log, then signs the bucket', async (t) => {
  const target = await replicaTarget(t, { mode: 'sync' });
  if (target === null) return;
  const leader = await startServer(t, { env: target.serverEnv });
  const a = await leader.register('writer');
  const topic = await ok(leader.post('/api/topics', { title: 'old bucket' }, a.token), 201);
  for (let i = 0; i < 3; i++) await ok(leader.post('/api/messages', { topicId: topic.id, content: `m${i}`, clientId: `m${i}` }, a.token), 201);
  await leader.stop();
  await downgradeToV1(target);

  const refused = await restoreFrom(t, target);
  assert.notEqual(refused.run.code, 0);
  assert.match(refused.run.stderr, /unsigned agent-forum-replica-v1 manifest.*Start the leader once with this version/);
  await assert.rejects(follower(t, target), /unsigned agent-forum-replica-v1 manifest/);

  // An unsigned chunk appended beyond the leader's log: not taken back, the start refused naming it.
  const all = await chunks(target);
  const last = all.at(-1);
  const seq = last.header.lastSeq + 1;
  const prevHash = lastHashOf(last.lines);
  const { payload } = decideOperator('intruder', { position: seq, created: new Date().toISOString() });
  const { line } = encodeRecordLine(prevHash, recordJson(stableStringify(payload), seq, new Date().toISOString(), 'agent.register'));
  const forgedKey = `chunks/${String(seq).padStart(16, '0')}`;
  const forgedHeader = { ...last.header, firstSeq: seq, lastSeq: seq, prevHash, offset: last.header.offset + last.lines.length };
  await target.store.client.send(new PutObjectCommand({ Bucket: target.store.bucket, Key: `${target.prefix}/${forgedKey}`, Body: Buffer.concat([Buffer.from(`${stableStringify(forgedHeader)}\n`), line]) }));
  const before = segmentFiles(leader.dataDir);
  await assert.rejects(startServer(t, { dataDir: leader.dataDir, env: target.serverEnv }), (err) => {
    assert.ok(err.message.includes(forgedKey), err.message);
    assert.match(err.message, /unsigned .* beyond this data folder's log/);
    return true;
  });
  assert.deepEqual(segmentFiles(leader.dataDir), before, 'nothing was taken back');
  await deleteObject(target, forgedKey);

  // The leader signs the bucket; afterwards every object is v2 and a restore with the public key is the same log.
  const signer = await startServer(t, { dataDir: leader.dataDir, env: target.serverEnv });
  assert.match(signer.stdout + signer.stderr, /signed the v1 bucket/);
  await ok(signer.post('/api/messages', { topicId: topic.id, content: 'after signing', clientId: 'after' }, a.token), 201);
  await signer.stop();
  for (const c of await chunks(target)) assert.equal(c.header.format, 'agent-forum-chunk-v2', c.key);
  const { dir, run } = await restoreFrom(t, target);
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(segmentFiles(dir), segmentFiles(leader.dataDir));
});
