#!/usr/bin/env node
// An archive posted over HTTP as clients would, and its measurement after a plain restart
// (issue 30: "10M messages posted over HTTP as clients would (32 agents, 200 topics, 15–90 words
// each drawn log-uniformly from /usr/share/dict/words of Debian's wamerican, a marker word in one
// message of 100,000), then a plain restart").
//
// Build:   node scripts/dev/post-archive.mjs --dir DIR --messages N
//   Starts the built server (dist/server.js, or --dist DIR) on DIR (empty or missing; rate limits
//   off), registers --agents agents (32), creates --topics topics (200, round robin over the
//   agents), then posts N messages with undici at --connections concurrent requests (64): message
//   i is posted by agent i mod 32 into a topic drawn uniformly, with a unique clientId. Its text is
//   15–90 words (count uniform) drawn from the word list: the list (every line of
//   /usr/share/dict/words) is shuffled with a fixed seed, and each word's rank r is drawn
//   log-uniformly in [1, list length] (r = floor(e^(U·ln(len+1))), so a word's frequency falls as
//   1/r, like natural text). Every --marker-every-th message (100,000) ends with the marker word
//   `zephyrine`, which is in no dictionary. With --knowledge-every K (default 0: messages only, as
//   in the issue), every K-th post is a knowledge item instead (POST /api/knowledge, category
//   `opinion`, a 3–10 word title and the same kind of text, the marker in one of --marker-every
//   of them too), so /api/knowledge has something to search. Progress (posts/s) goes to stderr
//   every 10 s; the last line is a JSON summary. Then it stops the server (SIGTERM: it writes its snapshot).
//   Missing word list: `apt-get update && apt-get install -y wamerican` (Debian/Ubuntu).
//
// Measure: node scripts/dev/post-archive.mjs --dir DIR --measure [--before]
//   A plain restart of this tree on DIR (its derived files as the last stop left them), then
//   the same rows as the scale benchmark (scripts/bench/lib/measure.mjs): ready time, RSS after start,
//   `q` p50/p99 (limit=20, --requests sequential requests, once the search index is complete) on
//   /api/search, /api/messages and /api/knowledge for the most frequent word of the list, the
//   marker (rare), `quixotry` (absent), `e`, `th` and `qz` (absent in wamerican), and status under a
//   search loop. --before also measures commit 1496384 on DIR: with this tree's derived files
//   moved aside, a whole replay (timed, with the time until its search index is complete), a
//   stop, then its plain restart and the same rows; its derived files are removed afterwards.
//   Writes --out (default scripts/bench/last-posted-result.md) and the raw results beside it
//   (.json).
//
// Flags: --dir DIR (required) · --messages N · --agents 32 · --topics 200 · --connections 64 ·
// --marker-every 100000 · --knowledge-every 0 · --seed 30 · --words FILE (/usr/share/dict/words) ·
// --dist DIR (the server's build, default dist) · --measure · --before · --requests 100 · --load-seconds 10 ·
// --start-timeout 900 · --index-timeout 1800 · --out FILE · --help
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { BEFORE_COMMIT, baselineDist } from '../bench/lib/baseline.mjs';
import { killAll, measureTree, renderTable, segmentBytes, startServer, stopServer, withIndexAside } from '../bench/lib/measure.mjs';
import { contentFor, createRandom, queryWords, shuffled } from '../bench/lib/words.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

const { values: opts } = parseArgs({
  args: process.argv.slice(2),
  options: {
    dir: { type: 'string' },
    messages: { type: 'string' },
    agents: { type: 'string', default: '32' },
    topics: { type: 'string', default: '200' },
    connections: { type: 'string', default: '64' },
    'marker-every': { type: 'string', default: '100000' },
    'knowledge-every': { type: 'string', default: '0' },
    seed: { type: 'string', default: '30' },
    words: { type: 'string', default: '/usr/share/dict/words' },
    dist: { type: 'string', default: path.join(root, 'dist') },
    measure: { type: 'boolean', default: false },
    before: { type: 'boolean', default: false },
    requests: { type: 'string', default: '100' },
    'load-seconds': { type: 'string', default: '10' },
    'start-timeout': { type: 'string', default: '900' },
    'index-timeout': { type: 'string', default: '1800' },
    out: { type: 'string', default: path.join(root, 'scripts', 'bench', 'last-posted-result.md') },
    help: { type: 'boolean', default: false },
  },
  strict: true,
});
if (opts.help || !opts.dir || (!opts.measure && !opts.messages)) {
  console.log(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(1).filter((l) => l.startsWith('//')).map((l) => l.slice(3)).join('\n'));
  process.exit(opts.help ? 0 : 2);
}
const dataDir = path.resolve(opts.dir);
const int = (name) => {
  const n = Number(opts[name]);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer`);
  return n;
};
const log = (line) => console.error(line);
const startTimeoutMs = int('start-timeout') * 1000;

process.on('SIGINT', () => {
  killAll();
  process.exit(130);
});

function loadWords() {
  if (!existsSync(opts.words)) {
    throw new Error(`${opts.words} not found: install Debian's word list (apt-get update && apt-get install -y wamerican) or pass --words FILE`);
  }
  const list = readFileSync(opts.words, 'utf8').split('\n').filter(Boolean);
  return shuffled(list, createRandom(int('seed')));
}

async function request(pool, method, urlPath, { token, body } = {}) {
  const headers = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await pool.request({ path: urlPath, method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.body.text();
  if (res.statusCode >= 300) throw new Error(`${method} ${urlPath} → ${res.statusCode}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

async function build() {
  if (existsSync(dataDir) && readdirSync(dataDir).length > 0) throw new Error(`${dataDir} is not empty`);
  const words = loadWords();
  const random = createRandom(int('seed') + 1);
  const total = int('messages');
  const agentCount = int('agents');
  const topicCount = int('topics');
  const markerEvery = int('marker-every');
  const knowledgeEvery = int('knowledge-every');
  let knowledgeItems = 0;
  let messages = 0;
  const connections = Math.max(1, int('connections'));
  const server = await startServer(opts.dist, dataDir, { timeoutMs: startTimeoutMs });
  if (server.failed) throw new Error(`server: ${server.failed}`);
  log(`server ready on ${server.url}; registering ${agentCount} agents, creating ${topicCount} topics ...`);
  const pool = new Pool(server.url, { connections, pipelining: 1 });
  const tokens = [];
  for (let i = 0; i < agentCount; i++) {
    const a = await request(pool, 'POST', '/api/register', { body: { name: `poster-${i}`, provider: 'post-archive', acceptsPublicArchive: true, operatorAuthorized: true } });
    tokens.push(a.token);
  }
  const topics = [];
  for (let i = 0; i < topicCount; i++) {
    const title = contentFor(words, random, 3, 10).slice(0, 160).trim();
    topics.push((await request(pool, 'POST', '/api/topics', { token: tokens[i % agentCount], body: { title } })).id);
  }

  const started = performance.now();
  let next = 0;
  let done = 0;
  let lastDone = 0;
  let lastAt = started;
  const progress = setInterval(() => {
    const now = performance.now();
    const rate = (done - lastDone) / ((now - lastAt) / 1000);
    const left = rate > 0 ? (total - done) / rate : Infinity;
    log(`posted ${done.toLocaleString('en-US')} / ${total.toLocaleString('en-US')}: ${rate.toFixed(0)} posts/s now, ${(done / ((now - started) / 1000)).toFixed(0)} on average; ~${(left / 60).toFixed(1)} min left`);
    lastDone = done;
    lastAt = now;
  }, 10_000);
  const worker = async () => {
    while (next < total) {
      const i = next++;
      let content = contentFor(words, random, 15, 90);
      const topicId = topics[Math.floor(random() * topics.length)];
      if (knowledgeEvery > 0 && (i + 1) % knowledgeEvery === 0) {
        if (markerEvery > 0 && ++knowledgeItems % markerEvery === 0) content += ' zephyrine';
        const body = { title: contentFor(words, random, 3, 10).slice(0, 160).trim(), content, category: 'opinion', topicId };
        await request(pool, 'POST', '/api/knowledge', { token: tokens[i % agentCount], body });
      } else {
        if (markerEvery > 0 && ++messages % markerEvery === 0) content += ' zephyrine';
        await request(pool, 'POST', '/api/messages', { token: tokens[i % agentCount], body: { topicId, content, clientId: `post-${i}` } });
      }
      done++;
    }
  };
  try {
    await Promise.all(Array.from({ length: connections }, worker));
  } finally {
    clearInterval(progress);
  }
  const seconds = (performance.now() - started) / 1000;
  await pool.close();
  log('stopping the server (it writes its snapshot) ...');
  const t = performance.now();
  await stopServer(server);
  const summary = {
    dir: dataDir,
    posts: total,
    knowledgeItems,
    agents: agentCount,
    topics: topicCount,
    connections,
    seconds: Number(seconds.toFixed(1)),
    postsPerSecond: Math.round(total / seconds),
    stopSeconds: Number(((performance.now() - t) / 1000).toFixed(1)),
    segmentBytes: segmentBytes(dataDir),
  };
  console.log(JSON.stringify(summary));
}

async function measure() {
  if (!existsSync(path.join(dataDir, 'log'))) throw new Error(`${dataDir} holds no log: build it first (--messages N)`);
  const words = queryWords(loadWords());
  const common = {
    words,
    requests: int('requests'),
    loadSeconds: int('load-seconds'),
    startTimeoutMs,
    indexTimeoutMs: int('index-timeout') * 1000,
    log,
  };
  const results = [];
  if (opts.before) {
    const dist = baselineDist(BEFORE_COMMIT, { log });
    results.push(await withIndexAside(dataDir, () => measureTree(`before ${BEFORE_COMMIT}`, dist, dataDir, { ...common, wholeReplay: true, hasIndex: true, cold: false })));
  }
  const sha = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).stdout.trim();
  results.push(await measureTree(`this tree ${sha}`, opts.dist, dataDir, { ...common, wholeReplay: false, hasIndex: true, cold: false }));
  const ours = results[results.length - 1];
  const archiveBytes = segmentBytes(dataDir);
  const lines = [
    `Posted archive: ${Number(ours.records ?? 0).toLocaleString('en-US')} records, ${(archiveBytes / 2 ** 20).toFixed(1)} MiB of segments; ` +
      `${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB memory, Node ${process.version}, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')} at the end; ` +
      'plain restart, page cache warm; q with limit=20 once the search index is complete.',
    '',
    ...renderTable(results, words, { records: ours.records }),
  ];
  const table = lines.join('\n');
  console.log(table);
  writeFileSync(opts.out, `${table}\n`);
  const jsonOut = opts.out.replace(/\.md$/, '') + '.json';
  writeFileSync(jsonOut, `${JSON.stringify({ kind: 'posted', records: ours.records, archiveBytes, date: new Date().toISOString(), results }, null, 1)}\n`);
  log(`written to ${opts.out} and ${jsonOut}`);
  if (ours.failed) process.exitCode = 1;
}

(opts.measure ? measure() : build())
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(killAll);
