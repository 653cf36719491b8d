#!/usr/bin/env node
// Follower catch-up and far-behind promotion over a bucket of many small, uncompacted chunks
// (issue 50, `promote-bound`; docs/operate/replication.md#followers). For each N of --chunks:
//   1. a leader (FORUM_REPLICA_MODE=sync, its own prefix of one bucket) is written to by
//      --writers sequential posters until it has PUT N chunks (small records never fill a 64 MiB
//      segment: before issue 50's REPLICA_SEAL_CHUNKS the bucket then held all N uncompacted;
//      the result shows what it holds: `bucket`), then the writes stop;
//   2. catch-up: a follower started on an empty folder (it restores from the bucket, then tails),
//      timed from its spawn to its appliedSeq reaching the leader's shippedSeq, with its restore's
//      own time (its follower_restored line), when it listened, and its GET/LIST counts;
//   3. lagging promotion: a follower started before the writes and paused (SIGSTOP) while they
//      ran, resumed and at once sent `replication promote` over its admin channel: the take-back
//      of the whole run, timed until it answers;
//   4. fresh promotion: a follower spawned on an empty folder and sent `replication promote` 2 s
//      later (retried until its admin channel opens), timed from the first try until it answers.
//   After each promotion: it leads, holds every record shipped before it, and accepts a write
//   (the run exits 1 otherwise).
// Prints one JSON line per N, and the load average before and after each.
//
// Usage: node scripts/bench/follower-catchup-bench.mjs [--chunks 2000,5000] [--writers 2] [--dist DIR]
//   --dist DIR: the servers run DIR/server.js (another build, e.g. main's, for a before/after
//   figure in one run); default this checkout's dist/.
// Needs the built server (npm run build) and an object store: AWS_ENDPOINT_URL_S3 (with
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION), e.g. `scripts/dev/rgw.sh start DIR PORT`.
// A bucket is created for the run and emptied and deleted at the end; the data folders are
// temp folders, deleted at the end; every server it started is stopped by pid.
import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import { CreateBucketCommand, DeleteBucketCommand, DeleteObjectsCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const { values: args } = parseArgs({ options: { chunks: { type: 'string', default: '2000,5000' }, writers: { type: 'string', default: '2' }, dist: { type: 'string', default: path.join(root, 'dist') } } });
const dist = path.resolve(args.dist);
const { adminSocketPath } = await import(path.join(dist, 'admin', 'socket-path.js'));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const USAGE = 'usage: node scripts/bench/follower-catchup-bench.mjs [--chunks 2000,5000] [--writers 2] [--dist DIR]';

const counts = args.chunks.split(',').map(Number);
const writerCount = Number(args.writers);
if (counts.some((n) => !Number.isSafeInteger(n) || n < 1) || !Number.isSafeInteger(writerCount) || writerCount < 1) {
  console.error(USAGE);
  process.exit(2);
}
if (!process.env.AWS_ENDPOINT_URL_S3) {
  console.error('follower-catchup-bench: set AWS_ENDPOINT_URL_S3 (scripts/dev/rgw.sh start prints it)');
  process.exit(2);
}

const storeEnv = {
  AWS_ENDPOINT_URL_S3: process.env.AWS_ENDPOINT_URL_S3,
  AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? '',
  AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? '',
  AWS_REGION: process.env.AWS_REGION || 'us-east-1',
};
const client = new S3Client({
  endpoint: storeEnv.AWS_ENDPOINT_URL_S3,
  region: storeEnv.AWS_REGION,
  credentials: { accessKeyId: storeEnv.AWS_ACCESS_KEY_ID, secretAccessKey: storeEnv.AWS_SECRET_ACCESS_KEY },
  forcePathStyle: true,
  requestChecksumCalculation: 'WHEN_REQUIRED',
  responseChecksumValidation: 'WHEN_REQUIRED',
});
const bucket = `forum-bench-${process.pid}-${Date.now().toString(36)}`;
const tmp = mkdtempSync(path.join(os.tmpdir(), 'forum-catchup-bench-'));
const servers = [];

/**
 * Starts DIST/server.js on a new folder under tmp; resolves to { url, dir, proc, t0, ms (spawn →
 * listening), restoreMs (a follower's restore, from its log line) }. `wait: false`: resolves at
 * once, with `listening` (a promise of the same, once it listens).
 */
async function startServer(name, env, { wait = true } = {}) {
  const dir = path.join(tmp, name);
  const t0 = performance.now();
  const proc = spawn(process.execPath, [path.join(dist, 'server.js')], {
    env: { ...process.env, ...storeEnv, PORT: '0', HOST: '127.0.0.1', FORUM_DATA_DIR: dir, FORUM_RATE_LIMITS: 'off', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  servers.push(proc);
  let out = '';
  let err = '';
  proc.stderr.on('data', (d) => (err = (err + d).slice(-4000)));
  const handle = { restoreMs: null, stderrTail: () => err };
  const listening = new Promise((resolve, reject) => {
    proc.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      const restored = out.split('\n').find((l) => l.includes('"follower_restored"'));
      if (restored) handle.restoreMs = JSON.parse(restored).ms;
      if (line) resolve(JSON.parse(line).url);
      if (out.length > 100_000) out = out.slice(-10_000);
    });
    proc.once('exit', (code) => reject(new Error(`${name} exited with ${code} before listening: ${err}`)));
  }).then((url) => Object.assign(handle, { url, ms: performance.now() - t0 }));
  Object.assign(handle, { dir, proc, t0, listening });
  if (wait) await listening;
  else listening.catch(() => undefined);
  return handle;
}

/** Stops a server by its pid (SIGTERM, then SIGKILL after 10 s). */
async function stop(proc) {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** One admin-channel command (what the CLI sends); resolves to { status, body }. */
async function admin(s, command) {
  const res = await request(`http://localhost/${command}`, {
    method: 'POST',
    dispatcher: new Agent({ connect: { socketPath: adminSocketPath(s.dir) } }),
    headers: { 'content-type': 'application/json' },
    body: '{}',
  });
  return { status: res.statusCode, body: await res.body.json() };
}

/** `command` sent until the admin channel takes it (it opens once the server has started); resolves to { status, body }. */
async function adminWhenUp(s, command) {
  for (;;) {
    try {
      return await admin(s, command);
    } catch (err) {
      if (!['ENOENT', 'ECONNREFUSED'].includes(err.code)) throw err;
      if (s.proc.exitCode !== null || s.proc.signalCode !== null) throw new Error(`the server exited before it answered ${command}: ${s.stderrTail()}`);
      await sleep(50);
    }
  }
}

async function api(s, method, urlPath, body, token) {
  const headers = { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await fetch(s.url + urlPath, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: await res.json().catch(() => null) };
}

const progress = (what) => process.stderr.write(`follower-catchup-bench: ${what} (load ${load()})\n`);
const load = () => os.loadavg().map((l) => l.toFixed(1)).join(' ');

async function emptyPrefix(prefix) {
  let token;
  do {
    const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: `${prefix}/`, ContinuationToken: token }));
    const keys = (page.Contents ?? []).map((o) => ({ Key: o.Key }));
    if (keys.length > 0) await client.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: keys, Quiet: true } }));
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token !== undefined);
}

let afterCount = 0;

async function leaderStatus(s) {
  return (await admin(s, 'replication.status')).body;
}

/** Promotes `f` and checks it: { ms, status, state, holdsAll (every record `shippedSeq` names), writeAfter (a write's status) }. */
async function promoteAndCheck(f, shippedSeq, topicId, token, { whenUp = false } = {}) {
  const p0 = performance.now();
  const promoted = await (whenUp ? adminWhenUp(f, 'replication.promote') : admin(f, 'replication.promote'));
  const ms = performance.now() - p0;
  const after = await leaderStatus(f);
  await f.listening;
  const write = await api(f, 'POST', '/api/messages', { topicId, content: 'after promote', clientId: `after-${++afterCount}` }, token);
  return { ms: Math.round(ms), status: promoted.status, state: promoted.body.state ?? promoted.body.error, durableAfter: after.durableSeq, holdsAll: after.durableSeq > shippedSeq, writeAfter: write.status };
}

async function runOne(n) {
  const prefix = `p${n}-${Date.now().toString(36)}`;
  const replicaUrl = `s3://${bucket}/${prefix}`;
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const keyPath = path.join(tmp, `${prefix}.pem`);
  writeFileSync(keyPath, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
  const keyEnv = { FORUM_REPLICA_SIGNING_KEY: keyPath, FORUM_REPLICA_PUBLIC_KEY: `ed25519:${publicKey.export({ format: 'jwk' }).x}` };
  const followEnv = { ...keyEnv, FORUM_FOLLOW: replicaUrl, FORUM_REPLICA_MODE: 'sync' };
  const loadBefore = load();
  const leader = await startServer(`${prefix}-leader`, { ...keyEnv, FORUM_REPLICA_URL: replicaUrl, FORUM_REPLICA_MODE: 'sync' });
  const reg = await api(leader, 'POST', '/api/register', { name: 'bench', provider: 'bench', acceptsPublicArchive: true, operatorAuthorized: true });
  const token = reg.body.token;
  const topic = await api(leader, 'POST', '/api/topics', { title: 'catch-up bench' }, token);
  // A follower that falls behind by the whole run: started now, paused while the leader writes.
  const lagging = await startServer(`${prefix}-lagging`, followEnv);
  lagging.proc.kill('SIGSTOP');
  const t0 = performance.now();
  let chunks = 0;
  let sent = 0;
  const done = { v: false };
  const loops = Array.from({ length: writerCount }, (_, w) =>
    (async () => {
      for (let i = 0; !done.v; i++) {
        sent++;
        await api(leader, 'POST', '/api/messages', { topicId: topic.body.id, content: `w${w} ${i}`, clientId: `w${w}-${i}` }, token);
      }
    })(),
  );
  // Written: the leader's PUTs since the writes began (one per chunk in sync mode; a compaction adds a few).
  const putsBefore = (await leaderStatus(leader)).requests.puts;
  let polls = 0;
  while (chunks < n) {
    await sleep(500);
    const ls = await leaderStatus(leader);
    chunks = ls.requests.puts - putsBefore;
    if (++polls % 20 === 0) progress(`${chunks} chunk PUTs, bucket ${ls.chunks} chunks / ${ls.segments} segments, ${sent} writes sent, ${ls.state}`);
  }
  done.v = true;
  await Promise.all(loops);
  progress(`${chunks} chunk PUTs written`);
  const st = await leaderStatus(leader);
  const writeS = (performance.now() - t0) / 1000;

  // 1. Catch-up of a fresh follower (restore, then tailing).
  const f1 = await startServer(`${prefix}-fresh`, followEnv);
  let fs1;
  for (let i = 1; ; i++) {
    fs1 = await leaderStatus(f1);
    if (fs1.appliedSeq >= st.shippedSeq) break;
    if (i % 200 === 0) progress(`fresh follower at ${fs1.appliedSeq} of ${st.shippedSeq} (${fs1.state}${fs1.lastError ? `: ${fs1.lastError}` : ''})`);
    await sleep(50);
  }
  progress('fresh follower caught up');
  const catchUp = { ms: Math.round(performance.now() - f1.t0), listeningMs: Math.round(f1.ms), restoreMs: f1.restoreMs, gets: fs1.requests.gets, lists: fs1.requests.lists };
  await stop(f1.proc);

  // 2. Promotion of the follower that lags by the whole run (resumed, promoted at once): its take-back.
  lagging.proc.kill('SIGCONT');
  const lagBehind = st.shippedSeq - (await leaderStatus(lagging)).appliedSeq;
  const lagPromote = { behind: lagBehind, ...(await promoteAndCheck(lagging, st.shippedSeq, topic.body.id, token)) };
  await stop(lagging.proc);
  progress('lagging follower promoted');
  const st2 = { shippedSeq: lagPromote.durableAfter };

  // 3. Promotion sent 2 s after a fresh follower's spawn (answered once it has started).
  const f2 = await startServer(`${prefix}-fresh2`, followEnv, { wait: false });
  await sleep(Math.max(0, 2000 - (performance.now() - f2.t0)));
  const freshPromote = await promoteAndCheck(f2, st2.shippedSeq, topic.body.id, token, { whenUp: true });
  freshPromote.restoreMs = f2.restoreMs;
  freshPromote.sinceSpawnMs = Math.round(performance.now() - f2.t0);
  const result = { chunksWritten: chunks, bucket: { chunks: st.chunks, segments: st.segments }, records: st.shippedSeq, writeS: Number(writeS.toFixed(1)), sent, catchUp, lagPromote, freshPromote, loadBefore, loadAfter: load() };
  console.log(JSON.stringify(result));
  for (const s of [f2, leader]) await stop(s.proc);
  await emptyPrefix(prefix);
  return result;
}

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, () => {
    for (const p of servers) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
    rmSync(tmp, { recursive: true, force: true });
    process.exit(130);
  });
}
let failed = false;
try {
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  console.log(`follower-catchup-bench: chunks ${counts.join(', ')}; ${writerCount} writer(s); store ${storeEnv.AWS_ENDPOINT_URL_S3}; ${os.cpus().length} cores`);
  for (const n of counts) {
    const r = await runOne(n);
    for (const p of [r.lagPromote, r.freshPromote]) if (p.status !== 200 || !p.holdsAll || p.writeAfter !== 201) failed = true;
  }
} finally {
  for (const p of servers) await stop(p).catch(() => undefined);
  await client.send(new DeleteBucketCommand({ Bucket: bucket })).catch(() => undefined);
  client.destroy();
  rmSync(tmp, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
