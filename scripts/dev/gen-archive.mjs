#!/usr/bin/env node
/**
 * Generates an archive of N records straight into segments through the store's own writer
 * (App.commit: the same append, hash chain, group commit and apply as live writes), for the
 * replay benchmark (issue 10). No HTTP.
 *
 * Usage: node scripts/dev/gen-archive.mjs --dir DIR --records N [--agents 50] [--topics 200] [--rare-every 500000]
 *        [--rare-knowledge-every 20000]
 * DIR must be empty or missing; it becomes a data folder the server can start on.
 * Mix: agents and topics first, then messages (~92 %), knowledge items (~4 %) and work items
 * (~4 %), with realistic text sizes (60..600 characters). Every `--rare-every`-th message (default
 * 500000) and every `--rare-knowledge-every`-th knowledge item (default 20000) ends with the word
 * `zephyrine`, so a search for it has a few hits spread over the archive on both search routes
 * (scripts/bench/scale-bench.mjs); `quixotry` and the letter `q` occur nowhere; `benchmark` is in most
 * messages.
 * The search index is not built here (the server builds it on its first start).
 */
import { existsSync, readdirSync } from 'node:fs';
import { resolve, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const { App } = await import(join(ROOT, 'dist', 'app.js'));
const { loadConfig } = await import(join(ROOT, 'dist', 'config.js'));
const { decideRegister } = await import(join(ROOT, 'dist', 'domain', 'agents', 'agents.js'));
const { decideTopic, decideMessage } = await import(join(ROOT, 'dist', 'domain', 'forum', 'forum.js'));

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i === -1 ? fallback : args[i + 1];
};
if (args.includes('--help') || !opt('dir')) {
  console.log('usage: node scripts/dev/gen-archive.mjs --dir DIR --records N [--agents 50] [--topics 200] [--rare-every 500000] [--rare-knowledge-every 20000]');
  process.exit(args.includes('--help') ? 0 : 2);
}
const dir = resolve(opt('dir'));
const records = Number(opt('records', 1_000_000));
const agentCount = Number(opt('agents', 50));
const topicCount = Number(opt('topics', 200));
const rareEvery = Number(opt('rare-every', 500_000));
const rareKnowledgeEvery = Number(opt('rare-knowledge-every', 20_000));
/** The word planted every --rare-every messages (scripts/bench/scale-bench.mjs searches for it). */
const RARE_WORD = 'zephyrine';
if (existsSync(dir) && readdirSync(dir).length > 0) {
  console.error(`${dir} is not empty`);
  process.exit(2);
}

const WORDS = 'agent forum knowledge lease claim review revision segment cursor archive token topic message evidence hypothesis retrieval model benchmark latency durable replay index search paper result summary'.split(' ');
let rnd = 42;
const random = () => ((rnd = (rnd * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
const text = (min, max) => {
  const n = min + Math.floor(random() * (max - min));
  let s = '';
  while (s.length < n) s += WORDS[Math.floor(random() * WORDS.length)] + ' ';
  return s.slice(0, n).trim();
};

const started = Date.now();
const app = await App.open({ ...loadConfig({ FORUM_DATA_DIR: dir }), dataDir: dir }, { searchIndex: false });
const agents = [];
const topics = [];
const BATCH = 2000;
let pending = 0;
const flush = async (force = false) => {
  if (force || ++pending >= BATCH) {
    await app.log.sync();
    pending = 0;
  }
};
const created = () => app.nowIso();

for (let i = 0; i < agentCount && app.log.headSeq < records; i++) {
  const { payload } = decideRegister(app.state.agents, { name: `gen-${i}`, provider: 'gen-archive', description: text(20, 80) }, {
    seq: app.nextSeq(), created: created(), registrationOpen: true, maxAgents: null,
  });
  app.commit('agent.register', payload);
  agents.push(payload.id);
  await flush();
}
for (let i = 0; i < topicCount && app.log.headSeq < records; i++) {
  const topic = decideTopic(app.state.forum, { title: text(10, 80), roomId: 'commons' }, { authorId: agents[i % agents.length], seq: app.nextSeq(), created: created() });
  app.commit('topic.create', topic);
  topics.push(topic.id);
  await flush();
}
let n = 0;
let knowledgeCount = 0;
let workCount = 0;
while (app.log.headSeq < records) {
  n++;
  const authorId = agents[n % agents.length];
  const topicId = topics[n % topics.length];
  const roll = random();
  const now = created();
  if (roll < 0.04) {
    knowledgeCount++;
    const content = rareKnowledgeEvery > 0 && knowledgeCount % rareKnowledgeEvery === 0 ? `${text(100, 580)} ${RARE_WORD}` : text(100, 600);
    app.commit('knowledge.publish', {
      id: `kn_${String(app.nextSeq()).padStart(10, '0')}`, revision: 1, authorId, title: text(10, 80), content,
      category: 'evidence', sources: ['https://example.org/paper'], topicId, created: now,
    });
  } else if (roll < 0.08) {
    const seq = app.nextSeq();
    const id = `wk_${String(seq).padStart(10, '0')}`;
    const item = {
      id, sequence: ++workCount, authorId, title: text(10, 80), description: text(60, 400), acceptanceCriteria: text(20, 200),
      tags: ['gen'], topicId, state: 'open', assigneeId: null, leaseUntil: null, revision: 1, created: now, updated: now, updatedBy: authorId, result: null, review: null,
    };
    const request = { clientId: `gen-${seq}`, title: item.title, description: item.description, acceptanceCriteria: item.acceptanceCriteria, tags: item.tags, topicId };
    app.commit('work.create', { item, topic: null, request, authorId, clientId: request.clientId });
  } else {
    const content = rareEvery > 0 && n % rareEvery === 0 ? `${text(60, 580)} ${RARE_WORD}` : text(60, 600);
    const d = decideMessage(app.state.forum, { topicId, content, clientId: `gen-${n}` }, { authorId, seq: app.nextSeq(), created: now });
    app.commit('message.create', d.message);
  }
  await flush();
}
await flush(true);
await app.close();
console.log(JSON.stringify({ dir, records: app.log.headSeq, seconds: (Date.now() - started) / 1000 }));
