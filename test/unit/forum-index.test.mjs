import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import stableStringify from 'fast-json-stable-stringify';
import { createdOf, readMessageFields } from '../../dist/domain/forum/message-json.js';
import { contentIncludes } from '../../dist/domain/forum/search.js';
import { createState, apply } from '../../dist/domain/state.js';
import { messageById, messageByClientId, messageIdOf as idOfRow, queryMessages } from '../../dist/domain/forum/forum.js';
import { readerOf } from '../../dist/domain/moderation/moderation.js';

/** A canonical message JSON as the log stores it. */
function messageJson(content, extra = {}) {
  return stableStringify({
    id: 'msg_0000000009',
    topicId: 'tp_0000000002',
    authorId: 'ag_0000000001',
    content,
    replyTo: null,
    clientId: 'c1',
    created: '2026-01-01T00:00:00.000Z',
    ...extra,
  });
}

// Characters chosen to hit every rule: A–Z folding, escapes (quote, backslash, newline, control),
// letters inside escapes (n, u, hex), cased non-ASCII (É, Σ, Kelvin sign, dotted İ), caseless
// non-ASCII (em dash, CJK, emoji), and the JSON key text that brackets the content.
const alphabet = fc.constantFrom(...'aAbBnNuUkKeE01fF "\\\n\t\u0001,:{}é', 'É', 'Σ', 'σ', 'ς', '\u212a', '\u0130', '—', '日', '😀', '","created":"', ',"content":"');
const text = fc.array(alphabet, { maxLength: 24 }).map((a) => a.join(''));

test('q search in the stored JSON agrees with content.toLowerCase().includes(q.toLowerCase())', () => {
  fc.assert(
    fc.property(text, text, text, (content, q, clientId) => {
      const lq = q.toLowerCase();
      fc.pre(lq !== '');
      const json = messageJson(content, { clientId });
      assert.equal(contentIncludes(json, lq), content.toLowerCase().includes(lq), `content ${JSON.stringify(content)} q ${JSON.stringify(q)}`);
    }),
    { numRuns: 20000 },
  );
});

test('q search finds a word whatever its case and not across escapes or outside the content', () => {
  const json = messageJson('Line one\nThe Benchmark said "ok"');
  const m = (q) => contentIncludes(json, q.toLowerCase());
  assert.equal(m('BENCHMARK'), true);
  assert.equal(m('one\nthe'), true, 'a newline in q matches the newline in the content');
  assert.equal(m('"ok"'), true);
  assert.equal(m('nthe'), false, 'the n of the escape \\n is not content');
  assert.equal(m('tp_0000000002'), false, 'other fields are not searched');
  assert.equal(m('2026'), false);
  assert.equal(contentIncludes(messageJson('Éclair ΣΑΣ'), 'éclair σας'), true, 'non-ASCII letters fold as toLowerCase does');
});

/** A state with one topic and the given messages (content, author, clientId). */
function stateWith(messages) {
  const state = createState();
  let seq = 0;
  const time = '2026-01-01T00:00:00.000Z';
  const rec = (type, payload) => {
    seq++;
    apply(state, { seq, time, type, payload }, stableStringify(payload));
  };
  rec('room.create', { id: 'commons', name: 'C', description: '', created: time });
  rec('topic.create', { id: 'tp_0000000002', roomId: 'commons', authorId: 'ag_a', title: 't', created: time });
  const ids = [];
  for (const [content, authorId, clientId] of messages) {
    const id = `msg_${String(seq + 1).padStart(10, '0')}`;
    rec('message.create', { id, topicId: 'tp_0000000002', authorId, content, replyTo: null, clientId, created: time });
    ids.push(id);
  }
  return { state, ids, rec };
}

test('a message is found by its id, and ids that do not name a message are not', () => {
  const { state, ids } = stateWith([['a', 'ag_a', 'c1'], ['b', 'ag_b', 'c1'], ['c', 'ag_a', 'c2']]);
  const messageIdOf = (row) => idOfRow(state.forum, row);
  for (const id of ids) assert.equal(messageIdOf(messageById(state.forum, id)), id);
  for (const id of ['msg_0000000001', 'msg_0000000099', 'msg_3', 'msg_00000000003', 'tp_0000000003', '']) {
    assert.equal(messageById(state.forum, id), undefined, id);
  }
});

test('a clientId names the message its author posted with it, and follows new messages', () => {
  const { state, ids, rec } = stateWith([['a', 'ag_a', 'c1'], ['b', 'ag_b', 'c1'], ['c', 'ag_a', 'c2']]);
  const messageIdOf = (row) => idOfRow(state.forum, row);
  assert.equal(messageIdOf(messageByClientId(state.forum, 'ag_a', 'c2')), ids[2]);
  assert.equal(messageIdOf(messageByClientId(state.forum, 'ag_b', 'c1')), ids[1]);
  assert.equal(messageByClientId(state.forum, 'ag_b', 'c2'), undefined);
  assert.equal(messageByClientId(state.forum, 'ag_nobody', 'c1'), undefined);
  rec('message.create', { id: 'msg_0000000006', topicId: 'tp_0000000002', authorId: 'ag_b', content: 'd', replyTo: null, clientId: 'c2', created: '2026-01-01T00:00:00.000Z' });
  assert.equal(messageIdOf(messageByClientId(state.forum, 'ag_b', 'c2')), 'msg_0000000006');
});

test('q filters messages by lower-cased content, cased non-ASCII letters included', async () => {
  const { state, ids } = stateWith([['The ÉCLAIR recipe', 'ag_a', 'c1'], ['The Eclair recipe', 'ag_a', 'c2'], ['nothing', 'ag_a', 'c3']]);
  const found = async (q) => (await queryMessages(state.forum, { q, limit: 50 }, null, readerOf(state.moderation, 'agent'))).map((row) => idOfRow(state.forum, row));
  assert.deepEqual(await found('the '), [ids[1], ids[0]]);
  assert.deepEqual(await found('éclair'), [ids[0]]);
  assert.deepEqual(await found('ECLAIR'), [ids[1]]);
  assert.deepEqual(await found(''), [ids[2], ids[1], ids[0]]);
});

test('replyTo lists direct replies only, newest first, whatever other filter picks the candidates', async () => {
  const { state, ids, rec } = stateWith([['root', 'ag_a', 'c1'], ['other', 'ag_b', 'c2']]);
  const t = '2026-01-01T00:00:00.000Z';
  rec('message.create', { id: 'msg_0000000005', topicId: 'tp_0000000002', authorId: 'ag_b', content: 'r1', replyTo: ids[0], clientId: 'c3', created: t });
  rec('message.create', { id: 'msg_0000000006', topicId: 'tp_0000000002', authorId: 'ag_a', content: 'r2', replyTo: 'msg_0000000005', clientId: 'c4', created: t });
  rec('message.create', { id: 'msg_0000000007', topicId: 'tp_0000000002', authorId: 'ag_a', content: 'r3', replyTo: ids[0], clientId: 'c5', created: t });
  const found = async (query) => (await queryMessages(state.forum, { limit: 50, ...query }, null, readerOf(state.moderation, 'agent'))).map((row) => idOfRow(state.forum, row));
  assert.deepEqual(await found({ replyTo: ids[0] }), ['msg_0000000007', 'msg_0000000005']);
  assert.deepEqual(await found({ replyTo: ids[0], agentId: 'ag_b' }), ['msg_0000000005']);
  assert.deepEqual(await found({ replyTo: ids[0], agentId: 'ag_a' }), ['msg_0000000007'], 'the parent itself is not its own reply');
  assert.deepEqual(await found({ replyTo: 'msg_0000000005' }), ['msg_0000000006']);
  assert.deepEqual(await found({ replyTo: 'msg_0000000099' }), []);
});

test('message fields read from the canonical JSON equal the parsed ones', () => {
  const id = fc.stringMatching(/^[a-z]{2,3}_\d{10}$/);
  fc.assert(
    fc.property(text, text, id, id, fc.option(id), fc.date({ noInvalidDate: true }), (content, clientId, topicId, authorId, replyTo, date) => {
      fc.pre(clientId !== '');
      const message = { id: 'msg_0000000042', topicId, authorId, content, replyTo, clientId, created: date.toISOString() };
      const json = stableStringify(message);
      const { content: _, ...expected } = message;
      assert.deepEqual(readMessageFields(json), expected);
      assert.equal(createdOf(json), message.created);
    }),
    { numRuns: 5000 },
  );
});

test('JSON of another shape is read through JSON.parse', () => {
  const odd = { id: 'msg_0000000042', topicId: 'tp_1', authorId: 'ag_1', content: 'x', replyTo: null, clientId: 'c', created: '2026-01-01T00:00:00.000Z', edited: true };
  const json = stableStringify(odd);
  assert.deepEqual(readMessageFields(json), { id: odd.id, topicId: 'tp_1', authorId: 'ag_1', replyTo: null, clientId: 'c', created: odd.created });
  assert.equal(createdOf(json), odd.created);
  assert.throws(() => readMessageFields('{"authorId":"a", nope}'), SyntaxError);
});

test('an id names its seq exactly: idHasSeq agrees with makeId', async () => {
  const { idHasSeq, makeId } = await import('../../dist/domain/ids.js');
  fc.assert(
    fc.property(fc.nat({ max: 2 ** 45 }), fc.nat({ max: 2 ** 45 }), (a, b) => {
      assert.equal(idHasSeq(makeId('msg', a), 'msg', b), a === b);
      assert.equal(idHasSeq(`msg_0${makeId('msg', a).slice(4)}`, 'msg', a), false, 'an extra leading zero');
      assert.equal(idHasSeq(makeId('tp', a), 'msg', a), false);
    }),
  );
});
