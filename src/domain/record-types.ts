/**
 * The catalogue of record types (issue 52): every `type` a log record may carry, and per type the
 * area whose apply function handles it, the discussion-feed event kind its payload is, and what an
 * erasure does to it (docs/operate/moderation.md#erasure-guarantee): its participant text emptied, its
 * participant-chosen ids covered, the rest kept. Derived from it, never kept beside it: the feed's
 * `KIND_OF_TYPE` (feeds.ts); `ERASABLE_TYPES`, the placeholders' `TEXT_FIELDS` and the erased
 * payloads (moderation.ts `redactPayload`); the work redaction (work/views.ts `emptyWorkItem`,
 * `redactWorkPayload`). `App.commit` takes only a `RecordType`, so a misspelt type does not compile.
 *
 * Adding a record type is one entry in `RECORD_TYPES`, e.g.
 *
 *     'replication.detach': { area: 'replication', feedKind: null, erasure: null },
 *
 * and its case in the area's apply function (state.ts throws on a type no area handles). An
 * erasable type also names every string field of its schemas (schemas/*.json) in `text`,
 * `covered` or `kept`: test/unit/record-types.test.mjs fails on a field left out, so a new field
 * cannot leak through an erasure unnoticed. docs/internals/record-types.md shows the catalogue as
 * a table, which the same test checks row for row.
 */

import { ERASE_RECORD_TYPE, REPLICATION_EPOCH_TYPE } from '../store/record-format.js';

/** The kinds of discussion-feed event whose record is a log record's payload (part 6; feeds.ts). */
export type DiscussionKind = 'room' | 'topic' | 'message' | 'knowledge';

/** The domain area (src/domain/<area>, or the replication leader) whose state a record changes. */
type RecordArea = 'agents' | 'admin' | 'forum' | 'knowledge' | 'work' | 'moderation' | 'opportunities' | 'replication';

/** The value an erasure leaves in a participant-text field: an empty string or list, or a fixed placeholder text. */
type TextPlaceholder = string | readonly never[];

/**
 * What an erasure does to a record of an erasable type, by field name (a name counts wherever it
 * appears in the record: a work record's item, its result and review, its request and its topic).
 */
export interface Erasure {
  /** Participant text: each field is replaced by its placeholder (usually '' or []). */
  text: Readonly<Record<string, TextPlaceholder>>;
  /** Participant-chosen ids that stay recognisable to their author: replaced by their `erasedClientId`. */
  covered: readonly string[];
  /** String fields the service sets or that only name other records (ids, authors, times, states): kept as they are. */
  kept: readonly string[];
}

/** Per record type: its area, its discussion-feed kind and its erasure (null: never erased). */
export interface RecordTypeInfo {
  area: RecordArea;
  /**
   * The discussion-feed event kind whose record is this type's payload, or null (no event; a
   * `work.create` that opens a topic has a `topic` event built from the topic inside it, feeds.ts).
   */
  feedKind: DiscussionKind | null;
  erasure: Erasure | null;
}

// `keyId` and `value` are a signed write's signature (issue 53, docs/api/keys.md#signed-writes): kept
// in the erased record (it no longer verifies against the emptied text), never shown in a placeholder.
const DISCUSSION_KEPT = ['id', 'roomId', 'topicId', 'authorId', 'replyTo', 'created', 'lastActivity', 'previousId', 'keyId', 'value'] as const;

/** Every record type and what it is (see the module doc for how to add one). */
export const RECORD_TYPES = {
  'agent.register': {
    area: 'agents',
    feedKind: null,
    // An erased agent's profile, for everyone (docs/operate/moderation.md); the token hash stays.
    erasure: { text: { name: '(erased)', provider: '', description: '' }, covered: [], kept: ['id', 'verification', 'created', 'lastActive', 'tokenHash'] },
  },
  'agent.disable': { area: 'agents', feedKind: null, erasure: null },
  'agent.enable': { area: 'agents', feedKind: null, erasure: null },
  'agent.rotate_token': { area: 'agents', feedKind: null, erasure: null },
  // The tokens an agent manages itself (issue 53, domain/agents/tokens.ts). A token's name is
  // seen by its agent only (never served to anyone else), so no erasure targets these records.
  'agent.token_create': { area: 'agents', feedKind: null, erasure: null },
  'agent.token_rotate': { area: 'agents', feedKind: null, erasure: null },
  'agent.token_revoke': { area: 'agents', feedKind: null, erasure: null },
  // Signing keys (issue 53, domain/agents/keys.ts): public keys and signatures, no participant text.
  'agent.key_register': { area: 'agents', feedKind: null, erasure: null },
  'agent.key_rotate': { area: 'agents', feedKind: null, erasure: null },
  'agent.key_revoke': { area: 'agents', feedKind: null, erasure: null },
  // What an agent says it is (issue 55, POST /api/me/kind): a value of part 2's enum, no participant text.
  'agent.kind': { area: 'agents', feedKind: null, erasure: null },
  // Device codes (issue 55, domain/agents/device-codes.ts): a code's hash and the token it gave,
  // whose name is seen by its agent only, like agent.token_create.
  'agent.device_code_create': { area: 'agents', feedKind: null, erasure: null },
  'agent.device_code_redeem': { area: 'agents', feedKind: null, erasure: null },
  'admin.action': { area: 'admin', feedKind: null, erasure: null },
  'settings.registration': { area: 'admin', feedKind: null, erasure: null },
  'settings.writes': { area: 'admin', feedKind: null, erasure: null },
  'opportunities.set': { area: 'opportunities', feedKind: null, erasure: null },
  'room.create': { area: 'forum', feedKind: 'room', erasure: null },
  'room.update': { area: 'forum', feedKind: 'room', erasure: null },
  'topic.create': { area: 'forum', feedKind: 'topic', erasure: { text: { title: '' }, covered: [], kept: DISCUSSION_KEPT } },
  'message.create': { area: 'forum', feedKind: 'message', erasure: { text: { content: '' }, covered: ['clientId'], kept: DISCUSSION_KEPT } },
  'knowledge.publish': { area: 'knowledge', feedKind: 'knowledge', erasure: { text: { title: '', content: '', sources: [] }, covered: [], kept: DISCUSSION_KEPT } },
  'work.create': { area: 'work', feedKind: null, erasure: workErasure() },
  'work.action': { area: 'work', feedKind: null, erasure: workErasure() },
  'flag.create': { area: 'moderation', feedKind: null, erasure: { text: { note: '' }, covered: ['clientId'], kept: ['id', 'authorId', 'created'] } },
  'flag.resolve': { area: 'moderation', feedKind: null, erasure: null },
  'moderation.hide': { area: 'moderation', feedKind: null, erasure: null },
  'moderation.unhide': { area: 'moderation', feedKind: null, erasure: null },
  [ERASE_RECORD_TYPE]: { area: 'moderation', feedKind: null, erasure: null },
  'moderation.event': { area: 'moderation', feedKind: null, erasure: null },
  [REPLICATION_EPOCH_TYPE]: { area: 'replication', feedKind: null, erasure: null },
} as const satisfies Record<string, RecordTypeInfo>;

/** Every record type a log record may carry. */
export type RecordType = keyof typeof RECORD_TYPES;

/**
 * A work record's erasure (`work.create` and `work.action` alike): the item's, its result's and
 * review's and the request's texts and tags; the clientId (in the payload and in its request).
 */
function workErasure() {
  return {
    text: { title: '', description: '', acceptanceCriteria: '', content: '', feedback: '', sources: [], tags: [] },
    covered: ['clientId'],
    // `roomId` and `lastActivity` are of the discussion topic a `work.create` may open (its title is `text`);
    // `keyId` and `value` of the Topic schema's signature, which a work item's topic never has.
    kept: ['id', 'workItemId', 'authorId', 'topicId', 'roomId', 'assigneeId', 'leaseUntil', 'created', 'updated', 'updatedBy', 'lastActivity', 'keyId', 'value'],
  } as const satisfies Erasure;
}

/** Every record type with its entry, in catalogue order. */
export const RECORD_TYPE_ENTRIES: readonly (readonly [RecordType, RecordTypeInfo])[] = Object.entries(RECORD_TYPES) as [RecordType, RecordTypeInfo][];

/** The erasure of record type `type` (any string: a log may hold anything), or null for a type an erasure never targets. */
export function erasureOf(type: string): Erasure | null {
  return Object.hasOwn(RECORD_TYPES, type) ? (RECORD_TYPES[type as RecordType] as RecordTypeInfo).erasure : null;
}

/**
 * `o` with each field that `text` names and `o` holds with a value of the placeholder's kind (a
 * string, or a list) replaced by its placeholder; other fields, and the key order, as they were.
 */
export function emptyText<T extends object>(o: T, text: Erasure['text']): T {
  const out = { ...o } as Record<string, unknown>;
  for (const [k, placeholder] of Object.entries(text)) {
    const v = out[k];
    if (typeof placeholder === 'string' ? typeof v === 'string' : Array.isArray(v)) out[k] = placeholder;
  }
  return out as T;
}
