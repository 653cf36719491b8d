/**
 * Work board: work items, their state machine and revision history (parts 2 WorkItem, 3, 4
 * "Work", 8 "Work snapshot").
 *
 * Records:
 * - `work.create {item, topic, request, authorId, clientId}` — revision 1 of a new item; `topic`
 *   is the discussion topic created in the same record (null when the request named a topicId),
 *   so the item and its topic appear together or not at all.
 * - `work.action {item, request, authorId, clientId}` — the complete next revision of an item.
 *
 * Every record carries the complete snapshot it produces, so apply never re-runs a rule: replay
 * cannot drift from what was answered. Apply keeps, per item, typed columns of what rules and
 * filters need (issue 30: `WorkRows`, the current revision's fields updated in place) and each
 * revision's log seq; a revision's JSON is read back from its record and rebuilt with a fixed key
 * order (the log stores payloads with sorted keys, so the order must not come from the payload
 * object). The receipts index `byClientId` answers retries and GET /api/receipts with the
 * snapshot as committed.
 *
 * This module holds the board's state and rows: the record and request shapes, the columns and
 * their lookups, a revision read back from its record in canonical key order, the receipts index
 * and the lease rules the decisions, views and filters share. The rest of the board is split by
 * what it does, each part importing only this one: `decide.ts` (the rules of part 3, a request →
 * the record's payload), `apply.ts` (a record → the columns; packing them into a state snapshot)
 * and `views.ts` (what a reader sees: a revision's JSON through moderation, receipts, lists and
 * history).
 */
import { Positions } from '../positions.js';
import { ID_SEQ_DIGITS } from '../../constants.js';
import { clientHash, type Topic } from '../forum/forum.js';
import { RowHashTable } from '../../containers/row-hash-table.js';
import { U32List } from '../../containers/u32-list.js';
import { F64List } from '../../containers/f64-list.js';
import type { RecordSource } from '../../store/records.js';
import { idHasSeq, makeId } from '../ids.js';
import { clientIdMatches, erasedClientId } from '../moderation/moderation.js';

/** A work item's state (spec part 3); not to be confused with WorkBoardState, the whole board. */
export type WorkItemState = 'open' | 'claimed' | 'submitted' | 'completed' | 'cancelled';

/** `result` of a WorkItem (part 2). */
export interface WorkResult {
  authorId: string;
  content: string;
  sources: string[];
  created: string;
}

/** `review` of a WorkItem (part 2). */
export interface WorkReview {
  authorId: string;
  decision: 'accept' | 'revise';
  feedback: string;
  created: string;
}

/** One revision of a work item (part 2); the response of every work write. */
export interface WorkItem {
  id: string;
  sequence: number;
  authorId: string;
  title: string;
  description: string;
  acceptanceCriteria: string;
  tags: string[];
  topicId: string;
  state: WorkItemState;
  assigneeId: string | null;
  leaseUntil: string | null;
  revision: number;
  created: string;
  updated: string;
  updatedBy: string;
  result: WorkResult | null;
  review: WorkReview | null;
}

/** Validated POST /api/work body (defaults applied, text trimmed). */
export interface WorkCreateInput {
  clientId: string;
  title: string;
  description: string;
  acceptanceCriteria: string;
  tags: string[];
  topicId?: string;
}

/** Validated POST /api/work/action body: one of six variants (defaults applied, text trimmed). */
export type WorkActionInput =
  | { workItemId: string; expectedRevision: number; clientId: string; action: 'claim' | 'renew'; leaseMinutes: number }
  | { workItemId: string; expectedRevision: number; clientId: string; action: 'release' | 'cancel' }
  | { workItemId: string; expectedRevision: number; clientId: string; action: 'submit'; content: string; sources: string[] }
  | { workItemId: string; expectedRevision: number; clientId: string; action: 'review'; decision: 'accept' | 'revise'; feedback: string };

/** The normalized request kept with a receipt: a create or an action body. */
export type WorkRequest = WorkCreateInput | WorkActionInput;

/** Payload of a `work.create` record. */
export interface WorkCreatePayload {
  item: WorkItem;
  topic: Topic | null;
  request: WorkCreateInput;
  authorId: string;
  clientId: string;
}

/** Payload of a `work.action` record. */
export interface WorkActionPayload {
  item: WorkItem;
  request: WorkActionInput;
  authorId: string;
  clientId: string;
}

/**
 * A receipt: what one (author, clientId) committed. `response` is the snapshot as committed
 * then (it may be older than the item's current revision); `status` is what the original
 * request was answered with (201 create, 200 action).
 */
export interface WorkReceipt {
  request: WorkRequest;
  response: WorkItem;
  responseJson: string;
  seq: number;
  status: 201 | 200;
}

/** The work item states, numbered in the `state` column by their index. */
export const WORK_STATES: readonly WorkItemState[] = ['open', 'claimed', 'submitted', 'completed', 'cancelled'];
const OPEN = 0;
const CLAIMED = 1;

/**
 * Work items in creation order as columns, one row per item (issue 30: about 32 bytes an item, no
 * objects, no text): the log seq of its `work.create` record (its id is `wk_<seq>`), interned
 * author and topic, its tag list's number, and the fields of its current revision that rules and
 * filters need — state, assignee (+ 1, 0 for none), revision, lease end in ms (NaN for none) —
 * updated in place by each `work.action`, and its latest revision's position in `revs`.
 */
export interface WorkRows {
  seq: U32List;
  author: U32List;
  topic: U32List;
  tags: U32List;
  state: U32List;
  assignee: U32List;
  revision: U32List;
  leaseUntilMs: F64List;
  lastRev: U32List;
}

/**
 * Every work record (create or action), in log order: its log seq and its item's previous
 * revision (position + 1, 0 for revision 1), so an item's revisions are a chain of positions.
 */
export interface WorkRevisions {
  seq: U32List;
  prev: U32List;
}

/** A work item's row in `WorkRows`: its sequence - 1. */
export type WorkRow = number;

/** Work items as columns, their revisions, and the receipts index. */
export interface WorkBoardState {
  /** Every item, in creation order: the item with sequence n is row n - 1. */
  rows: WorkRows;
  revs: WorkRevisions;
  /**
   * Hash of (authorId, clientId) → log seq of the record that committed it, across creates and
   * actions (part 4); confirmed from the record.
   */
  byClientId: RowHashTable;
  /**
   * How many records `byClientId` files under an erased clientId (one applied already erased,
   * issue 34): while none is, `workReceiptOf` skips its second lookup and the SHA-256 that names
   * it (issue 39).
   */
  erasedClientRows: number;
  /** Where revisions are read back from. */
  records: RecordSource;
  /** The log's seq → position map (ids carry positions; domain/positions.ts), shared by every area. */
  positions: Positions;
  /** Interned author, topic and assignee ids: `names[n]` is the id numbered n in the columns. */
  names: string[];
  nameIds: Map<string, number>;
  /** Distinct tag lists (`tags` column numbers), and their JSON → number. */
  tagLists: Array<readonly string[]>;
  tagListIds: Map<string, number>;
  /** Item ids not of the form `wk_<seq of its create>` → row, and back (empty for logs this service wrote). */
  otherIds: Map<string, WorkRow>;
  otherIdOf: Map<WorkRow, string>;
}

/** An empty work board whose revisions are read from `records`. */
export function createWorkBoardState(records: RecordSource, positions: Positions = new Positions()): WorkBoardState {
  const u = () => new U32List(256);
  return {
    rows: { seq: u(), author: u(), topic: u(), tags: u(), state: u(), assignee: u(), revision: u(), leaseUntilMs: new F64List(256), lastRev: u() },
    revs: { seq: u(), prev: u() },
    byClientId: new RowHashTable(),
    erasedClientRows: 0,
    records,
    positions,
    names: [],
    nameIds: new Map(),
    tagLists: [],
    tagListIds: new Map(),
    otherIds: new Map(),
    otherIdOf: new Map(),
  };
}

/** A work item id's seq: `wk_` and at least ID_SEQ_DIGITS digits (ids.ts). */
const WORK_ID = new RegExp(`^wk_(\\d{${ID_SEQ_DIGITS},})$`);

/**
 * The row of the work item with id `id`, or undefined: the seq the id carries is its create
 * record's (a binary search of the seq column), so no id → item map is kept.
 */
export function workRowOf(s: WorkBoardState, id: string): WorkRow | undefined {
  const other = s.otherIds.get(id);
  if (other !== undefined) return other;
  const m = WORK_ID.exec(id);
  if (m === null) return undefined;
  const position = Number(m[1]);
  const seq = s.positions.seqAt(position);
  if (seq === 0) return undefined;
  const at = s.rows.seq.upperBound(seq) - 1;
  if (at < 0 || s.rows.seq.at(at) !== seq || s.otherIdOf.has(at) || !idHasSeq(id, 'wk', position)) return undefined;
  return at;
}

/** The id of the work item in row `row`. */
export function workIdOf(s: WorkBoardState, row: WorkRow): string {
  return s.otherIdOf.get(row) ?? makeId('wk', s.positions.positionOf(s.rows.seq.at(row)));
}

/** The number of work items (the last one's sequence). */
export function workItemCount(s: WorkBoardState): number {
  return s.rows.seq.length;
}

/** The log seqs of every revision of the item in row `row`, ascending (index r - 1 holds revision r). */
export function workRevisionSeqs(s: WorkBoardState, row: WorkRow): number[] {
  const out: number[] = [];
  for (let at = s.rows.lastRev.at(row) + 1; at !== 0; at = s.revs.prev.at(at - 1)) out.push(s.revs.seq.at(at - 1));
  return out.reverse();
}

/** The row of the work item whose `work.create` record is at log seq `seq`, or undefined. */
export function workRowAtSeq(s: WorkBoardState, seq: number): WorkRow | undefined {
  const at = s.rows.seq.upperBound(seq) - 1;
  return at >= 0 && s.rows.seq.at(at) === seq ? at : undefined;
}

/**
 * The discussion topic created with the item in row `row` (inside its `work.create` record), or
 * null when the item was created in an existing topic (`topicId` in the request). `topicSeq` is
 * the forum's topic id → log seq lookup.
 */
export function workOwnTopicOf(s: WorkBoardState, row: WorkRow, topicSeq: (topicId: string) => number | undefined): string | null {
  const topicId = s.names[s.rows.topic.at(row)]!;
  return topicSeq(topicId) === s.rows.seq.at(row) ? topicId : null;
}

/** The authors of the result and review of the work record at log seq `seq` (null where there is none). */
export function workPartAuthorsAt(s: WorkBoardState, seq: number): { result: string | null; review: string | null } {
  const item = workPayloadOf(s, seq).payload.item;
  return { result: item.result?.authorId ?? null, review: item.review?.authorId ?? null };
}

/** The log seq of revision `revision` (1-based, at most the current one) of the item in row `row`. */
function revisionSeq(s: WorkBoardState, row: WorkRow, revision: number): number {
  let at = s.rows.lastRev.at(row);
  for (let r = s.rows.revision.at(row); r > revision; r--) at = s.revs.prev.at(at) - 1;
  return s.revs.seq.at(at);
}

/** The rows of the items created by `authorId`, ascending. */
export function workRowsByAuthor(s: WorkBoardState, authorId: string): WorkRow[] {
  const author = s.nameIds.get(authorId);
  const out: WorkRow[] = [];
  if (author === undefined) return out;
  for (let row = 0; row < s.rows.seq.length; row++) if (s.rows.author.at(row) === author) out.push(row);
  return out;
}

/** An indexed work item's fields (no text): what rules and filters read, as one object (rare paths and tests). */
export interface WorkEntry {
  id: string;
  sequence: number;
  authorId: string;
  topicId: string;
  tags: readonly string[];
  state: WorkItemState;
  assigneeId: string | null;
  revision: number;
  /** leaseUntil in ms, or null. */
  leaseUntilMs: number | null;
  /** Log seq of revision r's record at index r - 1. */
  revSeqs: number[];
}

/** The fields of the item in row `row`. */
export function workEntryOf(s: WorkBoardState, row: WorkRow): WorkEntry {
  const r = s.rows;
  const assignee = r.assignee.at(row);
  const lease = r.leaseUntilMs.at(row);
  return {
    id: workIdOf(s, row),
    sequence: row + 1,
    authorId: s.names[r.author.at(row)]!,
    topicId: s.names[r.topic.at(row)]!,
    tags: s.tagLists[r.tags.at(row)]!,
    state: WORK_STATES[r.state.at(row)]!,
    assigneeId: assignee === 0 ? null : s.names[assignee - 1]!,
    revision: r.revision.at(row),
    leaseUntilMs: Number.isNaN(lease) ? null : lease,
    revSeqs: workRevisionSeqs(s, row),
  };
}

/** The payload and type of the work record (create or action) at log seq `seq`. */
export function workPayloadOf(s: WorkBoardState, seq: number): { payload: WorkCreatePayload | WorkActionPayload; type: string } {
  const r = s.records.read(seq);
  return { payload: JSON.parse(r.payloadJson) as WorkCreatePayload | WorkActionPayload, type: r.type };
}

/** Revision `revision` (1-based) of the work item in row `row`, as committed, in the documented key order. */
export function workRevision(s: WorkBoardState, row: WorkRow, revision: number): WorkItem {
  return toWorkItem(workPayloadOf(s, revisionSeq(s, row, revision)).payload.item);
}

// ---- receipts ----

/**
 * The receipt of (authorId, clientId), if any, rebuilt from the record that committed it: the
 * normalized request, the snapshot committed then and the status it was answered with.
 */
export function workReceiptOf(s: WorkBoardState, authorId: string, clientId: string): WorkReceipt | undefined {
  let found: WorkReceipt | undefined;
  const visit = (seq: number): boolean => {
    const { payload, type } = workPayloadOf(s, seq);
    if (payload.authorId !== authorId || !clientIdMatches(payload.clientId, authorId, clientId)) return false;
    const response = toWorkItem(payload.item);
    const create = type === 'work.create';
    const request = create ? normalizeCreateRequest(payload.request as WorkCreateInput) : normalizeActionRequest(payload.request as WorkActionInput);
    // The clientId asked for (an erased record stores only its `erasedClientId`).
    request.clientId = clientId;
    found = { request, response, responseJson: JSON.stringify(response), seq, status: create ? 201 : 200 };
    return true;
  };
  // An erased record is filed under its clientId when it was applied before its erasure, and
  // under its `erasedClientId` when a replay applied it already erased.
  if (s.byClientId.find(clientHash(authorId, clientId), visit) === undefined && s.erasedClientRows !== 0) s.byClientId.find(clientHash(authorId, erasedClientId(authorId, clientId)), visit);
  return found;
}

/**
 * The receipt of the work record at log seq `seq` (a create or an action), found by its seq: for
 * an erased write, whose record may no longer show its clientId (moderation `erasedClients`).
 */
export function workReceiptAt(s: WorkBoardState, seq: number): WorkReceipt {
  const { payload, type } = workPayloadOf(s, seq);
  const response = toWorkItem(payload.item);
  const create = type === 'work.create';
  const request = create ? normalizeCreateRequest(payload.request as WorkCreateInput) : normalizeActionRequest(payload.request as WorkActionInput);
  return { request, response, responseJson: JSON.stringify(response), seq, status: create ? 201 : 200 };
}

// ---- canonical shapes ----

/**
 * A WorkItem with the documented key order, rebuilt from any object carrying its fields (a live
 * payload or one replayed from the log with sorted keys).
 */
export function toWorkItem(x: WorkItem): WorkItem {
  return {
    id: x.id,
    sequence: x.sequence,
    authorId: x.authorId,
    title: x.title,
    description: x.description,
    acceptanceCriteria: x.acceptanceCriteria,
    tags: [...x.tags],
    topicId: x.topicId,
    state: x.state,
    assigneeId: x.assigneeId,
    leaseUntil: x.leaseUntil,
    revision: x.revision,
    created: x.created,
    updated: x.updated,
    updatedBy: x.updatedBy,
    result:
      x.result === null
        ? null
        : { authorId: x.result.authorId, content: x.result.content, sources: [...x.result.sources], created: x.result.created },
    review:
      x.review === null
        ? null
        : { authorId: x.review.authorId, decision: x.review.decision, feedback: x.review.feedback, created: x.review.created },
  };
}

/** The normalized create request: documented key order, topicId only when given. */
export function normalizeCreateRequest(x: WorkCreateInput): WorkCreateInput {
  const out: WorkCreateInput = {
    clientId: x.clientId,
    title: x.title,
    description: x.description,
    acceptanceCriteria: x.acceptanceCriteria,
    tags: [...x.tags],
  };
  if (x.topicId !== undefined) out.topicId = x.topicId;
  return out;
}

/** The normalized action request: common fields, then the variant's fields, in documented order. */
export function normalizeActionRequest(x: WorkActionInput): WorkActionInput {
  const base = { workItemId: x.workItemId, expectedRevision: x.expectedRevision, clientId: x.clientId };
  switch (x.action) {
    case 'claim':
    case 'renew':
      return { ...base, action: x.action, leaseMinutes: x.leaseMinutes };
    case 'release':
    case 'cancel':
      return { ...base, action: x.action };
    case 'submit':
      return { ...base, action: 'submit', content: x.content, sources: [...x.sources] };
    case 'review':
      return { ...base, action: 'review', decision: x.decision, feedback: x.feedback };
  }
}

// ---- lease ----

/** True when the item in row `row` is claimed and its lease has passed at `nowMs`. */
export function leaseExpired(s: WorkBoardState, row: WorkRow, nowMs: number): boolean {
  // A NaN lease end (none) compares false.
  return s.rows.state.at(row) === CLAIMED && nowMs >= s.rows.leaseUntilMs.at(row);
}

/**
 * Whether work can be taken now (part 2 "available", part 4 `available`): open, or claimed with
 * an expired lease — and never while writes are stopped.
 */
export function isAvailable(s: WorkBoardState, row: WorkRow, nowMs: number, writeStop: boolean): boolean {
  if (writeStop) return false;
  return s.rows.state.at(row) === OPEN || leaseExpired(s, row, nowMs);
}
