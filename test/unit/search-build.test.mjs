/**
 * Issue 30, the search index built in worker threads: after a start without a search index, build
 * workers write complete shard files for runs of segments and the main thread adopts them. Whatever
 * built it, the index holds exactly the same documents: the same candidates for every query as one
 * built on the main thread, no document of an erased record, before and after an erasure, and with
 * an erasure arriving while the workers run.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { App } from '../../dist/app.js';
import { loadConfig } from '../../dist/config.js';
import { listSegments } from '../../dist/store/segment.js';
import { decideRegister } from '../../dist/domain/agents/agents.js';
import { decideTopic, decideMessage } from '../../dist/domain/forum/forum.js';
import { decideKnowledge } from '../../dist/domain/knowledge/knowledge.js';
import { moderate } from '../../dist/admin/moderation.js';
import { tempDir } from '../helpers/server.mjs';

const SHARD_DOCS = 40;
/** Small segments, so that the log has many and two workers split them. */
const LOG = { segmentBytesMax: 24 * 1024 };
const WORDS = ['needle', 'hay', 'straw', 'éclair', 'stack', 'bale', 'quill'];
const SECRET = 'zq-erased-marker';
const QUERIES = ['needle', 'éclair', 'straw hay', 'zq-erased', SECRET, 'quill', 'e', 'ha', 'absentword', 'marker'];

const config = (dir, workers) => ({
  ...loadConfig({ FORUM_DATA_DIR: dir, FORUM_SEARCH_SHARD_DOCS: String(SHARD_DOCS), FORUM_SEARCH_BUILD_WORKERS: String(workers), FORUM_SCRUB_MB_PER_MINUTE: '0' }),
  dataDir: dir,
});

/** A closed archive: knowledge revisions early and spread among ~1400 messages, two records erased. */
async function seed(dir) {
  const app = await App.open(config(dir, 0), { searchIndex: false, log: LOG });
  const ctx = () => ({ position: app.nextPosition(), created: app.nowIso() });
  const { payload: agent } = decideRegister(app.state.agents, { name: 'a', provider: 'p', description: '', acceptsPublicArchive: true, operatorAuthorized: true }, { ...ctx(), registrationOpen: true, maxAgents: null });
  app.commit('agent.register', agent);
  const topic = decideTopic(app.state.forum, { title: 't', roomId: 'commons' }, { authorId: agent.id, ...ctx() });
  app.commit('topic.create', topic);
  const text = (i) => `${WORDS[i % 7]} ${WORDS[(i * 3) % 7]} ${WORDS[(i * 5) % 7]} n${i}`;
  const knowledge = (i) => {
    const k = decideKnowledge(app.state.knowledge, app.state.forum, { title: text(i), content: text(i + 1), category: 'opinion', sources: [] }, { authorId: agent.id, ...ctx() });
    app.commit('knowledge.publish', k);
    return k;
  };
  const messages = [];
  for (let i = 0; i < 120; i++) knowledge(i);
  for (let i = 0; i < 1400; i++) {
    if (i % 30 === 0) knowledge(i);
    const content = i % 200 === 99 ? `${text(i)} ${SECRET}` : text(i);
    const d = decideMessage(app.state.forum, { topicId: topic.id, content, clientId: `c${i}` }, { authorId: agent.id, ...ctx() });
    app.commit('message.create', d.message);
    messages.push(d.message);
    if (i % 100 === 0) await app.log.sync();
  }
  await app.log.sync();
  const secretMessages = messages.filter((m) => m.content.includes(SECRET));
  await moderate(app, 'cli', { action: 'erase', target: { type: 'message', id: secretMessages[1].id }, reason: 'test' });
  await app.close();
  return { topic, secretMessages };
}

/** Every query's candidates from both indexes of an open app. */
function candidatesOf(app) {
  const out = {};
  for (const q of QUERIES) out[q] = { messages: [...app.indexer.messages.candidates(q, {})], knowledge: [...app.indexer.knowledge.candidates(q, {})] };
  return out;
}

/** Starts `dir` with no search index and `workers` build workers; `during(app)` runs right after the open. */
async function build(dir, workers, during = async () => {}) {
  rmSync(join(dir, 'index', 'search'), { recursive: true, force: true });
  const app = await App.open(config(dir, workers), { log: LOG });
  await during(app);
  await app.indexer.whenCaughtUp();
  return app;
}

/** Files under `dir` (recursively) holding `text`. */
function filesHolding(dir, text) {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && readFileSync(join(e.parentPath ?? e.path, e.name)).includes(Buffer.from(text)))
    .map((e) => e.name);
}

test('an index built by two worker threads holds exactly the documents of one built on the main thread, erased records excluded', async (t) => {
  const dir = tempDir(t);
  const { secretMessages } = await seed(dir);
  assert.ok(listSegments(join(dir, 'log')).length >= 6, 'the log spans many segments');

  const main = await build(dir, 0);
  const expected = candidatesOf(main);
  assert.equal(main.indexer.shardsFromWorkers, 0);
  await main.close();

  const worker = await build(dir, 2);
  assert.ok(worker.indexer.shardsFromWorkers >= 10, `shard files came from the workers (${worker.indexer.shardsFromWorkers})`);
  assert.deepEqual(candidatesOf(worker), expected);
  const secretSeqs = secretMessages.map((m) => Number(m.id.slice(4)));
  assert.ok(expected[SECRET].messages.length > 0, 'the marker is found in the messages not erased');
  assert.ok(!expected[SECRET].messages.includes(secretSeqs[1]), 'the erased message is no document');
  assert.deepEqual(filesHolding(join(dir, 'index', 'search'), 'build'), []);
  await worker.close();
  assert.deepEqual(readdirSync(join(dir, 'index', 'search')).filter((n) => n === 'build'), [], 'no build folder is left');
});

test('after an erasure, and with one arriving while the workers run, a worker-built index answers like a main-thread one', async (t) => {
  const dir = tempDir(t);
  const { secretMessages } = await seed(dir);
  const erase = (app, m) => moderate(app, 'cli', { action: 'erase', target: { type: 'message', id: m.id }, reason: 'test' });

  // Erased after the workers' index is complete: its shards from the record on are rebuilt.
  const worker = await build(dir, 2);
  assert.ok(worker.indexer.shardsFromWorkers > 0);
  await erase(worker, secretMessages[2]);
  await worker.indexer.whenCaughtUp();
  const afterErasure = candidatesOf(worker);
  await worker.close();
  const main = await build(dir, 0);
  assert.deepEqual(afterErasure, candidatesOf(main));
  await main.close();

  // Erased right after the start, while the workers are (most likely) still building.
  const racing = await build(dir, 2, (app) => erase(app, secretMessages[3]));
  const raced = candidatesOf(racing);
  await racing.close();
  const main2 = await build(dir, 0);
  assert.deepEqual(raced, candidatesOf(main2));
  await main2.close();
  for (const m of secretMessages.slice(1, 4)) assert.ok(!raced[SECRET].messages.includes(Number(m.id.slice(4))), `erased ${m.id} is no document`);
  assert.ok(raced[SECRET].messages.length > 0);
});
