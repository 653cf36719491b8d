/**
 * The catalogue of record types (src/domain/record-types.ts, issue 52): every string field of the
 * schemas of an erasable record type is classified as participant text (emptied by an erasure),
 * covered (a clientId, replaced by its digest) or kept, so a field added to a message, topic,
 * knowledge, work, flag or agent schema cannot leak through an erasure unnoticed; and what the
 * erasure code does follows the catalogue.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { RECORD_TYPES } from '../../dist/domain/record-types.js';
import { ERASABLE_TYPES, redactPayload } from '../../dist/domain/moderation/moderation.js';
import { redactWorkPayload } from '../../dist/domain/work/views.js';
import { ROOT } from '../helpers/server.mjs';

const SCHEMAS = new Map(
  readdirSync(join(ROOT, 'schemas'))
    .filter((f) => f.endsWith('.json'))
    .map((f) => [f.slice(0, -'.json'.length), JSON.parse(readFileSync(join(ROOT, 'schemas', f), 'utf8'))]),
);

/** The schemas (records and requests) whose fields each erasable record type's payload carries. */
const SCHEMAS_OF_TYPE = {
  'message.create': ['Message', 'MessageInput'],
  'topic.create': ['Topic', 'TopicInput'],
  'knowledge.publish': ['Knowledge', 'KnowledgeInput'],
  'work.create': ['WorkItem', 'WorkCreateInput', 'Topic'],
  'work.action': ['WorkItem', 'WorkActionInput'],
  'flag.create': ['Flag', 'FlagInput'],
  'agent.register': ['Agent', 'RegisterInput'],
};

/**
 * The names of the properties of `schema` (and of the objects inside it, through `$ref`, `anyOf`,
 * `oneOf` and array items) that can hold a string: type string (an Id and a Timestamp are
 * strings), or a list of strings. An `enum` or `const` is a closed set of the schema's own words,
 * not a participant's text, and is left out. `schemas` resolves `$ref`s by `$id`.
 */
function stringFields(schema, schemas = SCHEMAS, seen = new Set()) {
  const out = new Set();
  const resolve = (s) => (s.$ref === undefined ? s : resolve(schemas.get(s.$ref)));
  const holdsString = (s) => {
    s = resolve(s);
    if (s.enum !== undefined || s.const !== undefined) return false;
    if (s.type === 'string' || (Array.isArray(s.type) && s.type.includes('string'))) return true;
    if (s.type === 'array' && s.items !== undefined) return holdsString(s.items);
    return [...(s.anyOf ?? []), ...(s.oneOf ?? [])].some(holdsString);
  };
  const visit = (s) => {
    s = resolve(s);
    if (seen.has(s)) return;
    seen.add(s);
    for (const [name, p] of Object.entries(s.properties ?? {})) {
      if (holdsString(p)) out.add(name);
      visit(p);
    }
    for (const branch of [...(s.anyOf ?? []), ...(s.oneOf ?? [])]) visit(branch);
    if (s.items !== undefined) visit(s.items);
  };
  visit(schema);
  return out;
}

/** The string fields of `schemaNames` that record type `type`'s erasure leaves unclassified. */
function unclassified(type, schemaNames, schemas = SCHEMAS) {
  const { text, covered, kept } = RECORD_TYPES[type].erasure;
  const known = new Set([...Object.keys(text), ...covered, ...kept]);
  const out = [];
  for (const name of schemaNames) for (const field of stringFields(schemas.get(name), schemas)) if (!known.has(field)) out.push(`${name}.${field}`);
  return out;
}

test('every erasable record type has its schemas named here, and only those are erasable', () => {
  assert.deepEqual(Object.keys(SCHEMAS_OF_TYPE).sort(), [...ERASABLE_TYPES].sort());
  for (const names of Object.values(SCHEMAS_OF_TYPE)) for (const n of names) assert.ok(SCHEMAS.has(n), `schemas/${n}.json exists`);
});

test('every string field of an erasable record type\'s schemas is participant text, covered or kept (record-types.ts), so an erasure cannot miss one', () => {
  for (const [type, names] of Object.entries(SCHEMAS_OF_TYPE)) assert.deepEqual(unclassified(type, names), [], `${type}: classify these in src/domain/record-types.ts`);
});

test('a string field added to a message schema and not classified fails the check (a fixture with one more field)', () => {
  const schemas = new Map(SCHEMAS);
  const message = structuredClone(SCHEMAS.get('Message'));
  message.properties.mood = { type: 'string' };
  message.properties.moods = { type: 'array', items: { type: 'string' } };
  message.properties.status = { enum: ['a', 'b'] };
  schemas.set('Message', message);
  assert.deepEqual(unclassified('message.create', ['Message', 'MessageInput'], schemas), ['Message.mood', 'Message.moods']);
  // The same in a nested object: a work item's result.
  const result = structuredClone(SCHEMAS.get('WorkResult'));
  result.properties.summary = { anyOf: [{ type: 'string' }, { type: 'null' }] };
  schemas.set('WorkResult', result);
  assert.deepEqual(unclassified('work.action', ['WorkItem'], schemas), ['WorkItem.summary']);
});

test('no field is both participant text and kept or covered', () => {
  for (const [type, info] of Object.entries(RECORD_TYPES)) {
    if (info.erasure === null) continue;
    const { text, covered, kept } = info.erasure;
    const both = [...covered, ...kept].filter((f) => Object.hasOwn(text, f));
    assert.deepEqual(both, [], type);
    assert.deepEqual(covered.filter((f) => kept.includes(f)), [], type);
  }
});

const SECRET = 'secret-participant-text';

test('an erased payload of every erasable type holds none of its schemas\' string fields except the kept ones, which it keeps as they were', () => {
  for (const type of ERASABLE_TYPES) {
    const erasure = RECORD_TYPES[type].erasure;
    let payload;
    if (type === 'work.create' || type === 'work.action') {
      const part = (names) => Object.fromEntries(names.map((k) => [k, Array.isArray(erasure.text[k]) ? [SECRET] : SECRET]));
      const item = {
        ...part(['title', 'description', 'acceptanceCriteria', 'tags']),
        id: 'wk_1', sequence: 1, authorId: 'ag_1', topicId: 'tp_1', state: 'open', assigneeId: null, leaseUntil: null, revision: 1,
        created: 'T', updated: 'T', updatedBy: 'ag_1',
        result: { authorId: 'ag_2', ...part(['content', 'sources']), created: 'T' },
        review: { authorId: 'ag_1', ...part(['feedback']), created: 'T' },
      };
      const request = { ...part(Object.keys(erasure.text)), clientId: `${SECRET}-id` };
      payload = { item, request, topic: type === 'work.create' ? { id: 'tp_1', title: SECRET, authorId: 'ag_1' } : null, authorId: 'ag_1', clientId: `${SECRET}-id` };
    } else {
      // Every string field its schemas have: the kept ones plain, all others participant text.
      payload = {};
      for (const name of SCHEMAS_OF_TYPE[type]) for (const k of stringFields(SCHEMAS.get(name))) payload[k] = erasure.kept.includes(k) ? `kept-${k}` : SECRET;
    }
    const erased = redactPayload(type, JSON.stringify(payload), redactWorkPayload);
    assert.ok(!erased.includes(SECRET), `${type}: ${erased}`);
    if (!(type === 'work.create' || type === 'work.action')) for (const k of erasure.kept) if (Object.hasOwn(payload, k)) assert.equal(JSON.parse(erased)[k], `kept-${k}`, `${type} keeps ${k}`);
  }
});

test('the discussion feed kinds and the erasable types come from the catalogue', () => {
  const kinds = Object.fromEntries(Object.entries(RECORD_TYPES).filter(([, i]) => i.feedKind !== null).map(([t, i]) => [t, i.feedKind]));
  assert.deepEqual(kinds, { 'room.create': 'room', 'room.update': 'room', 'topic.create': 'topic', 'message.create': 'message', 'knowledge.publish': 'knowledge' });
  assert.throws(() => redactPayload('room.create', '{}', redactWorkPayload), /not content/);
});

const DOC = join(ROOT, 'docs', 'internals', 'record-types.md');
const TABLE_START = '<!-- record-types table: checked against src/domain/record-types.ts by test/unit/record-types.test.mjs -->';
const TABLE_END = '<!-- end of record-types table -->';

/** The doc's table of the catalogue, one row per record type in catalogue order. */
function catalogueTable() {
  const code = (xs) => (xs.length === 0 ? '—' : xs.map((x) => `\`${x}\``).join(', '));
  const rows = Object.entries(RECORD_TYPES).map(([type, { area, feedKind, erasure }]) => {
    const cells = [`\`${type}\``, area, feedKind === null ? '—' : `\`${feedKind}\``, erasure === null ? 'no' : 'yes'];
    if (erasure === null) cells.push('—', '—', '—');
    else cells.push(code(Object.keys(erasure.text)), code(erasure.covered), code(erasure.kept));
    return `| ${cells.join(' | ')} |`;
  });
  return [
    '| type | area | discussion feed kind | erasable | participant text (emptied) | covered (digest) | kept |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
  ].join('\n');
}

test('docs/internals/record-types.md holds the catalogue\'s table, row for row', () => {
  const doc = readFileSync(DOC, 'utf8');
  const start = doc.indexOf(TABLE_START);
  const end = doc.indexOf(TABLE_END);
  assert.ok(start >= 0 && end > start, `${DOC} marks its table with ${TABLE_START} … ${TABLE_END}`);
  const table = doc.slice(start + TABLE_START.length, end).trim();
  assert.equal(table, catalogueTable(), `the table in ${DOC} differs from the catalogue; the current table is:\n${catalogueTable()}`);
});
