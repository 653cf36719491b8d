#!/usr/bin/env node
/**
 * Crash-consistency test (issue 8). Repeatedly:
 *   1. starts the built server on one data folder,
 *   2. drives concurrent writes of every kind (messages, knowledge, work creates, work claims
 *      and releases) from several agents,
 *   3. kills the server with SIGKILL at a random instant,
 *   4. restarts it and checks that
 *      - every write that got a 2xx is present with identical content,
 *      - the hash chain verifies (`cli verify`),
 *      - both feeds continue from the cursors saved before the crash (no 409, nothing at or
 *        before the saved position is delivered again),
 *      - retrying every in-doubt write with its clientId resolves to exactly one record.
 *
 * Usage: node scripts/crash-test.mjs [--iterations 100] [--writers 12] [--seed N] [--keep]
 * Prints one line per iteration and a summary; exits 1 on the first violation.
 * The test suite runs a short form through `runCrashTest` (test/crash/crash.test.mjs).
 */
import { spawn, execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Agent, request } from 'undici';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SERVER_JS = join(ROOT, 'dist', 'server.js');
const CLI_JS = join(ROOT, 'dist', 'cli.js');
const execFileP = promisify(execFile);

/** Small deterministic PRNG (mulberry32) so a failing run can be replayed with --seed. */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class Violation extends Error {}

function check(cond, message) {
  if (!cond) throw new Violation(message);
}

function startServer(dataDir) {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [SERVER_JS], {
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', FORUM_DATA_DIR: dataDir, FORUM_RATE_LIMITS: 'off' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    proc.stderr.on('data', (d) => (err += d));
    proc.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      if (line && !proc.url) {
        proc.url = JSON.parse(line).url;
        resolve(proc);
      }
    });
    proc.once('exit', (code) => reject(new Violation(`server exited with ${code} before listening: ${err}`)));
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

/**
 * Runs the crash test. Options: iterations, writers (concurrent loops), seed, log (function),
 * keep (keep the data folder). Resolves to {iterations, checked, inDoubt, dataDir}; rejects with
 * a Violation on the first broken guarantee.
 */
export async function runCrashTest({ iterations = 100, writers = 12, seed = Date.now() & 0xffffffff, log = console.log, keep = false } = {}) {
  const random = prng(seed);
  const dataDir = mkdtempSync(join(tmpdir(), 'forum-crash-'));
  const dispatcher = new Agent({ connections: writers + 4, pipelining: 1 });
  const acked = []; // every acknowledged write: {kind, path, request, token, response}
  let unchecked = 0; // acked[unchecked..] have not yet been checked after a crash
  const inDoubt = []; // {kind, path, request, token}
  let checked = 0;
  let cursors = null;
  let agents = [];
  let topicId = null;
  let serial = 0;
  try {
    for (let it = 1; it <= iterations; it++) {
      const server = await startServer(dataDir);
      const base = server.url;
      const api = (method, path, body, token) => call(dispatcher, base, method, path, body, token);

      if (it === 1) {
        for (let i = 0; i < 4; i++) {
          const r = await api('POST', '/api/register', { name: `crash-${i}`, provider: 'crash-test', acceptsPublicArchive: true, operatorAuthorized: true });
          agents.push(r.body);
        }
        topicId = (await api('POST', '/api/topics', { title: 'crash test' }, agents[0].token)).body.id;
      } else {
        checked += await verifyAfterCrash(api, { dataDir, acked: acked.slice(unchecked), inDoubt, cursors, agents, topicId });
        unchecked = acked.length;
        inDoubt.length = 0;
      }
      cursors = await saveCursors(api, agents[0].token, cursors);

      // Drive writes until the kill.
      let dead = false;
      const writer = async (w) => {
        const token = agents[w % agents.length].token;
        const claimer = agents[(w + 1) % agents.length];
        const other = claimer.token;
        while (!dead) {
          const n = serial++;
          const pick = random();
          let op;
          if (pick < 0.45) op = { kind: 'message', path: '/api/messages', token, request: { topicId, content: `it${it} w${w} n${n} ✓`, clientId: `m-${it}-${w}-${n}` } };
          else if (pick < 0.6) op = { kind: 'knowledge', path: '/api/knowledge', token, request: { title: `k ${n}`, content: `knowledge ${it}/${n}`, category: 'opinion', topicId } };
          else if (pick < 0.8) op = { kind: 'work', path: '/api/work', token, request: { clientId: `wc-${it}-${w}-${n}`, title: `work ${n}`, description: 'd', acceptanceCriteria: 'c', tags: ['crash'] } };
          else {
            // Claim an open item made by someone else, then release it.
            let list;
            try {
              list = await api('GET', '/api/work?available=true&limit=20', undefined, other);
            } catch {
              return;
            }
            // A creator cannot claim its own work (403), so pick someone else's open item.
            const item = list.body?.items?.find((x) => x.state === 'open' && x.authorId !== claimer.id);
            if (!item) continue;
            op = { kind: 'work-action', path: '/api/work/action', token: other, request: { action: 'claim', workItemId: item.id, expectedRevision: item.revision, clientId: `wa-${it}-${w}-${n}`, leaseMinutes: 5 } };
          }
          try {
            const res = await api('POST', op.path, op.request, op.token);
            if (res.status >= 200 && res.status < 300) acked.push({ ...op, response: res.body });
          } catch {
            inDoubt.push(op);
            return;
          }
        }
      };
      const loops = Array.from({ length: writers }, (_, w) => writer(w));
      await new Promise((r) => setTimeout(r, 50 + Math.floor(random() * 350)));
      await kill9(server);
      dead = true;
      await Promise.all(loops);
      log(`iteration ${it}/${iterations}: ${acked.length} acknowledged writes so far, ${inDoubt.length} in doubt at this kill`);
    }
    // Final round: restart once more and check every acknowledged write again.
    const server = await startServer(dataDir);
    const api = (method, path, body, token) => call(dispatcher, server.url, method, path, body, token);
    checked += await verifyAfterCrash(api, { dataDir, acked, inDoubt, cursors, agents, topicId });
    await new Promise((resolve) => {
      server.once('exit', resolve);
      server.kill('SIGTERM');
    });
    return { iterations, checked, acknowledged: acked.length, seed, dataDir };
  } finally {
    await dispatcher.close();
    if (!keep) rmSync(dataDir, { recursive: true, force: true });
  }
}

async function saveCursors(api, token, previous) {
  const d = await api('GET', '/api/changes?after=0&limit=1', undefined, token);
  const w = await api('GET', '/api/work/changes?after=0&limit=1', undefined, token);
  return {
    discussion: previous?.discussion ?? d.body.cursor,
    work: previous?.work ?? w.body.cursor,
  };
}

/** Follows a feed from `cursor` to the end; checks continuity; returns the new cursor. */
async function follow(api, path, token, cursor) {
  let c = cursor;
  for (;;) {
    const res = await api('GET', `${path}?after=${c.after}&originId=${c.originId}&limit=100`, undefined, token);
    check(res.status === 200, `${path} refused a cursor saved before the crash: ${res.status} ${JSON.stringify(res.body)}`);
    for (const e of res.body.events) check(e.seq > c.after, `${path} delivered seq ${e.seq} at or before the saved cursor ${c.after}`);
    c = res.body.cursor;
    if (!res.body.hasMore) return c;
  }
}

async function verifyAfterCrash(api, { dataDir, acked, inDoubt, cursors, agents, topicId }) {
  const token = agents[0].token;
  let checked = 0;
  // 1. Every acknowledged write is present with identical content.
  for (const w of acked) {
    if (w.kind === 'message') {
      const m = (await api('GET', `/api/messages?messageId=${w.response.id}`, undefined, token)).body.messages[0];
      check(JSON.stringify(m) === JSON.stringify(w.response), `acknowledged message ${w.response.id} is missing or changed`);
    } else if (w.kind === 'knowledge') {
      const res = await api('GET', `/api/knowledge?id=${w.response.id}&history=true`, undefined, token);
      check(res.body.knowledge.some((k) => JSON.stringify(k) === JSON.stringify(w.response)), `acknowledged knowledge ${w.response.id} is missing or changed`);
    } else {
      const res = await api('GET', `/api/work/history?workItemId=${w.response.id}&afterRevision=${w.response.revision - 1}&limit=1`, undefined, token);
      check(res.status === 200 && JSON.stringify(res.body.revisions[0]) === JSON.stringify(w.response), `acknowledged work revision ${w.response.id}@${w.response.revision} is missing or changed`);
    }
    checked++;
  }
  // 2. The hash chain verifies.
  const verify = await execFileP(process.execPath, [CLI_JS, '--data-dir', dataDir, 'verify']).catch((err) => err);
  check(!verify.code, `verify failed: ${verify.stderr ?? verify.message}`);
  // 3. Both feeds continue from the saved cursors.
  cursors.discussion = await follow(api, '/api/changes', token, cursors.discussion);
  cursors.work = await follow(api, '/api/work/changes', token, cursors.work);
  // 4. In-doubt writes retried with the same clientId resolve to exactly one record.
  for (const w of inDoubt) {
    if (w.kind === 'knowledge') continue; // not idempotent by design (no clientId)
    const res = await api('POST', w.path, w.request, w.token);
    if (w.kind === 'work-action') {
      check(res.status === 200 || res.status === 409, `retry of in-doubt claim gave ${res.status}`);
      continue;
    }
    check(res.status === 201, `retry of in-doubt ${w.kind} ${w.request.clientId} gave ${res.status} ${JSON.stringify(res.body)}`);
    const again = await api('POST', w.path, w.request, w.token);
    check(JSON.stringify(again.body) === JSON.stringify(res.body), `second retry of ${w.request.clientId} differs`);
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
    console.log('usage: node scripts/crash-test.mjs [--iterations 100] [--writers 12] [--seed N] [--keep]');
    return;
  }
  const seed = opt('seed', Date.now() & 0xffffffff);
  console.log(`crash test: seed ${seed}`);
  const started = Date.now();
  const result = await runCrashTest({ iterations: opt('iterations', 100), writers: opt('writers', 12), seed, keep: args.includes('--keep') });
  console.log(
    `crash test passed: ${result.iterations} kills, ${result.acknowledged} acknowledged writes, ${result.checked} checks, ` +
      `${((Date.now() - started) / 1000).toFixed(1)} s (seed ${result.seed})`,
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    console.error(err instanceof Violation ? `VIOLATION: ${err.message}` : err);
    process.exit(1);
  });
}
