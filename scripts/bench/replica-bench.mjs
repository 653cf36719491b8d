#!/usr/bin/env node
// Replication benchmark (issue 35): a section of `npm run bench` (scripts/bench.mjs), run by
// default when an object store can be had, beside ours with no replication, in one run on one
// machine. It measures:
//   1. write throughput (req/s) and latency p50/p99 at 1 and 64 connections for three servers
//      (dist/server.js, each on its own fresh data folder with the same seeding): no replication,
//      FORUM_REPLICA_MODE=async and =sync, each replicating to its own prefix of one bucket. The
//      cells are bench.mjs's `write` scenario (its wrk machinery); the three servers alternate cell
//      by cell and the order rotates each round, as bench.mjs does. Every server runs with
//      FORUM_METRICS_PORT=0, so all three pay for the same instrumentation. Ratios async/none and
//      sync/none; targets async ≥ 0.9× none at 64 conns, sync p99 ≤ 50 ms with ≥ 3,000 req/s;
//   2. shipping lag in async mode under the 64-connection write load: the server's
//      forum_replication_lag_seconds gauge, sampled every 100 ms during the measured cell (p50 and
//      p99 of the samples, target p99 ≤ 1 s), and beside it the age of the oldest record not yet
//      shipped as reconstructed from the same samples (forum_log_durable_seq against
//      forum_replication_shipped_seq, interpolated between samples): the gauge times the lag from
//      when the backlog last was empty;
//   3. object-store requests: PUTs/s, LISTs/s, GETs/s of an idle leader (each mode; no writes for
//      max(10, 2 × --duration) s; target PUTs/s ≤ 1) and under the 64-connection write load, from
//      forum_replication_requests_total deltas, with the group commits per second, records per
//      commit and mean fdatasync time of the same window (forum_group_commit_* histograms), and
//      the monthly cost at S3 Standard list prices (PUT/LIST $0.005 and GET $0.0004 per 1,000,
//      DELETE free, storage $0.023 per GB-month; 730 h a month, GB = 2^30 bytes) for idle and
//      for continuous load at the measured rate (storage: what one month of it adds);
//   4. restore: an archive of --replica-records records (scripts/dev/gen-archive.mjs under the temp
//      folder), a leader (async) started on it ships everything (waited for with `replication
//      status` until the lag is 0 and every sealed segment is compacted into one object), is
//      stopped, then `restore --from` rebuilds a new folder: wall clock (CLI spawn to exit) and the
//      `ms` of its JSON, objects read, and a byte-for-byte check (cmp) of every restored segment
//      against the leader's. Target ≤ 30 s at 1,000,000 records.
//   5. followers (issue 36): a leader (async) and two followers (FORUM_FOLLOW) on one prefix:
//      follower lag under the 64-connection write load (the leader's and a follower's
//      forum_log_durable_seq scraped every 50 ms; goal p99 ≤ 1.5 s from the bucket alone), read
//      throughput of the leader alone against the leader and both followers at once, and the time
//      from `replication promote` (leader stopped) to the first accepted write (goal ≤ 5 s).
//
// Usage: node scripts/bench.mjs [--replication | --no-replication] [--replica-records N] [flags]
//        node scripts/bench/replica-bench.mjs [bench.mjs flags]
//   The second form runs scripts/bench.mjs with `--servers ours --scenarios write --connections
//   1,64 --no-replay --no-search --replication` followed by the flags given (a later flag wins).
//   --replication / --no-replication   this section (default on when an object store can be had;
//                                       off with --smoke)
//   --replica-records N                records in the restore archive, default 1000000
//   bench.mjs's --rounds, --duration, --warmup, --seed-messages, --threads, --loadgen, --ours,
//   --gen-archive, --replay-timeout (bound on the leader's start on the archive and on its
//   shipping) and --out apply here too; see node scripts/bench.mjs --help.
//   Environment: FORUM_BENCH_REPLICA_SECTIONS=writes,restore,followers (which parts run; default
//   all); FORUM_BENCH_REPLICA_BASELINE=DIR (another build, e.g. main's built into a temp folder:
//   its three modes as write servers `none-base`, `async-base`, `sync-base`, and its restore --from
//   of the same bucket, in the same run); FORUM_BENCH_REPLICA_SERVERS=LIST (which write servers
//   run, in that order, e.g. async-base,async); FORUM_BENCH_REPLICA_CPU_PROF=DIR (every write
//   server under node --cpu-prof, profiles in DIR/<server>/); FORUM_BENCH_REPLICA_STORE_DIR=DIR
//   (the scripts/dev/rgw.sh folder of the store at AWS_ENDPOINT_URL_S3, so its daemons' CPU is
//   counted; a store the harness starts itself is counted anyway).
//
// The object store: AWS_ENDPOINT_URL_S3 set (with AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_REGION): that store, one bucket created per run (its objects are deleted at the end, the
// bucket too). Otherwise a throwaway Ceph RGW (scripts/dev/rgw.sh: installed when root and missing,
// started under a temp folder, stopped at the end, also on error or Ctrl-C). Neither possible:
// the section is skipped and the report says why.
import { spawn, spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { runStandalone } from './lib/standalone.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/** How often the followers section scrapes the leader's and a follower's durable seq, ms. */
const FOLLOW_SAMPLE_MS = 50;

/** The issue's targets. */
const TARGET = { asyncRatio: 0.9, syncP99Ms: 50, syncRps: 3000, lagP99S: 1, idlePutsPerS: 1, restoreS: 30 };
/** S3 Standard list prices (us-east-1), dollars. */
const PRICE = { putPer1000: 0.005, listPer1000: 0.005, getPer1000: 0.0004, gbMonth: 0.023 };
const MONTH_S = 730 * 3600;
const GB = 2 ** 30;
const MODES = ['none', 'async', 'sync'];
/**
 * FORUM_BENCH_REPLICA_BASELINE=DIR: another build of the project (DIR/dist/server.js and
 * DIR/dist/cli.js, e.g. main's, built into a temp folder) measured in the same run: its three
 * modes as three more write servers (`none-base`, `async-base`, `sync-base`, alternating with
 * ours cell by cell) and its `restore --from` of the same bucket beside ours.
 */
const BASELINE = process.env.FORUM_BENCH_REPLICA_BASELINE ? path.resolve(process.env.FORUM_BENCH_REPLICA_BASELINE) : null;
/** FORUM_BENCH_REPLICA_SECTIONS: which parts run (comma-separated; default all): writes, restore, followers. */
const SECTIONS = new Set((process.env.FORUM_BENCH_REPLICA_SECTIONS ?? 'writes,restore,followers').split(',').map((x) => x.trim()));
/**
 * The write servers: ours in each mode, and the baseline's in each mode when there is one;
 * FORUM_BENCH_REPLICA_SERVERS=LIST picks some of them, in that order (e.g. `async-base,async`).
 */
const WRITE_MODES = (() => {
  const all = BASELINE ? [...MODES, ...MODES.map((m) => `${m}-base`)] : MODES;
  const pick = process.env.FORUM_BENCH_REPLICA_SERVERS?.split(',').map((x) => x.trim()).filter(Boolean);
  if (!pick) return all;
  const unknown = pick.filter((m) => !all.includes(m));
  if (unknown.length > 0) throw new Error(`FORUM_BENCH_REPLICA_SERVERS: unknown server(s) ${unknown.join(', ')} (known: ${all.join(', ')})`);
  return pick;
})();
/**
 * FORUM_BENCH_REPLICA_CPU_PROF=DIR: every write server runs under `node --cpu-prof` and writes its
 * V8 CPU profile to DIR/<mode>/ when it stops (for a look at where the main thread's CPU goes).
 */
const CPU_PROF = process.env.FORUM_BENCH_REPLICA_CPU_PROF ? path.resolve(process.env.FORUM_BENCH_REPLICA_CPU_PROF) : null;
/** The replication mode of a write server ('none', 'async' or 'sync'; a baseline's `-base` dropped). */
const modeOf = (server) => server.replace(/-base$/, '');
const CONNECTIONS = [64, 1];
const LAG_SAMPLE_MS = 100;

// ---- the object store -------------------------------------------------------------------------

/**
 * The pids of the store's daemons (scripts/dev/rgw.sh's DIR/run/*.pid: mon, OSD, radosgw), or none
 * when `runDir` is null (a store elsewhere; FORUM_BENCH_REPLICA_STORE_DIR=DIR names the rgw.sh
 * folder of a store already running on this machine).
 */
function daemonPids(runDir) {
  if (runDir === null || !existsSync(runDir)) return [];
  return readdirSync(runDir).filter((f) => f.endsWith('.pid')).map((f) => Number(readFileSync(path.join(runDir, f), 'utf8').trim())).filter((p) => p > 0);
}

/** CPU seconds (user + system, all threads) of process `pid` so far, or 0 when /proc cannot say (not Linux, gone). */
function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(rest[11]) + Number(rest[12])) / 100;
  } catch {
    return 0;
  }
}

/**
 * An object store for the run: { env, endpoint, label, stop(), stopSync() }, or { skipped: reason }.
 * `track` registers the spawned rgw.sh with the harness.
 */
async function acquireObjectStore({ log, track }, replicaRecords) {
  if (process.env.AWS_ENDPOINT_URL_S3) {
    const env = {
      AWS_ENDPOINT_URL_S3: process.env.AWS_ENDPOINT_URL_S3,
      AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? '',
      AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? '',
      AWS_REGION: process.env.AWS_REGION || 'us-east-1',
    };
    const runDir = process.env.FORUM_BENCH_REPLICA_STORE_DIR ? path.join(path.resolve(process.env.FORUM_BENCH_REPLICA_STORE_DIR), 'run') : null;
    return { env, endpoint: env.AWS_ENDPOINT_URL_S3, label: `the store at AWS_ENDPOINT_URL_S3 (${env.AWS_ENDPOINT_URL_S3})`, owned: false, pids: () => daemonPids(runDir), stop: async () => {}, stopSync: () => {} };
  }
  const script = path.join(root, 'scripts', 'dev', 'rgw.sh');
  const have = (cmd) => spawnSync('bash', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
  const isRoot = process.getuid?.() === 0;
  if (!have('radosgw') || !have('ceph-mon') || !have('ceph-osd')) {
    if (!isRoot) return { skipped: 'no object store: AWS_ENDPOINT_URL_S3 is unset, and Ceph RGW is not installed and cannot be without root (scripts/dev/rgw.sh install)' };
    log('replication: installing Ceph RGW (scripts/dev/rgw.sh install)…');
    const r = spawnSync('bash', [script, 'install'], { encoding: 'utf8', timeout: 600_000 });
    if (r.status !== 0) return { skipped: `no object store: AWS_ENDPOINT_URL_S3 is unset and scripts/dev/rgw.sh install failed: ${(r.stderr || r.error?.message || '').trim().split('\n').slice(-3).join(' ')}` };
  }
  const port = spawnSync('bash', [script, 'free-port'], { encoding: 'utf8' }).stdout.trim();
  if (!/^\d+$/.test(port)) return { skipped: 'no object store: scripts/dev/rgw.sh free-port gave no port' };
  const dir = mkdtempSync(path.join(os.tmpdir(), 'forum-bench-rgw-'));
  const stopSync = () => {
    if (!existsSync(dir)) return;
    spawnSync('bash', [script, 'stop', dir], { stdio: 'ignore', timeout: 120_000 });
    rmSync(dir, { recursive: true, force: true });
  };
  const stop = async () => {
    if (!existsSync(dir)) return;
    await new Promise((resolve) => track(spawn('bash', [script, 'stop', dir], { stdio: 'ignore' })).on('close', resolve));
    rmSync(dir, { recursive: true, force: true });
  };
  log(`replication: starting Ceph RGW on 127.0.0.1:${port} under ${dir} (scripts/dev/rgw.sh start)…`);
  const t0 = performance.now();
  const child = track(spawn('bash', [script, 'start', dir, port], { stdio: ['ignore', 'pipe', 'pipe'] }));
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err = (err + d).slice(-4000)));
  const code = await new Promise((resolve) => child.on('close', resolve));
  const env = Object.fromEntries([...out.matchAll(/^export (\w+)=(.*)$/gm)].map((m) => [m[1], m[2]]));
  if (code !== 0 || !env.AWS_ENDPOINT_URL_S3) {
    stopSync();
    // rgw.sh's own lines say what failed; the daemons' log tails it prints after them do not.
    const said = err.split('\n').filter((l) => l.startsWith('rgw.sh:') && !l.includes('stopped the cluster'));
    return { skipped: `no object store: AWS_ENDPOINT_URL_S3 is unset and scripts/dev/rgw.sh start failed (exit ${code}): ${(said.at(-1) ?? err.trim().split('\n').at(-1) ?? '').slice(0, 300)}` };
  }
  delete env.FORUM_TEST_S3;
  log(`replication: RGW answering on ${env.AWS_ENDPOINT_URL_S3} after ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  // rgw.sh's memstore OSD claims 1 GiB, which one 1M-record archive shipped as chunks and then as
  // segments (the deleted chunks' tails wait for RGW's garbage collection) nearly fills: at 97 %
  // the OSD drops every write ("full status failsafe engaged") and a PUT hangs. The claim is read
  // at each statfs, so it is raised at run time; memory is taken only as objects are written.
  const capacity = Math.round(4 * GB + 3 * 700 * replicaRecords);
  const tell = spawnSync('ceph', ['-c', path.join(dir, 'ceph.conf'), '--connect-timeout', '10', 'tell', 'osd.0', 'config', 'set', 'memstore_device_bytes', String(capacity)], { encoding: 'utf8', timeout: 30_000 });
  if (tell.status !== 0) log(`replication: warning: could not raise the memstore capacity (${(tell.stderr || tell.error?.message || '').trim().slice(0, 200)}); a large --replica-records may fill the OSD`);
  return { env, endpoint: env.AWS_ENDPOINT_URL_S3, label: `a throwaway Ceph RGW (scripts/dev/rgw.sh, ${cephVersion()}, memstore OSD) on this machine`, owned: true, pids: () => daemonPids(path.join(dir, 'run')), stop, stopSync };
}

function cephVersion() {
  const v = /version (\S+)/.exec(spawnSync('radosgw', ['--version'], { encoding: 'utf8' }).stdout ?? '')?.[1];
  return v ? `Ceph ${v}` : 'Ceph';
}

/** An S3 client of the AWS SDK for the store (loaded only when the section runs). */
async function s3Client(store) {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const sdk = await import('@aws-sdk/client-s3');
  const client = new sdk.S3Client({
    endpoint: store.endpoint,
    region: store.env.AWS_REGION,
    credentials: { accessKeyId: store.env.AWS_ACCESS_KEY_ID, secretAccessKey: store.env.AWS_SECRET_ACCESS_KEY },
    forcePathStyle: true,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  return { sdk, client };
}

/** Deletes every object of `bucket`, then the bucket (a store that is not ours; best effort). */
async function removeBucket({ sdk, client }, bucket) {
  try {
    let token;
    do {
      const page = await client.send(new sdk.ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }));
      const keys = (page.Contents ?? []).map((o) => ({ Key: o.Key }));
      if (keys.length) await client.send(new sdk.DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: keys, Quiet: true } }));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    await client.send(new sdk.DeleteBucketCommand({ Bucket: bucket }));
  } catch {
    // best effort
  }
}

// ---- the server's metrics ---------------------------------------------------------------------

/** One scrape of a server's /metrics: the values this benchmark reads (NaN when absent). */
async function scrape(metricsUrl) {
  const res = await fetch(metricsUrl, { signal: AbortSignal.timeout(5000) });
  const text = await res.text();
  const value = (name) => {
    const m = new RegExp(`^${name.replace(/[{}"]/g, (c) => `\\${c}`)} (\\S+)$`, 'm').exec(text);
    return m ? Number(m[1]) : NaN;
  };
  const req = (kind) => value(`forum_replication_requests_total{kind="${kind}"}`);
  return {
    lagSeconds: value('forum_replication_lag_seconds'),
    lagRecords: value('forum_replication_lag_records'),
    shipped: value('forum_replication_shipped_seq'),
    durable: value('forum_log_durable_seq'),
    logBytes: value('forum_log_bytes'),
    commits: value('forum_group_commit_records_count'),
    commitRecords: value('forum_group_commit_records_sum'),
    fsyncSeconds: value('forum_group_commit_fsync_seconds_sum'),
    puts: req('puts'),
    gets: req('gets'),
    lists: req('lists'),
    deletes: req('deletes'),
    failures: req('failures'),
  };
}

/** Scrapes every LAG_SAMPLE_MS until stopped; samples carry t (performance.now(), mid-request). */
function startSampler(metricsUrl) {
  const samples = [];
  let stopped = false;
  const loop = (async () => {
    const t0 = performance.now();
    for (let k = 1; !stopped; k++) {
      const sent = performance.now();
      try {
        const m = await scrape(metricsUrl);
        samples.push({ t: (sent + performance.now()) / 2, ...m });
      } catch {
        // a missed sample
      }
      const wait = t0 + k * LAG_SAMPLE_MS - performance.now();
      if (wait > 0) await sleep(wait);
      else k = Math.floor((performance.now() - t0) / LAG_SAMPLE_MS);
    }
  })();
  return {
    samples,
    async stop() {
      stopped = true;
      await loop;
      return samples;
    },
  };
}

/**
 * Age (s) of the oldest durable record not yet shipped, at each sample inside [from, to]: the
 * moment record shipped+1 became durable is interpolated between the two samples whose durable
 * seq brackets it (before the first sample: the first sample's time, a lower bound).
 */
function oldestUnshippedAges(samples, from, to) {
  const ages = [];
  for (let i = 0; i < samples.length; i++) {
    const s = samples[i];
    if (s.t < from || s.t > to) continue;
    if (!(s.durable > s.shipped)) {
      ages.push(0);
      continue;
    }
    let j = 0;
    while (j < i && samples[j].durable <= s.shipped) j++;
    let born = samples[0].t;
    if (j > 0) {
      const a = samples[j - 1];
      const b = samples[j];
      born = a.t + ((s.shipped + 1 - a.durable) / (b.durable - a.durable)) * (b.t - a.t);
    }
    ages.push(Math.max(0, s.t - born) / 1000);
  }
  return ages;
}

/** Counter deltas between two scrapes over `seconds`. */
function deltas(a, b, seconds) {
  const d = (k) => b[k] - a[k];
  return {
    seconds,
    puts: d('puts'),
    gets: d('gets'),
    lists: d('lists'),
    deletes: d('deletes'),
    failures: d('failures'),
    logBytes: d('logBytes'),
    commits: d('commits'),
    commitRecords: d('commitRecords'),
    fsyncSeconds: d('fsyncSeconds'),
  };
}

function addDeltas(list) {
  const out = {};
  for (const x of list) for (const [k, v] of Object.entries(x)) out[k] = (out[k] ?? 0) + v;
  return out;
}

// ---- processes --------------------------------------------------------------------------------

/** Waits up to `ms` for the server's "listening" line (after the leader's start); returns it. */
async function listening(server, ms = 60_000) {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    const info = server.listening();
    if (info) return info;
    if (server.child.exitCode !== null) throw new Error(`server exited (${server.child.exitCode}) before its "listening" line`);
    await sleep(20);
  }
  throw new Error(`no "listening" line within ${ms / 1000} s`);
}

/** SIGTERM and up to `ms` for a clean exit (a leader ships and writes its snapshot), then SIGKILL. */
async function stopGracefully(child, ms = 120_000) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), ms);
  await exited;
  clearTimeout(timer);
}

/** Runs `node dist/cli.js ARGS` with `env` added; resolves to { code, stdout, stderr, seconds }. */
function cli(track, args, env, base = root) {
  const t0 = performance.now();
  const child = track(spawn(process.execPath, [path.join(base, 'dist', 'cli.js'), ...args], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }));
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr, seconds: (performance.now() - t0) / 1000 }));
  });
}

async function replicationStatus(track, dataDir, env) {
  const r = await cli(track, ['--data-dir', dataDir, 'replication', 'status'], env);
  if (r.code !== 0) throw new Error(`replication status exited ${r.code}: ${r.stderr.trim().slice(-300)}`);
  return JSON.parse(r.stdout);
}

function segmentNames(dataDir) {
  return readdirSync(path.join(dataDir, 'log')).filter((n) => n.endsWith('.jsonl')).sort();
}

/** Whether every segment file of `a` equals the one of the same name in `b` (cmp), and the names agree. */
function sameSegments(a, b) {
  const names = segmentNames(a);
  const other = segmentNames(b);
  if (names.join() !== other.join()) return { same: false, why: `segment files differ: ${names.length} vs ${other.length}` };
  for (const n of names) {
    const r = spawnSync('cmp', [path.join(a, 'log', n), path.join(b, 'log', n)], { encoding: 'utf8' });
    if (r.status !== 0) return { same: false, why: `${n}: ${(r.stdout || r.stderr || r.error?.message || '').trim()}` };
  }
  return { same: true, files: names.length, bytes: names.reduce((s, n) => s + statSync(path.join(a, 'log', n)).size, 0) };
}

// ---- the measurements -------------------------------------------------------------------------

/** A new replica key pair in `dir` (issue 50): FORUM_REPLICA_SIGNING_KEY (a PKCS#8 PEM file, 0600) and FORUM_REPLICA_PUBLIC_KEY. */
function replicaKeyEnv(dir) {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const file = path.join(dir, 'replica-signing-key.pem');
  writeFileSync(file, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
  return { FORUM_REPLICA_SIGNING_KEY: file, FORUM_REPLICA_PUBLIC_KEY: `ed25519:${publicKey.export({ format: 'jwk' }).x}` };
}

/**
 * Runs the whole section. `ctx` is the harness's machinery (scripts/bench.mjs): { opts, gen, log,
 * track, tempDir, onCleanup(stop, stopSync), startServer(kind, opts, {env, dataDir, timeoutMs}),
 * seedForum, runCell(gen, server, scenario, connections, seconds), summarize }. Resolves to the
 * result renderReplication() prints, or { skipped } / { failed } with the reason.
 */
export async function measureReplication(ctx) {
  const { opts, log } = ctx;
  if (!existsSync(opts.oursEntry)) return { skipped: `${path.relative(root, opts.oursEntry)} not found (npm run build)` };
  const store = await acquireObjectStore(ctx, opts.replicaRecords);
  if (store.skipped) return store;
  // One replica key pair (issue 50) for every server and restore of the section: leaders sign with it, followers verify.
  store.env = { ...store.env, ...replicaKeyEnv(ctx.tempDir('replica-key')) };
  const release = ctx.onCleanup(store.stop, store.stopSync);
  const s3 = await s3Client(store);
  const bucket = `forum-bench-${process.pid}-${Date.now().toString(36)}`;
  const result = { store: store.label };
  try {
    await s3.client.send(new s3.sdk.CreateBucketCommand({ Bucket: bucket }));
    if (SECTIONS.has('writes')) {
      result.writes = await measureWrites(ctx, store, bucket);
      result.probe = await probePuts(s3, bucket);
    }
    if (SECTIONS.has('restore')) result.restore = await measureRestore(ctx, store, bucket);
    if (SECTIONS.has('followers')) result.followers = await measureFollowers(ctx, store, bucket);
    return result;
  } catch (err) {
    return { ...result, failed: err.message };
  } finally {
    if (!store.owned) await removeBucket(s3, bucket);
    s3.client.destroy();
    await store.stop();
    release();
  }
}

async function startOurs(ctx, store, bucket, mode) {
  const env = { FORUM_METRICS_PORT: '0' };
  const replicaMode = modeOf(mode);
  if (replicaMode !== 'none') Object.assign(env, store.env, { FORUM_REPLICA_URL: `s3://${bucket}/bench-${mode}`, FORUM_REPLICA_MODE: replicaMode });
  const opts = mode.endsWith('-base') ? { ...ctx.opts, oursEntry: path.join(BASELINE, 'dist', 'server.js') } : ctx.opts;
  const nodeArgs = CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${path.join(CPU_PROF, mode)}`] : [];
  const server = await ctx.startServer('ours', opts, { env, nodeArgs });
  server.mode = mode;
  server.info = await listening(server);
  server.metricsUrl = server.info.metricsUrl;
  if (!server.metricsUrl) throw new Error(`${mode}: the server logged no metricsUrl`);
  if (replicaMode !== 'none') {
    const st = await replicationStatus(ctx.track, server.dataDir, store.env);
    if (st.state !== 'leading') throw new Error(`${mode}: the leader is ${st.state} (${st.lastError ?? 'no error'})`);
  }
  return server;
}

async function waitForLagZero(server, ms = 60_000) {
  const until = performance.now() + ms;
  for (;;) {
    const m = await scrape(server.metricsUrl);
    if (m.lagRecords === 0) return m;
    if (performance.now() > until) throw new Error(`${server.mode}: still ${m.lagRecords} records to ship after ${ms / 1000} s`);
    await sleep(100);
  }
}

async function measureWrites(ctx, store, bucket) {
  const { opts, log, gen } = ctx;
  const servers = [];
  for (const mode of WRITE_MODES) {
    const server = await startOurs(ctx, store, bucket, mode);
    servers.push(server);
    const t0 = performance.now();
    server.seed = await ctx.seedForum(server, { messages: opts.seedMessages });
    if (modeOf(mode) !== 'none') await waitForLagZero(server);
    log(`replication: ${mode} ready on ${server.base}, seeded ${opts.seedMessages} messages in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  const cells = new Map();
  for (const connections of CONNECTIONS) for (const s of servers) cells.set(`${connections}|${s.mode}`, { connections, mode: s.mode, server: s, rounds: [], windows: [], lagSamples: [], ages: [] });

  for (let round = 0; round < opts.rounds; round++) {
    for (const connections of CONNECTIONS) {
      const rotated = servers.map((_, i) => servers[(i + round) % servers.length]);
      for (const server of rotated) {
        const cell = cells.get(`${connections}|${server.mode}`);
        const sampler = modeOf(server.mode) === 'async' && connections === 64 ? startSampler(server.metricsUrl) : null;
        if (opts.warmup > 0) await ctx.runCell(gen, server, 'write', connections, opts.warmup);
        const before = await scrape(server.metricsUrl);
        const storeCpu0 = store.pids().reduce((sum, pid) => sum + cpuSeconds(pid), 0);
        const serverCpu0 = cpuSeconds(server.child.pid);
        const t0 = performance.now();
        const r = await ctx.runCell(gen, server, 'write', connections, opts.duration);
        const t1 = performance.now();
        const serverCpuS = cpuSeconds(server.child.pid) - serverCpu0;
        const storePids = store.pids();
        const storeCpuS = storePids.length > 0 ? storePids.reduce((sum, pid) => sum + cpuSeconds(pid), 0) - storeCpu0 : NaN;
        const after = await scrape(server.metricsUrl);
        cell.rounds.push(r);
        cell.windows.push({ ...deltas(before, after, (t1 - t0) / 1000), serverCpuS, storeCpuS });
        if (sampler) {
          const samples = await sampler.stop();
          const inCell = samples.filter((s) => s.t >= t0 && s.t <= t1);
          cell.lagSamples.push(...inCell.map((s) => s.lagSeconds));
          cell.lagRecordSamples = [...(cell.lagRecordSamples ?? []), ...inCell.map((s) => s.lagRecords)];
          cell.ages.push(...oldestUnshippedAges(samples, t0, t1));
        }
        log(`[replication ${round + 1}/${opts.rounds}] ${server.mode.padEnd(5)} write c=${String(connections).padEnd(3)} ${Math.round(r.rps).toLocaleString('en-US').padStart(7)} req/s  p50 ${r.p50Ms.toFixed(2)} ms  p99 ${r.p99Ms.toFixed(2)} ms${r.non2xx ? `  non-2xx ${r.non2xx}` : ''}`);
        // The next cell starts with this server's backlog shipped (it is measured on its own).
        if (modeOf(server.mode) !== 'none') await waitForLagZero(server);
      }
    }
  }
  for (const cell of cells.values()) cell.summary = ctx.summarize(cell.rounds);

  // Idle leaders: all at once, no writes, after every record was shipped.
  for (const s of servers) if (modeOf(s.mode) === 'none') await ctx.stopChild(s.child);
  const leaders = servers.filter((s) => modeOf(s.mode) !== 'none');
  const idleSeconds = Math.max(10, 2 * opts.duration);
  log(`replication: idle leaders for ${idleSeconds} s…`);
  for (const s of leaders) await waitForLagZero(s);
  await sleep(1000);
  const before = await Promise.all(leaders.map((s) => scrape(s.metricsUrl)));
  const t0 = performance.now();
  await sleep(idleSeconds * 1000);
  const after = await Promise.all(leaders.map((s) => scrape(s.metricsUrl)));
  const seconds = (performance.now() - t0) / 1000;
  const idle = Object.fromEntries(leaders.map((s, i) => [s.mode, deltas(before[i], after[i], seconds)]));
  for (const s of leaders) await ctx.stopChild(s.child);

  return {
    cells: [...cells.values()].map(({ server, ...c }) => ({ ...c, load: addDeltas(c.windows) })),
    idle,
  };
}

/**
 * The store alone: sequential create-only PUTs (If-None-Match: *, as the leader sends its chunks)
 * from this process through the same SDK, of a 10 KiB body (a sync group commit of ~30 messages)
 * and of a 1 MiB one (an async chunk under load). Latency p50/p99/mean in ms.
 */
async function probePuts({ sdk, client }, bucket) {
  const rows = [];
  for (const [label, bytes, n] of [['10 KiB', 10 * 1024, 200], ['1 MiB', 2 ** 20, 20]]) {
    const body = Buffer.alloc(bytes, 0x61);
    const times = [];
    for (let i = 0; i < n + 5; i++) {
      const t0 = performance.now();
      await client.send(new sdk.PutObjectCommand({ Bucket: bucket, Key: `bench-probe/${bytes}/${String(i).padStart(6, '0')}`, Body: body, IfNoneMatch: '*', ContentLength: body.length }));
      if (i >= 5) times.push(performance.now() - t0);
    }
    rows.push({ label, n, p50: pct(times, 50), p99: pct(times, 99), mean: times.reduce((a, b) => a + b, 0) / times.length });
  }
  return rows;
}

async function measureRestore(ctx, store, bucket) {
  const { opts, log, track } = ctx;
  if (!existsSync(opts.genArchive)) return { skipped: `${path.relative(root, opts.genArchive)} not found` };
  const url = `s3://${bucket}/bench-restore`;
  const archive = ctx.tempDir('replica-archive');
  const target = ctx.tempDir('replica-restore');
  try {
    log(`replication: generating ${opts.replicaRecords.toLocaleString('en-US')} records…`);
    const g = track(spawn(process.execPath, [opts.genArchive, '--dir', archive, '--records', String(opts.replicaRecords)], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] }));
    const code = await new Promise((resolve) => g.on('close', resolve));
    if (code !== 0) throw new Error(`scripts/dev/gen-archive.mjs exited ${code}`);

    log('replication: starting an async leader on the archive; waiting until it has shipped and compacted everything…');
    const t0 = performance.now();
    const leader = await ctx.startServer('ours', opts, {
      dataDir: archive,
      timeoutMs: opts.replayTimeoutMs,
      env: { ...store.env, FORUM_REPLICA_URL: url, FORUM_REPLICA_MODE: 'async' },
    });
    await listening(leader, opts.replayTimeoutMs);
    const listenS = (performance.now() - t0) / 1000;
    let status;
    const until = performance.now() + opts.replayTimeoutMs;
    for (;;) {
      status = await replicationStatus(track, archive, store.env);
      const sealed = segmentNames(archive).length - 1;
      if (status.state === 'leading' && status.lag.records === 0 && status.shippedSeq === status.durableSeq && status.segments === sealed) break;
      if (status.state === 'fenced' || performance.now() > until) {
        throw new Error(`the leader did not ship and compact everything within ${opts.replayTimeoutMs / 1000} s (--replay-timeout): ${JSON.stringify({ state: status.state, shippedSeq: status.shippedSeq, lag: status.lag, segments: status.segments, sealed, chunks: status.chunks, requests: status.requests, lastError: status.lastError })}`);
      }
      await sleep(1000);
    }
    const shippedS = (performance.now() - t0) / 1000;
    log(`replication: shipped ${status.shippedSeq.toLocaleString('en-US')} records (${status.segments} segment objects, ${status.chunks} chunk(s)) ${shippedS.toFixed(1)} s after the spawn; stopping the leader`);
    await stopGracefully(leader.child);

    const restored = path.join(target, 'restored');
    log(`replication: restore --from ${url} into a new folder…`);
    let baseline = null;
    if (BASELINE) {
      // The baseline build's restore of the same bucket first (the page cache is as warm for ours).
      const into = path.join(target, 'restored-base');
      log(`replication: the baseline's restore --from ${url} (${BASELINE})…`);
      const b = await cli(track, ['--data-dir', into, 'restore', '--from', url, '--yes'], store.env, BASELINE);
      if (b.code !== 0) throw new Error(`the baseline's restore --from exited ${b.code}: ${b.stderr.trim().slice(-400)}`);
      const bj = JSON.parse(b.stdout);
      baseline = { wallS: b.seconds, ms: bj.ms, check: sameSegments(archive, into) };
      log(`replication: baseline restored ${bj.records} records in ${b.seconds.toFixed(2)} s (its ms: ${bj.ms})`);
      rmSync(into, { recursive: true, force: true });
    }
    const r = await cli(track, ['--data-dir', restored, 'restore', '--from', url, '--yes'], store.env);
    if (r.code !== 0) throw new Error(`restore --from exited ${r.code}: ${r.stderr.trim().slice(-400)}`);
    const json = JSON.parse(r.stdout);
    const check = sameSegments(archive, restored);
    log(`replication: restored ${json.records} records in ${r.seconds.toFixed(2)} s (its ms: ${json.ms}); segments ${check.same ? 'identical' : `DIFFER (${check.why})`}`);
    return {
      records: opts.replicaRecords,
      logRecords: status.durableSeq,
      shippedS,
      listenS,
      segments: status.segments,
      chunks: status.chunks,
      shipRequests: status.requests,
      wallS: r.seconds,
      ms: json.ms,
      objectsRead: json.objectsRead,
      bytes: json.bytes,
      restoredRecords: json.records,
      sameLineage: json.sameLineage,
      check,
      baseline,
    };
  } finally {
    // 2 × the archive on disk: not left until the end of the run.
    rmSync(archive, { recursive: true, force: true });
    rmSync(target, { recursive: true, force: true });
  }
}

// ---- the report -------------------------------------------------------------------------------

const fmtInt = (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'n/a');
const fmtMs = (n) => (!Number.isFinite(n) ? 'n/a' : n < 10 ? n.toFixed(2) : n.toFixed(1));
const fmtRate = (n) => (!Number.isFinite(n) ? 'n/a' : n === 0 ? '0' : n < 10 ? n.toFixed(2) : n.toFixed(1));
const fmtUsd = (n) => (!Number.isFinite(n) ? 'n/a' : n < 1 ? `$${n.toFixed(3)}` : n < 100 ? `$${n.toFixed(2)}` : `$${Math.round(n).toLocaleString('en-US')}`);
const verdict = (ok) => (ok ? 'met' : 'MISSED');
const pct = (xs, p) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

/** Requests per second and the monthly cost at list prices of a counter window. */
function rates(w) {
  const per = (k) => w[k] / w.seconds;
  const r = { puts: per('puts'), gets: per('gets'), lists: per('lists'), deletes: per('deletes'), failures: per('failures'), bytes: per('logBytes'), commits: per('commits') };
  r.requestUsd = MONTH_S * ((r.puts * PRICE.putPer1000) / 1000 + (r.lists * PRICE.listPer1000) / 1000 + (r.gets * PRICE.getPer1000) / 1000);
  r.gbPerMonth = (r.bytes * MONTH_S) / GB;
  r.storageUsd = r.gbPerMonth * PRICE.gbMonth;
  r.recordsPerCommit = w.commits ? w.commitRecords / w.commits : NaN;
  r.fsyncMs = w.commits ? (1000 * w.fsyncSeconds) / w.commits : NaN;
  r.cycleMs = w.commits ? (1000 * w.seconds) / w.commits : NaN;
  return r;
}

/** Markdown lines of the section (heading included). */
/**
 * Followers (issue 36): a leader (async) and two followers (FORUM_FOLLOW, restored from the
 * bucket at their start) on one prefix.
 * 1. Follower lag under the 64-connection write load on the leader: the leader's and a
 *    follower's forum_log_durable_seq scraped every FOLLOW_SAMPLE_MS; for each leader sample, the
 *    time until the follower's durable seq reached it (p50, p99; goal p99 ≤ 1.5 s from the bucket
 *    alone — there is no direct tail from the leader).
 * 2. Read throughput (the `read` scenario, 64 connections per server): the leader alone, then the
 *    leader and both followers at once (the sum). On 2 cores the three share the same CPUs.
 * 3. Promotion: the leader is stopped, `replication promote` runs on a follower, and a write is
 *    retried until the first 201: seconds from the command's spawn (goal ≤ 5 s).
 */
async function measureFollowers(ctx, store, bucket) {
  const { opts, log, gen } = ctx;
  const url = `s3://${bucket}/bench-follow`;
  const leaderEnv = { FORUM_METRICS_PORT: '0', ...store.env, FORUM_REPLICA_URL: url, FORUM_REPLICA_MODE: 'async' };
  const leader = await ctx.startServer('ours', opts, { env: leaderEnv });
  leader.mode = 'leader';
  leader.metricsUrl = (await listening(leader)).metricsUrl;
  leader.seed = await ctx.seedForum(leader, { messages: opts.seedMessages });
  await waitForLagZero(leader);
  const followers = [];
  for (let i = 0; i < 2; i++) {
    const f = await ctx.startServer('ours', opts, { env: { FORUM_METRICS_PORT: '0', ...store.env, FORUM_FOLLOW: url, FORUM_REPLICA_MODE: 'async' } });
    f.metricsUrl = (await listening(f)).metricsUrl;
    f.seed = leader.seed;
    followers.push(f);
  }
  log('replication: leader and 2 followers ready');
  // 1. Lag under write load.
  const delays = [];
  for (let round = 0; round < opts.rounds; round++) {
    const leaderSamples = startDurableSampler(leader.metricsUrl);
    const followerSamples = startDurableSampler(followers[0].metricsUrl);
    await ctx.runCell(gen, leader, 'write', 64, opts.duration);
    const head = (await scrape(leader.metricsUrl)).durable;
    const until = performance.now() + 10_000;
    while ((await scrape(followers[0].metricsUrl)).durable < head && performance.now() < until) await sleep(FOLLOW_SAMPLE_MS);
    const ls = await leaderSamples.stop();
    const fs = await followerSamples.stop();
    for (const l of ls) {
      const reached = fs.find((f) => f.durable >= l.durable && f.t >= l.t);
      if (reached) delays.push((reached.t - l.t) / 1000);
    }
  }
  // 2. Reads: the leader alone, then all three at once.
  const alone = [];
  const together = [];
  for (let round = 0; round < opts.rounds; round++) {
    alone.push((await ctx.runCell(gen, leader, 'read', 64, opts.duration)).rps);
    const rs = await Promise.all([leader, ...followers].map((s) => ctx.runCell(gen, s, 'read', 64, opts.duration)));
    together.push(rs.reduce((n, r) => n + r.rps, 0));
  }
  // 3. Promotion after the leader is gone.
  await waitForLagZero(leader);
  await ctx.stopChild(leader.child);
  const f = followers[0];
  const t0 = performance.now();
  const promoted = await cli(ctx.track, ['--data-dir', f.dataDir, 'replication', 'promote'], store.env);
  if (promoted.code !== 0) throw new Error(`replication promote exited ${promoted.code}: ${promoted.stderr.trim().slice(-300)}`);
  const token = leader.seed.tokens[0];
  let firstWrite = null;
  let lastAnswer = '';
  for (let i = 0; i < 200 && firstWrite === null; i++) {
    const res = await fetch(`${f.base}/api/messages`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ topicId: leader.seed.topicId, content: 'after promotion', clientId: `promoted-${i}` }) });
    lastAnswer = `${res.status} ${(await res.text()).slice(0, 200)}`;
    if (res.status === 201) firstWrite = (performance.now() - t0) / 1000;
    else await sleep(25);
  }
  if (firstWrite === null) log(`replication: no write was accepted after the promotion; the last answer: ${lastAnswer}`);
  for (const x of followers) await ctx.stopChild(x.child);
  return {
    lag: { samples: delays.length, p50: pct(delays, 50), p99: pct(delays, 99), max: delays.length ? Math.max(...delays) : NaN },
    reads: { alone: median(alone), together: median(together) },
    promote: { commandSeconds: promoted.seconds, firstWriteSeconds: firstWrite, promoteMs: JSON.parse(promoted.stdout).ms },
  };
}

/** Scrapes forum_log_durable_seq every FOLLOW_SAMPLE_MS until stopped: [{t, durable}]. */
function startDurableSampler(metricsUrl) {
  const samples = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const sent = performance.now();
      try {
        const m = await scrape(metricsUrl);
        samples.push({ t: (sent + performance.now()) / 2, durable: m.durable });
      } catch {
        // a missed sample
      }
      await sleep(FOLLOW_SAMPLE_MS);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return samples;
    },
  };
}

const median = (xs) => pct(xs, 50);

export function renderReplication(result, opts) {
  const out = ['', '## Replication to an object store (issue 35)', ''];
  if (!result || result.skipped) {
    out.push(`skipped: ${result?.skipped ?? 'off (--no-replication)'}`);
    return out;
  }
  out.push(`object store: ${result.store}; servers: dist/server.js with FORUM_METRICS_PORT=0, each on a fresh data folder seeded with ${opts.seedMessages} messages; ${opts.rounds} round(s), ${opts.warmup} s warm-up + ${opts.duration} s measured per cell, servers alternating`);
  if (result.failed) out.push('', `**failed: ${result.failed}**`);
  const w = result.writes;
  if (w) {
    const cell = (c, m) => w.cells.find((x) => x.connections === c && x.mode === m);
    out.push('', '### Write throughput and latency (POST /api/messages; medians across rounds)', '');
    out.push('| conns | replication | req/s | req/s min–max | p50 ms | p99 ms | ÷ none | non-2xx | target |', '|---:|---|---:|---:|---:|---:|---:|---:|---|');
    for (const c of CONNECTIONS) {
      for (const m of WRITE_MODES) {
        // A baseline build's modes are compared with its own none.
        const none = cell(c, m.endsWith('-base') ? 'none-base' : 'none')?.summary;
        const s = cell(c, m).summary;
        const ratio = none ? s.rps / none.rps : NaN;
        let target = '';
        if (c === 64 && modeOf(m) === 'async') target = `async ≥ ${TARGET.asyncRatio}× none: ${verdict(ratio >= TARGET.asyncRatio)}`;
        if (c === 64 && m.startsWith('sync')) target = `p99 ≤ ${TARGET.syncP99Ms} ms and ≥ ${fmtInt(TARGET.syncRps)} req/s: ${verdict(s.p99Ms <= TARGET.syncP99Ms && s.rps >= TARGET.syncRps)}`;
        out.push(`| ${c} | ${m} | ${fmtInt(s.rps)} | ${fmtInt(s.minRps)}–${fmtInt(s.maxRps)} | ${fmtMs(s.p50Ms)} | ${fmtMs(s.p99Ms)} | ${modeOf(m) === 'none' || !none ? '—' : `${ratio.toFixed(2)}×`} | ${(s.non2xxRatio * 100).toFixed(2)}% | ${target} |`);
      }
    }

    out.push('', '### CPU per 1,000 writes (measured cells, summed over rounds)', '');
    out.push("The server process (all its threads) and the object store's daemons (radosgw, OSD, mon, when they run on this machine under scripts/dev/rgw.sh), from /proc: on 2 shared cores every CPU second the store takes is one the server and the load generator do not get.", '');
    out.push('| conns | server | writes | server CPU ms / 1k writes | object store CPU ms / 1k writes |', '|---:|---|---:|---:|---:|');
    for (const c of CONNECTIONS) {
      for (const m of WRITE_MODES) {
        const l = cell(c, m).load;
        const per = (x) => (l.commitRecords > 0 && Number.isFinite(x) ? fmtMs((1e6 * x) / l.commitRecords) : '—');
        out.push(`| ${c} | ${m} | ${fmtInt(l.commitRecords)} | ${per(l.serverCpuS)} | ${modeOf(m) === 'none' ? '—' : per(l.storeCpuS)} |`);
      }
    }

    for (const m of WRITE_MODES.filter((x) => modeOf(x) === 'async')) {
      const a = cell(64, m);
      out.push('', `### Shipping lag, ${m}, under the 64-connection write load (${a.lagSamples.length} samples every ${LAG_SAMPLE_MS} ms over the measured cells)`, '');
      out.push('| measure | p50 | p99 | max | target |', '|---|---:|---:|---:|---|');
      out.push(`| forum_replication_lag_seconds (gauge) | ${fmtMs(pct(a.lagSamples, 50))} s | ${fmtMs(pct(a.lagSamples, 99))} s | ${fmtMs(Math.max(...a.lagSamples))} s | p99 ≤ ${TARGET.lagP99S} s: ${verdict(pct(a.lagSamples, 99) <= TARGET.lagP99S)} |`);
      out.push(`| oldest unshipped record's age, from durable_seq vs shipped_seq | ${fmtMs(pct(a.ages, 50))} s | ${fmtMs(pct(a.ages, 99))} s | ${fmtMs(Math.max(...a.ages))} s | p99 ≤ ${TARGET.lagP99S} s: ${verdict(pct(a.ages, 99) <= TARGET.lagP99S)} |`);
      out.push(`| forum_replication_lag_records (gauge) | ${fmtInt(pct(a.lagRecordSamples ?? [], 50))} | ${fmtInt(pct(a.lagRecordSamples ?? [], 99))} | ${fmtInt(Math.max(...(a.lagRecordSamples ?? [NaN])))} | |`);
    }
    out.push('', "The gauge is the server's own figure (the target's measure). The second row is computed by the harness from the same scrapes: the time since record shipped_seq + 1 became durable, interpolated between the two scrapes whose forum_log_durable_seq brackets it.");

    out.push('', '### Object-store requests and monthly cost at S3 Standard list prices', '');
    out.push(`PUT/LIST $${PRICE.putPer1000} and GET $${PRICE.getPer1000} per 1,000, DELETE free, storage $${PRICE.gbMonth} per GB-month; a month = 730 h, GB = 2^30 bytes. Storage: what one month at that rate adds (billed every month it is kept).`, '');
    out.push('| leader | writes/s | PUT/s | LIST/s | GET/s | DELETE req/s | failures | group commits/s | records/commit | fsync ms | requests $/month | storage added GB/month | its storage $/month | target |', '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|');
    const row = (label, win, rps, target = '') => {
      const r = rates(win);
      out.push(`| ${label} | ${fmtInt(rps)} | ${fmtRate(r.puts)} | ${fmtRate(r.lists)} | ${fmtRate(r.gets)} | ${fmtRate(r.deletes)} | ${win.failures} | ${fmtRate(r.commits)} | ${fmtRate(r.recordsPerCommit)} | ${fmtMs(r.fsyncMs)} | ${fmtUsd(r.requestUsd)} | ${r.gbPerMonth.toFixed(2)} | ${fmtUsd(r.storageUsd)} | ${target} |`);
    };
    for (const m of ['async', 'sync'].filter((x) => w.idle[x])) {
      const win = w.idle[m];
      row(`${m}, idle (${win.seconds.toFixed(1)} s, no writes)`, win, 0, `PUT/s ≤ ${TARGET.idlePutsPerS}: ${verdict(win.puts / win.seconds <= TARGET.idlePutsPerS)}`);
    }
    for (const m of ['async', 'sync'].filter((x) => cell(64, x))) {
      const c = cell(64, m);
      row(`${m}, continuous load (64 conns, ${c.load.seconds.toFixed(1)} s measured)`, c.load, c.load.commitRecords / c.load.seconds);
    }
    const c1 = cell(1, 'sync');
    if (c1) row(`sync, 1 conn (${c1.load.seconds.toFixed(1)} s measured)`, c1.load, c1.load.commitRecords / c1.load.seconds);
    const sync64 = cell(64, 'sync') ? rates(cell(64, 'sync').load) : null;
    if (sync64) out.push('', `sync at 64 conns: one group commit every ${fmtMs(sync64.cycleMs)} ms on average, of which ${fmtMs(sync64.fsyncMs)} ms fdatasync; the batch's chunk PUT runs alongside it and the next group commit starts once both are done (Log#replicate), so the cycle is the slower of the two plus the requests' handling.`);
  }
  if (result.probe) {
    out.push('', '### The object store alone (sequential create-only PUTs from the harness, same SDK, no server running)', '');
    out.push('| body | PUTs | p50 ms | p99 ms | mean ms |', '|---|---:|---:|---:|---:|');
    for (const p of result.probe) out.push(`| ${p.label} | ${p.n} | ${fmtMs(p.p50)} | ${fmtMs(p.p99)} | ${fmtMs(p.mean)} |`);
  }
  const r = result.restore;
  if (r) {
    out.push('', `### Restore of a ${fmtInt(r.records ?? opts.replicaRecords)}-record archive (restore --from)`, '');
    if (r.skipped) out.push(`skipped: ${r.skipped}`);
    else {
      const mib = (b) => `${(b / 2 ** 20).toFixed(0)} MiB`;
      out.push('| measure | value | target |', '|---|---:|---|');
      out.push(`| archive (scripts/dev/gen-archive.mjs) + the leader's epoch record | ${fmtInt(r.logRecords)} records, ${mib(r.check.bytes ?? r.bytes)} in ${r.check.files ?? '?'} segment files | |`);
      out.push(`| leader (async) on it: spawn → listening; → everything shipped and compacted | ${r.listenS.toFixed(1)} s; ${r.shippedS.toFixed(1)} s (${r.segments} segment objects + ${r.chunks} chunk(s); ${r.shipRequests.puts} PUTs) | |`);
      out.push(`| restore --from: wall clock (CLI spawn → exit) | ${r.wallS.toFixed(2)} s | ≤ ${TARGET.restoreS} s: ${verdict(r.wallS <= TARGET.restoreS)} |`);
      out.push(`| restore --from: its JSON's ms | ${fmtInt(r.ms)} ms | |`);
      if (r.baseline) out.push(`| the baseline build's restore --from of the same bucket (FORUM_BENCH_REPLICA_BASELINE): wall clock; its ms; segments equal | ${r.baseline.wallS.toFixed(2)} s; ${fmtInt(r.baseline.ms)} ms; ${r.baseline.check.same ? 'yes' : `**NO: ${r.baseline.check.why}**`} | |`);
      out.push(`| objects read (manifest, segments, chunks) | ${r.objectsRead} (${mib(r.bytes)}) | |`);
      out.push(`| restored segments equal the leader's (cmp) | ${r.check.same ? `yes, ${r.check.files} of ${r.check.files}` : `**NO: ${r.check.why}**`} | byte for byte |`);
    }
  }
  const fo = result.followers;
  if (fo) {
    out.push('', '### Followers (issue 36): a leader (async) and two followers on one prefix', '');
    out.push('| measure | value | goal |', '|---|---:|---|');
    out.push(`| follower lag under the 64-connection write load, p50 / p99 / max (${fo.lag.samples} samples) | ${fmtMs(fo.lag.p50)} / ${fmtMs(fo.lag.p99)} / ${fmtMs(fo.lag.max)} s | p99 ≤ 1.5 s from the bucket alone: ${verdict(fo.lag.p99 <= 1.5)} |`);
    out.push(`| read req/s (64 conns each): the leader alone | ${fmtInt(fo.reads.alone)} | |`);
    out.push(`| read req/s: leader + 2 followers at once (sum, same 2 cores) | ${fmtInt(fo.reads.together)} (${(fo.reads.together / fo.reads.alone).toFixed(2)}×) | |`);
    out.push(`| promote: command (spawn → exit) / promotion itself / to the first accepted write | ${fo.promote.commandSeconds.toFixed(2)} s / ${fo.promote.promoteMs} ms / ${fo.promote.firstWriteSeconds === null ? 'none' : `${fo.promote.firstWriteSeconds.toFixed(2)} s`} | ≤ 5 s: ${verdict(fo.promote.firstWriteSeconds !== null && fo.promote.firstWriteSeconds <= 5)} |`);
  }
  return out;
}

/** Non-2xx cells of the section (the harness's exit status counts them like its own cells). */
export function replicationFailures(result, maxRatio) {
  return (result?.writes?.cells ?? []).filter((c) => c.summary.non2xxRatio > maxRatio).map((c) => `replication ${c.mode} write c=${c.connections}: ${(c.summary.non2xxRatio * 100).toFixed(2)}% non-2xx responses`);
}

// ---- standalone: the harness with only what this section needs --------------------------------

runStandalone(import.meta.url, ['--servers', 'ours', '--scenarios', 'write', '--connections', '1,64', '--no-replay', '--no-search', '--replication']);
