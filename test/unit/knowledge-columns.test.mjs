/**
 * Issue 30: knowledge revisions held as typed columns (one row per revision, ids derived from the
 * seq of an item's first revision, an item's revisions a chain of rows). These tests check the
 * columns' reads directly; area-snapshots.test.mjs checks that a packed and unpacked index answers
 * every read like the replayed one.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deserialize, serialize } from 'node:v8';
import { apply, createState } from '../../dist/domain/state.js';
import { PackedArrays } from '../../dist/domain/packing.js';
import {
  createKnowledgeState, knowledgeEntryOf, knowledgeIdOf, knowledgeLatestOf, knowledgeRevisionsOf, knowledgeRowsByAuthor, packKnowledge, queryKnowledge,
  unpackKnowledge,
} from '../../dist/domain/knowledge/knowledge.js';
import { readerOf } from '../../dist/domain/moderation/moderation.js';

const T = '2026-01-01T00:00:00.000Z';
const k = (id, revision, authorId, topicId = null) => ({ id, revision, authorId, title: 't', content: 'c', category: 'opinion', sources: [], topicId, created: T });

/** A state with: item A (derived id, 3 revisions), item B (a hand-made id, 2 revisions), item C (derived id), interleaved with messages' seqs skipped. */
function built() {
  const state = createState();
  const publish = (seq, payload) => apply(state, { seq, time: T, type: 'knowledge.publish', payload }, JSON.stringify(payload));
  publish(3, k('kn_0000000003', 1, 'ag_a', 'tp_1'));
  publish(5, k('kn_hand', 1, 'ag_b'));
  publish(8, k('kn_0000000003', 2, 'ag_a'));
  publish(9, k('kn_0000000009', 1, 'ag_b', 'tp_1'));
  publish(12, k('kn_hand', 2, 'ag_b', 'tp_2'));
  publish(20, k('kn_0000000003', 3, 'ag_a', 'tp_2'));
  return state;
}

test('an item id names its revisions as rows in revision order, and only the latest row is latest', () => {
  const s = built().knowledge;
  assert.deepEqual(knowledgeRevisionsOf(s, 'kn_0000000003'), [0, 2, 5]);
  assert.deepEqual(knowledgeRevisionsOf(s, 'kn_hand'), [1, 4]);
  assert.deepEqual(knowledgeRevisionsOf(s, 'kn_0000000009'), [3]);
  assert.equal(knowledgeLatestOf(s, 'kn_0000000003'), 5);
  assert.deepEqual(
    [0, 1, 2, 3, 4, 5].map((row) => knowledgeEntryOf(s, row)).map((e) => [e.id, e.revision, e.authorId, e.topicId, e.seq, e.latest]),
    [
      ['kn_0000000003', 1, 'ag_a', 'tp_1', 3, false],
      ['kn_hand', 1, 'ag_b', null, 5, false],
      ['kn_0000000003', 2, 'ag_a', null, 8, false],
      ['kn_0000000009', 1, 'ag_b', 'tp_1', 9, true],
      ['kn_hand', 2, 'ag_b', 'tp_2', 12, true],
      ['kn_0000000003', 3, 'ag_a', 'tp_2', 20, true],
    ],
  );
  assert.deepEqual([...s.byTopic.get('tp_2').toArray()], [4, 5]);
  assert.deepEqual(knowledgeRowsByAuthor(s, 'ag_b'), [1, 3, 4]);
});

test('an id that only looks derived names nothing: a later revision seq, an unpadded seq, a seq of no revision, or a hand-made item\'s seq', () => {
  const s = built().knowledge;
  // seq 8 is revision 2 of kn_..03, seq 5 is the first revision of the item named kn_hand.
  for (const id of ['kn_0000000008', 'kn_3', 'kn_0000000004', 'kn_0000000005', 'wk_0000000003', 'kn_00000000003', '']) {
    assert.equal(knowledgeRevisionsOf(s, id), undefined, id);
    assert.equal(knowledgeLatestOf(s, id), undefined, id);
  }
  assert.equal(knowledgeIdOf(s, 1), 'kn_hand');
});

test('queries by id and author read the columns: newest first, history or latest only, unknown ids empty', async () => {
  const s = built().knowledge;
  const reader = readerOf(createState().moderation, 'agent');
  const q = (query) => queryKnowledge(s, { history: false, limit: 100, ...query }, null, reader);
  assert.deepEqual(await q({}), [5, 4, 3]);
  assert.deepEqual(await q({ history: true }), [5, 4, 3, 2, 1, 0]);
  assert.deepEqual(await q({ id: 'kn_0000000003', history: true }), [5, 2, 0]);
  assert.deepEqual(await q({ agentId: 'ag_b', history: true }), [4, 3, 1]);
  assert.deepEqual(await q({ agentId: 'ag_b', id: 'kn_0000000003', history: true }), []);
  assert.deepEqual(await q({ agentId: 'ag_nobody' }), []);
  assert.deepEqual(await q({ id: 'kn_0000000008', history: true }), []);
  assert.deepEqual(await q({ history: true, limit: 2 }), [5, 4]);
});

test('a packed knowledge index unpacks to the same columns, hand-made ids included; columns of unequal length are refused', () => {
  const s = built().knowledge;
  const arrays = new PackedArrays();
  const packed = deserialize(serialize(packKnowledge(s, arrays)));
  const copy = createKnowledgeState(s.records);
  unpackKnowledge(copy, packed, new PackedArrays(arrays.list.map((a) => a.slice())));
  for (let row = 0; row < 6; row++) assert.deepEqual(knowledgeEntryOf(copy, row), knowledgeEntryOf(s, row));
  assert.deepEqual(knowledgeRevisionsOf(copy, 'kn_hand'), [1, 4]);
  const short = new PackedArrays(arrays.list.map((a, i) => (i === packed.rows.prev ? a.slice(1) : a.slice())));
  assert.throws(() => unpackKnowledge(createKnowledgeState(s.records), packed, short), /damaged knowledge index/);
});
