/**
 * The limits of spec part 8 live twice: as named constants in src/constants.ts (used by the
 * domain, the guides and this table) and as numbers in schemas/*.json (which validate requests
 * and generate /openapi.json). This test ties every enforced number in the schemas to its
 * constant, so neither can change without the other.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../helpers/server.mjs';

const C = await import(pathToFileURL(join(ROOT, 'dist', 'constants.js')).href);
const schemas = new Map(
  readdirSync(join(ROOT, 'schemas')).map((f) => [f.replace(/\.json$/, ''), JSON.parse(readFileSync(join(ROOT, 'schemas', f), 'utf8'))]),
);

/** The value at a JSON pointer ("/properties/title/maxLength") of schema `name`. */
function at(name, pointer) {
  let node = schemas.get(name);
  assert.ok(node, `schema ${name} exists`);
  for (const key of pointer.split('/').slice(1)) {
    assert.ok(node && typeof node === 'object' && key in node, `${name}${pointer} exists`);
    node = node[key];
  }
  return node;
}

// [schema, pointer, constant] for every field limit of parts 2, 4 and 8.
const FIELD_LIMITS = [
  ['Id', '/maxLength', 'ID_LENGTH_MAX'],
  ['A2AListTasksQuery', '/properties/pageSize/maximum', 'A2A_LIST_TASKS_PAGE_SIZE_MAX'],
  ['A2AListTasksResponse', '/properties/pageSize/maximum', 'A2A_LIST_TASKS_PAGE_SIZE_MAX'],
  ['A2AListTasksQuery', '/properties/contextId/maxLength', 'A2A_ID_LENGTH_MAX'],
  ['Id', '/pattern', 'ID_PATTERN'],
  ['ChangesQuery', '/properties/wait/maximum', 'FEED_WAIT_SECONDS_MAX'],
  ['InboxQuery', '/properties/wait/maximum', 'FEED_WAIT_SECONDS_MAX'],
  ['RegisterInput', '/properties/name/maxLength', 'AGENT_NAME_LENGTH_MAX'],
  ['RegisterInput', '/properties/provider/maxLength', 'AGENT_PROVIDER_LENGTH_MAX'],
  ['RegisterInput', '/properties/description/maxLength', 'AGENT_DESCRIPTION_LENGTH_MAX'],
  ['TopicInput', '/properties/title/maxLength', 'TOPIC_TITLE_LENGTH_MAX'],
  ['TopicList', '/maxItems', 'TOPICS_LIST_MAX'],
  ['MessageInput', '/properties/content/maxLength', 'MESSAGE_CONTENT_LENGTH_MAX'],
  ['KnowledgeInput', '/properties/title/maxLength', 'KNOWLEDGE_TITLE_LENGTH_MAX'],
  ['KnowledgeInput', '/properties/content/maxLength', 'KNOWLEDGE_CONTENT_LENGTH_MAX'],
  ['KnowledgeInput', '/properties/sources/maxItems', 'KNOWLEDGE_SOURCES_MAX'],
  ['KnowledgeInput', '/properties/sources/items/maxLength', 'SOURCE_LENGTH_MAX'],
  ['Knowledge', '/properties/sources/maxItems', 'KNOWLEDGE_SOURCES_MAX'],
  ['WorkCreateInput', '/properties/title/maxLength', 'WORK_TITLE_LENGTH_MAX'],
  ['WorkCreateInput', '/properties/description/maxLength', 'WORK_DESCRIPTION_LENGTH_MAX'],
  ['WorkCreateInput', '/properties/acceptanceCriteria/maxLength', 'WORK_CRITERIA_LENGTH_MAX'],
  ['WorkCreateInput', '/properties/tags/maxItems', 'WORK_TAGS_MAX'],
  ['WorkCreateInput', '/properties/tags/items/maxLength', 'WORK_TAG_LENGTH_MAX'],
  ['WorkListQuery', '/properties/tag/maxLength', 'WORK_TAG_LENGTH_MAX'],
  ['WorkActionSubmit', '/properties/content/maxLength', 'WORK_RESULT_CONTENT_LENGTH_MAX'],
  ['WorkActionSubmit', '/properties/sources/maxItems', 'WORK_RESULT_SOURCES_MAX'],
  ['WorkActionSubmit', '/properties/sources/items/maxLength', 'SOURCE_LENGTH_MAX'],
  ['WorkResult', '/properties/sources/maxItems', 'WORK_RESULT_SOURCES_MAX'],
  ['WorkActionReview', '/properties/feedback/maxLength', 'WORK_FEEDBACK_LENGTH_MAX'],
  ['Opportunities', '/properties/items/maxItems', 'CATALOG_ITEMS_MAX'],
  ['OpportunityBriefs', '/maxItems', 'CATALOG_ITEMS_MAX'],
  ['ReceiptQuery', '/properties/clientId/maxLength', 'ID_LENGTH_MAX'],
  ['ExchangeQuery', '/properties/topicId/maxLength', 'ID_LENGTH_MAX'],
  ['FlagInput', '/properties/note/maxLength', 'FLAG_NOTE_LENGTH_MAX'],
  ['ModerationActionInput', '/properties/reason/maxLength', 'MODERATION_REASON_LENGTH_MAX'],
  ['FlagResolveInput', '/properties/note/maxLength', 'MODERATION_REASON_LENGTH_MAX'],
];

test('every field limit in the schemas equals its named constant', () => {
  for (const [name, pointer, constant] of FIELD_LIMITS) {
    assert.ok(constant in C, `constant ${constant} exists`);
    assert.equal(at(name, pointer), C[constant], `${name}${pointer} is ${constant}`);
  }
});

test('every page limit, lease, text query and integer bound in the schemas equals its named constant', () => {
  let checked = 0;
  for (const [name, schema] of schemas) {
    const props = schema.properties ?? {};
    if (props.limit && name.endsWith('Query')) {
      assert.deepEqual([props.limit.minimum, props.limit.maximum, props.limit.default], [C.PAGE_LIMIT_MIN, C.PAGE_LIMIT_MAX, C.PAGE_LIMIT_DEFAULT], `${name}.limit`);
      checked++;
    }
    if (props.leaseMinutes) {
      assert.deepEqual([props.leaseMinutes.minimum, props.leaseMinutes.maximum, props.leaseMinutes.default], [C.LEASE_MINUTES_MIN, C.LEASE_MINUTES_MAX, C.LEASE_MINUTES_DEFAULT], `${name}.leaseMinutes`);
      checked++;
    }
    for (const field of ['q', 'agentId', 'topicId', 'before', 'id']) {
      if (name.endsWith('Query') && props[field]?.maxLength !== undefined && props[field].maxLength !== C.ID_LENGTH_MAX) {
        assert.equal(props[field].maxLength, C.QUERY_TEXT_LENGTH_MAX, `${name}.${field}`);
        checked++;
      }
    }
    for (const [field, p] of Object.entries(props)) {
      if (p.type === 'integer' && p.maximum !== undefined && p.maximum > C.PAGE_LIMIT_MAX && p.maximum !== C.LEASE_MINUTES_MAX) {
        assert.equal(p.maximum, C.INT_MAX, `${name}.${field}`);
        checked++;
      }
    }
  }
  assert.ok(checked >= 30, `the walk found the bounds it checks (${checked})`);
});

test('the message and search list bounds follow the page limit', () => {
  for (const [name, pointer] of [['MessageList', '/properties/messages/maxItems'], ['KnowledgeList', '/properties/knowledge/maxItems'], ['SearchResult', '/properties/messages/maxItems'], ['SearchResult', '/properties/knowledge/maxItems']]) {
    assert.equal(at(name, pointer), C.PAGE_LIMIT_MAX, `${name}${pointer}`);
  }
});
