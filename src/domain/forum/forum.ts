/**
 * Forum: rooms, topics and messages (parts 2, 4 "Forum", 6).
 *
 * State keeps each message's public JSON pre-serialised (built once at apply time) so list
 * responses are string joins, plus indexes by topic, author, replyTo and (author, clientId).
 * All lists are in log order, which is creation order (record times never go backwards).
 */
import stableStringify from 'fast-json-stable-stringify';
import type { LogRecord } from '../../store/log.js';
import { DEFAULT_ROOM_ID, ID_SEQ_DIGITS, Q_SAMPLE_MESSAGES, TOPICS_LIST_MAX } from '../../constants.js';
import { badRequest, conflict, notFound } from '../../http/errors.js';
import { addDiscussionEvent, pushDiscussionEvent, type FeedEvent, type FeedsState } from '../feeds/feeds.js';
import { idHasSeq, makeId } from '../ids.js';
import { exclusiveBoundMs, parseTimeMs } from '../../clock.js';
import { ContentMatcher, createdOf, readMessageFields } from './message-json.js';

/** Room (part 2). */
export interface Room {
  id: string;
  name: string;
  description: string;
  created: string;
}

/** Topic (part 2). */
export interface Topic {
  id: string;
  roomId: string;
  authorId: string;
  title: string;
  created: string;
}

/** Message (part 2). */
export interface Message {
  id: string;
  topicId: string;
  authorId: string;
  content: string;
  replyTo: string | null;
  clientId: string;
  created: string;
}

/**
 * An indexed message, which is also its discussion feed event and topic export row (one object
 * per message): the feed fields (log seq, record time, canonical JSON `recordJson` — the only
 * full copy kept, see `messageOf`) and the fields filters need. Its id is `messageIdOf(entry)`;
 * clientId and creation time are read from the JSON where needed (message-json.ts). `lc` is the
 * lower-cased content, kept only for content that lower-cases beyond A–Z; other content is
 * searched in `recordJson`. Replay builds a million of these, so each field costs megabytes.
 */
export interface MessageEntry extends FeedEvent {
  kind: 'message';
  topicId: string;
  authorId: string;
  replyTo: string | null;
  lc: string | undefined;
}

/** A message's id: `msg_<log seq>` (checked on apply). */
export function messageIdOf(e: MessageEntry): string {
  return makeId('msg', e.seq);
}

/** The full Message of an entry, parsed from its JSON (rare paths: retries, receipts). */
export function messageOf(e: MessageEntry): Message {
  return JSON.parse(e.recordJson) as Message;
}

/** An indexed topic: the record, its canonical JSON and log seq. */
export interface TopicEntry {
  topic: Topic;
  json: string;
  seq: number;
}

/** Rooms, topics and messages with their indexes, all in log (= creation) order. */
export interface ForumState {
  rooms: Map<string, Room>;
  roomOrder: Room[];
  topics: Map<string, TopicEntry>;
  topicOrder: TopicEntry[];
  /** Every message in log order; found by id with `messageById` (ids carry the log seq). */
  messageOrder: MessageEntry[];
  byTopic: Map<string, MessageEntry[]>;
  byAuthor: Map<string, MessageEntry[]>;
  byReplyTo: Map<string, MessageEntry[]>;
  /**
   * authorId → clientId → message (idempotency and receipts), built per author on first use
   * from `byAuthor` and kept up to date from then on, so replay builds none of it.
   */
  byClientId: Map<string, Map<string, MessageEntry>>;
  /**
   * One shared string per topic and author id seen in messages: every entry then points at the
   * same string instead of its own copy from JSON.parse (a few bytes × millions of messages).
   */
  ids: Map<string, string>;
}

/** An empty forum index. */
export function createForumState(): ForumState {
  return {
    rooms: new Map(),
    roomOrder: [],
    topics: new Map(),
    topicOrder: [],
    messageOrder: [],
    byTopic: new Map(),
    byAuthor: new Map(),
    byReplyTo: new Map(),
    byClientId: new Map(),
    ids: new Map(),
  };
}

/** The shared copy of id `id` in `s.ids` (added on first sight). */
function sharedId(s: ForumState, id: string): string {
  const known = s.ids.get(id);
  if (known !== undefined) return known;
  s.ids.set(id, id);
  return id;
}

function pushTo<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/**
 * The message `authorId` posted with `clientId`, if any. The author's first lookup after a
 * start builds their index from their messages (one pass over `byAuthor`).
 */
export function messageByClientId(s: ForumState, authorId: string, clientId: string): MessageEntry | undefined {
  let mine = s.byClientId.get(authorId);
  if (mine === undefined) {
    mine = new Map();
    for (const e of s.byAuthor.get(authorId) ?? []) mine.set(readMessageFields(e.recordJson).clientId, e);
    s.byClientId.set(authorId, mine);
  }
  return mine.get(clientId);
}

/** A message id's log seq: `msg_` and at least ID_SEQ_DIGITS digits (ids.ts), else undefined. */
const MESSAGE_ID = new RegExp(`^msg_(\\d{${ID_SEQ_DIGITS},})$`);

/**
 * The message with id `id`, if any: a binary search of `messageOrder` (log order) for the seq
 * the id carries, so no id → message map is kept. Input: any string (unknown ids → undefined).
 */
export function messageById(s: ForumState, id: string): MessageEntry | undefined {
  const m = MESSAGE_ID.exec(id);
  if (m === null) return undefined;
  const seq = Number(m[1]);
  const list = s.messageOrder;
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid]!.seq < seq) lo = mid + 1;
    else hi = mid;
  }
  const e = list[lo];
  return e !== undefined && e.seq === seq && idHasSeq(id, 'msg', seq) ? e : undefined;
}

/** Key of an (author, clientId) idempotency index (work receipts). */
export function clientKey(authorId: string, clientId: string): string {
  return `${authorId}\n${clientId}`;
}

// ---- decisions ----

/** Decides `room.create` (operator CLI). Throws 409 when the id exists. */
export function decideRoom(s: ForumState, input: { id: string; name: string; description?: string }, created: string): Room {
  if (s.rooms.has(input.id)) throw conflict(`room "${input.id}" already exists`);
  return { id: input.id, name: input.name, description: input.description ?? '', created };
}

/** The `commons` room created with a new log (issue 2). */
export function defaultRoom(created: string): Room {
  return { id: DEFAULT_ROOM_ID, name: 'Commons', description: 'The default room for every topic.', created };
}

/**
 * Decides `topic.create` (POST /api/topics). Input: validated {title, roomId}. Throws 404 for
 * an unknown room.
 */
export function decideTopic(
  s: ForumState,
  input: { title: string; roomId: string },
  ctx: { authorId: string; seq: number; created: string },
): Topic {
  if (!s.rooms.has(input.roomId)) throw notFound(`no room with id "${input.roomId}"`);
  return { id: makeId('tp', ctx.seq), roomId: input.roomId, authorId: ctx.authorId, title: input.title, created: ctx.created };
}

/** A validated POST /api/messages body (schemas/MessageInput.json; content trimmed). */
export interface MessageInput {
  topicId: string;
  content: string;
  clientId: string;
  replyTo?: string;
}

/**
 * Decides `message.create` (POST /api/messages).
 * Output: `{existing}` for an identical retry by the same author (answered 201 with the stored
 * message), or `{message}` to append.
 * Throws 409 (clientId reused with a different payload), 404 (unknown topic or replyTo),
 * 400 (replyTo in another topic).
 */
export function decideMessage(
  s: ForumState,
  input: MessageInput,
  ctx: { authorId: string; seq: number; created: string },
): { existing: MessageEntry } | { message: Message } {
  const replyTo = input.replyTo ?? null;
  const prior = messageByClientId(s, ctx.authorId, input.clientId);
  if (prior) {
    const m = messageOf(prior);
    if (m.topicId === input.topicId && m.content === input.content && m.replyTo === replyTo) return { existing: prior };
    throw conflict(
      `clientId "${input.clientId}" was already used by you for a different message (${m.id}); use a new clientId for new content`,
      'IDEMPOTENCY_CONFLICT',
    );
  }
  if (!s.topics.has(input.topicId)) throw notFound(`no topic with id "${input.topicId}"`);
  if (replyTo !== null) {
    const parent = messageById(s, replyTo);
    if (!parent) throw notFound(`no message with id "${replyTo}" (replyTo)`);
    if (parent.topicId !== input.topicId) {
      throw badRequest(`replyTo "${replyTo}" is in topic "${parent.topicId}", not "${input.topicId}"; replies must stay in the same topic`);
    }
  }
  return {
    message: {
      id: makeId('msg', ctx.seq),
      topicId: input.topicId,
      authorId: ctx.authorId,
      content: input.content,
      replyTo,
      clientId: input.clientId,
      created: ctx.created,
    },
  };
}

// ---- apply ----

/** Applies `room.create`, `topic.create` and `message.create`; returns false for other types. */
export function applyForum(s: ForumState, feeds: FeedsState, record: LogRecord, payloadJson: string): boolean {
  switch (record.type) {
    case 'room.create': {
      const room = record.payload as Room;
      s.rooms.set(room.id, room);
      s.roomOrder.push(room);
      addDiscussionEvent(feeds, record.seq, 'room', record.time, payloadJson, null);
      return true;
    }
    case 'topic.create': {
      indexTopic(s, feeds, record.payload as Topic, record, payloadJson);
      return true;
    }
    case 'message.create': {
      // Read from the canonical JSON, not record.payload: replay never parses a message's payload.
      const json = payloadJson;
      const m = readMessageFields(json);
      if (!idHasSeq(m.id, 'msg', record.seq)) throw new Error(`message id "${m.id}" does not match its record seq ${record.seq}`);
      const entry: MessageEntry = {
        seq: record.seq,
        logSeq: record.seq,
        kind: 'message',
        time: record.time,
        recordJson: json,
        sha256: undefined,
        topicId: sharedId(s, m.topicId),
        authorId: sharedId(s, m.authorId),
        replyTo: m.replyTo,
        lc: m.content?.toLowerCase(),
      };
      s.messageOrder.push(entry);
      pushTo(s.byTopic, entry.topicId, entry);
      pushTo(s.byAuthor, entry.authorId, entry);
      if (entry.replyTo !== null) pushTo(s.byReplyTo, entry.replyTo, entry);
      s.byClientId.get(entry.authorId)?.set(m.clientId, entry);
      pushDiscussionEvent(feeds, entry, entry.topicId);
      return true;
    }
    default:
      return false;
  }
}

/**
 * Indexes a topic created by `topic.create` or inside another record (a work item's discussion
 * topic), and emits its discussion event. `topicJson` is its canonical JSON when the caller has
 * it; otherwise it is serialised canonically here.
 */
export function indexTopic(s: ForumState, feeds: FeedsState, topic: Topic, record: LogRecord, topicJson?: string): void {
  const json = topicJson ?? stableStringify(topic);
  const entry: TopicEntry = { topic, json, seq: record.seq };
  s.topics.set(topic.id, entry);
  s.topicOrder.push(entry);
  addDiscussionEvent(feeds, record.seq, 'topic', record.time, json, topic.id);
}

// ---- queries ----

/** JSON array of topics, newest first, at most TOPICS_LIST_MAX (part 4). */
export function listTopicsJson(s: ForumState): string {
  const out: string[] = [];
  for (let i = s.topicOrder.length - 1; i >= 0 && out.length < TOPICS_LIST_MAX; i--) out.push(s.topicOrder[i]!.json);
  return `[${out.join(',')}]`;
}

/** Validated GET /api/messages filters (schemas/MessagesQuery.json). */
export interface MessageQuery {
  messageId?: string;
  replyTo?: string;
  q?: string;
  agentId?: string;
  topicId?: string;
  before?: string;
  limit: number;
}

/**
 * Messages matching every given filter, newest first by creation time and id, at most `limit`
 * (part 4 GET /api/messages). Starts from the smallest index that a filter names; `before` is
 * found by binary search on creation time. Unknown ids give an empty result.
 */
export function queryMessages(s: ForumState, query: MessageQuery): MessageEntry[] {
  let candidates: MessageEntry[];
  if (query.messageId !== undefined) {
    const m = messageById(s, query.messageId);
    candidates = m ? [m] : [];
  } else {
    candidates = s.messageOrder;
    const pick = (list: MessageEntry[] | undefined) => {
      const l = list ?? [];
      if (l.length < candidates.length) candidates = l;
    };
    if (query.replyTo !== undefined) pick(s.byReplyTo.get(query.replyTo));
    if (query.topicId !== undefined) pick(s.byTopic.get(query.topicId));
    if (query.agentId !== undefined) pick(s.byAuthor.get(query.agentId));
  }
  let end = candidates.length;
  if (query.before !== undefined) {
    const beforeMs = exclusiveBoundMs(query.before);
    let lo = 0;
    let hi = candidates.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (Date.parse(createdOf(candidates[mid]!.recordJson)) < beforeMs) lo = mid + 1;
      else hi = mid;
    }
    end = lo;
  }
  const lq = query.q?.toLowerCase();
  let matcher: ContentMatcher | undefined;
  if (lq !== undefined && lq !== '') {
    // The newest candidates, which the scan below reaches first, decide how it scans.
    const sample: string[] = [];
    for (let i = end - 1; i >= 0 && sample.length < Q_SAMPLE_MESSAGES; i--) sample.push(candidates[i]!.recordJson);
    matcher = new ContentMatcher(lq, sample);
  }
  const out: MessageEntry[] = [];
  for (let i = end - 1; i >= 0 && out.length < query.limit; i--) {
    const e = candidates[i]!;
    if (query.replyTo !== undefined && e.replyTo !== query.replyTo) continue;
    if (query.topicId !== undefined && e.topicId !== query.topicId) continue;
    if (query.agentId !== undefined && e.authorId !== query.agentId) continue;
    if (matcher !== undefined && !(e.lc === undefined ? matcher.matches(e.recordJson) : e.lc.includes(matcher.lq))) continue;
    out.push(e);
  }
  return out;
}
