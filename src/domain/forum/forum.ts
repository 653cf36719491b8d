/**
 * Forum: rooms, topics and messages (parts 2, 4 "Forum", 6).
 *
 * State keeps each message's public JSON pre-serialised (built once at apply time) so list
 * responses are string joins, plus indexes by topic, author, replyTo and (author, clientId).
 * All lists are in log order, which is creation order (record times never go backwards).
 */
import { Positions } from '../positions.js';
import type { DecisionContext } from '../decision.js';
import type { WriteSignature } from '../agents/signing.js';
import type { LogRecord } from '../../store/log.js';
import { DEFAULT_ROOM_ID, ID_SEQ_DIGITS, TOPICS_LIST_MAX } from '../../constants.js';
import { fail, invalid, notFound } from '../../errors.js';
import { addDiscussionEvent, discussionRecordOf, type FeedsState } from '../feeds/feeds.js';
import { idHasSeq, makeId } from '../ids.js';
import { exclusiveBoundMs } from '../../clock.js';
import { createdOf, readMessageFields } from './message-json.js';
import { lowerBound, upperBound } from '../../containers/binary-search.js';
import { RowHashTable } from '../../containers/row-hash-table.js';
import { U32List } from '../../containers/u32-list.js';
import type { RecordSource } from '../../store/records.js';
import { clientIdMatches, discussionView, ERASED_CLIENT_ID_PREFIX, erasedClientId, statusOf, textVisible, VISIBLE, type ModerationStatus, type Reader } from '../moderation/moderation.js';
import { contentIncludes } from './search.js';
import { indexedScan, type CandidateIndex } from '../indexed-scan.js';
import { packLists, packTable, unpackLists, unpackTable, type PackedArrays, type PackedLists, type PackedTable } from '../packing.js';
import { nameId, pushTo } from '../columns.js';
import { TopicTitles, type PackedTopicTitles } from './topic-titles.js';

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
  /** Ours (issue 53): the author's signature, on a signed write only (domain/agents/signing.ts). */
  signature?: WriteSignature;
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
  /** Ours (issue 53): the author's signature, on a signed write only (domain/agents/signing.ts). */
  signature?: WriteSignature;
}

/**
 * Messages in log (= creation) order as columns, one row per message (issue 17: about 16 bytes a
 * message, no text): its log seq, interned topic and author, the seq of the message it replies to
 * (0 for none). Its (author, clientId) is found through `byClientId`. The text (the canonical Message JSON) is read
 * back from the log through `records` (store/records.ts); a message's id is `msg_<seq>`.
 */
export interface MessageRows {
  seq: U32List;
  topic: U32List;
  author: U32List;
  replyTo: U32List;
}

/** A message's row index in `MessageRows` (0-based, log order). */
export type MessageRow = number;

/** A message's id: `msg_<position>` (checked on apply). */
export function messageIdOf(s: ForumState, row: MessageRow): string {
  return makeId('msg', s.positions.positionOf(s.rows.seq.at(row)));
}

/** The canonical Message JSON of a row, as stored in the log (byte-identical to the 201 answer). */
export function messageJsonOf(s: ForumState, row: MessageRow): string {
  return s.records.read(s.rows.seq.at(row)).payloadJson;
}

/** The full Message of a row, parsed from its stored JSON (rare paths: retries, receipts). */
export function messageOf(s: ForumState, row: MessageRow): Message {
  return JSON.parse(messageJsonOf(s, row)) as Message;
}

/** The moderation status of a message row (issue 25): its record, its topic or its author hidden. */
export function messageStatusOf(s: ForumState, reader: Reader, row: MessageRow): ModerationStatus {
  return statusOf(reader.mod, s.rows.seq.at(row), messageTopicOf(s, row), messageAuthorOf(s, row));
}

/** A message row's JSON as `reader` sees it (a placeholder when hidden or erased; issue 25). */
export function messageViewOf(s: ForumState, reader: Reader, row: MessageRow): string {
  return discussionView(reader, 'message', messageJsonOf(s, row), messageStatusOf(s, reader, row));
}

/** The JSON array of the given rows' messages as `reader` sees them, in the given order. */
export function messagesJson(s: ForumState, rows: readonly MessageRow[], reader: Reader): string {
  return `[${rows.map((r) => messageViewOf(s, reader, r)).join(',')}]`;
}

/** 32-bit FNV-1a hash of an (author, clientId) pair's UTF-16 code units (the `byClientId` keys). */
export function clientHash(authorId: string, clientId: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < authorId.length; i++) h = Math.imul(h ^ authorId.charCodeAt(i), 0x01000193);
  h = Math.imul(h ^ 10, 0x01000193);
  for (let i = 0; i < clientId.length; i++) h = Math.imul(h ^ clientId.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** Rooms, topics and messages with their indexes, all in log (= creation) order. */
export interface ForumState {
  rooms: Map<string, Room>;
  roomOrder: Room[];
  /** Topic id → the log seq of the record that created it (its JSON is read back from there). */
  topics: Map<string, number>;
  /** Log seqs of the topics' records, in creation order. */
  topicOrder: U32List;
  /**
   * Each topic's title lower-cased, in `topicOrder` order (topic-titles.ts), kept at apply time so
   * the topic-title search (topic-search.ts, issue 55) never reads a record back; its text is
   * dropped when the topic is erased (`eraseTopicTitles`: neither in memory nor in a snapshot).
   */
  topicTitles: TopicTitles;
  /** Each topic's author, interned in `names`, in `topicOrder` order (the search's `agentId`). */
  topicAuthors: U32List;
  /**
   * Log seq → id of the topics whose id is not `tp_<seq>` (hand-made logs; empty for every topic
   * this server decides): `topicIdAt` names the others from their seq without a read.
   */
  oddTopicIds: Map<number, string>;
  /** Every message, in log order (columns; see MessageRows). */
  rows: MessageRows;
  /** Topic id → its messages' rows, ascending. */
  byTopic: Map<string, U32List>;
  /** Author id → their messages' rows, ascending. */
  byAuthor: Map<string, U32List>;
  /** Hash of (authorId, clientId) → rows (idempotency and receipts; confirmed from the JSON). */
  byClientId: RowHashTable;
  /**
   * How many rows `byClientId` files under an erased clientId (a message applied already erased,
   * issue 34): while none is, `messageByClientId` skips its second lookup and the SHA-256 that
   * names it (issue 39).
   */
  erasedClientRows: number;
  /** Interned topic and author ids: `names[n]` is the id numbered n in the row columns. */
  names: string[];
  nameIds: Map<string, number>;
  /** Where message JSON is read back from (the log's segment files, or memory in unit tests). */
  records: RecordSource;
  /** The log's seq → position map (ids carry positions; domain/positions.ts), shared by every area. */
  positions: Positions;
}

/** An empty forum index whose message text is read from `records`. */
export function createForumState(records: RecordSource, positions: Positions = new Positions()): ForumState {
  return {
    rooms: new Map(),
    roomOrder: [],
    topics: new Map(),
    topicOrder: new U32List(64),
    topicTitles: new TopicTitles(),
    topicAuthors: new U32List(64),
    oddTopicIds: new Map(),
    rows: { seq: new U32List(1024), topic: new U32List(1024), author: new U32List(1024), replyTo: new U32List(1024) },
    byTopic: new Map(),
    byAuthor: new Map(),
    byClientId: new RowHashTable(),
    erasedClientRows: 0,
    names: [],
    nameIds: new Map(),
    records,
    positions,
  };
}


/** The author id of a message row. */
export function messageAuthorOf(s: ForumState, row: MessageRow): string {
  return s.names[s.rows.author.at(row)]!;
}

/** The topic id of a message row. */
export function messageTopicOf(s: ForumState, row: MessageRow): string {
  return s.names[s.rows.topic.at(row)]!;
}

/**
 * The message `authorId` posted with `clientId`, if any: the (author, clientId) hash names a few
 * candidate rows (4 to 16 bytes a message, no reads), and a candidate is confirmed from its stored
 * JSON (one read). Constant time whatever the archive's size.
 */
export function messageByClientId(s: ForumState, authorId: string, clientId: string): MessageRow | undefined {
  const authorNo = s.nameIds.get(authorId);
  if (authorNo === undefined) return undefined;
  const visit = (row: MessageRow): boolean => s.rows.author.at(row) === authorNo && clientIdMatches(readMessageFields(messageJsonOf(s, row)).clientId, authorId, clientId);
  // An erased message is filed under its clientId when it was applied before its erasure, and
  // under its `erasedClientId` when a replay applied it already erased (issue 34).
  const found = s.byClientId.find(clientHash(authorId, clientId), visit);
  if (found !== undefined || s.erasedClientRows === 0) return found;
  return s.byClientId.find(clientHash(authorId, erasedClientId(authorId, clientId)), visit);
}

/** A message id's position: `msg_` and at least ID_SEQ_DIGITS digits (ids.ts), else undefined. */
const MESSAGE_ID = new RegExp(`^msg_(\\d{${ID_SEQ_DIGITS},})$`);

/**
 * The row of the message with id `id`, if any: a binary search of the seq column for the seq the
 * id carries, so no id → message map is kept. Input: any string (unknown ids → undefined).
 */
export function messageById(s: ForumState, id: string): MessageRow | undefined {
  const m = MESSAGE_ID.exec(id);
  if (m === null) return undefined;
  const position = Number(m[1]);
  const seq = s.positions.seqAt(position);
  if (seq === 0) return undefined;
  const seqs = s.rows.seq;
  const at = seqs.upperBound(seq) - 1;
  return at >= 0 && seqs.at(at) === seq && idHasSeq(id, 'msg', position) ? at : undefined;
}

/** The row of the message with log seq `seq`, or undefined (another record, e.g. knowledge). */
export function messageRowAtSeq(s: ForumState, seq: number): MessageRow | undefined {
  const at = s.rows.seq.upperBound(seq) - 1;
  return at >= 0 && s.rows.seq.at(at) === seq ? at : undefined;
}

// ---- decisions ----

/** Decides `room.create` (operator CLI). Throws 409 when the id exists. */
export function decideRoom(s: ForumState, input: { id: string; name: string; description?: string }, created: string): Room {
  if (s.rooms.has(input.id)) throw fail('ALREADY_EXISTS', `room "${input.id}" already exists`);
  return { id: input.id, name: input.name, description: input.description ?? '', created };
}

/**
 * Decides `room.update` (issue 38: `rooms rename`, `rooms describe`): the room with its new name
 * or description, the rest kept. Output: the whole Room, the record's payload (a room event
 * carries the room as it is now). Throws 404 for an unknown room.
 */
export function decideRoomUpdate(s: ForumState, input: { id: string; name?: string; description?: string }): Room {
  const room = s.rooms.get(input.id);
  if (room === undefined) throw notFound(`no room with id "${input.id}"`);
  return { id: room.id, name: input.name ?? room.name, description: input.description ?? room.description, created: room.created };
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
  ctx: Pick<DecisionContext, 'authorId' | 'position' | 'created'>,
): Topic {
  if (!s.rooms.has(input.roomId)) throw notFound(`no room with id "${input.roomId}"`);
  return { id: makeId('tp', ctx.position), roomId: input.roomId, authorId: ctx.authorId, title: input.title, created: ctx.created };
}

/** A validated POST /api/messages body (schemas/MessageInput.json; content trimmed). */
export interface MessageInput {
  topicId: string;
  content: string;
  clientId: string;
  replyTo?: string;
  /** Ours (issue 53): the author's signature; checked by the route (agents/keys.ts requireWriteSignature). */
  signature?: WriteSignature;
}

/**
 * Decides `message.create` (POST /api/messages).
 * Output: `{existing}` for an identical retry by the same author (answered 201 with the stored
 * message; a signed write's retry carries the same signature, Ed25519 being deterministic, and
 * one that differs in its signature, or in being signed, is a different message), or `{message}`
 * to append (without its signature: the route checks and adds it).
 * Throws 409 (clientId reused with a different payload), 404 (unknown topic or replyTo),
 * 400 (replyTo in another topic).
 */
export function decideMessage(
  s: ForumState,
  input: MessageInput,
  ctx: Pick<DecisionContext, 'authorId' | 'position' | 'created'>,
): { existing: MessageRow } | { message: Message } {
  const replyTo = input.replyTo ?? null;
  const prior = messageByClientId(s, ctx.authorId, input.clientId);
  if (prior !== undefined) {
    const m = messageOf(s, prior);
    if (m.topicId === input.topicId && m.content === input.content && m.replyTo === replyTo && m.signature?.keyId === input.signature?.keyId && m.signature?.value === input.signature?.value) {
      return { existing: prior };
    }
    throw fail('IDEMPOTENCY_CONFLICT', `clientId "${input.clientId}" was already used by you for a different message (${m.id}); use a new clientId for new content`);
  }
  if (!s.topics.has(input.topicId)) throw notFound(`no topic with id "${input.topicId}"`);
  if (replyTo !== null) {
    const parent = messageById(s, replyTo);
    if (parent === undefined) throw notFound(`no message with id "${replyTo}" (replyTo)`);
    const parentTopic = messageTopicOf(s, parent);
    if (parentTopic !== input.topicId) {
      throw invalid(`replyTo "${replyTo}" is in topic "${parentTopic}", not "${input.topicId}"; replies must stay in the same topic`);
    }
  }
  return {
    message: {
      id: makeId('msg', ctx.position),
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

/** Applies `room.create`, `room.update`, `topic.create` and `message.create`; returns false for other types. */
export function applyForum(s: ForumState, feeds: FeedsState, record: LogRecord, payloadJson: string): boolean {
  switch (record.type) {
    case 'room.create': {
      // Parsed from the stored canonical JSON (sorted keys), so /api/rooms answers the same
      // bytes whether the room was just created, replayed or restored from a snapshot.
      const room = JSON.parse(payloadJson) as Room;
      s.rooms.set(room.id, room);
      s.roomOrder.push(room);
      addDiscussionEvent(feeds, record.seq, 'room', null);
      return true;
    }
    case 'room.update': {
      // The whole room as it is now (issue 38): it replaces the room in place (rooms keep their
      // order), and its room event tells feed readers the new name or description.
      const room = JSON.parse(payloadJson) as Room;
      const at = s.roomOrder.findIndex((r) => r.id === room.id);
      if (at < 0) throw new Error(`room.update at seq ${record.seq} names unknown room "${room.id}"`);
      s.rooms.set(room.id, room);
      s.roomOrder[at] = room;
      addDiscussionEvent(feeds, record.seq, 'room', null);
      return true;
    }
    case 'topic.create': {
      indexTopic(s, feeds, record.payload as Topic, record);
      return true;
    }
    case 'message.create': {
      // Read from the canonical JSON, not record.payload: replay never parses a message's payload.
      const m = readMessageFields(payloadJson);
      if (!idHasSeq(m.id, 'msg', s.positions.positionOf(record.seq))) throw new Error(`message id "${m.id}" does not match its record's position ${s.positions.positionOf(record.seq)} (seq ${record.seq})`);
      const rows = s.rows;
      const row = rows.seq.length;
      let replyToSeq = 0;
      if (m.replyTo !== null) {
        const parent = messageById(s, m.replyTo);
        if (parent === undefined) throw new Error(`message ${m.id} at seq ${record.seq} replies to unknown message "${m.replyTo}"`);
        replyToSeq = rows.seq.at(parent);
      }
      rows.seq.push(record.seq);
      rows.topic.push(nameId(s, m.topicId));
      rows.author.push(nameId(s, m.authorId));
      rows.replyTo.push(replyToSeq);
      s.byClientId.add(clientHash(m.authorId, m.clientId), row);
      // Counted conservatively: a clientId a client chose with the erased prefix counts too.
      if (m.clientId.startsWith(ERASED_CLIENT_ID_PREFIX)) s.erasedClientRows++;
      pushTo(s.byTopic, m.topicId, row);
      pushTo(s.byAuthor, m.authorId, row);
      addDiscussionEvent(feeds, record.seq, 'message', m.topicId);
      return true;
    }
    default:
      return false;
  }
}

/**
 * Indexes a topic created by `topic.create` or inside another record (a work item's discussion
 * topic), and emits its discussion event. Its JSON is read back from the record when served; its
 * lower-cased title and its author are kept for the title search (topic-search.ts).
 */
export function indexTopic(s: ForumState, feeds: FeedsState, topic: Topic, record: LogRecord): void {
  if (!idHasSeq(topic.id, 'tp', s.positions.positionOf(record.seq))) s.oddTopicIds.set(record.seq, topic.id);
  s.topics.set(topic.id, record.seq);
  s.topicOrder.push(record.seq);
  s.topicTitles.push(topic.title.toLowerCase());
  s.topicAuthors.push(nameId(s, topic.authorId));
  addDiscussionEvent(feeds, record.seq, 'topic', topic.id);
}

/** The id of the topic created by the record at log seq `seq` (no read: `tp_<its position>` unless filed as odd). */
export function topicIdAt(s: ForumState, seq: number): string {
  return s.oddTopicIds.get(seq) ?? makeId('tp', s.positions.positionOf(seq));
}

/**
 * Drops the kept titles of the topics created by the records at `seqs` (an erasure: their text
 * must not stay in memory or reach a snapshot; moderation/erased-fields.ts). Seqs of other
 * records are ignored. O(log topics) per seq.
 */
export function eraseTopicTitles(s: ForumState, seqs: readonly number[]): void {
  for (const seq of seqs) {
    const at = s.topicOrder.upperBound(seq) - 1;
    if (at >= 0 && s.topicOrder.at(at) === seq) s.topicTitles.erase(at);
  }
}

/** A topic's canonical JSON, read back from the record that created it. */
export function topicJsonOf(s: ForumState, seq: number): string {
  return discussionRecordOf(s.records.read(seq), seq).json;
}

/**
 * The moderation status of the topic record at log seq `seq` whose JSON is `json` (issue 25).
 * The JSON is parsed (for its id and author) only while something is hidden or erased.
 */
export function topicStatusOf(reader: Reader, seq: number, json: string): ModerationStatus {
  if (reader.mod.hidden.size === 0 && reader.mod.erased.size === 0) return VISIBLE;
  const t = JSON.parse(json) as Topic;
  return statusOf(reader.mod, seq, t.id, t.authorId);
}

/** A topic's JSON as `reader` sees it (a placeholder when hidden or erased; issue 25). */
export function topicViewOf(s: ForumState, reader: Reader, seq: number): string {
  const json = topicJsonOf(s, seq);
  return discussionView(reader, 'topic', json, topicStatusOf(reader, seq, json));
}

// ---- snapshot ----

/** The forum index as a state snapshot keeps it: typed arrays by index into the body's arrays. */
export interface PackedForum {
  roomOrder: Room[];
  topicIds: string[];
  topicOrder: number;
  /** ForumState.topicTitles (since agent-forum-state-v10). */
  topicTitles: PackedTopicTitles;
  /** ForumState.topicAuthors, an array index (since agent-forum-state-v10). */
  topicAuthors: number;
  rows: { seq: number; topic: number; author: number; replyTo: number };
  byTopic: PackedLists;
  byAuthor: PackedLists;
  byClientId: PackedTable;
  /** ForumState.erasedClientRows; absent in a snapshot written before issue 39 (read as 1: unknown). */
  erasedClientRows?: number;
  names: string[];
}

/** Packs the forum index; its arrays go to `arrays`. */
export function packForum(s: ForumState, arrays: PackedArrays): PackedForum {
  return {
    roomOrder: s.roomOrder,
    topicIds: [...s.topics.keys()],
    topicOrder: arrays.putList(s.topicOrder),
    topicTitles: s.topicTitles.pack(arrays),
    topicAuthors: arrays.putList(s.topicAuthors),
    rows: { seq: arrays.putList(s.rows.seq), topic: arrays.putList(s.rows.topic), author: arrays.putList(s.rows.author), replyTo: arrays.putList(s.rows.replyTo) },
    byTopic: packLists(s.byTopic, arrays),
    byAuthor: packLists(s.byAuthor, arrays),
    byClientId: packTable(s.byClientId, arrays),
    erasedClientRows: s.erasedClientRows,
    names: s.names,
  };
}

/**
 * Fills the empty index `s` from `p`, as replaying the log would have built it. Throws Error for
 * data that does not fit together (the caller replays the log instead).
 */
export function unpackForum(s: ForumState, p: PackedForum, arrays: PackedArrays): void {
  for (const r of p.roomOrder) {
    s.rooms.set(r.id, r);
    s.roomOrder.push(r);
  }
  const topicOrder = arrays.take(p.topicOrder);
  if (p.topicIds.length !== topicOrder.length) throw new Error('damaged topic index');
  s.topicOrder = U32List.of(topicOrder);
  p.topicIds.forEach((id, i) => {
    s.topics.set(id, topicOrder[i]!);
    if (!idHasSeq(id, 'tp', s.positions.positionOf(topicOrder[i]!))) s.oddTopicIds.set(topicOrder[i]!, id);
  });
  const topicTitles = TopicTitles.unpack(p.topicTitles, arrays);
  const topicAuthors = arrays.takeList(p.topicAuthors);
  if (topicTitles.length !== topicOrder.length || topicAuthors.length !== topicOrder.length) throw new Error('damaged topic titles');
  s.topicTitles = topicTitles;
  s.topicAuthors = topicAuthors;
  const rows = { seq: arrays.takeList(p.rows.seq), topic: arrays.takeList(p.rows.topic), author: arrays.takeList(p.rows.author), replyTo: arrays.takeList(p.rows.replyTo) };
  const n = rows.seq.length;
  if (rows.topic.length !== n || rows.author.length !== n || rows.replyTo.length !== n) throw new Error('damaged message rows');
  s.rows = rows;
  s.byTopic = unpackLists(p.byTopic, arrays);
  s.byAuthor = unpackLists(p.byAuthor, arrays);
  s.byClientId = unpackTable(p.byClientId, arrays);
  s.erasedClientRows = p.erasedClientRows ?? 1;
  s.names = p.names;
  s.nameIds = new Map(p.names.map((name, i) => [name, i]));
}

// ---- queries ----

/** JSON array of topics as `reader` sees them, newest first, at most TOPICS_LIST_MAX (part 4). */
export function listTopicsJson(s: ForumState, reader: Reader): string {
  const out: string[] = [];
  for (let i = s.topicOrder.length - 1; i >= 0 && out.length < TOPICS_LIST_MAX; i--) out.push(topicViewOf(s, reader, s.topicOrder.at(i)));
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

/** Candidate rows of a query: every message, or one index list (ascending rows). */
interface Candidates {
  length: number;
  row(i: number): MessageRow;
}

const NO_ROWS: Candidates = { length: 0, row: () => 0 };

function listCandidates(list: U32List | undefined): Candidates {
  return list === undefined ? NO_ROWS : { length: list.length, row: (i) => list.at(i) };
}

/**
 * Messages matching every given filter, newest first by creation time and id, at most `limit`
 * (part 4 GET /api/messages), as rows. Starts from the smallest index a filter names (the topic's
 * or author's rows; a reply's parent bounds the scan from below, since replies come after their
 * parent in its topic); `before` is found by binary search on creation time. `q` is
 * `content.toLowerCase().includes(q.toLowerCase())`, checked on each candidate's stored JSON
 * (search.ts) by the one indexed scan (domain/indexed-scan.ts: `index` proposes candidates, null
 * scans), which runs in slices so the event loop is never held. Unknown ids give an empty result.
 */
export async function queryMessages(s: ForumState, query: MessageQuery, index: CandidateIndex | null, reader: Reader): Promise<MessageRow[]> {
  const rows = s.rows;
  let candidates: Candidates = { length: rows.seq.length, row: (i) => i };
  let replyToSeq = -1;
  let parent: MessageRow | undefined;
  if (query.messageId !== undefined) {
    const m = messageById(s, query.messageId);
    candidates = m === undefined ? NO_ROWS : { length: 1, row: () => m };
  } else {
    const pick = (c: Candidates) => {
      if (c.length < candidates.length) candidates = c;
    };
    if (query.replyTo !== undefined) {
      parent = messageById(s, query.replyTo);
      if (parent === undefined) return [];
      replyToSeq = rows.seq.at(parent);
      pick(listCandidates(s.byTopic.get(messageTopicOf(s, parent))));
    }
    if (query.topicId !== undefined) pick(listCandidates(s.byTopic.get(query.topicId)));
    if (query.agentId !== undefined) pick(listCandidates(s.byAuthor.get(query.agentId)));
  }
  // Replies come after their parent: candidates (ascending rows) at or before it are skipped.
  const lowest = parent === undefined ? 0 : upperBound(candidates.length, (i) => candidates.row(i), parent);
  let end = candidates.length;
  if (query.before !== undefined) {
    end = lowerBound(candidates.length, (i) => Date.parse(createdOf(messageJsonOf(s, candidates.row(i)))), exclusiveBoundMs(query.before));
  }
  const topicNo = query.topicId === undefined ? -1 : s.nameIds.get(query.topicId) ?? -2;
  const authorNo = query.agentId === undefined ? -1 : s.nameIds.get(query.agentId) ?? -2;
  if (topicNo === -2 || authorNo === -2) return [];
  const filter = (row: MessageRow): boolean =>
    (replyToSeq === -1 || rows.replyTo.at(row) === replyToSeq) &&
    (topicNo === -1 || rows.topic.at(row) === topicNo) &&
    (authorNo === -1 || rows.author.at(row) === authorNo);
  const lq = query.q === undefined || query.q === '' ? undefined : query.q.toLowerCase();
  if (lq === undefined) {
    const out: MessageRow[] = [];
    for (let i = end - 1; i >= lowest && out.length < query.limit; i--) {
      const row = candidates.row(i);
      if (filter(row)) out.push(row);
    }
    return out;
  }
  // Search never finds text the reader may not see (issue 25): such messages leave the candidates.
  const moderated = reader.mod.hidden.size > 0 || reader.mod.erased.size > 0;
  return indexedScan(index, lq, {
    lowest,
    from: end,
    at: candidates.row,
    seqOf: (row) => rows.seq.at(row),
    bySeq: (seq) => messageRowAtSeq(s, seq),
    filter: moderated ? (row) => filter(row) && textVisible(reader, messageStatusOf(s, reader, row)) : filter,
    matches: (row) => contentIncludes(messageJsonOf(s, row), lq),
    limit: query.limit,
  });
}
