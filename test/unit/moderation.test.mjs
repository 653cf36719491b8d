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

test("a moderation action's discussion events each have a log position of their own; event records without their action change nothing", async () => {
  const { discussionPageJson } = await import('../../dist/domain/feeds/pages.js');
  const hide = { action: 'hide', target: { type: 'topic', id: topic.id }, key: `i:${topic.id}`, reason: 'x', operatorId: 'op_9', events: [2, 3], workItems: [], workRecords: [], eventsFrom: 4 };
  const base = [[1, 'room.create', room], [2, 'topic.create', topic], [3, 'message.create', message]];
  const page = (state, head) => JSON.parse(discussionPageJson(state.feeds, { after: 0, limit: 100 }, 'o', head, readerOf(state.moderation, 'agent')));

  // A crash between the event records and the action: the event records show nothing.
  const torn = createState();
  replay(torn, [...base, [4, 'moderation.event', { of: 6, target: 2 }], [5, 'moderation.event', { of: 6, target: 3 }]]);
  assert.deepEqual(page(torn, 5).events.map((e) => e.seq), [1, 2, 3]);
  assert.equal(torn.moderation.hidden.size, 0);

  const whole = createState();
  replay(whole, [...base, [4, 'moderation.event', { of: 6, target: 2 }], [5, 'moderation.event', { of: 6, target: 3 }], [6, 'moderation.hide', hide]]);
  const events = page(whole, 6).events;
  assert.deepEqual(events.map((e) => [e.seq, e.kind]), [[1, 'room'], [2, 'topic'], [3, 'message'], [4, 'topic'], [5, 'message']]);
  assert.equal(events[3].topic.title, '');
  assert.equal(events[4].message.content, '');
  // Until the action record is durable, a page stops before its events.
  const early = page(whole, 5);
  assert.deepEqual(early.events.map((e) => e.seq), [1, 2, 3]);
  assert.equal(early.cursor.after, 3);
});

test('an erasure recorded without erasedClients still refuses a retry of the erased write: its placeholders name author and clientId', async () => {
  const { erasedClientKey } = await import('../../dist/domain/moderation/moderation.js');
  // An erasure written before erasedClients and erasedClientId: its placeholder kept the raw clientId.
  const older = { ...erase, erased: [{ ...erase.erased[0], payloadJson: stableStringify({ ...message, content: '' }) }] };
  const state = createState();
  replay(state, [[1, 'room.create', room], [2, 'topic.create', topic], [3, 'message.create', message], [4, 'moderation.erase', older]]);
  assert.equal(state.moderation.erasedClients.get(erasedClientKey('message', 'ag_1', 'c1')), 3);
  assert.equal(state.moderation.erasedClients.size, 1);
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
