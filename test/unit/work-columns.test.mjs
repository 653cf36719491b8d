/**
 * Issue 30: work items held as typed columns (one row per item, ids derived from the seq of the
 * item's create record, the current revision's state, assignee, revision and lease end updated in
 * place, revisions a chain of positions). These tests check the columns directly; area-snapshots
 * checks that a packed and unpacked board answers every read like the replayed one.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deserialize, serialize } from 'node:v8';
import stableStringify from 'fast-json-stable-stringify';
import { apply, createState } from '../../dist/domain/state.js';
import { PackedArrays } from '../../dist/domain/packing.js';
import { F64List } from '../../dist/containers/f64-list.js';
import { createWorkBoardState, isAvailable, workEntryOf, workItemCount, workRowOf, workRowsByAuthor } from '../../dist/domain/work/work.js';
import { decideWorkAction, decideWorkCreate } from '../../dist/domain/work/decide.js';
import { packWork, unpackWork } from '../../dist/domain/work/apply.js';
import { listWorkJson, workHistoryJson } from '../../dist/domain/work/views.js';
import { readerOf } from '../../dist/domain/moderation/moderation.js';

const START = Date.parse('2026-01-01T00:00:00.000Z');
const MIN = 60_000;

/** A board built through the decide functions: items created, claimed, renewed, submitted; returns the state and a step function. */
function board() {
  const state = createState();
  let seq = 1;
  let ms = START;
  const ctx = (authorId) => ({ authorId, isOperator: false, position: seq, nowMs: ms, created: new Date(ms).toISOString() });
  const commit = (type, payload) => {
    const json = stableStringify(payload);
    apply(state, { seq, time: new Date(ms).toISOString(), type, payload: JSON.parse(json) }, json);
    seq++;
  };
  const create = (authorId, tags = []) => {
    const d = decideWorkCreate(state.work, state.forum, { clientId: `c${seq}`, title: 't', description: 'd', acceptanceCriteria: 'a', tags }, ctx(authorId));
    commit('work.create', d.payload);
    return d.payload.item.id;
  };
  const act = (authorId, id, input) => {
    const row = workRowOf(state.work, id);
    const d = decideWorkAction(state.work, { workItemId: id, expectedRevision: workEntryOf(state.work, row).revision, clientId: `c${seq}`, ...input }, ctx(authorId));
    commit('work.action', d.payload);
    return d.payload.item;
  };
  return { state, create, act, advance: (n) => (ms += n), now: () => ms, seq: () => seq };
}

test('a work item id names its row through the seq it carries; ids of no create record name nothing', () => {
  const b = board();
  const w1 = b.create('ag_a', ['x']);
  const w2 = b.create('ag_b');
  const w3 = b.create('ag_a', ['x']);
  assert.deepEqual([w1, w2, w3].map((id) => workRowOf(b.state.work, id)), [0, 1, 2]);
  b.act('ag_b', w1, { action: 'claim', leaseMinutes: 5 });
  const actionSeq = b.seq() - 1;
  for (const id of [`wk_${String(actionSeq).padStart(10, '0')}`, 'wk_1', 'wk_00000000001', 'kn_0000000001', '']) assert.equal(workRowOf(b.state.work, id), undefined, id);
  assert.deepEqual(workRowsByAuthor(b.state.work, 'ag_a'), [0, 2]);
  assert.deepEqual(workRowsByAuthor(b.state.work, 'ag_nobody'), []);
  assert.equal(workItemCount(b.state.work), 3);
  // Tag lists are shared: two items with the same tags hold one list.
  assert.equal(workEntryOf(b.state.work, 0).tags, workEntryOf(b.state.work, 2).tags);
});

test('actions update the state, assignee, revision and lease columns in place; every revision keeps its seq', () => {
  const b = board();
  const id = b.create('ag_a');
  const created = b.seq() - 1;
  b.act('ag_b', id, { action: 'claim', leaseMinutes: 10 });
  b.advance(5 * MIN);
  b.act('ag_b', id, { action: 'renew', leaseMinutes: 10 });
  const renewed = b.seq() - 1;
  const e = workEntryOf(b.state.work, 0);
  assert.deepEqual([e.state, e.assigneeId, e.revision, e.leaseUntilMs], ['claimed', 'ag_b', 3, START + 20 * MIN]);
  assert.deepEqual(e.revSeqs, [created, created + 1, renewed]);
  // The lease column decides availability: taken until the lease end, available from it on.
  assert.equal(isAvailable(b.state.work, 0, START + 20 * MIN - 1, false), false);
  assert.equal(isAvailable(b.state.work, 0, START + 20 * MIN, false), true);
  assert.equal(isAvailable(b.state.work, 0, START + 20 * MIN, true), false, 'never while writes are stopped');
  b.act('ag_b', id, { action: 'submit', content: 'r', sources: [] });
  const after = workEntryOf(b.state.work, 0);
  assert.deepEqual([after.state, after.assigneeId, after.revision, after.leaseUntilMs], ['submitted', 'ag_b', 4, null]);
  const history = JSON.parse(workHistoryJson(b.state.work, { workItemId: id, afterRevision: 1, limit: 2 }, readerOf(b.state.moderation, 'agent')));
  assert.deepEqual([history.revisions.map((r) => [r.revision, r.state]), history.nextAfterRevision, history.hasMore], [[[2, 'claimed'], [3, 'claimed']], 3, true]);
});

test('a packed board unpacks to the same columns, lease ends exactly; a damaged pack is refused', async () => {
  const b = board();
  const ids = [b.create('ag_a', ['x']), b.create('ag_a'), b.create('ag_c', ['y', 'x'])];
  b.act('ag_b', ids[0], { action: 'claim', leaseMinutes: 7 });
  b.advance(1234);
  b.act('ag_b', ids[2], { action: 'claim', leaseMinutes: 3 });
  b.act('ag_a', ids[1], { action: 'cancel' });
  const arrays = new PackedArrays();
  const packed = deserialize(serialize(packWork(b.state.work, arrays)));
  const copy = createWorkBoardState(b.state.work.records);
  unpackWork(copy, packed, new PackedArrays(arrays.list.map((a) => a.slice())));
  for (let row = 0; row < 3; row++) assert.deepEqual(workEntryOf(copy, row), workEntryOf(b.state.work, row));
  assert.equal(workEntryOf(copy, 2).leaseUntilMs, START + 1234 + 3 * MIN);
  const reader = readerOf(b.state.moderation, 'agent');
  for (const nowMs of [b.now(), b.now() + 4 * MIN, b.now() + 8 * MIN]) {
    for (const q of [{ available: true }, { available: false }, { tag: 'x' }, { assigneeId: 'ag_b' }, { state: 'claimed' }, { authorId: 'ag_a' }, { id: ids[2] }, { id: ids[2], after: 3 }]) {
      const query = { after: 0, limit: 100, ...q };
      const ctx = { nowMs, writeStop: false, reader };
      assert.equal(await listWorkJson(copy, query, ctx), await listWorkJson(b.state.work, query, ctx), JSON.stringify(query));
    }
  }
  const badState = new PackedArrays(arrays.list.map((a, i) => (i === packed.rows.state ? Uint32Array.of(9, 9, 9) : a.slice())));
  assert.throws(() => unpackWork(createWorkBoardState(b.state.work.records), packed, badState), /damaged work board/);
  const shortRevs = new PackedArrays(arrays.list.map((a, i) => (i === packed.revs.prev ? a.slice(1) : a.slice())));
  assert.throws(() => unpackWork(createWorkBoardState(b.state.work.records), packed, shortRevs), /damaged work board/);
});

test('replay refuses a work record whose state part 3 does not name', () => {
  const b = board();
  const id = b.create('ag_a');
  const item = { ...JSON.parse(JSON.stringify(workEntryOf(b.state.work, 0))), id, revision: 2, state: 'done' };
  assert.throws(() => apply(b.state, { seq: 99, time: new Date(START).toISOString(), type: 'work.action', payload: { item, request: {}, authorId: 'ag_a', clientId: 'z' } }, '{}'), /unknown state "done"/);
});

test('an F64List keeps doubles exactly (NaN included) through its Uint32 form, also from a view at an odd word offset', () => {
  const list = new F64List(1);
  const values = [START + 0.5, NaN, -1, 2 ** 53, 0];
  for (const v of values) list.push(v);
  list.set(4, 7);
  const words = list.toU32();
  assert.equal(words.length, 10);
  const back = F64List.fromU32(words);
  assert.deepEqual(Array.from({ length: back.length }, (_, i) => back.at(i)), [START + 0.5, NaN, -1, 2 ** 53, 7]);
  const shifted = new Uint32Array(11);
  shifted.set(words, 1);
  const unaligned = F64List.fromU32(shifted.subarray(1));
  assert.equal(unaligned.at(0), START + 0.5);
  assert.throws(() => F64List.fromU32(new Uint32Array(3)), /damaged float column/);
});

test('a work item whose id is not wk_<seq of its create> (a hand-made log) is found by that id only, also after a pack and unpack', () => {
  const state = createState();
  const T = new Date(START).toISOString();
  const item = {
    id: 'wk_hand', sequence: 1, authorId: 'ag_a', title: 't', description: 'd', acceptanceCriteria: 'a', tags: [], topicId: 'tp_1', state: 'open',
    assigneeId: null, leaseUntil: null, revision: 1, created: T, updated: T, updatedBy: 'ag_a', result: null, review: null,
  };
  const payload = { item, topic: null, request: {}, authorId: 'ag_a', clientId: 'h1' };
  apply(state, { seq: 4, time: T, type: 'work.create', payload }, JSON.stringify(payload));
  assert.equal(workRowOf(state.work, 'wk_hand'), 0);
  assert.equal(workRowOf(state.work, 'wk_0000000004'), undefined, 'the seq form does not name a hand-made item');
  const arrays = new PackedArrays();
  const packed = deserialize(serialize(packWork(state.work, arrays)));
  const copy = createWorkBoardState(state.work.records);
  unpackWork(copy, packed, new PackedArrays(arrays.list.map((a) => a.slice())));
  assert.equal(workRowOf(copy, 'wk_hand'), 0);
  assert.equal(workEntryOf(copy, 0).id, 'wk_hand');
  assert.throws(() => apply(state, { seq: 5, time: T, type: 'work.create', payload: { ...payload, item: { ...item, sequence: 2 } } }, '{}'), /does not follow/, 'one id, one item');
});
