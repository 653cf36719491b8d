/**
 * Issue 39: the search index reads a document's texts from its payload JSON without JSON.parse
 * when it safely can (documents.ts documentTextsOf). Whatever the payload, the texts are exactly
 * the lower-cased values JSON.parse would give.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { documentTextsOf } from '../../dist/store/search/documents.js';

const viaParse = (fields, json) => fields.map((f) => JSON.parse(json)[f].toLowerCase());

test('the texts of a payload are the lower-cased field values JSON.parse gives, for tricky payloads', () => {
  const cases = [
    { content: 'Hello World' },
    { a: 'x","content":"fake', content: 'Real' },
    { a: { content: 'nested' }, content: 'Top' },
    { authorId: 'a', content: 'say "hi" \\ there', z: 1 },
    { content: 'line\nbreak \u00e9 😀 \u0000' },
    { content: '{braces}', title: 'T' },
    { xcontent: 'no', content: 'yes' },
    { 'a\\"content': 'key with an escaped quote', content: 'ok' },
    { content: '' },
  ];
  for (const payload of cases) {
    const json = JSON.stringify(payload);
    assert.deepEqual(documentTextsOf(['content'], json), viaParse(['content'], json), json);
  }
  // A repeated key: JSON.parse keeps the last.
  const dup = '{"content":"First","content":"Second"}';
  assert.deepEqual(documentTextsOf(['content'], dup), ['second']);
  const two = JSON.stringify({ content: 'Body', title: 'Head' });
  assert.deepEqual(documentTextsOf(['title', 'content'], two), ['head', 'body']);
});

test('any flat or nested payload gives the texts JSON.parse gives', () => {
  const text = fc.string({ unit: fc.constantFrom('a', 'B', '"', '\\', '{', '}', ',', ':', 'content', '\n', 'é', '\ud83d') });
  fc.assert(
    fc.property(fc.dictionary(fc.constantFrom('a', 'content', 'title', 'xcontent', 'z'), fc.oneof(text, fc.dictionary(fc.constantFrom('content', 'b'), text))), text, text, (extra, content, title) => {
      const json = JSON.stringify({ ...extra, content, title });
      assert.deepEqual(documentTextsOf(['title', 'content'], json), viaParse(['title', 'content'], json));
    }),
    { numRuns: 2000 },
  );
});
