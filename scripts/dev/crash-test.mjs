#!/usr/bin/env node
/**
 * Crash-consistency test (issue 8). Repeatedly:
 *   1. starts the built server on one data folder,
 *   2. drives concurrent writes of every kind from several agents: messages, knowledge, work
 *      creates, and whole work lifecycles — claim → renew → submit → review (accept or revise),
 *      claim → release, cancel by the creator — each action with a fresh clientId and the
 *      expectedRevision of the last response, plus competing claims on other writers' open items,
 *   3. kills the server with SIGKILL at a random instant (one time in four it stops it with
 *      SIGTERM instead, which writes the state snapshot), then leaves the snapshot as it is,
 *      deletes it, flips a byte in it or cuts it short, and does the same to one file of the
 *      search index (small shards: FORUM_SEARCH_SHARD_DOCS=64, merged two at a time:
 *      FORUM_SEARCH_MERGE_FACTOR=2, so merges are often in flight when the server dies) or leaves
 *      a stray temp file, a merge's temp file or a file covered by another there (derived data:
 *      any of these must still start and answer the same),
 *   4. restarts it and checks that
 *      - every write that got a 2xx is present with identical content, and every message is
 *        found by `q` with its own content (work actions: the
 *        acknowledged revision in GET /api/work/history),
 *      - the hash chain verifies (`cli verify`),
 *      - both feeds continue from the cursors saved before the crash (no 409, nothing at or
 *        before the saved position is delivered again, seq strictly increasing), and the events
 *        read from them hold every acknowledged message and knowledge revision (discussion feed)
 *        and every acknowledged work revision (work feed) exactly once, with identical content;
 *        the cursors are saved before the first tracked write, so they cover every one,
 *      - retrying every in-doubt write (no response seen) with the same clientId and the same
 *        body resolves to exactly one record; for a work action: 200 with the revision that
 *        carries it (the original snapshot, or a fresh application if it never was applied), or
 *        409 for a stale revision, and then its receipt is `unknown` and no revision carries it.
 *   Erasures in flight (issue 25): an operator (made with `cli operator create`) erases, through
 *   POST /api/moderation/actions, acknowledged messages of a dedicated agent (`crash-erasee`, whose
 *   messages carry a unique marker) while the server may die at any instant. After each restart
 *   the checker requires that every acknowledged erasure is in effect (the message reads as a
 *   placeholder with `"erased": true` and empty content, `q` does not find it, the discussion
 *   feed's latest event for it is that placeholder, and no file of the data folder — segments,
 *   snapshot, search shards — holds its marker), that an in-doubt erasure is either all of that
 *   or not at all (the message whole, found by `q`), and that every other write is intact; after
 *   the last restart the topic export holds each erased message as a tombstone and every
 *   record's checksum matches its canonical JSON.
 *
 * Usage: node scripts/dev/crash-test.mjs [--iterations 100] [--writers 12] [--seed N] [--keep]
 * Prints one line per iteration and a summary; exits 1 on the first violation.
 * The test suite runs a short form through `runCrashTest` (test/crash/crash.test.mjs).
 */
import { spawn, execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Agent, request } from 'undici';
import { prng } from '../lib/prng.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SERVER_JS = join(ROOT, 'dist', 'server.js');
const CLI_JS = join(ROOT, 'dist', 'cli.js');
const execFileP = promisify(execFile);

/** Work actions the workload drives (part 3). */
export const ACTIONS = ['claim', 'renew', 'release', 'submit', 'review', 'cancel'];

/** The seeded PRNG (scripts/lib/prng.mjs), exported here too for test/unit/area-snapshots.test.mjs. */
export { prng };

export class Violation extends Error {}

/**
 * Prefix of the marker in each message of the dedicated erasee agent: the marker is this prefix
 * and 8 base-36 digits, unique per message, so a byte scan of the data folder can tell which
 * erased messages still have bytes on disk (see markersOnDisk).
 */
const ERASE_MARK = 'zqerase-';
const ERASE_MARK_LENGTH = ERASE_MARK.length + 8;

/**
 * The placeholder an erased message reads as (issues 25, 34): same fields, content emptied, the
 * clientId replaced by the message's own id, `erased`; keys sorted, as the server writes records
 * (canonical JSON), so `same` can compare it.
 */
const erasedPlaceholder = (m) => Object.fromEntries(Object.entries({ ...m, content: '', clientId: m.id, erased: true }).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

/**
 * Every erasee marker found in the files of `dataDir` (recursively: segments, snapshot, search
 * shards, temp files), as marker → relative paths. Files that vanish meanwhile are skipped.
 */
function markersOnDisk(dataDir) {
  const found = new Map();
  const mark = Buffer.from(ERASE_MARK, 'latin1');
  for (const entry of readdirSync(dataDir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath ?? entry.path, entry.name);
    let buf;
    try {
      buf = readFileSync(path);
    } catch {
      continue; // a temp or shard file replaced while we walked
    }
    for (let i = buf.indexOf(mark); i !== -1; i = buf.indexOf(mark, i + 1)) {
      const marker = buf.subarray(i, i + ERASE_MARK_LENGTH).toString('latin1');
      const list = found.get(marker) ?? [];
      list.push(path.slice(dataDir.length + 1));
      found.set(marker, list);
    }
  }
  return found;
}

function check(cond, message) {
  if (!cond) throw new Violation(message);
}

function startServer(dataDir) {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [SERVER_JS], {
      // Small search-index shards, so that many shard files exist to be damaged between stops; small
      // segments and no byte threshold, so that a whole replay (snapshot absent or refused) checks
      // them on worker threads (issue 30).
      env: {
        ...process.env, PORT: '0', HOST: '127.0.0.1', FORUM_DATA_DIR: dataDir, FORUM_RATE_LIMITS: 'off',
        FORUM_SEARCH_SHARD_DOCS: String(SEARCH_SHARD_DOCS), FORUM_SEARCH_MERGE_FACTOR: String(SEARCH_MERGE_FACTOR),
        FORUM_SEGMENT_KB: String(SEGMENT_KB), FORUM_REPLAY_WORKERS_MIN_KB: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    proc.stderr.on('data', (d) => (err += d));
    proc.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      if (line && !proc.url) {
        proc.replayWorkers = out.includes('"replay_workers"');
        proc.url = JSON.parse(line).url;
        resolve(proc);
      }
    });
    proc.once('exit', (code) => reject(new Violation(`server exited with ${code} before listening: ${err}`)));
  });
}

/** What may happen to the derived state snapshot between two stops (see disturbIndex). */
export const INDEX_DISTURBANCES = ['absent', 'kept', 'deleted', 'flipped', 'truncated'];

/**
 * Leaves, deletes or damages the state snapshot (derived data: every start must survive any of
 * these and answer the same). Output: what was done, one of INDEX_DISTURBANCES.
 */
function disturbIndex(dataDir, random) {
  const file = join(dataDir, 'index', 'state.snapshot');
  if (!existsSync(file)) return 'absent';
  const r = random();
  if (r < 0.4) return 'kept';
  if (r < 0.6) {
    rmSync(file);
    return 'deleted';
  }
  const buf = readFileSync(file);
  if (r < 0.8) {
    buf[Math.floor(random() * buf.length)] ^= 0x20;
    writeFileSync(file, buf);
    return 'flipped';
  }
  writeFileSync(file, buf.subarray(0, Math.floor(random() * buf.length)));
  return 'truncated';
}

/** Segment roll-over size of the crash test's server, KiB (FORUM_SEGMENT_KB): many segments. */
const SEGMENT_KB = 64;
/** Documents per search-index shard in the crash test's server (FORUM_SEARCH_SHARD_DOCS). */
const SEARCH_SHARD_DOCS = 64;
/** Search shard files merged at a time in the crash test's server (FORUM_SEARCH_MERGE_FACTOR): 2 makes merges frequent. */
const SEARCH_MERGE_FACTOR = 2;

/** What may happen to the derived search index between two stops (see disturbSearchIndex). */
export const SEARCH_INDEX_DISTURBANCES = ['absent', 'kept', 'deleted', 'flipped', 'truncated', 'temp', 'merge-temp', 'covered'];

/**
 * Leaves the n-gram search index's shard files alone, or deletes, damages or cuts one of them, or
 * leaves a stray temporary file, a half-written merge temp file, or a copy of a shard under the
 * name of a range inside it (as the inputs a crash leaves beside a merged file; it must be
 * dropped as covered). Derived data: every start must survive these and `q` must still find every
 * acknowledged message. Output: one of SEARCH_INDEX_DISTURBANCES.
 */
function disturbSearchIndex(dataDir, random) {
  const dir = join(dataDir, 'index', 'search');
  const shards = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.ngram')) : [];
  if (shards.length === 0) return 'absent';
  const file = join(dir, shards[Math.floor(random() * shards.length)]);
  const r = random();
  if (r < 0.25) return 'kept';
  if (r < 0.35) {
    rmSync(file);
    return 'deleted';
  }
  if (r < 0.65) {
    const buf = readFileSync(file);
    buf[Math.floor(random() * buf.length)] ^= 0x20;
    writeFileSync(file, buf);
    return 'flipped';
  }
  if (r < 0.72) {
    const buf = readFileSync(file);
    writeFileSync(file, buf.subarray(0, Math.floor(random() * buf.length)));
    return 'truncated';
  }
  if (r < 0.79) {
    writeFileSync(`${file}.tmp`, readFileSync(file).subarray(0, 100));
    return 'temp';
  }
  if (r < 0.88) {
    writeFileSync(`${file}.merge.tmp-${process.pid}`, readFileSync(file).subarray(0, 100));
    return 'merge-temp';
  }
  const m = /^(\d{16})-(\d{16})\.ngram$/.exec(file.slice(dir.length + 1));
  const first = Number(m[1]);
  const last = Number(m[2]);
  if (last <= first) return 'kept';
  const inner = `${String(first).padStart(16, '0')}-${String(last - 1).padStart(16, '0')}.ngram`;
  writeFileSync(join(dir, inner), readFileSync(file));
  return 'covered';
}

/** SIGTERM: the server finishes in-flight requests, flushes and writes its state snapshot. */
function stopGracefully(proc) {
  return new Promise((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
    proc.once('exit', () => resolve());
    proc.kill('SIGTERM');
  });
}

function kill9(proc) {
  return new Promise((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
    proc.once('exit', resolve);
    proc.kill('SIGKILL');
  });
}

/** One HTTP call; resolves to {status, body} or throws when the connection dies. */
async function call(dispatcher, base, method, path, body, token) {
  const headers = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await request(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), dispatcher });
  const text = await res.body.text();
  return { status: res.statusCode, body: text ? JSON.parse(text) : null };
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/**
 * Does work revision `rev` (following `prev`) carry the action `op`? Every attempted
 * (item, expectedRevision, actor, action) is sent with one clientId only, and submit and review
 * texts contain the clientId, so a match means this very request was applied.
 */
function carries(op, prev, rev) {
  const q = op.request;
  if (!prev || rev.revision !== prev.revision + 1 || prev.revision !== q.expectedRevision || rev.updatedBy !== op.actorId) return false;
  switch (q.action) {
    case 'claim':
      return rev.state === 'claimed' && rev.assigneeId === op.actorId;
    case 'renew':
      return prev.state === 'claimed' && rev.state === 'claimed' && prev.assigneeId === op.actorId && rev.assigneeId === op.actorId;
    case 'release':
      return prev.state === 'claimed' && rev.state === 'open' && rev.assigneeId === null;
    case 'submit':
      return rev.state === 'submitted' && rev.result?.content === q.content && same(rev.result.sources, q.sources ?? []);
    case 'review':
      return rev.review?.decision === q.decision && rev.review.feedback === q.feedback && rev.state === (q.decision === 'accept' ? 'completed' : 'open');
    case 'cancel':
      return rev.state === 'cancelled';
  }
  return false;
}

/**
 * Runs the crash test. Options: iterations, writers (concurrent loops), seed, log (function),
 * keep (keep the data folder), inject (self-test only: 'changed-ack' alters one acknowledged
 * work revision, 'forgotten-clientId' adds an in-doubt action that duplicates an applied one under
 * another clientId, 'lost-feed-event' makes the last round's feed reads miss the event of one
 * acknowledged message, 'phantom-erasure' counts an erasure as acknowledged that was never sent;
 * each must end in a Violation). Resolves to {iterations, checked,
 * acknowledged, actions, inDoubtRetries, erasures: {acked, inDoubt, inDoubtInEffect,
 * inDoubtNotInEffect}, seed, dataDir}; rejects with a Violation on the first
 * broken guarantee.
 */
export async function runCrashTest({ iterations = 100, writers = 12, seed = Date.now() & 0xffffffff, log = console.log, keep = false, inject } = {}) {
  const random = prng(seed);
  const dataDir = mkdtempSync(join(tmpdir(), 'forum-crash-'));
  const dispatcher = new Agent({ connections: writers + 4, pipelining: 1 });
  const acked = []; // every acknowledged write: {kind, path, request, token, actorId?, response}
  let unchecked = 0; // acked[unchecked..] have not yet been checked after a crash
  const inDoubt = []; // {kind, path, request, token, actorId?}
  const actions = Object.fromEntries(ACTIONS.map((a) => [a, 0])); // acknowledged work actions by kind
  const inDoubtRetries = { applied: 0, stale: 0 }; // in-doubt work actions: 200 on retry, 409 on retry
  const attempted = new Set(); // `${item}:${expectedRevision}:${actor}:${action}` sent once each
  let checked = 0;
  let cursors = null;
  // Events read from the saved cursors, across every round: how often each record appeared.
  const feedSeen = { discussion: new Map(), work: new Map(), drop: null };
  let creators = []; // creators[w]: the agent that creates and reviews writer w's work
  let workers = []; // workers[w]: the agent that claims writer w's work and others' open work
  const byId = new Map();
  const lives = []; // lives[w]: {item: last snapshot of writer w's work item, stale: reread first}
  let topicId = null;
  let serial = 0;
  const stats = { actions, inDoubtRetries };
  const indexDisturbances = Object.fromEntries(INDEX_DISTURBANCES.map((d) => [d, 0]));
  const searchIndexDisturbances = Object.fromEntries(SEARCH_INDEX_DISTURBANCES.map((d) => [d, 0]));
  /** Starts whose whole replay checked segments on worker threads (the server logs replay_workers). */
  let replaysInWorkers = 0;
  // Erasures (issue 25): an operator erases acknowledged messages of `erasee`; each such write
  // gets `erasure`: 'acked' (201 seen), 'doubt' (no answer; resolved after the restart to
  // 'acked' when in effect or 'kept' when not).
  let operator = null;
  let erasee = null;
  const erasures = { acked: 0, inDoubt: 0, inDoubtInEffect: 0, inDoubtNotInEffect: 0 };
  stats.erasures = erasures;
  try {
    for (let it = 1; it <= iterations; it++) {
      const server = await startServer(dataDir);
      if (server.replayWorkers) replaysInWorkers++;
      const base = server.url;
      const api = (method, path, body, token) => call(dispatcher, base, method, path, body, token);

      if (it === 1) {
        const reg = (name) => api('POST', '/api/register', { name, provider: 'crash-test', acceptsPublicArchive: true, operatorAuthorized: true }).then((r) => r.body);
        creators = await Promise.all(Array.from({ length: writers }, (_, w) => reg(`crash-creator-${w}`)));
        workers = await Promise.all(Array.from({ length: writers }, (_, w) => reg(`crash-worker-${w}`)));
        for (const a of [...creators, ...workers]) byId.set(a.id, a);
        for (let w = 0; w < writers; w++) lives.push({ item: null, stale: false });
        topicId = (await api('POST', '/api/topics', { title: 'crash test' }, creators[0].token)).body.id;
        erasee = await reg('crash-erasee');
        const made = await execFileP(process.execPath, [CLI_JS, '--data-dir', dataDir, 'operator', 'create', '--name', 'crash-operator']);
        operator = JSON.parse(made.stdout);
        check(typeof operator.token === 'string', `operator create gave ${made.stdout}`);
      } else {
        // Half of the in-doubt work actions wait one more round of writes before their retry, so
        // the item may move on meanwhile and the retry meets a stale revision.
        const due = inDoubt.filter((d) => !d.deferred || d.it < it - 1);
        const erased = acked.filter((w) => w.erasure !== undefined);
        checked += await verifyAfterCrash(api, { dataDir, acked: acked.slice(unchecked), erased, inDoubt: due, cursors, feedSeen, token: creators[0].token, topicId, stats });
        unchecked = acked.length;
        inDoubt.splice(0, inDoubt.length, ...inDoubt.filter((d) => !due.includes(d)));
        for (const life of lives) life.stale = life.item !== null; // in-doubt retries may have moved it on
      }
      // The feed check assumes the cursors predate every tracked write (see verifyAfterCrash).
      if (cursors === null) check(acked.length === 0 && inDoubt.length === 0, 'cursors must be saved before the first tracked write');
      cursors = await saveCursors(api, creators[0].token, cursors);

      // Drive writes until the kill.
      let dead = false;
      let stopping = false;
      let killedInDoubt = 0;
      /** The next request of writer w's work lifecycle, or null after a reread. */
      const lifecycleOp = async (w, n) => {
        const life = lives[w];
        if (life.stale) {
          const res = await api('GET', `/api/work?id=${life.item.id}`, undefined, creators[w].token);
          // A graceful stop answers reads that still arrive with 503 too: this writer is done.
          if (res.status === 503 && stopping) throw new Error('stopping');
          check(res.status === 200 && res.body.items.length === 1, `work item ${life.item.id} cannot be read: ${res.status}`);
          life.item = res.body.items[0];
          life.stale = false;
        }
        const item = life.item;
        const clientId = `wa-${it}-${w}-${n}`;
        if (!item || item.state === 'completed' || item.state === 'cancelled') {
          return { kind: 'work', path: '/api/work', token: creators[w].token, life, request: { clientId: `wc-${it}-${w}-${n}`, title: `work #${n}#`, description: `d ${n}`, acceptanceCriteria: 'c', tags: ['crash'] } };
        }
        // An in-doubt action left for later blocks its (revision, actor, action): pick another one.
        for (let tries = 0; tries < 8; tries++) {
          const r = random();
          let actor;
          let body;
          if (item.state === 'open') {
            if (r < 0.12) [actor, body] = [creators[w], { action: 'cancel' }];
            else [actor, body] = [workers[w], r < 0.6 ? { action: 'claim', leaseMinutes: 5 + Math.floor(random() * 116) } : { action: 'claim' }];
          } else if (item.state === 'claimed') {
            const assignee = byId.get(item.assigneeId);
            if (r < 0.28) [actor, body] = [assignee, { action: 'renew', leaseMinutes: 5 + Math.floor(random() * 30) }];
            else if (r < 0.45) [actor, body] = [assignee, { action: 'release' }];
            else if (r < 0.92) {
              const sources = random() < 0.5 ? [] : [`https://example.org/r/${n}`];
              [actor, body] = [assignee, { action: 'submit', content: `result ${clientId} ✓ "é" \\ 😀`, sources }];
            } else [actor, body] = [creators[w], { action: 'cancel' }];
          } else {
            if (r < 0.55) [actor, body] = [creators[w], { action: 'review', decision: 'accept', feedback: `fine ${clientId}` }];
            else if (r < 0.92) [actor, body] = [creators[w], { action: 'review', decision: 'revise', feedback: `again ${clientId}` }];
            else [actor, body] = [creators[w], { action: 'cancel' }];
          }
          const op = actionOp(item, actor, { ...body, clientId }, life);
          if (op) return op;
        }
        life.item = null; // every choice is blocked: leave the item to its in-doubt action
        return null;
      };
      const actionOp = (item, actor, body, life) => {
        const key = `${item.id}:${item.revision}:${actor.id}:${body.action}`;
        if (attempted.has(key)) return null;
        attempted.add(key);
        const request = { workItemId: item.id, expectedRevision: item.revision, ...body };
        return { kind: 'work-action', path: '/api/work/action', token: actor.token, actorId: actor.id, life, request };
      };
      const writer = async (w) => {
        while (!dead) {
          const n = serial++;
          const pick = random();
          let op;
          try {
            if (pick < 0.12) {
              const marker = ERASE_MARK + n.toString(36).padStart(8, '0');
              op = { kind: 'message', erasee: true, path: '/api/messages', token: erasee.token, request: { topicId, content: `erasee it${it} ${marker}`, clientId: `e-${it}-${w}-${n}` } };
            } else if (pick < 0.3) op = { kind: 'message', path: '/api/messages', token: creators[w].token, request: { topicId, content: `it${it} w${w} n${n} ✓`, clientId: `m-${it}-${w}-${n}` } };
            else if (pick < 0.4) op = { kind: 'knowledge', path: '/api/knowledge', token: creators[w].token, request: { title: `k ${n}`, content: `knowledge ${it}/${n}`, category: 'opinion', topicId } };
            else if (pick < 0.9) op = await lifecycleOp(w, n);
            else {
              // Compete for another writer's open item: races its own claim (one wins, one gets 409).
              const rivals = lives.filter((l, v) => v !== w && !l.stale && l.item?.state === 'open');
              if (rivals.length === 0) continue;
              const item = rivals[Math.floor(random() * rivals.length)].item;
              op = actionOp(item, workers[w], { action: 'claim', clientId: `ws-${it}-${w}-${n}`, leaseMinutes: 30 }, null);
            }
          } catch (err) {
            if (err instanceof Violation) throw err;
            return; // a read failed: the server is gone
          }
          if (!op) continue;
          let res;
          try {
            res = await api('POST', op.path, op.request, op.token);
            // A graceful stop answers requests that still arrive with 503 before doing anything;
            // the checker treats them as in doubt all the same (retried with the same clientId).
            if (res.status === 503 && stopping) throw new Error('stopping');
          } catch {
            inDoubt.push({ ...op, life: undefined, it, deferred: op.kind === 'work-action' && random() < 0.5 });
            killedInDoubt++;
            if (op.life) op.life.stale = op.life.item !== null;
            return;
          }
          if (res.status >= 200 && res.status < 300) {
            acked.push({ ...op, life: undefined, response: res.body });
            if (op.kind === 'work-action') actions[op.request.action]++;
            if (op.life) op.life.item = res.body;
          } else {
            // Only a work action may lose: to a rival claim or a stale view of the item (409).
            check(op.kind === 'work-action' && res.status === 409, `${op.kind} ${JSON.stringify(op.request)} gave ${res.status} ${JSON.stringify(res.body)}`);
            if (op.life) op.life.stale = true;
          }
        }
      };
      /** Erases a random acknowledged erasee message now and then until the kill. */
      const eraser = async () => {
        while (!dead) {
          await new Promise((r) => setTimeout(r, 5 + Math.floor(random() * 30)));
          const candidates = acked.filter((w) => w.erasee && w.erasure === undefined);
          if (candidates.length === 0 || dead) continue;
          const w = candidates[Math.floor(random() * candidates.length)];
          w.erasure = 'sent';
          let res;
          try {
            res = await api('POST', '/api/moderation/actions', { action: 'erase', target: { type: 'message', id: w.response.id }, reason: 'crash test' }, operator.token);
            if (res.status === 503 && stopping) throw new Error('stopping');
          } catch {
            w.erasure = 'doubt';
            erasures.inDoubt++;
            killedInDoubt++;
            return;
          }
          check(res.status === 201 && res.body.erasedRecords === 1, `erasure of message ${w.response.id} gave ${res.status} ${JSON.stringify(res.body)}`);
          w.erasure = 'acked';
          erasures.acked++;
        }
      };
      // A self-test's fault is built on a real erasee message, never erased, so its run sends none.
      const loops = Promise.all([...Array.from({ length: writers }, (_, w) => writer(w)), inject === 'phantom-erasure' ? Promise.resolve() : eraser()]);
      await new Promise((r) => setTimeout(r, 50 + Math.floor(random() * 350)));
      // A self-test run waits (up to INJECT_WAIT_MS) until the writes its fault is built on exist,
      // so a starved machine cannot turn the self-test into an unrelated failure.
      for (const until = Date.now() + INJECT_WAIT_MS; inject && !faultMaterial(inject, acked) && Date.now() < until; ) {
        await new Promise((r) => setTimeout(r, 20));
      }
      // One stop in four is a graceful one, which writes the state snapshot; the kills after it
      // leave that snapshot stale (records after it), and between stops it is also damaged or
      // deleted, so every start path (whole replay, snapshot + tail, refused snapshot) is crossed.
      const graceful = random() < 0.25;
      stopping = graceful;
      if (graceful) await stopGracefully(server);
      else await kill9(server);
      dead = true;
      await loops;
      const disturbance = disturbIndex(dataDir, random);
      indexDisturbances[disturbance]++;
      const searchDisturbance = disturbSearchIndex(dataDir, random);
      searchIndexDisturbances[searchDisturbance]++;
      log(`iteration ${it}/${iterations}: ${acked.length} acknowledged writes so far, ${killedInDoubt} in doubt at this ${graceful ? 'stop' : 'kill'}; snapshot ${disturbance}; search index ${searchDisturbance}`);
    }
    if (inject) injectFault(inject, acked, inDoubt, feedSeen);
    // Final round: restart once more and check every acknowledged write again.
    const server = await startServer(dataDir);
    const api = (method, path, body, token) => call(dispatcher, server.url, method, path, body, token);
    try {
      const erased = acked.filter((w) => w.erasure !== undefined);
      checked += await verifyAfterCrash(api, { dataDir, acked, erased, inDoubt, cursors, feedSeen, token: creators[0].token, topicId, stats, final: true });
    } finally {
      await new Promise((resolve) => {
        server.once('exit', resolve);
        server.kill('SIGTERM');
      });
    }
    return { iterations, checked, acknowledged: acked.length, actions, inDoubtRetries, erasures, indexDisturbances, searchIndexDisturbances, replaysInWorkers, seed, dataDir };
  } finally {
    await dispatcher.close();
    if (!keep) rmSync(dataDir, { recursive: true, force: true });
  }
}

/** How long a self-test run waits before its kill for the writes its fault is built on, ms. */
const INJECT_WAIT_MS = 60_000;

/** Whether `acked` holds what the self-test fault `kind` is built on (see injectFault). */
function faultMaterial(kind, acked) {
  if (kind === 'phantom-erasure') return acked.some((w) => w.erasee && w.erasure === undefined);
  if (kind === 'lost-feed-event') return acked.some((w) => w.kind === 'message');
  return acked.some((w) => w.kind === 'work-action');
}

/** Self-test faults (see runCrashTest); each must make the final verification fail. */
function injectFault(kind, acked, inDoubt, feedSeen) {
  if (kind === 'phantom-erasure') {
    // As if the server had acknowledged an erasure it never performed.
    const victim = acked.findLast((w) => w.erasee && w.erasure === undefined);
    check(victim !== undefined, 'inject: no unerased erasee message to build a fault on');
    victim.erasure = 'acked';
    return;
  }
  if (kind === 'lost-feed-event') {
    // As if the feed had skipped one acknowledged message: its event is dropped from the reads.
    const victim = acked.findLast((w) => w.kind === 'message');
    check(victim !== undefined, 'inject: no acknowledged message to build a fault on');
    feedSeen.drop = (e) => e.kind === 'message' && e.message.id === victim.response.id;
    return;
  }
  const applied = acked.filter((w) => w.kind === 'work-action');
  check(applied.length > 0, 'inject: no acknowledged work action to build a fault on');
  const victim = applied[applied.length - 1];
  if (kind === 'changed-ack') {
    victim.response = { ...victim.response, updated: new Date(0).toISOString() };
  } else if (kind === 'forgotten-clientId') {
    // As if the server had applied this request but forgotten its clientId: the retry meets a
    // stale revision (409) and an unknown receipt, yet a revision carries the action.
    inDoubt.push({ ...victim, response: undefined, request: { ...victim.request, clientId: `forgotten-${victim.request.clientId}` } });
  } else throw new Error(`unknown inject ${kind}`);
}

async function saveCursors(api, token, previous) {
  const d = await api('GET', '/api/changes?after=0&limit=1', undefined, token);
  const w = await api('GET', '/api/work/changes?after=0&limit=1', undefined, token);
  return {
    discussion: previous?.discussion ?? d.body.cursor,
    work: previous?.work ?? w.body.cursor,
  };
}

/**
 * The record an event carries, as `[key, record]`: `message <id>`, `knowledge <id>@<revision>` or
 * `work <id>@<revision>`; null for kinds the crash test does not track (room, topic).
 */
function eventRecord(e) {
  if (e.kind === 'message') return [`message ${e.message.id}`, e.message];
  if (e.kind === 'knowledge') return [`knowledge ${e.knowledge.id}@${e.knowledge.revision}`, e.knowledge];
  if (e.kind === 'work_item') return [`work ${e.workItem.id}@${e.workItem.revision}`, e.workItem];
  return null;
}

/** The feed key of an acknowledged write (see eventRecord). */
function ackedKey(w) {
  if (w.kind === 'message') return `message ${w.response.id}`;
  if (w.kind === 'knowledge') return `knowledge ${w.response.id}@${w.response.revision}`;
  return `work ${w.response.id}@${w.response.revision}`;
}

/**
 * Follows a feed from `cursor` to the end; checks that seq strictly increases from the cursor on
 * (so nothing at or before it comes again) and records every event's record in `seen` (key →
 * {count, record}); `drop` (self-test only) hides events. Returns the new cursor.
 */
async function follow(api, path, token, cursor, seen, drop) {
  let c = cursor;
  let last = c.after;
  for (;;) {
    const res = await api('GET', `${path}?after=${c.after}&originId=${c.originId}&limit=100`, undefined, token);
    check(res.status === 200, `${path} refused a cursor saved before the crash: ${res.status} ${JSON.stringify(res.body)}`);
    for (const e of res.body.events) {
      check(e.seq > last, `${path} delivered seq ${e.seq} after seq ${last} (saved cursor ${cursor.after}): not strictly increasing`);
      last = e.seq;
      if (drop?.(e)) continue;
      const found = eventRecord(e);
      if (!found) continue;
      const [key, record] = found;
      const entry = seen.get(key);
      if (entry) {
        entry.count++;
        entry.last = record;
      } else seen.set(key, { count: 1, record, last: record });
    }
    c = res.body.cursor;
    check(c.after >= last, `${path} returned cursor ${c.after} behind its last event ${last}`);
    if (!res.body.hasMore) return c;
  }
}

/** Every revision of a work item, ascending. */
async function history(api, workItemId, token) {
  const revisions = [];
  let after = 0;
  for (;;) {
    const res = await api('GET', `/api/work/history?workItemId=${workItemId}&afterRevision=${after}&limit=100`, undefined, token);
    check(res.status === 200, `history of ${workItemId} gave ${res.status}`);
    revisions.push(...res.body.revisions);
    after = res.body.nextAfterRevision;
    if (!res.body.hasMore) break;
  }
  revisions.forEach((r, i) => check(r.revision === i + 1, `history of ${workItemId} skips or repeats revision ${i + 1}`));
  return revisions;
}

/** Retries an in-doubt work action with its clientId and body; checks it resolved to exactly one revision. */
async function checkInDoubtAction(api, w, token, stats) {
  const q = w.request;
  const label = `in-doubt ${q.action} ${q.clientId} of ${q.workItemId}@${q.expectedRevision}`;
  const res = await api('POST', w.path, q, w.token);
  const receipt = await api('GET', `/api/receipts?kind=work&clientId=${q.clientId}`, undefined, w.token);
  check(receipt.status === 200, `receipt of ${label} gave ${receipt.status}`);
  const revs = await history(api, q.workItemId, token);
  const carrying = revs.filter((rev, i) => carries(w, revs[i - 1], rev));
  if (res.status === 200) {
    const snap = res.body;
    check(snap.id === q.workItemId && snap.revision === q.expectedRevision + 1, `retry of ${label} answered revision ${snap.id}@${snap.revision}`);
    check(carrying.length === 1 && same(carrying[0], snap), `retry of ${label} answered a snapshot that history does not hold as the revision carrying it (${carrying.length} carry it)`);
    check(receipt.body.outcome === 'recorded' && same(receipt.body.response.body, snap), `receipt of ${label} does not hold the snapshot: ${JSON.stringify(receipt.body)}`);
    const again = await api('POST', w.path, q, w.token);
    check(again.status === 200 && same(again.body, snap), `second retry of ${label} differs: ${again.status}`);
    stats.inDoubtRetries.applied++;
  } else if (res.status === 409) {
    check(revs.length > q.expectedRevision, `retry of ${label} got 409 although revision ${q.expectedRevision} is current: ${JSON.stringify(res.body)}`);
    check(receipt.body.outcome === 'unknown', `retry of ${label} got 409 but its receipt is ${receipt.body.outcome}`);
    check(carrying.length === 0, `retry of ${label} got 409 with an unknown receipt, yet revision ${carrying[0]?.revision} carries it`);
    stats.inDoubtRetries.stale++;
  } else {
    check(false, `retry of ${label} gave ${res.status} ${JSON.stringify(res.body)}`);
  }
}

/**
 * Checks every erasure sent so far (`erased`: acknowledged erasee messages with `erasure` set):
 * an acknowledged one, and an in-doubt one that took effect, reads as the placeholder, is not
 * found by `q`, and its marker is in no file of the data folder; an in-doubt one that did not take
 * effect reads whole, is found by `q`, and its marker is still in a segment; with `final`, the
 * topic export agrees (checkExport). Resolves 'doubt' to 'acked' or 'kept'. Returns the number of
 * checks.
 */
async function checkErasures(api, { dataDir, erased, token, topicId, stats, final }) {
  const onDisk = markersOnDisk(dataDir);
  let checked = 0;
  for (const w of erased) {
    if (w.erasure === 'kept') continue; // an in-doubt erasure that never took effect: a normal message
    const m = (await api('GET', `/api/messages?messageId=${w.response.id}`, undefined, token)).body.messages[0];
    const marker = w.request.content.slice(-ERASE_MARK_LENGTH);
    const found = await api('GET', `/api/messages?topicId=${topicId}&q=${encodeURIComponent(marker)}&limit=100`, undefined, token);
    const label = `${w.erasure === 'doubt' ? 'in-doubt' : 'acknowledged'} erasure of message ${w.response.id}`;
    const inEffect = same(m, erasedPlaceholder(w.response));
    if (w.erasure === 'doubt') {
      check(inEffect || same(m, w.response), `${label}: the message is neither whole nor the erased placeholder: ${JSON.stringify(m)}`);
      w.erasure = inEffect ? 'acked' : 'kept';
      stats.erasures[inEffect ? 'inDoubtInEffect' : 'inDoubtNotInEffect']++;
    } else check(inEffect, `${label} is not in effect: the message reads ${JSON.stringify(m)}`);
    if (inEffect) {
      check(found.body.messages.length === 0, `${label}: q=${marker} still finds ${JSON.stringify(found.body.messages)}`);
      check(!onDisk.has(marker), `${label}: its bytes are still in ${onDisk.get(marker)?.join(', ')}`);
    } else {
      check(found.body.messages.some((x) => same(x, w.response)), `${label} did not take effect, yet q=${marker} does not find the message`);
      check(onDisk.get(marker)?.some((p) => p.startsWith('log')) === true, `${label} did not take effect, yet its bytes are gone from the segments`);
    }
    checked++;
  }
  if (final) checked += await checkExport(api, { erased, token, topicId });
  return checked;
}

/**
 * The topic export after the last restart: every record's checksum is the SHA-256 of its
 * canonical JSON; an erased message is a tombstone (`erased: true`, no marker), a message whose
 * erasure never took effect is whole. Returns the number of checks.
 */
async function checkExport(api, { erased, token, topicId }) {
  const byId = new Map();
  let q = `topicId=${topicId}`;
  for (;;) {
    const res = await api('GET', `/api/exchange?${q}`, undefined, token);
    check(res.status === 200, `export of ${topicId} gave ${res.status} ${JSON.stringify(res.body)}`);
    for (const r of res.body.records) {
      check(createHash('sha256').update(r.canonicalJson, 'utf8').digest('hex') === r.sha256, `export record ${r.seq}: its checksum is not the SHA-256 of its canonical JSON`);
      byId.set(JSON.parse(r.canonicalJson).id, r);
    }
    if (!res.body.hasMore) break;
    const c = res.body.cursor;
    q = `topicId=${topicId}&after=${c.after}&through=${c.through}&originId=${c.originId}`;
  }
  for (const w of erased) {
    const r = byId.get(w.response.id);
    const marker = w.request.content.slice(-ERASE_MARK_LENGTH);
    check(r !== undefined, `export of ${topicId} lacks message ${w.response.id}`);
    if (w.erasure === 'acked') check(r.erased === true && !r.canonicalJson.includes(marker), `export: erased message ${w.response.id} is not a tombstone: ${JSON.stringify(r)}`);
    else check(r.erased !== true && r.canonicalJson.includes(marker), `export: message ${w.response.id}, whose erasure never took effect, is not whole: ${JSON.stringify(r)}`);
  }
  return erased.length;
}

async function verifyAfterCrash(api, { dataDir, acked, erased, inDoubt, cursors, feedSeen, token, topicId, stats, final = false }) {
  // 0. Erasures: acknowledged ones in effect, in-doubt ones all or nothing (resolved here); after
  //    the last restart, in the topic export too.
  let checked = await checkErasures(api, { dataDir, erased, token, topicId, stats, final });
  // 1. Every acknowledged write is present with identical content (erased messages as placeholders).
  for (const w of acked) {
    if (w.kind === 'message' && w.erasure === 'acked') {
      checked++; // checked by checkErasures
    } else if (w.kind === 'message') {
      const m = (await api('GET', `/api/messages?messageId=${w.response.id}`, undefined, token)).body.messages[0];
      check(same(m, w.response), `acknowledged message ${w.response.id} is missing or changed`);
      // Found by `q` too, through whatever the search index holds after the disturbance.
      const found = await api('GET', `/api/messages?topicId=${w.request.topicId}&q=${encodeURIComponent(w.request.content)}&limit=100`, undefined, token);
      check(found.body.messages.some((x) => same(x, w.response)), `acknowledged message ${w.response.id} is not found by q=${w.request.content}`);
    } else if (w.kind === 'knowledge') {
      const res = await api('GET', `/api/knowledge?id=${w.response.id}&history=true`, undefined, token);
      check(res.body.knowledge.some((k) => same(k, w.response)), `acknowledged knowledge ${w.response.id} is missing or changed`);
    } else {
      const res = await api('GET', `/api/work/history?workItemId=${w.response.id}&afterRevision=${w.response.revision - 1}&limit=1`, undefined, token);
      check(res.status === 200 && same(res.body.revisions[0], w.response), `acknowledged work revision ${w.response.id}@${w.response.revision} is missing or changed`);
    }
    checked++;
  }
  // 2. The hash chain verifies.
  const verify = await execFileP(process.execPath, [CLI_JS, '--data-dir', dataDir, 'verify']).catch((err) => err);
  check(!verify.code, `verify failed: ${verify.stderr ?? verify.message}`);
  // 3. Both feeds continue from the saved cursors, and what they delivered since the cursors were
  //    first saved (before any tracked write) holds every acknowledged write exactly once.
  cursors.discussion = await follow(api, '/api/changes', token, cursors.discussion, feedSeen.discussion, feedSeen.drop);
  cursors.work = await follow(api, '/api/work/changes', token, cursors.work, feedSeen.work, feedSeen.drop);
  for (const w of acked) {
    const [feed, seen] = w.kind === 'work' || w.kind === 'work-action' ? ['work feed', feedSeen.work] : ['discussion feed', feedSeen.discussion];
    const key = ackedKey(w);
    const entry = seen.get(key);
    check(entry !== undefined, `acknowledged ${key} is missing from the ${feed} read from the saved cursor`);
    if (w.erasure === 'acked') {
      // The message's own event (read before or after the erasure) and the erasure's event.
      check(entry.count <= 2, `erased ${key} appears ${entry.count} times in the ${feed}`);
      check(same(entry.last, erasedPlaceholder(w.response)), `erased ${key}: the ${feed}'s latest event for it is not the placeholder: ${JSON.stringify(entry.last)}`);
      checked++;
      continue;
    }
    check(entry.count === 1, `acknowledged ${key} appears ${entry.count} times in the ${feed}`);
    check(same(entry.record, w.response), `acknowledged ${key} differs in the ${feed}: ${JSON.stringify(entry.record)}`);
    checked++;
  }
  // 4. In-doubt writes retried with the same clientId and body resolve to exactly one record.
  for (const w of inDoubt) {
    if (w.kind === 'knowledge') continue; // not idempotent by design (no clientId)
    if (w.kind === 'work-action') {
      await checkInDoubtAction(api, w, token, stats);
      checked++;
      continue;
    }
    const res = await api('POST', w.path, w.request, w.token);
    // Messages answer 201 to a retry too; a work create answers 201 if the retry applied it and
    // 200 if the original had been applied (part 7).
    const okStatus = res.status === 201 || (w.kind === 'work' && res.status === 200);
    check(okStatus, `retry of in-doubt ${w.kind} ${w.request.clientId} gave ${res.status} ${JSON.stringify(res.body)}`);
    const again = await api('POST', w.path, w.request, w.token);
    check(same(again.body, res.body), `second retry of ${w.request.clientId} differs`);
    if (w.kind === 'message') {
      const listed = await api('GET', `/api/messages?topicId=${topicId}&q=${encodeURIComponent(w.request.content)}`, undefined, token);
      check(listed.body.messages.filter((m) => m.clientId === w.request.clientId).length === 1, `in-doubt message ${w.request.clientId} is not exactly one record`);
    } else {
      const listed = await api('GET', `/api/work?q=${encodeURIComponent(w.request.title)}&limit=100`, undefined, token);
      check(listed.body.items.filter((x) => x.title === w.request.title).length === 1, `in-doubt work ${w.request.clientId} is not exactly one record`);
    }
    checked++;
  }
  return checked;
}

async function main() {
  const args = process.argv.slice(2);
  const opt = (name, fallback) => {
    const i = args.indexOf(`--${name}`);
    return i === -1 ? fallback : Number(args[i + 1]);
  };
  if (args.includes('--help')) {
    console.log('usage: node scripts/dev/crash-test.mjs [--iterations 100] [--writers 12] [--seed N] [--keep]');
    return;
  }
  const seed = opt('seed', Date.now() & 0xffffffff);
  console.log(`crash test: seed ${seed}`);
  const started = Date.now();
  const result = await runCrashTest({ iterations: opt('iterations', 100), writers: opt('writers', 12), seed, keep: args.includes('--keep') });
  console.log(
    `work actions acknowledged: ${ACTIONS.map((a) => `${a} ${result.actions[a]}`).join(', ')}; ` +
      `in-doubt actions retried: ${result.inDoubtRetries.applied} applied once (200), ${result.inDoubtRetries.stale} stale and never applied (409); ` +
      `erasures: ${result.erasures.acked} acknowledged, ${result.erasures.inDoubt} in doubt (${result.erasures.inDoubtInEffect} in effect, ${result.erasures.inDoubtNotInEffect} not); ` +
      `state snapshot between stops: ${INDEX_DISTURBANCES.map((d) => `${d} ${result.indexDisturbances[d]}`).join(', ')}`,
      `search index between stops: ${SEARCH_INDEX_DISTURBANCES.map((d) => `${d} ${result.searchIndexDisturbances[d]}`).join(', ')}; ` +
      `starts whose whole replay ran on worker threads: ${result.replaysInWorkers}`,
  );
  console.log(
    `crash test passed: ${result.iterations} kills or stops, ${result.acknowledged} acknowledged writes, ${result.checked} checks, ` +
      `${((Date.now() - started) / 1000).toFixed(1)} s (seed ${result.seed})`,
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    console.error(err instanceof Violation ? `VIOLATION: ${err.message}` : err);
    process.exit(1);
  });
}
