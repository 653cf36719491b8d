/**
 * The fault suite's harness (issue 50), shared by test/fault/faults.test.mjs (a short schedule in
 * `npm test`) and scripts/dev/fault-run.mjs (the long form): a leader and two followers of one bucket
 * prefix on a real object store, each server behind its own fault proxy (test/helpers/
 * fault-proxy.mjs), under write load from writer clients and read load from a reader, while a
 * seeded schedule injects faults; then the history checker (checker.mjs) judges the client logs,
 * the harness's events and the final bucket. docs/operate/fault-suite.md says how to run it and
 * what it asserts.
 *
 * Determinism: the schedule (which faults, on whom, their parameters and time offsets) and the
 * clients' choices (which write, which server to read) are drawn from PRNGs seeded by `seed`;
 * process timing still varies between runs.
 *
 * Bounds: every request and admin call has a timeout, every step of the schedule a deadline; the
 * load stops at the end of the schedule; every server is killed by its pid, every proxy closed,
 * every temp folder and the bucket removed at the end, whatever happened.
 */
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Agent, request } from 'undici';
import { adminSocketPath } from '../../dist/admin/socket-path.js';
import { prng } from '../../scripts/lib/prng.mjs';
import { faultProxy } from '../helpers/fault-proxy.mjs';
import { objectStore } from '../helpers/object-store.mjs';
import { bucketObjects, replicaKeyPair } from '../helpers/replica.mjs';
import { logText, startServer, tempDir } from '../helpers/server.mjs';
import { DEFAULT_BOUNDS as BOUNDS, checkHistory, compactPage, parseBucket, parseJsonl } from './checker.mjs';

/** Server settings of the suite: a short ack timeout keeps refusals quick; followers poll often (the checker's DEFAULT_BOUNDS are for these). */
export const SERVER_SETTINGS = Object.freeze({ FORUM_REPLICA_ACK_TIMEOUT_MS: '1000', FORUM_REPLICA_SHIP_MS: '200', FORUM_FOLLOW_POLL_MS: '100' });
/** A client request's time limit (ms): a stopped server does not hold a client for longer. */
const REQUEST_TIMEOUT_MS = 5000;
/** An admin call's time limit (ms); `replication promote`'s. */
const ADMIN_TIMEOUT_MS = 3000;
const PROMOTE_TIMEOUT_MS = 15_000;
/** After a promotion that did not answer in time, how long the harness asks the follower how it ended (ms): past REPLICA_TAKEOVER_MAX_MS (30 s) and the store client's retries. */
const PROMOTE_SETTLE_MS = 60_000;
/** One schedule step's deadline (ms): past it the harness logs it and goes on. */
const STEP_DEADLINE_MS = 40_000;
/** How long the end waits for a live leader to ship its backlog (ms). */
const DRAIN_MS = 10_000;
/** Retries of one write (same clientId) before a writer gives it up. */
const WRITE_ATTEMPTS_MAX = 60;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pick = (rand, list) => list[Math.floor(rand() * list.length)];
const between = (rand, lo, hi) => Math.round(lo + rand() * (hi - lo));

/** Proxy fault kinds the schedule draws (fault-proxy.mjs). */
const PROXY_FAULTS = ['refuse', 'reset', 'stall', 'delay', 'error500', 'slowDown', 'lostAnswer'];

/**
 * The seeded schedule: steps `{ at (ms from the start), kind, ... }` until `durationMs`, with a
 * gap of 0.5-7 s after each step's nominal length, dealt from a shuffled deck of every kind (each
 * proxy fault counts as one). Kinds: `proxy` (a fault on the leader's —
 * sometimes a follower's — proxy for 0.2-4 s), `sigstop` (SIGSTOP, SIGCONT 0.2-4 s later),
 * `kill` (SIGKILL and restart on the same folder), `restart` (SIGTERM and start; the leader),
 * `failover` (SIGSTOP the leader, promote a follower, SIGCONT the old leader, which is then
 * retired), `takeover` (promote a follower while the leader writes; the old one is retired).
 * A retired leader's folder is given up and a fresh follower takes its place.
 * @param {number} seed
 * @param {number} durationMs
 * @returns {object[]}
 */
export function makeSchedule(seed, durationMs) {
  const rand = prng(seed);
  const steps = [];
  const deck = [];
  let at = between(rand, 1000, 3000);
  while (at < durationMs) {
    // Kinds are dealt from a shuffled deck holding each once, so a run long enough meets them all.
    if (deck.length === 0) {
      deck.push(...PROXY_FAULTS.map((f) => `proxy:${f}`), 'sigstop', 'kill', 'restart', 'failover', 'takeover');
      for (let i = deck.length - 1; i > 0; i--) {
        const j = Math.floor(rand() * (i + 1));
        [deck[i], deck[j]] = [deck[j], deck[i]];
      }
    }
    const kind = deck.pop();
    let step;
    if (kind.startsWith('proxy:')) {
      const fault = kind.slice('proxy:'.length);
      const m = rand();
      const methods = fault === 'lostAnswer' ? ['PUT'] : m < 0.5 ? null : m < 0.8 ? ['PUT'] : [pick(rand, ['PUT', 'GET', 'LIST', 'DELETE'])];
      const ms = fault === 'stall' ? between(rand, 200, 4000) : fault === 'delay' ? between(rand, 100, 1500) : fault === 'reset' ? between(rand, 5, 100) : rand() < 0.5 ? 0 : between(rand, 1000, 2000);
      step = { kind: 'proxy', fault, on: rand() < 0.8 ? 'leader' : 'follower', follower: between(rand, 0, 1), methods, ms, then: rand() < 0.5 ? 'forward' : 'drop', count: fault === 'lostAnswer' ? between(rand, 1, 3) : null, durationMs: between(rand, 200, 4000) };
    } else if (kind === 'sigstop') step = { kind, on: rand() < 0.6 ? 'leader' : 'follower', follower: between(rand, 0, 1), durationMs: between(rand, 200, 4000) };
    else if (kind === 'kill') step = { kind, on: rand() < 0.5 ? 'leader' : 'follower', follower: between(rand, 0, 1), durationMs: 2000 };
    else if (kind === 'restart') step = { kind, on: 'leader', durationMs: 2000 };
    else if (kind === 'failover') step = { kind, follower: between(rand, 0, 1), durationMs: between(rand, 200, 2000) };
    else step = { kind, follower: between(rand, 0, 1), durationMs: 2000 };
    steps.push({ at, ...step });
    at += step.durationMs + between(rand, 500, 7000);
  }
  return steps;
}

/** A short name for why a request got no answer: `timeout`, or the error's code (ECONNREFUSED, UND_ERR_SOCKET …). */
function errorName(err) {
  if (err?.name === 'TimeoutError' || err?.name === 'AbortError' || err?.code === 'UND_ERR_HEADERS_TIMEOUT' || err?.code === 'UND_ERR_BODY_TIMEOUT') return 'timeout';
  return typeof err?.code === 'string' ? err.code : (err?.name ?? 'error');
}

/** An admin command over a server's Unix socket: { status, body } or { status: 0, error } (timeout, no socket). */
async function admin(dataDir, command, timeoutMs = ADMIN_TIMEOUT_MS) {
  const dispatcher = new Agent({ connect: { socketPath: adminSocketPath(dataDir) } });
  try {
    const res = await request(`http://localhost/${command}`, { method: 'POST', dispatcher, headers: { 'content-type': 'application/json' }, body: '{}', headersTimeout: timeoutMs, bodyTimeout: timeoutMs, signal: AbortSignal.timeout(timeoutMs) });
    const text = await res.body.text();
    let body = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: res.statusCode, body };
  } catch (err) {
    return { status: 0, error: errorName(err) };
  } finally {
    dispatcher.destroy().catch(() => {});
  }
}

/** One HTTP request of a client: { status, body, error } (status 0 and `error` when no answer came within the time limit). */
async function call(url, method, path, token, body) {
  try {
    const res = await request(url + path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      headersTimeout: REQUEST_TIMEOUT_MS,
      bodyTimeout: REQUEST_TIMEOUT_MS,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const text = await res.body.text();
    let parsed = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: res.statusCode, body: parsed, error: null };
  } catch (err) {
    return { status: 0, body: null, error: errorName(err) };
  }
}

/**
 * Runs one schedule and checks it.
 * @param {object} opts
 * @param {'sync' | 'async'} opts.mode replication mode of every server
 * @param {number} opts.seed the schedule's seed
 * @param {number} opts.durationMs how long faults are injected (the load runs as long)
 * @param {number} [opts.writers] writer clients (default 3)
 * @param {Partial<typeof BOUNDS>} [opts.bounds] the checker's bounds (default BOUNDS)
 * @param {boolean} [opts.keepLogs] keep the client logs' folder (its path is in the result)
 * @param {(line: string) => void} [opts.log] progress lines
 * @returns {Promise<null | { seed, mode, schedule, violations, asyncLosses, counts, logDir }>} null without an object store
 */
export async function runFaults({ mode, seed, durationMs, writers = 3, bounds = BOUNDS, keepLogs = false, log = () => {} }) {
  const cleanups = [];
  const ctx = { after: (fn) => cleanups.push(fn) };
  const logDir = mkdtempSync(join(tmpdir(), 'forum-fault-logs-'));
  try {
    const store = await objectStore(ctx);
    if (store === null) return null;
    return await run({ ctx, store, mode, seed, durationMs, writers, bounds: { ...BOUNDS, ...bounds }, logDir, log });
  } finally {
    for (const fn of cleanups.reverse()) {
      try {
        await fn();
      } catch {
        // best effort: the rest still runs
      }
    }
    if (!keepLogs) rmSync(logDir, { recursive: true, force: true });
  }
}

async function run({ ctx, store, mode, seed, durationMs, writers, bounds, logDir, log }) {
  const prefix = `fault-${randomUUID().slice(0, 8)}`;
  const url = `s3://${store.bucket}/${prefix}`;
  // One replica key pair (issue 50): every server may lead (a promotion, a takeover), so each
  // holds the signing key; the public key is what followers verify the bucket with.
  const keys = replicaKeyPair(ctx);
  const t0 = Date.now();
  const eventsFile = join(logDir, 'events.jsonl');
  const event = (e) => appendFileSync(eventsFile, `${JSON.stringify({ t: Date.now(), ...e })}\n`);
  const servers = new Map(); // name → { name, role, dataDir, handle, proxy }
  let nameCounter = 0;
  const proxies = []; // every server's proxy, retired ones too (their counts)
  let leader = null; // the name writers send to

  /** Starts (or restarts, on its folder) server `s` as its role says; records its exit. */
  /**
   * Starts `s` on its folder with the environment of its role; `s.booting` holds the start while it
   * runs, so a failover or a retirement that comes while a timed-out restart is still starting the
   * server waits for it (the runbook's step 1: the old leader is gone or paused before a promotion;
   * a leader started after it was given up would take the epoch back).
   */
  const boot = (s) => {
    const p = bootNow(s);
    s.booting = p;
    return p.finally(() => {
      if (s.booting === p) s.booting = null;
    });
  };
  const bootNow = async (s) => {
    const env = {
      ...store.env,
      ...SERVER_SETTINGS,
      AWS_ENDPOINT_URL_S3: s.proxy.endpoint,
      FORUM_REPLICA_MODE: mode,
      FORUM_PUBLIC_URL: `http://${s.name}.fault.test`,
      FORUM_REPLICA_SIGNING_KEY: keys.signingKeyPath,
      FORUM_REPLICA_PUBLIC_KEY: keys.publicKey,
      ...(s.role === 'leader' ? { FORUM_REPLICA_URL: url } : { FORUM_FOLLOW: url }),
    };
    try {
      s.handle = await startServer(ctx, { dataDir: s.dataDir, env });
    } catch (err) {
      event({ kind: 'exit', server: s.name, pid: null, code: null, signal: null, stderr: String(err.message).slice(-2000) });
      s.handle = null;
      return false;
    }
    const h = s.handle;
    const pid = h.proc.pid;
    h.proc.once('exit', (code, sig) => event({ kind: 'exit', server: s.name, pid, code, signal: sig, stderr: logText(h.stderr).slice(-2000) }));
    event({ kind: 'start', server: s.name, pid, role: s.role, url: s.handle.url });
    return true;
  };
  const signal = (s, sig) => {
    const proc = s.handle?.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return false;
    event({ kind: 'kill', server: s.name, pid: proc.pid, signal: sig });
    proc.kill(sig);
    return true;
  };
  const exited = (s) => {
    const proc = s.handle?.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
    return new Promise((r) => proc.once('exit', r));
  };
  const newServer = async (role) => {
    const name = `s${++nameCounter}`;
    const proxy = await faultProxy(store.endpoint);
    ctx.after(() => proxy.close());
    proxies.push(proxy);
    const s = { name, role, dataDir: tempDir(ctx, `forum-fault-${name}-`), handle: null, proxy };
    servers.set(name, s);
    await boot(s);
    return s;
  };
  const followers = () => [...servers.values()].filter((s) => s.role === 'follower' && s.handle !== null).sort((a, b) => Number(a.name.slice(1)) - Number(b.name.slice(1)));
  const statusOf = async (s) => (await admin(s.dataDir, 'replication.status')).body;

  // Set-up: a leader with agents and a topic, two followers that have caught up.
  const first = await newServer('leader');
  leader = first.name;
  const reg = async (name) => {
    const r = await call(first.handle.url, 'POST', '/api/register', undefined, { name, provider: 'fault-suite', acceptsPublicArchive: true, operatorAuthorized: true });
    if (r.status !== 201) throw new Error(`register ${name}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const agents = [];
  for (let i = 0; i < writers; i++) agents.push(await reg(`writer-${i + 1}`));
  const readerAgent = await reg('reader-1');
  const topic = await call(first.handle.url, 'POST', '/api/topics', agents[0].token, { title: 'under faults' });
  if (topic.status !== 201) throw new Error(`topic: ${topic.status} ${JSON.stringify(topic.body)}`);
  await newServer('follower');
  await newServer('follower');
  const setupDeadline = Date.now() + 30_000;
  for (;;) {
    const ls = await statusOf(first);
    const fs = await Promise.all(followers().map(statusOf));
    if (ls?.lag?.records === 0 && fs.every((f) => f?.appliedSeq >= ls.shippedSeq)) break;
    if (Date.now() > setupDeadline) throw new Error(`set-up: the followers did not catch up within 30 s (${JSON.stringify({ ls, fs })})`);
    await sleep(100);
  }
  log(`fault suite: mode ${mode}, seed ${seed}, ${durationMs} ms, servers ${[...servers.keys()].join(' ')}, logs ${logDir}`);

  // Clients.
  let stopping = false;
  const record = (client, entry) => appendFileSync(join(logDir, `${client}.jsonl`), `${JSON.stringify({ client, ...entry })}\n`);
  const writer = async (i) => {
    const client = `writer-${i + 1}`;
    const rand = prng(seed * 31 + i + 1);
    const token = agents[i].token;
    for (let n = 0; !stopping; n++) {
      const op = rand() < 0.85 ? 'message' : 'work';
      const clientId = `${mode}-${client}-${n}`;
      const body = op === 'message' ? { topicId: topic.body.id, content: `${clientId} ${Math.floor(rand() * 1e9).toString(36)}`, clientId } : { clientId, title: `task ${clientId}`, description: 'written under faults', acceptanceCriteria: 'present once' };
      const path = op === 'message' ? '/api/messages' : '/api/work';
      for (let attempt = 0; attempt < WRITE_ATTEMPTS_MAX && !stopping; attempt++) {
        const server = leader;
        const s = servers.get(server);
        const start = Date.now();
        const r = s?.handle ? await call(s.handle.url, 'POST', path, token, body) : { status: 0, body: null, error: 'server down' };
        record(client, { server, op, method: 'POST', path, start, end: Date.now(), request: body, status: r.status, body: r.body, error: r.error });
        if (r.status >= 200 && r.status < 300) break;
        if (r.status >= 400 && r.status < 500 && r.status !== 429) break; // refused for good: a new write
        await sleep(between(rand, 100, 250));
      }
      await sleep(between(rand, 20, 80));
    }
  };
  const reader = async () => {
    const client = 'reader-1';
    const rand = prng(seed * 31 + 99);
    const cursors = new Map();
    while (!stopping) {
      const names = [...servers.keys()];
      const server = pick(rand, names);
      const op = rand() < 0.7 ? 'changes' : 'work-changes';
      const s = servers.get(server);
      const key = `${server} ${op}`;
      const c = cursors.get(key) ?? { after: 0, originId: null };
      const path = `/api/${op === 'changes' ? 'changes' : 'work/changes'}?limit=100${c.after > 0 ? `&after=${c.after}&originId=${c.originId}` : ''}`;
      const start = Date.now();
      const r = s?.handle ? await call(s.handle.url, 'GET', path, readerAgent.token) : { status: 0, body: null, error: 'server down' };
      record(client, { server, op, method: 'GET', path, start, end: Date.now(), status: r.status, body: compactPage(r.body), error: r.error });
      if (r.status === 200 && r.body?.cursor) cursors.set(key, { after: r.body.cursor.after, originId: r.body.cursor.originId });
      else if (r.status === 409) cursors.delete(key);
      await sleep(between(rand, 150, 400));
    }
  };
  const load = [...agents.map((_, i) => writer(i)), reader()];

  // The schedule.
  const schedule = makeSchedule(seed, durationMs);
  const tStart = Date.now();
  const proxyCounts = {};
  let faultId = 0;
  const booting = [];
  const retire = async (old) => {
    // A retired leader's folder is given up; a fresh follower takes its place (it restores
    // from the bucket first, in the background: the schedule goes on meanwhile).
    if (old.booting) await old.booting;
    signal(old, 'SIGKILL');
    await exited(old);
    servers.delete(old.name);
    booting.push(newServer('follower'));
  };
  const promote = async (f) => {
    const t = Date.now();
    // Wait past the checker's bound, so an answer that comes late is recorded with its time.
    const r = await admin(f.dataDir, 'replication.promote', Math.max(PROMOTE_TIMEOUT_MS, bounds.promoteBoundMs + 5000));
    let ok = r.status === 200 && r.body?.state === 'leading';
    event({ kind: 'promote', server: f.name, ok, status: r.status, ms: Date.now() - t, answer: r.status === 0 ? r.error : r.body });
    if (r.status === 0) {
      // No answer in time (the checker counts it): the take-over may still finish. Learn how it
      // ended before the schedule goes on, so that the steps after it act on the server that leads.
      ok = await promotionOutcome(f);
      event({ kind: 'promote-outcome', server: f.name, ok, ms: Date.now() - t });
    }
    return ok;
  };
  /**
   * Whether `f` leads once its promotion has ended (true) or it is a follower again or gone (false):
   * asked every 500 ms for up to PROMOTE_SETTLE_MS. A server that answers as a leader still
   * connecting or with the store unavailable holds the epoch and finishes the take-over on its own
   * (docs/operate/replication.md#failover), so at the deadline it counts as the leader: treating it
   * as failed would have the schedule restart the old leader, which takes the epoch back.
   */
  const promotionOutcome = async (f) => {
    const until = Date.now() + PROMOTE_SETTLE_MS;
    let last = null;
    while (Date.now() < until) {
      const st = (await admin(f.dataDir, 'replication.status', ADMIN_TIMEOUT_MS)).body;
      if (st?.role) last = st;
      if (st?.role === 'leader' && st.state === 'leading') return true;
      if (st?.role === 'leader' && st.state === 'fenced') return false;
      if (st?.role === 'follower' && (st.state === 'following' || st.state === 'stopped')) return false;
      await sleep(500);
    }
    return last?.role === 'leader' && last.state !== 'fenced' && last.state !== 'stopped';
  };
  const runStep = async (step) => {
    const id = ++faultId;
    const lead = servers.get(leader);
    // Followers retired leaders left may still be starting: wait for one (bounded), else skip the step.
    if (followers().length === 0) await Promise.race([Promise.allSettled(booting), sleep(STEP_DEADLINE_MS / 2)]);
    const fol = followers();
    if (lead === undefined || (fol.length === 0 && (step.on === 'follower' || step.kind === 'failover' || step.kind === 'takeover'))) {
      event({ kind: 'skipped', id, step, why: lead === undefined ? 'no leader' : 'no follower running' });
      return;
    }
    const target = step.on === 'follower' ? fol[step.follower % fol.length] : lead;
    const start = Date.now();
    let fault = step.kind;
    let losesLeader = false;
    let server = target?.name ?? null;
    if (step.kind === 'proxy') {
      fault = `proxy:${step.fault}`;
      const fid = target.proxy.addFault({ kind: step.fault, methods: step.methods, ms: step.ms, then: step.then, count: step.count });
      await sleep(step.durationMs);
      target.proxy.removeFault(fid);
    } else if (step.kind === 'sigstop') {
      signal(target, 'SIGSTOP');
      await sleep(step.durationMs);
      signal(target, 'SIGCONT');
    } else if (step.kind === 'kill' || step.kind === 'restart') {
      signal(target, step.kind === 'kill' ? 'SIGKILL' : 'SIGTERM');
      await exited(target);
      await boot(target);
    } else if (step.kind === 'failover' || step.kind === 'takeover') {
      const f = fol[step.follower % fol.length];
      server = lead.name;
      losesLeader = true;
      // A restart of the leader that outlived its step is still starting it: let it finish first.
      if (lead.booting) await lead.booting;
      if (step.kind === 'failover') signal(lead, 'SIGSTOP');
      if (step.kind === 'failover') await sleep(step.durationMs);
      const ok = await promote(f);
      if (step.kind === 'failover') signal(lead, 'SIGCONT');
      if (ok) {
        f.role = 'leader';
        lead.role = 'retired';
        leader = f.name;
      } else losesLeader = false;
      const end = Date.now();
      event({ kind: 'fault', id, fault, server, target: f.name, start, end, losesLeader, promoted: ok });
      if (ok) await retire(lead);
      return;
    }
    event({ kind: 'fault', id, fault, server, start, end: Date.now(), losesLeader });
  };
  for (const step of schedule) {
    const wait = tStart + step.at - Date.now();
    if (wait > 0) await sleep(wait);
    if (Date.now() - tStart > durationMs) break;
    log(`  +${((Date.now() - tStart) / 1000).toFixed(1)}s ${step.kind}${step.fault ? `:${step.fault}` : ''} on ${step.on ?? 'leader'} (${step.durationMs} ms)`);
    let timer;
    await Promise.race([
      runStep(step).catch((err) => event({ kind: 'harness-error', step, error: String(err?.stack ?? err) })),
      new Promise((r) => {
        timer = setTimeout(() => {
          event({ kind: 'harness-timeout', step });
          r();
        }, Math.max(STEP_DEADLINE_MS, bounds.promoteBoundMs + 20_000) + (step.kind === 'failover' || step.kind === 'takeover' ? PROMOTE_SETTLE_MS : 0));
      }),
    ]);
    clearTimeout(timer);
  }
  // A quiet tail, so that recovery after the last fault is judged too.
  const rest = tStart + durationMs - Date.now();
  if (rest > 0) await sleep(rest);
  await sleep(bounds.recoveryBoundMs + 2000);
  await Promise.race([Promise.allSettled(booting), sleep(STEP_DEADLINE_MS)]);

  // The end: stop the load, let a live leader ship, stop everything, read the bucket.
  stopping = true;
  await Promise.all(load);
  event({ kind: 'end' });
  const drainUntil = Date.now() + DRAIN_MS;
  const lead = servers.get(leader);
  while (lead?.handle && Date.now() < drainUntil) {
    const st = await statusOf(lead);
    if (st?.lag?.records === 0) break;
    await sleep(100);
  }
  for (const s of servers.values()) {
    if (s.handle === null) continue;
    const st = (await admin(s.dataDir, 'replication.status', PROMOTE_TIMEOUT_MS)).body;
    event({ kind: 'final-status', server: s.name, role: st?.role ?? null, state: st?.state ?? null, epoch: st?.epoch ?? null, lastError: st?.lastError ?? null });
  }
  for (const s of servers.values()) {
    signal(s, 'SIGCONT');
    signal(s, 'SIGKILL');
    await exited(s);
  }
  for (const p of proxies) for (const [k, v] of Object.entries(p.counts.faults)) if (v > 0) proxyCounts[k] = (proxyCounts[k] ?? 0) + v;
  const bucket = parseBucket(await bucketObjects({ store, prefix }));

  const entries = [];
  for (const f of readdirSync(logDir).filter((n) => n !== 'events.jsonl' && n.endsWith('.jsonl'))) entries.push(...parseJsonl(readFileSync(join(logDir, f), 'utf8')));
  const events = parseJsonl(readFileSync(eventsFile, 'utf8'));
  const result = checkHistory({ mode, entries, events, bucket, bounds });
  result.counts.proxyFaultsHit = proxyCounts;
  result.counts.harnessErrors = events.filter((e) => e.kind === 'harness-error').length;
  result.counts.stepsTimedOut = events.filter((e) => e.kind === 'harness-timeout').length;
  result.counts.stepsSkipped = events.filter((e) => e.kind === 'skipped').length;
  return { seed, mode, schedule, ...result, logDir, harnessEvents: events.filter((e) => e.kind === 'harness-error' || e.kind === 'harness-timeout' || e.kind === 'skipped'), elapsedMs: Date.now() - t0 };
}

/** A run's result as text: seed, counts, async losses and violations (each with its evidence). */
export function formatReport(r) {
  const lines = [`fault suite ${r.mode}: seed ${r.seed} (FORUM_FAULT_SEED=${r.seed} replays the schedule), ${r.schedule.length} steps, ${(r.elapsedMs / 1000).toFixed(0)} s`];
  lines.push(`  counts: ${JSON.stringify(r.counts)}`);
  for (const l of r.asyncLosses) lines.push(`  async loss: ${JSON.stringify(l)}`);
  for (const h of r.harnessEvents) lines.push(`  harness: ${JSON.stringify(h).slice(0, 600)}`);
  for (const v of r.violations) lines.push(`  VIOLATION ${v.rule}: ${JSON.stringify(v.evidence).slice(0, 1500)}`);
  if (r.violations.length === 0) lines.push('  no violations');
  return lines.join('\n');
}
