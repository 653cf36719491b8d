#!/usr/bin/env node
// Push benchmark (issue 37): a section of `npm run bench` (scripts/bench.mjs), on by default, off
// with --smoke or --no-push. One server (dist/server.js, FORUM_METRICS_PORT=0 for the
// forum_feed_waiters gauge, FORUM_CONNECTIONS_PER_ADDRESS=0 because every waiter comes from
// 127.0.0.1 here; seeded like bench.mjs's cells, plus 50 waiter agents) is measured with 0, 100
// and 1,000 waiters (the cells alternate and their order rotates each round, as bench.mjs does):
//   1. write throughput: bench.mjs's `write` cell (POST /api/messages at 64 connections, its wrk
//      or autocannon machinery) while the waiters follow the discussion feed; req/s with 1,000
//      waiters ÷ req/s with none (target ≥ 0.9×);
//   2. commit-to-delivery latency p50/p99 for 100 and 1,000 waiters during that write load.
//      Waiters: held long-poll requests on /api/changes (wait=30, limit=100), spread over 50
//      agents (2 or 20 each), every one on a connection of its own; each one, answered, sends
//      its next request from the page's cursor as the helpers' followFeed does: at once, or
//      after a page with hasMore (a backlog) once its pollAfterSeconds (1 s, + up to 20 %
//      jitter) has passed. Streams follow the same rules on the server's side (stream.ts).
//      Every write wakes them all. The same with waiters on /api/inbox, which only a write that
//      concerns their agent wakes: each probe mentions 5 of the 50 agents in turn. Then the same
//      four cells with Server-Sent Events streams instead of long polls (`Accept:
//      text/event-stream`, one stream per connection, each page an event; a stream that ends at
//      its wait is reopened from its last event id).
//      Delivery is timed with probes: a probe writer of the harness posts one message every
//      100 ms (on its own connection, beside the load) and notes when its 201 arrived — the
//      moment the write was acknowledged to its writer, after its group commit's fdatasync. A
//      waiter (on /api/changes: every one; on /api/inbox: those of the mentioned agents) notes when a response carrying that message has arrived in full. Delivery latency
//      = arrival − acknowledgement, for every (probe, waiter) pair; both clocks are this
//      process's performance.now(). It can be slightly negative: the server answers the held
//      requests right after the group commit, in the same turn as the 201. A waiter that was
//      between two requests at the commit gets the probe in its next request's page (that
//      round trip is part of its latency). Probes and waiters run in the harness's process,
//      on the same cores as the server and the load generator: their CPU is part of the cost.
//
// Usage: node scripts/bench.mjs [--push | --no-push] [flags]
//        node scripts/bench/push-bench.mjs [bench.mjs flags]
//   The second form runs scripts/bench.mjs with `--servers ours --scenarios write --connections
//   64 --no-replay --no-search --no-replication --push` followed by the flags given (a later flag
//   wins). bench.mjs's --rounds, --duration, --warmup, --seed-messages, --threads, --loadgen,
//   --ours and --out apply here too; see node scripts/bench.mjs --help.
import { setMaxListeners } from 'node:events';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { api } from './lib/api.mjs';
import { LeanConnection } from './lib/lean-http.mjs';
import { runStandalone } from './lib/standalone.mjs';
import { median } from './lib/measure.mjs';
import { mainThreadCpuUs } from './lib/stages.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The cells: waiters on `feed` (changes: /api/changes, woken by every write; inbox: /api/inbox,
 * woken only by the probes that mention their agent). 0 waiters is the throughput reference.
 */
const CELLS = [
  { feed: 'changes', waiters: 0, mode: 'poll' },
  { feed: 'changes', waiters: 100, mode: 'poll' },
  { feed: 'changes', waiters: 1000, mode: 'poll' },
  { feed: 'inbox', waiters: 100, mode: 'poll' },
  { feed: 'inbox', waiters: 1000, mode: 'poll' },
  { feed: 'changes', waiters: 100, mode: 'sse' },
  { feed: 'changes', waiters: 1000, mode: 'sse' },
  { feed: 'inbox', waiters: 100, mode: 'sse' },
  { feed: 'inbox', waiters: 1000, mode: 'sse' },
];
/** How a cell's waiters follow their feed: held long-poll requests, or Server-Sent Events streams. */
const MODES = { poll: 'long poll', sse: 'SSE' };
/** How a cell's waiters follow, for the table: "long poll", "long poll (undici client)", "SSE". */
const asLabel = (c) => (c.mode === 'poll' && c.client !== 'lean' ? `${MODES[c.mode]} (${c.client} client)` : MODES[c.mode]);
/**
 * Waiter agents a probe mentions (inbox cells), by default (--push-mentions): probe k mentions
 * agents 5k .. 5k + 4 (mod 50), so with 1,000 waiters (20 per agent) every probe wakes 100 of
 * them, 1,000 deliveries a second: each waiter is answered about once a second.
 */
export const PUSH_MENTIONS_DEFAULT = 5;
const PATHS = { changes: '/api/changes', inbox: '/api/inbox' };
/** Agents the waiters are spread over (issue 37: "1,000 waiting requests from 50 agents"). */
const WAITER_AGENTS = 50;
const CONNECTIONS = 64;
/** One probe message every this many ms during a measured cell. */
const PROBE_INTERVAL_MS = 100;
/** `wait` of each held request, s: long enough that none ends at its deadline during a cell. */
const WAIT_S = 30;
/** The issue's target: write req/s with 1,000 waiters ≥ this × without. */
const TARGET_RATIO = 0.9;
/** Stream framing and the probe text, as bytes (the SSE waiters scan bytes). */
const EVENT_END = Buffer.from('\n\n');
const PROBE_MARK = Buffer.from('push probe #');
const DOT = Buffer.from('.');
const NEWLINE = Buffer.from('\n');
const ID_MARK = Buffer.from('id: ');
const AFTER_MARK = Buffer.from('"after":');
const POLL_AFTER_MARK = Buffer.from('"pollAfterSeconds":');
const HAS_MORE = Buffer.from('"hasMore":true');

/** The integer right after the first `mark` in `buf` (a page's cursor, its pollAfterSeconds). */
function numberAfter(buf, mark) {
  let i = buf.indexOf(mark);
  if (i === -1) throw new Error(`no ${mark} in the page`);
  let n = 0;
  for (i += mark.length; buf[i] >= 48 && buf[i] <= 57; i++) n = n * 10 + buf[i] - 48;
  return n;
}

/** How many of the [probe, time] pairs in `arrivals` are of probe `k`. */
function countOf(arrivals, k) {
  let n = 0;
  for (let i = 0; i < arrivals.length; i += 2) if (arrivals[i] === k) n++;
  return n;
}

const pct = (xs, p) => {
  if (xs.length === 0) return NaN;
  const s = Float64Array.from(xs).sort();
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};
const fmtInt = (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'n/a');
const fmtMs = (n) => (!Number.isFinite(n) ? 'n/a' : Math.abs(n) < 10 ? n.toFixed(2) : n.toFixed(1));


/** A gauge of the server's metrics (forum_feed_waiters, forum_log_head_seq). */
async function gauge(metricsUrl, name) {
  const text = await (await fetch(metricsUrl, { signal: AbortSignal.timeout(5000) })).text();
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
}

/** The forum_feed_waiters gauge. */
const heldNow = (metricsUrl) => gauge(metricsUrl, 'forum_feed_waiters');

/** Resolves once the server holds exactly `n` requests; throws after `ms`. */
async function untilHeld(metricsUrl, n, ms = 60_000) {
  const until = performance.now() + ms;
  for (;;) {
    const held = await heldNow(metricsUrl);
    if (held === n) return;
    if (performance.now() > until) throw new Error(`the server holds ${held} feed requests, not ${n}, after ${ms / 1000} s`);
    await sleep(50);
  }
}

/** The caught-up cursor of `feed` for `token`'s agent: { after, originId }. */
async function caughtUp(base, feed, token) {
  let q = 'after=0';
  for (;;) {
    const page = await api(base, 'GET', `${PATHS[feed]}?${q}&limit=100`, { token });
    if (!page.hasMore) return page.cursor;
    q = `after=${page.cursor.after}&originId=${page.cursor.originId}`;
  }
}

/**
 * Starts `n` waiters on `feed` (waiter i as agent i mod WAITER_AGENTS) at `cursor` (an inbox
 * cursor at the head is every agent's caught-up cursor), each on a connection of its own, as
 * held long polls (`mode` 'poll', sent over `client`: 'lean', scripts/bench/lib/lean-http.mjs, or
 * 'undici', one undici Pool) or streams ('sse', undici). Each notes [probe number, arrival ms] for
 * every probe its pages carry. Returns { arrivals, stats, positions, stop() }; stats.responses
 * counts pages read (long-poll responses, stream events); positions[i] is waiter i's cursor
 * position (`after`) now.
 */
function startWaiters(base, feed, tokens, n, cursor, mode = 'poll', client = 'lean') {
  // undici for streams and for long polls with `client` 'undici'; the lean client needs no pool.
  const useLean = mode === 'poll' && client === 'lean';
  const pool = useLean ? null : new Pool(base, { connections: n, pipelining: 1, headersTimeout: (WAIT_S + 30) * 1000, bodyTimeout: (WAIT_S + 30) * 1000 });
  const lean = [];
  const controller = new AbortController();
  // Every waiter's request listens on this one signal (to stop them all at once): not a leak.
  setMaxListeners(0, controller.signal);
  const arrivals = [];
  const stats = { responses: 0, errors: 0, lastError: null };
  const positions = new Array(n).fill(cursor.after);
  let stopping = false;
  const loop = async (i) => {
    const authorization = `Bearer ${tokens[i % tokens.length]}`;
    // The lean client (scripts/bench/lib/lean-http.mjs) by default: a third of undici's CPU per page.
    const conn = useLean ? (lean[i] = new LeanConnection(base, { authorization })) : null;
    let after = cursor.after;
    while (!stopping) {
      try {
        const path = `${PATHS[feed]}?after=${after}&originId=${cursor.originId}&limit=100&wait=${WAIT_S}`;
        let status;
        let body;
        if (conn !== null) ({ status, body } = await conn.get(path));
        else {
          const res = await pool.request({ method: 'GET', path, headers: { authorization }, signal: controller.signal });
          status = res.statusCode;
          // Bytes, not text (as the streams below): 1,000 followers of a busy feed read tens of MB a
          // second, and decoding it all would take the harness's share of the cores from wrk.
          body = Buffer.from(await res.body.arrayBuffer());
        }
        const at = performance.now();
        if (status !== 200) throw new Error(`GET ${PATHS[feed]} → ${status}: ${body.toString('utf8', 0, 200)}`);
        stats.responses++;
        for (let j = body.indexOf(PROBE_MARK); j !== -1; j = body.indexOf(PROBE_MARK, j + PROBE_MARK.length)) {
          const from = j + PROBE_MARK.length;
          arrivals.push(Number(body.toString('latin1', from, body.indexOf(DOT, from))), at);
        }
        // The cursor is the page's first `"after":` (format, then cursor, then the events).
        after = numberAfter(body, AFTER_MARK);
        positions[i] = after;
        // The documented follower (followFeed, exchange.md): after a page with hasMore (a
        // backlog) wait its pollAfterSeconds (+ up to 20 % jitter); after a held page, ask again at once.
        if (body.includes(HAS_MORE)) await sleep(numberAfter(body, POLL_AFTER_MARK) * 1000 * (1 + Math.random() * 0.2));
      } catch (err) {
        if (stopping) return;
        stats.errors++;
        stats.lastError = err.message;
        await sleep(100);
      }
    }
  };
  // A stream: one request that stays open, every page an event (`id:` its cursor, `data:` the
  // page); an event's arrival is the chunk that completed it. When the stream ends at its wait,
  // the next one resumes from the last id, as EventSource does.
  const streamLoop = async (i) => {
    const authorization = `Bearer ${tokens[i % tokens.length]}`;
    let lastId = `${cursor.originId}:${cursor.after}`;
    while (!stopping) {
      try {
        const res = await pool.request({ method: 'GET', path: `${PATHS[feed]}?limit=100&wait=${WAIT_S}`, headers: { authorization, accept: 'text/event-stream', 'last-event-id': lastId }, signal: controller.signal });
        if (res.statusCode !== 200) throw new Error(`stream ${PATHS[feed]} → ${res.statusCode}: ${(await res.body.text()).slice(0, 200)}`);
        // Bytes, not text: the probes and ids are ASCII, and a stream of every event of the write
        // load is a lot to decode in the harness's one process.
        let pending = Buffer.alloc(0);
        for await (const chunk of res.body) {
          const at = performance.now();
          pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
          const end = pending.lastIndexOf(EVENT_END);
          if (end === -1) continue;
          const complete = pending.subarray(0, end);
          pending = pending.subarray(end + 2);
          for (let i = complete.indexOf(PROBE_MARK); i !== -1; i = complete.indexOf(PROBE_MARK, i + PROBE_MARK.length)) {
            const from = i + PROBE_MARK.length;
            arrivals.push(Number(complete.toString('latin1', from, complete.indexOf(DOT, from))), at);
          }
          for (let i = complete.indexOf(ID_MARK); i !== -1; i = complete.indexOf(ID_MARK, i + 1)) {
            if (i > 0 && complete[i - 1] !== 10) continue; // an `id:` field starts a line
            const from = i + ID_MARK.length;
            lastId = complete.toString('latin1', from, complete.indexOf(NEWLINE, from));
            positions[i] = Number(lastId.slice(lastId.lastIndexOf(':') + 1));
            stats.responses++;
          }
        }
      } catch (err) {
        if (stopping) return;
        stats.errors++;
        stats.lastError = err.message;
        await sleep(100);
      }
    }
  };
  const loops = Array.from({ length: n }, (_, i) => (mode === 'sse' ? streamLoop(i) : loop(i)));
  return {
    arrivals,
    stats,
    positions,
    async stop() {
      stopping = true;
      controller.abort();
      for (const conn of lean) conn?.close();
      await Promise.allSettled(loops);
      await pool?.destroy().catch(() => undefined);
    },
  };
}

/** The `mentions` waiter agents (numbers 0..49) probe `k` mentions by name. */
const mentionedBy = (k, mentions) => Array.from({ length: mentions }, (_, j) => (k * mentions + j) % WAITER_AGENTS);

/**
 * Posts a probe message every PROBE_INTERVAL_MS (numbers from `first`) until stopped, on a
 * connection of its own, mentioning `mentionedBy(k, mentions)`; acks[k] = when probe k's 201 arrived. Returns { acks, next, stop() }.
 */
function startProbes(base, token, topicId, first, mentions) {
  const pool = new Pool(base, { connections: 1 });
  const acks = new Map();
  let stopping = false;
  let next = first;
  const run = (async () => {
    for (let k = first; !stopping; k = ++next) {
      const t0 = performance.now();
      const res = await pool.request({
        method: 'POST',
        path: '/api/messages',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ topicId, content: `push probe #${k}. ${mentionedBy(k, mentions).map((a) => `@push-waiter-${a}`).join(' ')}`, clientId: `push-probe-${k}` }),
      });
      const at = performance.now();
      await res.body.dump();
      if (res.statusCode === 201) acks.set(k, at);
      const left = PROBE_INTERVAL_MS - (performance.now() - t0);
      if (left > 0) await sleep(left);
    }
  })();
  return {
    acks,
    /** The number the next probe would have had. */
    get next() {
      return next;
    },
    async stop() {
      stopping = true;
      await run;
      await pool.close();
    },
  };
}

/** A run id, so the fixed-rate writer's clientIds never repeat across cells and runs. */
const RUN_ID = `${process.pid}-${Date.now().toString(36)}`;
let rateCells = 0;

/**
 * The fixed-rate write load (--push-rate): POST /api/messages at `rate` writes/s, open loop (a
 * write is sent when it is due, whether or not earlier ones were answered), on `connections`
 * connections; a write due while every connection is busy is not sent and counted as late.
 * Returns { stop() } resolving to a cell result shaped like bench.mjs's runCell ({ rps,
 * requests, non2xx, p50Ms, p99Ms, socketErrors }) plus `late`.
 */
function startRateWriter(base, token, topicId, rate, connections) {
  const pool = new Pool(base, { connections, pipelining: 1 });
  const cell = ++rateCells;
  const latencies = [];
  let ok = 0;
  let bad = 0;
  let late = 0;
  let inflight = 0;
  let due = 0;
  const t0 = performance.now();
  const authorization = `Bearer ${token}`;
  const send = (k) => {
    const s = performance.now();
    inflight++;
    pool
      .request({ method: 'POST', path: '/api/messages', headers: { authorization, 'content-type': 'application/json' }, body: `{"topicId":"${topicId}","content":"fixed-rate write ${k} of the push benchmark","clientId":"rate-${RUN_ID}-${cell}-${k}"}` })
      .then(async (res) => {
        await res.body.dump();
        if (res.statusCode === 201) ok++;
        else bad++;
        latencies.push(performance.now() - s);
      }, () => bad++)
      .finally(() => inflight--);
  };
  const timer = setInterval(() => {
    const target = Math.floor(((performance.now() - t0) / 1000) * rate);
    for (; due < target; due++) {
      if (inflight >= connections) late++;
      else send(due);
    }
  }, 2);
  return {
    async stop() {
      clearInterval(timer);
      const seconds = (performance.now() - t0) / 1000;
      while (inflight > 0) await sleep(5);
      await pool.close();
      return { rps: ok / seconds, requests: ok + bad, non2xx: bad, p50Ms: pct(latencies, 50), p99Ms: pct(latencies, 99), socketErrors: 0, late };
    },
  };
}

/**
 * The write load of one cell for `seconds`: wrk's closed loop at CONNECTIONS connections (bench.mjs
 * `runCell`), or with --push-rate the fixed-rate writer.
 */
async function writeLoad(ctx, server, seconds) {
  const { opts, gen } = ctx;
  if (!opts.pushRate) return ctx.runCell(gen, server, 'write', CONNECTIONS, seconds);
  const w = startRateWriter(server.base, server.seed.tokens[1] ?? server.seed.tokens[0], server.seed.topicId, opts.pushRate, CONNECTIONS);
  await sleep(seconds * 1000);
  return w.stop();
}

/**
 * Runs the section. `ctx`: bench.mjs's { opts, gen, log, startServer, stopChild, seedForum,
 * runCell, summarize }. Returns { cells: [{ waiters, summary, latencies, delivered, expected,
 * responsesPerS, errors }] } or { skipped } / { failed }.
 */
export async function measurePush(ctx) {
  const { opts, log } = ctx;
  if (!existsSync(opts.oursEntry)) return { skipped: `${path.relative(root, opts.oursEntry)} not found (npm run build)` };
  if (opts.pushAgainst && !existsSync(opts.pushAgainst)) return { failed: `--push-against ${opts.pushAgainst} not found` };
  // The servers measured: ours, and with --push-against an earlier tree's server beside it, every
  // cell run on both one after the other (which goes first alternating by round), so the two compare in one run.
  const targets = [{ name: 'ours', entry: opts.oursEntry }];
  if (opts.pushAgainst) targets.push({ name: 'against', entry: opts.pushAgainst });
  try {
    for (const target of targets) {
      const server = await ctx.startServer('ours', { ...opts, oursEntry: target.entry }, { env: { FORUM_METRICS_PORT: '0', FORUM_CONNECTIONS_PER_ADDRESS: '0' } });
      target.server = server;
      let info = null;
      for (let i = 0; i < 3000 && !(info = server.listening()); i++) await sleep(20);
      if (!info?.metricsUrl) throw new Error(`the server ${target.entry} logged no metricsUrl`);
      target.metricsUrl = info.metricsUrl;
      const t0 = performance.now();
      server.seed = await ctx.seedForum(server, { messages: opts.seedMessages });
      target.waiterTokens = [];
      for (let i = 0; i < WAITER_AGENTS; i++) {
        const a = await api(server.base, 'POST', '/api/register', { body: { name: `push-waiter-${i}`, provider: 'bench', acceptsPublicArchive: true, operatorAuthorized: true } });
        target.waiterTokens.push(a.token);
      }
      log(`push: ${target.name} (${path.relative(root, target.entry)}) ready on ${server.base}, seeded ${opts.seedMessages} messages and ${WAITER_AGENTS} waiter agents in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    }
    // Long-poll cells once per waiter client (--push-client), streams always over undici.
    const chosen = CELLS.filter((c) => c.waiters === 0 || ((!opts.pushMode || c.mode === opts.pushMode) && (opts.pushWaiters === null || opts.pushWaiters.includes(c.waiters)))).flatMap((c) => (c.waiters > 0 && c.mode === 'poll' ? opts.pushClients.map((client) => ({ ...c, client })) : [{ ...c, client: c.mode === 'sse' ? 'undici' : null }]));
    // One group per cell: the same cell on each server.
    const groups = chosen.map((c) => targets.map((target) => ({ ...c, target, rounds: [], latencies: [], delivered: 0, expected: 0, responses: 0, seconds: 0, errors: 0, lastError: null, cpuUs: 0, writes: 0, deliveryS: 0 })));
    const cells = groups.flat();
    let probeNo = 1;
    for (let round = 0; round < opts.rounds; round++) {
      // The cells' order rotates each round, and within a cell the servers take turns going first.
      const rotated = groups.map((_, i) => groups[(i + round) % groups.length]).flatMap((g) => (round % 2 === 0 ? g : [...g].reverse()));
      for (const cell of rotated) {
        const n = cell.waiters;
        const { server, metricsUrl, waiterTokens } = cell.target;
        // How many of the waiters probe k concerns: all on the feed; on the inbox, those of the agents it mentions.
        const concerned = (k) => (cell.feed === 'changes' ? n : mentionedBy(k, opts.pushMentions).reduce((sum, a) => sum + Math.floor(n / WAITER_AGENTS) + (a < n % WAITER_AGENTS ? 1 : 0), 0));
        const cursor = await caughtUp(server.base, cell.feed, waiterTokens[0]);
        const waiters = startWaiters(server.base, cell.feed, waiterTokens, n, cursor, cell.mode, cell.client ?? 'lean');
        await untilHeld(metricsUrl, n);
        if (opts.warmup > 0) await writeLoad(ctx, server, opts.warmup);
        const responsesBefore = waiters.stats.responses;
        const probes = startProbes(server.base, server.seed.tokens[0], server.seed.topicId, probeNo, opts.pushMentions);
        // The delivery rounds' own measure of their main-thread time (a server without the metric: NaN).
        const delivery0 = await gauge(metricsUrl, 'forum_feed_delivery_seconds_total');
        const c0 = performance.now();
        const cpu0 = mainThreadCpuUs(server.pid);
        const r = await writeLoad(ctx, server, opts.duration);
        const cpu1 = mainThreadCpuUs(server.pid);
        const delivery1 = await gauge(metricsUrl, 'forum_feed_delivery_seconds_total');
        // Pages read during the cell (not during the wait for the last probe below).
        const responses = waiters.stats.responses - responsesBefore;
        const seconds = (performance.now() - c0) / 1000;
        // The server's own cost, apart from the harness and wrk on the same cores: its main
        // thread's CPU time in the cell (writes, and whatever the waiters made it do) per write.
        if (cpu0 !== null && cpu1 !== null) {
          cell.cpuUs += cpu1 - cpu0;
          cell.writes += r.requests - r.non2xx;
        }
        cell.deliveryS += delivery1 - delivery0;
        if (cell.feed === 'changes' && n > 0) {
          // How far behind the head the followers are when the write load stops (log records;
          // the discussion feed's cursor is a log seq): the median waiter, the largest in any round.
          const head = await gauge(metricsUrl, 'forum_log_head_seq');
          const lag = head - [...waiters.positions].sort((a, b) => a - b)[Math.floor(n / 2)];
          cell.lagRecords = Math.max(cell.lagRecords ?? 0, lag);
          cell.lagSeconds = Math.max(cell.lagSeconds ?? 0, lag / r.rps);
        }
        await probes.stop();
        // Let the last probe reach every waiter (up to 10 s) before the waiters stop.
        const last = Math.max(0, ...probes.acks.keys());
        for (let t = 0; t < 200 && n > 0 && countOf(waiters.arrivals, last) < concerned(last); t++) await sleep(50);
        await waiters.stop();
        await untilHeld(metricsUrl, 0);
        probeNo = probes.next;
        const pairs = waiters.arrivals;
        let delivered = 0;
        for (let i = 0; i < pairs.length; i += 2) {
          const ack = probes.acks.get(pairs[i]);
          if (ack === undefined) continue;
          cell.latencies.push(pairs[i + 1] - ack);
          delivered++;
        }
        cell.rounds.push(r);
        cell.delivered += delivered;
        for (const k of probes.acks.keys()) cell.expected += concerned(k);
        cell.responses += responses;
        cell.seconds += seconds;
        cell.errors += waiters.stats.errors;
        cell.lastError = waiters.stats.lastError ?? cell.lastError;
        const lat = n > 0 ? `  delivery p50 ${fmtMs(pct(cell.latencies, 50))} ms p99 ${fmtMs(pct(cell.latencies, 99))} ms (${fmtInt(cell.delivered)} of ${fmtInt(cell.expected)})` : '';
        const who = targets.length > 1 ? `${cell.target.name.padEnd(7)} ` : '';
        log(`[push ${round + 1}/${opts.rounds}] ${who}${cell.feed.padEnd(7)} ${cell.mode.padEnd(4)} ${cell.mode === 'poll' && n > 0 ? `${cell.client.padEnd(6)} ` : ''}waiters ${String(n).padEnd(4)} write c=${CONNECTIONS} ${fmtInt(r.rps).padStart(7)} req/s  p99 ${fmtMs(r.p99Ms)} ms${lat}${r.non2xx ? `  non-2xx ${r.non2xx}` : ''}${r.late ? `  late ${r.late}` : ''}${waiters.stats.errors ? `  waiter errors ${waiters.stats.errors}` : ''}`);
      }
    }
    for (const cell of cells) cell.summary = ctx.summarize(cell.rounds);
    return { cells, servers: targets.map((t) => ({ name: t.name, entry: path.relative(root, t.entry) })) };
  } catch (err) {
    return { failed: err.message };
  } finally {
    for (const target of targets) if (target.server) await ctx.stopChild(target.server.child);
  }
}

/**
 * The write throughput of `cell` ÷ that of `noneCell` (same server), round by round: each round
 * runs both cells minutes apart at most, so a pair shares that round's machine state (the disk's
 * fsync latency, other load), which drifts between rounds by more than the waiters cost.
 * Output: { median, min, max } of the per-round ratios (NaN when there are none).
 */
export function pairedRatios(cell, noneCell) {
  const ratios = cell.rounds.map((r, i) => r.rps / noneCell.rounds[i].rps).filter(Number.isFinite);
  if (ratios.length === 0) return { median: NaN, min: NaN, max: NaN };
  return { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios) };
}

/** The section's markdown lines. */
export function renderPush(result, opts) {
  const out = ['', '## Push: long-polled feeds and streams (issue 37)', ''];
  if (!result || result.skipped) {
    out.push(`skipped: ${result?.skipped ?? 'off (--no-push)'}`);
    return out;
  }
  if (result.failed) {
    out.push(`**failed: ${result.failed}**`);
    return out;
  }
  const two = result.servers.length > 1;
  out.push(`${two ? 'Each server' : 'One server'} (dist/server.js, FORUM_METRICS_PORT=0, FORUM_CONNECTIONS_PER_ADDRESS=0: every waiter is on 127.0.0.1) seeded with ${opts.seedMessages} messages; ${opts.rounds} round(s), ${opts.warmup} s warm-up + ${opts.duration} s measured per cell, the cells alternating. Write load: ${opts.pushRate ? `a fixed ${fmtInt(opts.pushRate)} POST /api/messages a second (--push-rate; open loop from the harness on ${CONNECTIONS} connections, a write due while all are busy not sent and counted late), the same in every cell, so the server's CPU per write compares like for like` : `bench.mjs's write cell (POST /api/messages) at ${CONNECTIONS} connections`}. Waiters: held GET /api/changes (or /api/inbox)?wait=${WAIT_S}&limit=100 requests over ${WAITER_AGENTS} agents, one connection each (sent by scripts/bench/lib/lean-http.mjs, a minimal keep-alive GET client that costs the harness about a third of undici's CPU per page; "undici client" rows: one undici Pool, as before), each sending its next request from the page's cursor as the helpers' followFeed does — at once, or pollAfterSeconds (1 s, + up to 20 % jitter) after a page with hasMore (the \"long poll\" rows), or Accept: text/event-stream streams of the same feeds over the same agents, one connection each, every page an event, resumed from the last event id when a stream ends at its wait (the \"SSE\" rows; streams are written at most once per FEED_STREAM_FLUSH_MS, and after a page with hasMore the next follows its pollAfterSeconds later); every write wakes the /api/changes waiters, only a probe that mentions its agent wakes an /api/inbox waiter. Delivery latency: a probe message posted by the harness every ${PROBE_INTERVAL_MS} ms on its own connection, mentioning ${opts.pushMentions} of the ${WAITER_AGENTS} waiter agents in turn (--push-mentions; so ${fmtInt((1000 / PROBE_INTERVAL_MS) * opts.pushMentions * (1000 / WAITER_AGENTS))} inbox deliveries a second with 1,000 waiters, each answered every ${(WAITER_AGENTS / opts.pushMentions / (1000 / PROBE_INTERVAL_MS)).toFixed(1)} s); for every (probe, waiter it concerns) pair, the moment the waiter's response (stream event) carrying the probe arrived in full minus the moment the probe's 201 arrived at its writer (both this process's clock; slightly negative when the held request is answered before the 201). Waiters, probes, load generator and server share the machine's cores.`, '');
  if (two) out.push(`Two servers, every cell run on both one after the other (which goes first alternating round by round): ours (${result.servers[0].entry}) and against (${result.servers[1].entry}, --push-against). Each row's "÷ no waiters" is against the same server's row without waiters; "ours ÷ against" compares the same cell on the two.`, '');
  const noneOf = (c) => result.cells.find((x) => x.waiters === 0 && x.target === c.target);
  const twinOf = (c) => result.cells.find((x) => x !== c && x.feed === c.feed && x.mode === c.mode && x.client === c.client && x.waiters === c.waiters);
  const cpuPerWrite = (c) => (c.writes > 0 ? c.cpuUs / c.writes : NaN);
  out.push(`|${two ? ' server |' : ''} waiters on | as | waiters | write req/s (${CONNECTIONS} conns) | req/s min–max | write p50 ms | write p99 ms | ÷ no waiters: of the medians; median of the rounds' pairs (min–max) | server CPU µs/write (÷ no waiters) | delivery p50 ms | delivery p99 ms | delivery max ms | deliveries (of probes × waiters) | follower lag at the end (log records) | waiter pages/s | delivery rounds: measured ms/s (main-thread ms/s above no waiters) | non-2xx |${two ? ' ours ÷ against (req/s, CPU/write) |' : ''} target |`);
  out.push(`|${two ? '---|' : ''}---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|${two ? '---:|' : ''}---|`);
  for (const c of result.cells) {
    const s = c.summary;
    const noneCell = noneOf(c);
    const ratio = s.rps / noneCell.summary.rps;
    const paired = pairedRatios(c, noneCell);
    const target = c.waiters === 1000 ? `≥ ${TARGET_RATIO}× no waiters: ${paired.median >= TARGET_RATIO ? 'met' : 'MISSED'}` : '';
    const lat = c.waiters === 0 ? '— | — | — | —' : `${fmtMs(pct(c.latencies, 50))} | ${fmtMs(pct(c.latencies, 99))} | ${fmtMs(Math.max(...c.latencies))} | ${fmtInt(c.delivered)} of ${fmtInt(c.expected)}`;
    const lag = c.lagRecords === undefined ? '—' : `${fmtInt(c.lagRecords)} (${c.lagSeconds.toFixed(1)} s of writes)`;
    const twin = two ? twinOf(c) : undefined;
    // The rounds' own measure beside what the server's main thread spent above its CPU per write
    // without waiters, at this cell's write rate (ms per second of the cell).
    const above = (c.cpuUs - cpuPerWrite(noneCell) * c.writes) / 1000 / c.seconds;
    const measured = c.waiters === 0 ? '—' : `${Number.isFinite(c.deliveryS) ? fmtMs((c.deliveryS * 1000) / c.seconds) : '—'} (${fmtMs(above)})`;
    const vs = !two ? '' : c.target.name !== 'ours' || !twin ? ' — |' : ` ${(s.rps / twin.summary.rps).toFixed(2)}×, ${(cpuPerWrite(c) / cpuPerWrite(twin)).toFixed(2)}× |`;
    out.push(`|${two ? ` ${c.target.name} |` : ''} ${c.waiters === 0 ? '—' : PATHS[c.feed]} | ${c.waiters === 0 ? '—' : asLabel(c)} | ${fmtInt(c.waiters)} | ${fmtInt(s.rps)} | ${fmtInt(s.minRps)}–${fmtInt(s.maxRps)} | ${fmtMs(s.p50Ms)} | ${fmtMs(s.p99Ms)} | ${c.waiters === 0 ? '—' : `${ratio.toFixed(2)}×; ${paired.median.toFixed(2)}× (${paired.min.toFixed(2)}–${paired.max.toFixed(2)}×)`} | ${cpuPerWrite(c).toFixed(1)}${c.waiters === 0 ? '' : ` (${(cpuPerWrite(c) / cpuPerWrite(noneCell)).toFixed(2)}×)`} | ${lat} | ${lag} | ${c.waiters === 0 ? '—' : fmtInt(c.responses / c.seconds)} | ${measured} | ${(s.non2xxRatio * 100).toFixed(2)}% |${vs} ${target} |`);
  }
  out.push('', `Reading the table: each /api/changes waiter follows every event of the write load. The feed's rules (part 4 rule 5; streams keep them on the server's side) let a follower that is behind read one page of at most 100 events per pollAfterSeconds (1 s), so at a write rate above 100 a second the followers fall behind by design and stay there while the load lasts ("follower lag": the median follower's distance from the log's head when the write load stops, the largest over the rounds, and how many seconds of that load it is), delivering no probe within the cell; what they cost the writers is the "÷ no waiters" column: first the ratio of the cells' median req/s over all rounds, then the median (and range) of the ratios round by round — each round runs every cell once, so a pair shares that round's machine (disk latency and other load drift between rounds by more than the waiters cost); the target is judged on the latter. "server CPU µs/write" is the server's main-thread CPU time in the cell (/proc, utime + stime of its main thread) per write completed, whatever the waiters made it do included: the server's own cost, apart from the harness (waiters, probes) and wrk, which share the same cores here and slow the load down when they are busy. "waiter pages/s" is how many pages (long-poll responses, stream events) the harness read. "delivery rounds: measured ms/s" is the server's forum_feed_delivery_seconds_total over the cell: the main-thread time its delivery rounds measured for themselves, which sizes their windows (FEED_DELIVERY_SHARE_PERCENT); beside it in parentheses, the main-thread time per second of the cell above what the same writes cost without waiters (CPU per write of the no-waiters row × writes; it also moves with the group commits' size): the whole cost the waiters brought. The /api/inbox rows are the waiting case: held requests a write does not concern, woken with the probes that mention their agent.`);
  const errors = result.cells.filter((c) => c.errors > 0);
  for (const c of errors) out.push('', `${c.target.name}: ${c.waiters} ${asLabel(c)} waiters on ${PATHS[c.feed]}: ${c.errors} failed waiter requests (last: ${c.lastError})`);
  return out;
}

/** The section's problems that fail the run: non-2xx write cells, failed waiter requests, a failure. */
export function pushFailures(result, maxRatio) {
  if (!result || result.skipped) return [];
  if (result.failed) return [`push: ${result.failed}`];
  const out = [];
  for (const c of result.cells) {
    if (c.summary.non2xxRatio > maxRatio) out.push(`push (${c.target.name}) write c=${CONNECTIONS} with ${c.waiters} ${asLabel(c)} waiters on ${PATHS[c.feed]}: ${(c.summary.non2xxRatio * 100).toFixed(2)}% non-2xx responses`);
    if (c.errors > 0) out.push(`push (${c.target.name}): ${c.errors} waiter requests failed with ${c.waiters} ${asLabel(c)} waiters on ${PATHS[c.feed]} (last: ${c.lastError})`);
  }
  return out;
}

// ---- standalone: the harness with only what this section needs --------------------------------

runStandalone(import.meta.url, ['--servers', 'ours', '--scenarios', 'write', '--connections', '64', '--no-replay', '--no-search', '--no-replication', '--push']);
