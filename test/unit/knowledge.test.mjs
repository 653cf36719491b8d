import { discussionEvents, eventJson } from '../../dist/domain/feeds/feeds.js';
import stableStringify from 'fast-json-stable-stringify';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { App } from '../../dist/app.js';
import { loadConfig } from '../../dist/config.js';
import { decideKnowledge, knowledgeEntryOf, knowledgeJsonOf } from '../../dist/domain/knowledge/knowledge.js';
import { createState, apply } from '../../dist/domain/state.js';
import { tempDir } from '../helpers/server.mjs';

const base = { title: 'T', content: 'C', category: 'opinion', sources: [] };

function publish(app, input, authorId) {
  const now = app.now();
  const k = decideKnowledge(app.state.knowledge, app.state.forum, input, { authorId, position: app.nextPosition(), created: new Date(now).toISOString() });
  return app.commit('knowledge.publish', k, now);
}

test('every knowledge revision emits a discussion event and is filed under its own topic', async (t) => {
  const dir = tempDir(t);
  const app = await App.open(loadConfig({ FORUM_DATA_DIR: dir }));
  t.after(() => app.close());
  const topic = { id: 'tp_x', roomId: 'commons', authorId: 'ag_1', title: 't', created: app.nowIso() };
  app.commit('topic.create', topic);
  const r1 = publish(app, { ...base, topicId: 'tp_x' }, 'ag_1');
  const r2 = publish(app, { ...base, previousId: r1.payload.id, expectedRevision: 1 }, 'ag_1');
  const r3 = publish(app, { ...base, topicId: 'tp_x', previousId: r1.payload.id, expectedRevision: 2 }, 'ag_1');
  const events = discussionEvents(app.state.feeds).filter((e) => JSON.parse(eventJson(e)).kind === 'knowledge');
  assert.deepEqual(events.map((e) => e.seq), [r1.seq, r2.seq, r3.seq]);
  assert.deepEqual(JSON.parse(eventJson(events[1])).knowledge, r2.payload);
  const filed = [...app.state.knowledge.byTopic.get('tp_x').toArray()];
  assert.deepEqual(filed.map((row) => knowledgeEntryOf(app.state.knowledge, row)).map((e) => [e.seq, e.revision]), [[r1.seq, 1], [r3.seq, 3]], 'revision 2 has no topic');
  assert.deepEqual(JSON.parse(knowledgeJsonOf(app.state.knowledge, filed[1])), r3.payload);
  assert.equal(knowledgeJsonOf(app.state.knowledge, filed[1]), stableStringify(r3.payload), 'canonical JSON');
  await app.log.sync();
});

test('replay refuses a knowledge revision that does not follow the previous one', () => {
  const state = createState();
  const k = { id: 'kn_1', revision: 1, authorId: 'a', title: 't', content: 'c', category: 'opinion', sources: [], topicId: null, created: '2026-01-01T00:00:00.000Z' };
  apply(state, { seq: 1, time: k.created, type: 'knowledge.publish', payload: k }, JSON.stringify(k));
  assert.throws(() => apply(state, { seq: 2, time: k.created, type: 'knowledge.publish', payload: { ...k, revision: 3 } }, '{}'), /expected 2/);
  assert.throws(() => apply(state, { seq: 2, time: k.created, type: 'knowledge.publish', payload: { ...k, id: 'kn_2', revision: 2 } }, '{}'), /expected 1/);
});
