/**
 * Issue 25, the domain side of erasure: a replay meets an erased record (a tombstone, payload
 * `null`) before the `moderation.erase` record that holds its emptied payload. `apply` then asks
 * for the erased payloads (ErasedRecordError), and applies the emptied payload once they are known,
 * so no area ever reads the bytes the store removed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import stableStringify from 'fast-json-stable-stringify';
import { apply, createState, ErasedRecordError } from '../../dist/domain/state.js';
import { makeId } from '../../dist/domain/ids.js';
import { messageByClientId, messagesJson } from '../../dist/domain/forum/forum.js';
import { erasedClientId, readerOf } from '../../dist/domain/moderation/moderation.js';

const T = '2026-01-01T00:00:00.000Z';
const room = { id: 'commons', name: 'Commons', description: '', created: T };
const topic = { id: makeId('tp', 2), roomId: 'commons', authorId: 'ag_1', title: 'a topic', created: T };
const message = { id: makeId('msg', 3), topicId: topic.id, authorId: 'ag_1', content: 'a leaked key', replyTo: null, clientId: 'c1', created: T };
/** The erased payload: text emptied, the clientId kept only as its erasedClientId. */
const emptied = { ...message, content: '', clientId: erasedClientId(message.authorId, message.clientId) };
const erase = {
  action: 'erase', target: { type: 'message', id: message.id }, key: 's:3', reason: 'leak', operatorId: 'op_9', events: [3], workItems: [],
  targets: [{ seq: 3, hash: 'a'.repeat(64) }], erased: [{ seq: 3, type: 'message.create', time: T, payloadJson: stableStringify(emptied) }],
};

/** Applies records [seq, type, payload | null (a tombstone)] in order. */
function replay(state, records) {
  for (const [seq, type, payload] of records) apply(state, { seq, time: T, type, payload }, payload === null ? 'null' : stableStringify(payload));
}

test('a tombstone met before its erasure record asks for the erased payloads instead of indexing a record it cannot read', () => {
  const state = createState();
  assert.throws(() => replay(state, [[1, 'room.create', room], [2, 'topic.create', topic], [3, 'message.create', null]]), (err) => err instanceof ErasedRecordError && err.seq === 3);
});

test('with the erased payloads known, a replay over a tombstone serves the same placeholder as the live erasure', () => {
  const live = createState();
  replay(live, [[1, 'room.create', room], [2, 'topic.create', topic], [3, 'message.create', message], [4, 'moderation.erase', erase]]);
  const replayed = createState();
  replayed.moderation.erased.set(3, erase.erased[0]);
  replay(replayed, [[1, 'room.create', room], [2, 'topic.create', topic], [3, 'message.create', null], [4, 'moderation.erase', erase]]);
  for (const role of ['agent', 'operator']) {
    const view = (st) => JSON.parse(messagesJson(st.forum, [0], readerOf(st.moderation, role)));
    assert.deepEqual(view(replayed), [{ ...emptied, clientId: message.id, erased: true }]);
    assert.deepEqual(view(replayed), view(live));
  }
});

test('an erased message is still found by its author and clientId, applied before its erasure or replayed already erased, and by no other pair', () => {
  const live = createState();
  replay(live, [[1, 'room.create', room], [2, 'topic.create', topic], [3, 'message.create', message], [4, 'moderation.erase', erase]]);
  const replayed = createState();
  replayed.moderation.erased.set(3, erase.erased[0]);
  replay(replayed, [[1, 'room.create', room], [2, 'topic.create', topic], [3, 'message.create', null], [4, 'moderation.erase', erase]]);
  for (const st of [live, replayed]) {
    assert.equal(messageByClientId(st.forum, 'ag_1', 'c1'), 0);
    assert.equal(messageByClientId(st.forum, 'ag_1', 'c2'), undefined);
    assert.equal(messageByClientId(st.forum, 'ag_2', 'c1'), undefined);
  }
  assert.ok(!erase.erased[0].payloadJson.includes('"c1"'), 'the erased payload does not hold the clientId');
});
