#!/usr/bin/env node
/**
 * Search benchmark: `npm run build && node scripts/bench/search-bench.mjs [--messages N] [--knowledge N]
 * [--knowledge-at start|end|spread] [--topics N] [--requests N] [--baseline DIR]`, or
 * `node scripts/bench/search-bench.mjs --archive DIR [--baseline DIR] [--rounds N]` for the index build alone.
 *
 * 1. Seeds a temp data folder straight through the store (App from dist/app.js, the same decide
 *    and commit path the HTTP handlers use, batches of BATCH records, each awaited with
 *    `app.log.sync()`): one agent, --topics topics (default 100; titles `topic <i> <word>`, the
 *    word cycling through the vocabulary, so `q` finds titles too: issue 55's `topics` list), N
 *    messages (default 100,000) and --knowledge
 *    knowledge items (default 2,000) with a revision every fifth item, published after the
 *    messages (`--knowledge-at end`, the default), before them (`start`) or one every
 *    N / --knowledge messages (`spread`): the last two are the cases where a knowledge search
 *    meets mostly message documents (issue 30).
 *    Message text is drawn from a synthetic vocabulary so that `q` can be a common word (limit
 *    reached after a short newest-first scan), a rare word (a handful of hits spread over the
 *    whole archive), an absent word (no hit) — the worst case — or 1 and 2 characters.
 * 2. Starts the built server on that folder (FORUM_RATE_LIMITS=off, port 0), measures the time
 *    to replay the log and listen, and waits until its search index covers the log.
 * 3. For each query, sends WARMUP then N (default 200) sequential requests over one keep-alive
 *    connection and prints p50/p99/mean latency in ms, for GET /api/search, GET /api/messages and
 *    GET /api/knowledge with the same `q`.
 * 4. With `--baseline DIR` (another built tree, e.g. an older commit extracted and built under
 *    /tmp), steps 2 and 3 run first for DIR's server, then for this tree's, on the same seeded
 *    log (the derived files are removed before each start), and both tables are printed.
 *
 * 5. With `--archive DIR` (a data folder made by scripts/dev/gen-archive.mjs; kept), nothing is seeded
 *    or queried: the server starts on DIR with its derived files removed (a whole replay and a
 *    whole search index build), for the --baseline tree, then for this tree with
 *    FORUM_SEARCH_BUILD_WORKERS=0 (the build on the main thread, in slices) and =2 (two build
 *    worker threads; `--workers 2` runs only that one, `--workers 0,1,2` others), and prints the
 *    time to listen and the time until the index covers the log.
 *
 * The folder is removed at the end. Numbers depend on the machine and on its other load.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { Client } from 'undici';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dist = (p) => import(join(ROOT, 'dist', p));
const { App } = await dist('app.js');
const { loadConfig } = await dist('config.js');
const { decideRegister } = await dist('domain/agents/agents.js');
const { decideTopic, decideMessage } = await dist('domain/forum/forum.js');
const { decideKnowledge } = await dist('domain/knowledge/knowledge.js');

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}
function textArg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
}
const MESSAGES = arg('messages', 100_000);
const REQUESTS = arg('requests', 200);
const WARMUP = 20;
const TOPICS = arg('topics', 100);
const KNOWLEDGE = arg('knowledge', 2_000);
const KNOWLEDGE_AT = textArg('knowledge-at', 'end');
const BASELINE = textArg('baseline', null);
const ARCHIVE = textArg('archive', null);
if (!['start', 'end', 'spread'].includes(KNOWLEDGE_AT)) throw new Error('--knowledge-at must be start, end or spread');
const BATCH = 2_000;
const RARE_HITS = 10;

// Deterministic pseudo-random numbers (mulberry32), so every run seeds the same archive.
let seed = 0x5eed;
function random() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'te', 'vo', 'zi', 'po', 'da', 'fe', 'gu', 'hi', 'ja', 'bo'];
const VOCABULARY = Array.from({ length: 5_000 }, () => {
  let w = '';
  for (let n = 2 + Math.floor(random() * 3); n > 0; n--) w += SYLLABLES[Math.floor(random() * SYLLABLES.length)];
  return w;
});
// Zipf-like draw: low indexes are common words.
const word = () => VOCABULARY[Math.floor(VOCABULARY.length * random() ** 3)];
const sentence = (words) => Array.from({ length: words }, word).join(' ');
const COMMON = VOCABULARY[0];
const RARE = 'quokkabench';
const ABSENT = 'xylophonezz';

async function seedArchive(dataDir) {
  const app = await App.open(loadConfig({ FORUM_DATA_DIR: dataDir }));
  const ctx = () => ({ seq: app.nextSeq(), created: app.nowIso() });
  const { payload: agent, token } = decideRegister(
    app.state.agents,
    { name: 'bench', provider: 'bench', description: '', acceptsPublicArchive: true, operatorAuthorized: true },
    { ...ctx(), registrationOpen: true, maxAgents: null },
  );
  app.commit('agent.register', agent);
  const topicIds = [];
  for (let i = 0; i < TOPICS; i++) {
    const topic = decideTopic(app.state.forum, { title: `topic ${i} ${VOCABULARY[i % VOCABULARY.length]}`, roomId: 'commons' }, { authorId: agent.id, ...ctx() });
    app.commit('topic.create', topic);
    topicIds.push(topic.id);
    if (i % BATCH === BATCH - 1) await app.log.sync();
  }
  const rareEvery = Math.floor(MESSAGES / RARE_HITS);
  // `spread`: one knowledge item after every MESSAGES / KNOWLEDGE messages.
  const knowledgeEvery = KNOWLEDGE_AT === 'spread' && KNOWLEDGE > 0 ? Math.max(1, Math.floor(MESSAGES / KNOWLEDGE)) : 0;
  let published = 0;
  const seedMessages = async () => {
    for (let i = 0; i < MESSAGES; i++) {
      if (knowledgeEvery > 0 && i % knowledgeEvery === 0 && published < KNOWLEDGE) await seedKnowledge(1);
      let content = sentence(20 + Math.floor(random() * 20));
      if (i % rareEvery === rareEvery - 1) content += ` ${RARE}`;
      const input = { topicId: topicIds[i % TOPICS], content, clientId: `c${i}` };
      const d = decideMessage(app.state.forum, input, { authorId: agent.id, ...ctx() });
      app.commit('message.create', d.message);
      if (i % BATCH === BATCH - 1) await app.log.sync();
    }
  };
  async function seedKnowledge(count) {
    for (let n = 0; n < count; n++) {
      const i = published++;
      const input = { title: sentence(6), content: sentence(60), category: 'hypothesis', sources: [] };
      const k = decideKnowledge(app.state.knowledge, app.state.forum, input, { authorId: agent.id, ...ctx() });
      app.commit('knowledge.publish', k);
      if (i % 5 === 0) {
        const r = decideKnowledge(app.state.knowledge, app.state.forum, { ...input, title: `${input.title} (revised)`, previousId: k.id, expectedRevision: 1 }, { authorId: agent.id, ...ctx() });
        app.commit('knowledge.publish', r);
      }
      if (i % BATCH === BATCH - 1) await app.log.sync();
    }
  }
  if (KNOWLEDGE_AT === 'start') {
    await seedKnowledge(KNOWLEDGE);
    await seedMessages();
  } else if (KNOWLEDGE_AT === 'spread') {
    await seedMessages();
  } else {
    await seedMessages();
    await seedKnowledge(KNOWLEDGE);
  }
  await app.log.sync();
  const records = app.log.headSeq;
  await app.close();
  return { token, records };
}

function startServer(root, dataDir, env = {}) {
  const started = performance.now();
  const proc = spawn(process.execPath, [join(root, 'dist', 'server.js')], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', FORUM_DATA_DIR: dataDir, FORUM_RATE_LIMITS: 'off', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      if (line && !proc.url) {
        proc.url = JSON.parse(line).url;
        resolve({ proc, url: proc.url, startMs: performance.now() - started, indexed: () => /search index: covers the log/.test(out) });
      }
    });
    proc.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

async function measure(client, token, path) {
  const once = async () => {
    const t0 = performance.now();
    const res = await client.request({ method: 'GET', path, headers: { authorization: `Bearer ${token}` } });
    const body = await res.body.text();
    const ms = performance.now() - t0;
    if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode} ${body}`);
    return { ms, body };
  };
  for (let i = 0; i < WARMUP; i++) await once();
  const times = [];
  let body = '';
  for (let i = 0; i < REQUESTS; i++) ({ ms: times[i], body } = await once());
  times.sort((a, b) => a - b);
  const parsed = JSON.parse(body);
  return {
    path,
    topics: parsed.topics?.length ?? 0,
    messages: parsed.messages?.length ?? 0,
    knowledge: parsed.knowledge?.length ?? 0,
    p50: percentile(times, 50),
    p99: percentile(times, 99),
    mean: times.reduce((a, b) => a + b, 0) / times.length,
  };
}

/** Starts `root`'s server on the seeded log (no derived files), waits for its index, measures every query. */
async function run(root, dataDir, token) {
  rmSync(join(dataDir, 'index'), { recursive: true, force: true });
  const server = await startServer(root, dataDir);
  try {
    const t0 = performance.now();
    while (!server.indexed()) await new Promise((r) => setTimeout(r, 50));
    const indexS = (performance.now() - t0) / 1000;
    const client = new Client(server.url, { pipelining: 1 });
    // The first search after a start, timed alone before the warm-up: before f4085ae it read every
    // topic's record once for its title in one turn (issue 55); since, the titles are kept in the
    // state and every search reads them from memory (topic-search.ts).
    const f0 = performance.now();
    const first = await client.request({ method: 'GET', path: `/api/search?q=${ABSENT}&limit=20`, headers: { authorization: `Bearer ${token}` } });
    await first.body.text();
    const firstSearchMs = performance.now() - f0;
    const results = [];
    for (const q of [COMMON, RARE, ABSENT, COMMON.slice(0, 1), COMMON.slice(0, 2)]) {
      for (const route of ['search', 'messages', 'knowledge']) results.push(await measure(client, token, `/api/${route}?q=${q}&limit=20`));
    }
    await client.close();
    return { root, startMs: server.startMs, indexS, firstSearchMs, results };
  } finally {
    const exited = new Promise((resolve) => server.proc.once('exit', resolve));
    server.proc.kill('SIGTERM');
    await exited;
  }
}

function print({ root, startMs, indexS, firstSearchMs, results }) {
  console.log(`\n${root}: replayed and listening in ${(startMs / 1000).toFixed(2)} s, search index complete ${indexS.toFixed(2)} s later`);
  console.log(`first GET /api/search after the start (${TOPICS} topic titles, absent word): ${firstSearchMs.toFixed(1)} ms`);
  console.log(`${REQUESTS} sequential requests each (after ${WARMUP} warm-up), one keep-alive connection; ms`);
  console.log(['path'.padEnd(40), 'tops', 'msgs', 'know', 'p50'.padStart(7), 'p99'.padStart(7), 'mean'.padStart(7)].join(' '));
  for (const r of results) {
    console.log([r.path.padEnd(40), String(r.topics).padStart(4), String(r.messages).padStart(4), String(r.knowledge).padStart(4), r.p50.toFixed(2).padStart(7), r.p99.toFixed(2).padStart(7), r.mean.toFixed(2).padStart(7)].join(' '));
  }
}

/** Starts `root`'s server on `dataDir` without derived files; resolves to seconds to listen and to a complete index. */
async function timeIndexBuild(root, dataDir, env) {
  rmSync(join(dataDir, 'index'), { recursive: true, force: true });
  const t0 = performance.now();
  const server = await startServer(root, dataDir, env);
  try {
    while (!server.indexed()) await new Promise((r) => setTimeout(r, 50));
    const indexS = (performance.now() - t0) / 1000;
    // utime + stime of the server process (all its threads), in clock ticks of 10 ms.
    const stat = readFileSync(`/proc/${server.proc.pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return { listenS: server.startMs / 1000, indexS, cpuS: (Number(stat[11]) + Number(stat[12])) / 100 };
  } finally {
    const exited = new Promise((resolve) => server.proc.once('exit', resolve));
    server.proc.kill('SIGTERM');
    await exited;
  }
}

if (ARCHIVE !== null) {
  const runs = [];
  if (BASELINE !== null) runs.push([BASELINE, 'baseline', {}]);
  for (const w of textArg('workers', '0,2').split(',')) runs.push([ROOT, `FORUM_SEARCH_BUILD_WORKERS=${w}`, { FORUM_SEARCH_BUILD_WORKERS: w }]);
  const rounds = arg('rounds', 1);
  console.log(`${ARCHIVE}: start with no derived files, ${rounds} round(s), the trees interleaved; seconds from spawn (cpu: the server's user + system time until then)`);
  console.log(['round', 'tree'.padEnd(60), 'listening'.padStart(10), 'index complete'.padStart(15), 'cpu'.padStart(7), 'load'.padStart(6)].join(' '));
  const all = runs.map(() => []);
  for (let round = 1; round <= rounds; round++) {
    for (const [i, [root, what, env]] of runs.entries()) {
      const r = await timeIndexBuild(root, ARCHIVE, env);
      all[i].push(r);
      const load = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
      console.log([String(round).padEnd(5), `${root} ${what}`.padEnd(60), r.listenS.toFixed(1).padStart(10), r.indexS.toFixed(1).padStart(15), r.cpuS.toFixed(1).padStart(7), load.padStart(6)].join(' '));
    }
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
  for (const [i, [root, what]] of runs.entries()) {
    console.log(['med'.padEnd(5), `${root} ${what}`.padEnd(60), median(all[i].map((r) => r.listenS)).toFixed(1).padStart(10), median(all[i].map((r) => r.indexS)).toFixed(1).padStart(15), median(all[i].map((r) => r.cpuS)).toFixed(1).padStart(7)].join(' '));
  }
  process.exit(0);
}

const dataDir = mkdtempSync(join(tmpdir(), 'forum-search-bench-'));
try {
  const seedStart = performance.now();
  const { token, records } = await seedArchive(dataDir);
  console.log(`seeded ${records} records (${TOPICS} topics, ${MESSAGES} messages, ${KNOWLEDGE} knowledge items + revisions at the ${KNOWLEDGE_AT}) in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`);
  if (BASELINE !== null) print(await run(BASELINE, dataDir, token));
  print(await run(ROOT, dataDir, token));
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
