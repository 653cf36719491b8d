import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import stableStringify from 'fast-json-stable-stringify';
import { ContentMatcher, createdOf, foldsAsAscii, readMessageFields } from '../../dist/domain/forum/message-json.js';
import { createState, apply } from '../../dist/domain/state.js';
import { messageById, messageByClientId, messageIdOf, queryMessages } from '../../dist/domain/forum/forum.js';

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
      const expected = content.toLowerCase().includes(lq);
      // Searched as the index does: in the JSON when the content folds as ASCII, else in lc.
      // Both ways of scanning: the sample makes every query character rare (anchor scan) or
      // common (RegExp, for ASCII queries).
      const rare = [];
      const common = [messageJson(lq.repeat(3))];
      for (const sample of [rare, common]) {
        const got = foldsAsAscii(json) ? new ContentMatcher(lq, sample).matches(json) : content.toLowerCase().includes(lq);
        assert.equal(got, expected, `content ${JSON.stringify(content)} q ${JSON.stringify(q)} sample ${sample.length}`);
      }
    }),
    { numRuns: 20000 },
  );
});

test('q search finds a word whatever its case and not across escapes or outside the content', () => {
  const json = messageJson('Line one\nThe Benchmark said "ok"');
  for (const sample of [[], [json, json, json]]) {
  const m = (q) => new ContentMatcher(q.toLowerCase(), sample).matches(json);
  assert.equal(m('BENCHMARK'), true);
  assert.equal(m('one\nthe'), true, 'a newline in q matches the escaped newline');
  assert.equal(m('"ok"'), true);
  assert.equal(m('nthe'), false, 'the n of the escape \\n is not content');
  assert.equal(m('tp_0000000002'), false, 'other fields are not searched');
  assert.equal(m('2026'), false);
  }
});

test('content with cased non-ASCII letters keeps a lower-cased copy; other content does not', () => {
  assert.equal(foldsAsAscii(messageJson('Plain ASCII')), true);
  assert.equal(foldsAsAscii(messageJson('Dashes — and “quotes” 日本 😀')), true, 'caseless non-ASCII is fine');
  assert.equal(foldsAsAscii(messageJson('Éclair')), false);
  assert.equal(foldsAsAscii(messageJson('\u212a')), false, 'the Kelvin sign lower-cases to k');
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
  for (const id of ids) assert.equal(messageById(state.forum, id) && messageIdOf(messageById(state.forum, id)), id);
  for (const id of ['msg_0000000001', 'msg_0000000099', 'msg_3', 'msg_00000000003', 'tp_0000000003', '']) {
    assert.equal(messageById(state.forum, id), undefined, id);
  }
});

test('the clientId index is built on first use and then follows new messages', () => {
  const { state, ids, rec } = stateWith([['a', 'ag_a', 'c1'], ['b', 'ag_b', 'c1'], ['c', 'ag_a', 'c2']]);
  assert.equal(state.forum.byClientId.size, 0, 'replay builds no clientId index');
  assert.equal(messageIdOf(messageByClientId(state.forum, 'ag_a', 'c2')), ids[2]);
  assert.equal(messageIdOf(messageByClientId(state.forum, 'ag_b', 'c1')), ids[1]);
  assert.equal(messageByClientId(state.forum, 'ag_b', 'c2'), undefined);
  rec('message.create', { id: 'msg_0000000006', topicId: 'tp_0000000002', authorId: 'ag_b', content: 'd', replyTo: null, clientId: 'c2', created: '2026-01-01T00:00:00.000Z' });
  assert.equal(messageIdOf(messageByClientId(state.forum, 'ag_b', 'c2')), 'msg_0000000006');
});

test('q filters messages the same whether their content keeps a lower-cased copy or not', () => {
  const { state, ids } = stateWith([['The ÉCLAIR recipe', 'ag_a', 'c1'], ['The Eclair recipe', 'ag_a', 'c2'], ['nothing', 'ag_a', 'c3']]);
  const found = (q) => queryMessages(state.forum, { q, limit: 50 }).map(messageIdOf);
  assert.deepEqual(found('the '), [ids[1], ids[0]]);
  assert.deepEqual(found('éclair'), [ids[0]]);
  assert.deepEqual(found('ECLAIR'), [ids[1]]);
  assert.deepEqual(found(''), [ids[2], ids[1], ids[0]]);
});

test('message fields read from the canonical JSON equal the parsed ones', () => {
  const id = fc.stringMatching(/^[a-z]{2,3}_\d{10}$/);
  fc.assert(
    fc.property(text, text, id, id, fc.option(id), fc.date({ noInvalidDate: true }), (content, clientId, topicId, authorId, replyTo, date) => {
      fc.pre(clientId !== '');
      const message = { id: 'msg_0000000042', topicId, authorId, content, replyTo, clientId, created: date.toISOString() };
      const json = stableStringify(message);
      const { content: kept, ...fields } = readMessageFields(json);
      const { content: _, ...expected } = message;
      assert.deepEqual(fields, expected);
      assert.equal(kept, foldsAsAscii(json) ? undefined : content, 'content is returned only when it needs a lower-cased copy');
      assert.equal(createdOf(json), message.created);
    }),
    { numRuns: 5000 },
  );
});

test('JSON of another shape is read through JSON.parse', () => {
  const odd = { id: 'msg_0000000042', topicId: 'tp_1', authorId: 'ag_1', content: 'x', replyTo: null, clientId: 'c', created: '2026-01-01T00:00:00.000Z', edited: true };
  const json = stableStringify(odd);
  assert.deepEqual(readMessageFields(json), { id: odd.id, topicId: 'tp_1', authorId: 'ag_1', replyTo: null, clientId: 'c', created: odd.created, content: undefined });
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
