/**
 * The kept topic titles of the title search (issue 55, src/domain/forum/topic-titles.ts): titles
 * joined in chunks of TOPIC_TITLE_CHUNK. Checked against the plain rule (`title.includes(q)` over
 * each title) across chunk boundaries, after erasures, with the separator inside titles and
 * queries, and through a snapshot pack and unpack.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopicTitles } from '../../dist/domain/forum/topic-titles.js';
import { PackedArrays } from '../../dist/domain/packing.js';
import { TOPIC_TITLE_CHUNK } from '../../dist/constants.js';

const N = TOPIC_TITLE_CHUNK * 2 + 37;
/** Title i: words that repeat with different periods, some ending in 'a' and some starting with 'b'. */
const titleOf = (i) => (i === 5 ? 'nul\u0000inside' : `${['ab', 'b', 'cab', 'a'][i % 4]} topic ${i} ${['a', 'bee', 'zebra'][i % 3]}${i % 1000 === 0 ? ' rare' : ''}`);

/** Every position whose (kept) title contains q, by the plain rule. */
function naive(titles, q) {
  const out = [];
  titles.forEach((t, i) => {
    if (t !== null && t.includes(q)) out.push(i);
  });
  return out;
}

/** Every position `t` reports for q, walking all its chunks. */
function found(t, q) {
  const out = [];
  for (let c = 0; c < t.chunkCount; c++) out.push(...t.matchesIn(c, q));
  return out;
}

const QUERIES = ['rare', 'a', 'ab', 'a\u0000b', 'bee', 'topic 4096', `topic ${N - 1} `, 'zebra', 'nul\u0000in', '\u0000', 'nothing here', ' 8191 '];

test('each query finds exactly the titles that contain it, across chunks, with none spanning two titles', () => {
  const t = new TopicTitles();
  const titles = [];
  for (let i = 0; i < N; i++) {
    t.push(titleOf(i));
    titles.push(titleOf(i));
  }
  assert.equal(t.length, N);
  assert.equal(t.chunkCount, 3, 'two full chunks and the newest titles');
  for (const q of QUERIES) assert.deepEqual(found(t, q), naive(titles, q), `q=${JSON.stringify(q)}`);
  // Titles ending in 'a' are often followed by ones starting with 'b': joined, "a<SEP>b" lies in every chunk.
  assert.deepEqual(found(t, 'a\u0000b'), [], 'no match spans two titles');
  assert.ok(found(t, 'rare').length >= 3, 'the rare word is found in every chunk');
});

test('an erased title is found by no query and its text is gone; the others are unchanged; packed and unpacked alike', () => {
  const t = new TopicTitles();
  const titles = [];
  for (let i = 0; i < N; i++) {
    t.push(titleOf(i));
    titles.push(titleOf(i));
  }
  const erased = [0, 5, 1000, TOPIC_TITLE_CHUNK - 1, TOPIC_TITLE_CHUNK, 2 * TOPIC_TITLE_CHUNK + 3, N - 1];
  for (const i of erased) {
    t.erase(i);
    titles[i] = null;
  }
  t.erase(N + 10);
  for (const q of QUERIES.filter((q) => !q.includes('\u0000'))) assert.deepEqual(found(t, q), naive(titles, q), `q=${JSON.stringify(q)}`);
  const arrays = new PackedArrays();
  const packed = t.pack(arrays);
  for (const text of [...packed.chunks, ...packed.open]) assert.ok(!text.includes('topic 1000 '), 'the erased text is not packed');
  const back = TopicTitles.unpack(structuredClone(packed), new PackedArrays(arrays.list));
  assert.equal(back.length, N);
  for (const q of QUERIES.filter((q) => !q.includes('\u0000'))) assert.deepEqual(found(back, q), found(t, q), `unpacked, q=${JSON.stringify(q)}`);
  assert.throws(() => TopicTitles.unpack({ ...packed, chunks: packed.chunks.slice(1) }, new PackedArrays(arrays.list)), /damaged topic titles/);
});

test('a topic whose id is not tp_<seq> (a hand-made log) is searched and moderated by its own id, replayed or restored alike', async (t) => {
  const { App } = await import('../../dist/app.js');
  const { loadConfig } = await import('../../dist/config.js');
  const { searchTopics } = await import('../../dist/domain/forum/topic-search.js');
  const { readerOf, itemKey } = await import('../../dist/domain/moderation/moderation.js');
  const { packState, unpackState } = await import('../../dist/domain/snapshot.js');
  const { RecordLocations } = await import('../../dist/store/record-locations.js');
  const { tempDir } = await import('../helpers/server.mjs');
  const app = await App.open(loadConfig({ FORUM_DATA_DIR: tempDir(t) }));
  t.after(() => app.close());
  app.commit('topic.create', { id: 'tp_x', roomId: 'commons', authorId: 'ag_1', title: 'Odd Harbour', created: app.nowIso() });
  const normal = app.commit('topic.create', { id: `tp_${String(app.nextSeq()).padStart(6, '0')}`, roomId: 'commons', authorId: 'ag_2', title: 'Even harbour', created: app.nowIso() });
  await app.log.sync();
  const restored = unpackState(packState(app.state, app.records.locations), app.state.forum.records, new RecordLocations());
  for (const [label, state] of [['live', app.state], ['unpacked', restored]]) {
    const mod = state.moderation;
    const ids = async (q, role) => (await searchTopics(state.forum, { q, limit: 10 }, readerOf(mod, role))).map((i) => state.forum.topicOrder.at(i));
    assert.deepEqual(await ids('harbour'), [normal.seq, normal.seq - 1], `${label}: both found, newest first`);
    mod.hidden.add(itemKey('tp_x'));
    assert.deepEqual(await ids('harbour'), [normal.seq], `${label}: hidden by its own id`);
    assert.deepEqual(await ids('odd', 'operator'), [normal.seq - 1], `${label}: an operator still finds it`);
    mod.hidden.delete(itemKey('tp_x'));
  }
});
