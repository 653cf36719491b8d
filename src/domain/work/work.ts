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
 * Decisions where the spec says "not shown" (docs/api/work.md):
 * - Disabled agents: their token gets 401 on every request (part 5 item 6), so they cannot act.
 *   An active claim of a disabled agent is not released by any record; it simply expires with
 *   its lease, after which anyone but the creator may claim the work (part 3, expired claims are
 *   recoverable). This keeps "disable" a pure access decision that writes no work revisions, and
 *   re-enabling the agent within its lease lets it finish.
 * - Cancel is accepted from every unfinished state: open, claimed (lease expired or not) and
 *   submitted. Closed work (completed, cancelled) answers 409 "closed work is immutable".
 * - 403 is a wrong role: not the creator or operator (review, cancel), not the assignee (renew,
 *   release, submit), the creator claiming their own work, the result's author reviewing it.
 *   409 is a wrong state or a conflict: stale expectedRevision, closed work, a claim of an item
 *   whose lease has not expired, renew after the lease expired, an action the current state has
 *   no transition for, a reused clientId with a changed body.
 * - Check order: receipt (identical retry) → unknown item 404 → expectedRevision 409 → closed 409
 *   → role 403 → state 409 → snapshot size 400. For renew, release and submit the "assignee"
 *   role exists only while the item is claimed, so their state check (409) comes first.
 * - Lease expiry: a lease has expired when now >= leaseUntil. Release and submit need only that
 *   the caller is still the assignee (nobody re-claimed the work after expiry); renew needs an
 *   unexpired lease (part 3 wording). A renewal extends the current lease end by leaseMinutes
 *   (part 3: "lease extended by leaseMinutes"), with no further cap: renewing stays bounded by
 *   the write limit, and the creator or the operator can cancel.
 * - Field effects: leaseUntil is non-null only while claimed; assigneeId names the claimant
 *   (claimed) or the result's author (submitted, completed) and is null when open or cancelled;
 *   `result` is the current result (null again after a revise: the prior result stays in the
 *   history); `review` is the latest review, kept through a revise cycle until the next submit.
 */
import type { LogRecord } from '../../store/log.js';
import { DEFAULT_ROOM_ID, ID_SEQ_DIGITS, MS_PER_MINUTE, WORK_SNAPSHOT_BYTES_MAX } from '../../constants.js';
import { fail, notFound } from '../../errors.js';
import { addWorkEvent, type FeedsState } from '../feeds/feeds.js';
import { clientHash, indexTopic, type ForumState, type Topic } from '../forum/forum.js';
import { RowHashTable } from '../../containers/row-hash-table.js';
import { U32List } from '../../containers/u32-list.js';
import { F64List } from '../../containers/f64-list.js';
import type { RecordSource } from '../../store/records.js';
import { packTable, unpackTable, type PackedArrays, type PackedTable } from '../packing.js';
import { SliceTimer } from '../slices.js';
import { idHasSeq, makeId } from '../ids.js';
import type { DecisionContext } from '../decision.js';
import { agentKey, clientIdMatches, ERASED, ERASED_CLIENT_ID_PREFIX, erasedClientId, HIDDEN, statusOf, VISIBLE, type ModerationStatus, type Reader } from '../moderation/moderation.js';
import { nameId } from '../columns.js';
import { emptyText, RECORD_TYPES } from '../record-types.js';

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
const WORK_STATES: readonly WorkItemState[] = ['open', 'claimed', 'submitted', 'completed', 'cancelled'];
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
export function createWorkBoardState(records: RecordSource): WorkBoardState {
  const u = () => new U32List(256);
  return {
    rows: { seq: u(), author: u(), topic: u(), tags: u(), state: u(), assignee: u(), revision: u(), leaseUntilMs: new F64List(256), lastRev: u() },
    revs: { seq: u(), prev: u() },
    byClientId: new RowHashTable(),
    erasedClientRows: 0,
    records,
    names: [],
    nameIds: new Map(),
    tagLists: [],
    tagListIds: new Map(),
    otherIds: new Map(),
    otherIdOf: new Map(),
  };
}

/** The number of tag list `tags` in `s.tagLists` (added on first sight). */
function tagListId(s: WorkBoardState, tags: readonly string[]): number {
  const key = JSON.stringify(tags);
  const known = s.tagListIds.get(key);
  if (known !== undefined) return known;
  s.tagListIds.set(key, s.tagLists.length);
  s.tagLists.push(Object.freeze([...tags]));
  return s.tagLists.length - 1;
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
  const seq = Number(m[1]);
  const at = s.rows.seq.upperBound(seq) - 1;
  if (at < 0 || s.rows.seq.at(at) !== seq || s.otherIdOf.has(at) || !idHasSeq(id, 'wk', seq)) return undefined;
  return at;
}

/** The id of the work item in row `row`. */
export function workIdOf(s: WorkBoardState, row: WorkRow): string {
  return s.otherIdOf.get(row) ?? makeId('wk', s.rows.seq.at(row));
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
function workPayloadOf(s: WorkBoardState, seq: number): { payload: WorkCreatePayload | WorkActionPayload; type: string } {
  const r = s.records.read(seq);
  return { payload: JSON.parse(r.payloadJson) as WorkCreatePayload | WorkActionPayload, type: r.type };
}

/** Revision `revision` (1-based) of the work item in row `row`, as committed, in the documented key order. */
function workRevision(s: WorkBoardState, row: WorkRow, revision: number): WorkItem {
  return toWorkItem(workPayloadOf(s, revisionSeq(s, row, revision)).payload.item);
}

/**
 * The moderation status of the work record at log seq `seq` of the item in row `row` (issue 25):
 * erased when that record was erased, hidden when the item or its creator is hidden.
 */
function workStatusOf(s: WorkBoardState, reader: Reader, row: WorkRow, seq: number): ModerationStatus {
  // With nothing hidden the id and creator are not consulted: no id is built per item.
  if (reader.mod.hidden.size === 0) return statusOf(reader.mod, seq, null, null);
  return statusOf(reader.mod, seq, workIdOf(s, row), s.names[s.rows.author.at(row)]!);
}

/**
 * The JSON a reader gets for work item revision `item` with `status` (issue 25): as committed
 * when visible; hidden: whole with `"hidden": true` for operators, its text fields emptied
 * (`emptyWorkItem`) with `"hidden": true` for everyone else; erased: emptied, `"erased": true`.
 * Every other field (state, assignee, lease, revision, times) stays: the board keeps its shape.
 */
export function workItemView(reader: Reader, item: WorkItem, status: ModerationStatus): string {
  if (status === VISIBLE) return JSON.stringify(purgedPartsEmptied(reader, item));
  if (status === ERASED) return JSON.stringify({ ...emptyWorkItem(item), erased: true });
  return JSON.stringify(reader.operator && status === HIDDEN ? { ...item, hidden: true } : { ...emptyWorkItem(item), hidden: true });
}

/**
 * A visible work item whose result or review was written by a purged agent (issue 25: a purge
 * hides everything the agent wrote): that part's text is emptied for readers other than
 * operators. The item is otherwise as committed, and it carries no `hidden` flag of its own.
 */
function purgedPartsEmptied(reader: Reader, item: WorkItem): WorkItem {
  const hidden = reader.mod.hidden;
  if (reader.operator || hidden.size === 0) return item;
  const result = item.result !== null && hidden.has(agentKey(item.result.authorId));
  const review = item.review !== null && hidden.has(agentKey(item.review.authorId));
  if (!result && !review) return item;
  const out = toWorkItem(item);
  if (result) out.result = emptyText(out.result!, WORK_TEXT);
  if (review) out.review = emptyText(out.review!, WORK_TEXT);
  return out;
}

/** The participant text of work records (record-types.ts): what an erasure or a placeholder empties, wherever it appears. */
const WORK_TEXT = RECORD_TYPES['work.create'].erasure.text;

/**
 * A work item with its participant-controlled fields emptied (WORK_TEXT): title, description,
 * acceptanceCriteria, tags (issue 34), the result's content and sources and the review's feedback
 * (issue 25 placeholder). Ids, state, times stay.
 */
export function emptyWorkItem(x: WorkItem): WorkItem {
  const item = emptyText(toWorkItem(x), WORK_TEXT);
  if (item.result !== null) item.result = emptyText(item.result, WORK_TEXT);
  if (item.review !== null) item.review = emptyText(item.review, WORK_TEXT);
  return item;
}

/**
 * A `work.create` or `work.action` payload with every participant-controlled field covered (its
 * item as `emptyWorkItem`, its discussion topic's title, its request's text and tags, and its
 * clientId — in the payload and in the request — replaced by `erasedClientId`): what an erasure
 * keeps of such a record (issues 25, 34). A payload without `authorId` (a receipt's request
 * being shown, not stored) keeps its clientId.
 */
export function redactWorkPayload(o: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...o, item: emptyWorkItem(o.item as WorkItem) };
  if (o.topic !== undefined && o.topic !== null) out.topic = { ...(o.topic as Topic), ...RECORD_TYPES['topic.create'].erasure.text };
  const request = emptyText(o.request as Record<string, unknown>, WORK_TEXT);
  if (typeof o.authorId === 'string' && typeof o.clientId === 'string') {
    const covered = erasedClientId(o.authorId, o.clientId);
    out.clientId = covered;
    if (typeof request.clientId === 'string') request.clientId = covered;
  }
  out.request = request;
  return out;
}

/** The JSON of the work record at log seq `seq` (a revision of the item in row `row`) as `reader` sees it. */
function workSeqJson(s: WorkBoardState, row: WorkRow, seq: number, reader: Reader): string {
  return workItemView(reader, toWorkItem(workPayloadOf(s, seq).payload.item), workStatusOf(s, reader, row, seq));
}

/** The JSON of the current revision of the work item in row `row` as `reader` sees it. */
export function workJsonOf(s: WorkBoardState, row: WorkRow, reader: Reader): string {
  return workSeqJson(s, row, s.revs.seq.at(s.rows.lastRev.at(row)), reader);
}

/** The WorkItem snapshot JSON of the work record at log seq `seq` (the work feed's events), as `reader` sees it. */
export function workRecordJson(s: WorkBoardState, seq: number, reader: Reader): string {
  const item = toWorkItem(workPayloadOf(s, seq).payload.item);
  return workItemView(reader, item, workStatusOf(s, reader, workRowOf(s, item.id)!, seq));
}

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

/**
 * A receipt's response and request as `reader` sees them (issue 25): the committed snapshot
 * through `workItemView`, and the request with its text emptied when the reader may not see it.
 */
export function workReceiptView(s: WorkBoardState, r: WorkReceipt, reader: Reader): { responseJson: string; requestJson: string } {
  const status = workStatusOf(s, reader, workRowOf(s, r.response.id)!, r.seq);
  const textShown = status === VISIBLE || (status === HIDDEN && reader.operator);
  const request = textShown ? r.request : (redactWorkPayload({ item: r.response, request: r.request }).request as WorkRequest);
  return { responseJson: workItemView(reader, r.response, status), requestJson: JSON.stringify(request) };
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

/** JSON of a snapshot, checked against WORK_SNAPSHOT_BYTES_MAX (part 8); throws 400 `WORK_SNAPSHOT_TOO_LARGE` above it. */
function checkedSnapshotJson(item: WorkItem): string {
  const json = JSON.stringify(item);
  const sizeBytes = Buffer.byteLength(json, 'utf8');
  if (sizeBytes > WORK_SNAPSHOT_BYTES_MAX) {
    throw fail('WORK_SNAPSHOT_TOO_LARGE', `the resulting work item snapshot would be ${sizeBytes} bytes of serialized JSON; the limit is ${WORK_SNAPSHOT_BYTES_MAX} UTF-8 bytes (part 8); shorten the text`);
  }
  return json;
}

/** True when the item in row `row` is claimed and its lease has passed at `nowMs`. */
function leaseExpired(s: WorkBoardState, row: WorkRow, nowMs: number): boolean {
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

function isClosed(state: WorkItemState): boolean {
  return state === 'completed' || state === 'cancelled';
}

/** Looks up a prior request with the same (author, clientId). Throws 409 when its body differs. */
function priorReceipt(s: WorkBoardState, authorId: string, clientId: string, requestJson: string): WorkReceipt | null {
  const prior = workReceiptOf(s, authorId, clientId);
  if (!prior) return null;
  if (JSON.stringify(prior.request) === requestJson) return prior;
  throw fail('IDEMPOTENCY_CONFLICT', `clientId "${clientId}" was already used by you for a different work request (${prior.response.id} revision ${prior.response.revision}); use a fresh clientId for each new request`);
}

// ---- decisions ----

/**
 * Decides POST /api/work (part 4).
 * Input: validated WorkCreateInput (trimmed, tags defaulted).
 * Output: `{existing}` for an exact retry (answer 201 with the stored snapshot), or `{payload}`
 * for a `work.create` record.
 * Throws 409 (clientId used for a different work request), 404 (unknown topicId), 400 (snapshot
 * over WORK_SNAPSHOT_BYTES_MAX).
 */
export function decideWorkCreate(
  s: WorkBoardState,
  forum: ForumState,
  input: WorkCreateInput,
  ctx: DecisionContext,
): { existing: WorkReceipt } | { payload: WorkCreatePayload } {
  const request = normalizeCreateRequest(input);
  const existing = priorReceipt(s, ctx.authorId, input.clientId, JSON.stringify(request));
  if (existing) return { existing };
  if (input.topicId !== undefined && !forum.topics.has(input.topicId)) {
    throw notFound(`no topic with id "${input.topicId}" (topicId); omit topicId to create a discussion topic`);
  }
  const created = new Date(ctx.nowMs).toISOString();
  const topic: Topic | null =
    input.topicId === undefined
      ? { id: makeId('tp', ctx.seq), roomId: DEFAULT_ROOM_ID, authorId: ctx.authorId, title: input.title, created }
      : null;
  const item: WorkItem = {
    id: makeId('wk', ctx.seq),
    sequence: s.rows.seq.length + 1,
    authorId: ctx.authorId,
    title: input.title,
    description: input.description,
    acceptanceCriteria: input.acceptanceCriteria,
    tags: [...input.tags],
    topicId: topic ? topic.id : input.topicId!,
    state: 'open',
    assigneeId: null,
    leaseUntil: null,
    revision: 1,
    created,
    updated: created,
    updatedBy: ctx.authorId,
    result: null,
    review: null,
  };
  checkedSnapshotJson(item);
  return { payload: { item, topic, request, authorId: ctx.authorId, clientId: input.clientId } };
}

/**
 * Decides POST /api/work/action (parts 3, 4): applies the transition table and its rules to the
 * current revision and returns the next one.
 * Input: a validated action variant; ctx with the caller, whether they are the operator, now.
 * Output: `{existing}` for an identical retry (answer 200 with the snapshot committed then, even
 * after later revisions), or `{payload}` for a `work.action` record.
 * Throws 409 (clientId reuse with a changed body, stale expectedRevision, closed work, no
 * transition from the current state, unexpired claim, expired lease on renew), 404 (unknown
 * work item), 403 (wrong role, see the module comment), 400 (snapshot over WORK_SNAPSHOT_BYTES_MAX).
 */
export function decideWorkAction(
  s: WorkBoardState,
  input: WorkActionInput,
  ctx: DecisionContext,
): { existing: WorkReceipt } | { payload: WorkActionPayload } {
  const request = normalizeActionRequest(input);
  const existing = priorReceipt(s, ctx.authorId, input.clientId, JSON.stringify(request));
  if (existing) return { existing };

  const row = workRowOf(s, input.workItemId);
  if (row === undefined) throw notFound(`no work item with id "${input.workItemId}" (workItemId)`);
  const cur = workRevision(s, row, s.rows.revision.at(row));
  if (input.expectedRevision !== cur.revision) {
    throw fail('REVISION_CONFLICT', `expectedRevision ${input.expectedRevision} is not the current revision ${cur.revision} of ${cur.id}; reread the item (GET /api/work?id=${cur.id}) and decide again`);
  }
  if (isClosed(cur.state)) throw fail('WORK_CLOSED', `closed work is immutable: ${cur.id} is ${cur.state}`);

  const now = ctx.nowMs;
  const nowIso = new Date(now).toISOString();
  const caller = ctx.authorId;
  const isCreator = caller === cur.authorId;
  const next: WorkItem = { ...toWorkItem(cur), revision: cur.revision + 1, updated: nowIso, updatedBy: caller };
  const wrongState = (what: string) =>
    fail('WORK_STATE', `cannot ${input.action} ${cur.id}: ${what}`);
  const requireClaimedAssignee = () => {
    if (cur.state !== 'claimed') throw wrongState(`it is ${cur.state}, not claimed`);
    if (caller !== cur.assigneeId) throw fail('WORK_ROLE', `only the assignee (${cur.assigneeId}) can ${input.action} ${cur.id}`);
  };
  const requireCreatorOrOperator = () => {
    if (!isCreator && !ctx.isOperator) {
      throw fail('WORK_ROLE', `only the creator (${cur.authorId}) or the operator can ${input.action} ${cur.id}`);
    }
  };

  switch (input.action) {
    case 'claim': {
      if (isCreator) throw fail('WORK_ROLE', 'a creator cannot claim their own work');
      if (cur.state === 'claimed') {
        if (!leaseExpired(s, row, now)) throw wrongState(`it is claimed by ${cur.assigneeId} until ${cur.leaseUntil}`);
      } else if (cur.state !== 'open') {
        throw wrongState(`it is ${cur.state}; only open work or an expired claim can be claimed`);
      }
      next.state = 'claimed';
      next.assigneeId = caller;
      next.leaseUntil = new Date(now + input.leaseMinutes * MS_PER_MINUTE).toISOString();
      break;
    }
    case 'renew': {
      requireClaimedAssignee();
      if (leaseExpired(s, row, now)) throw wrongState(`the lease expired at ${cur.leaseUntil}; claim the work again`);
      next.leaseUntil = new Date(s.rows.leaseUntilMs.at(row) + input.leaseMinutes * MS_PER_MINUTE).toISOString();
      break;
    }
    case 'release': {
      requireClaimedAssignee();
      next.state = 'open';
      next.assigneeId = null;
      next.leaseUntil = null;
      break;
    }
    case 'submit': {
      requireClaimedAssignee();
      next.state = 'submitted';
      next.leaseUntil = null;
      next.result = { authorId: caller, content: input.content, sources: [...input.sources], created: nowIso };
      next.review = null;
      break;
    }
    case 'review': {
      requireCreatorOrOperator();
      if (cur.state !== 'submitted') throw wrongState(`it is ${cur.state}; only submitted work can be reviewed`);
      if (cur.result !== null && caller === cur.result.authorId) {
        throw fail('WORK_ROLE', 'an agent cannot review its own result');
      }
      next.review = { authorId: caller, decision: input.decision, feedback: input.feedback, created: nowIso };
      if (input.decision === 'accept') {
        next.state = 'completed';
      } else {
        next.state = 'open';
        next.assigneeId = null;
        next.result = null;
      }
      next.leaseUntil = null;
      break;
    }
    case 'cancel': {
      requireCreatorOrOperator();
      // Every unfinished state (open, claimed, submitted) may be cancelled; closed work was refused above.
      next.state = 'cancelled';
      next.assigneeId = null;
      next.leaseUntil = null;
      break;
    }
  }
  checkedSnapshotJson(next);
  return { payload: { item: next, request, authorId: caller, clientId: input.clientId } };
}

// ---- apply ----

/**
 * Applies `work.create` and `work.action`; returns false for other types. Emits one work-feed
 * event per revision and, for a create with a new topic, the topic's discussion event.
 * Throws Error (a broken invariant, stops replay) when an action names an unknown item or skips
 * a revision.
 */
export function applyWork(s: WorkBoardState, forum: ForumState, feeds: FeedsState, record: LogRecord): boolean {
  switch (record.type) {
    case 'work.create': {
      const p = record.payload as WorkCreatePayload;
      if (p.topic) indexTopic(forum, feeds, p.topic, record);
      const item = p.item;
      const row = s.rows.seq.length;
      if (item.sequence !== row + 1 || item.revision !== 1 || workRowOf(s, item.id) !== undefined) {
        throw new Error(`work.create at seq ${record.seq}: item ${item.id} sequence ${item.sequence} revision ${item.revision} does not follow ${row}`);
      }
      const state = stateCode(item, record.seq);
      const r = s.rows;
      r.seq.push(record.seq);
      r.author.push(nameId(s, item.authorId));
      r.topic.push(nameId(s, item.topicId));
      r.tags.push(tagListId(s, item.tags));
      r.state.push(state);
      r.assignee.push(item.assigneeId === null ? 0 : nameId(s, item.assigneeId) + 1);
      r.revision.push(1);
      r.leaseUntilMs.push(item.leaseUntil === null ? NaN : Date.parse(item.leaseUntil));
      r.lastRev.push(s.revs.seq.length);
      s.revs.seq.push(record.seq);
      s.revs.prev.push(0);
      if (!idHasSeq(item.id, 'wk', record.seq)) {
        s.otherIds.set(item.id, row);
        s.otherIdOf.set(row, item.id);
      }
      s.byClientId.add(clientHash(p.authorId, p.clientId), record.seq);
      // Counted conservatively: a clientId a client chose with the erased prefix counts too.
      if (p.clientId.startsWith(ERASED_CLIENT_ID_PREFIX)) s.erasedClientRows++;
      addWorkEvent(feeds, record.seq);
      return true;
    }
    case 'work.action': {
      const p = record.payload as WorkActionPayload;
      const item = p.item;
      const row = workRowOf(s, item.id);
      if (row === undefined || item.revision !== s.rows.revision.at(row) + 1) {
        throw new Error(`work.action at seq ${record.seq}: ${item.id} revision ${item.revision} does not follow the current revision`);
      }
      // The current revision's fields are updated in place.
      const r = s.rows;
      r.state.set(row, stateCode(item, record.seq));
      r.assignee.set(row, item.assigneeId === null ? 0 : nameId(s, item.assigneeId) + 1);
      r.revision.set(row, item.revision);
      r.leaseUntilMs.set(row, item.leaseUntil === null ? NaN : Date.parse(item.leaseUntil));
      s.revs.seq.push(record.seq);
      s.revs.prev.push(r.lastRev.at(row) + 1);
      r.lastRev.set(row, s.revs.seq.length - 1);
      s.byClientId.add(clientHash(p.authorId, p.clientId), record.seq);
      // Counted conservatively: a clientId a client chose with the erased prefix counts too.
      if (p.clientId.startsWith(ERASED_CLIENT_ID_PREFIX)) s.erasedClientRows++;
      addWorkEvent(feeds, record.seq);
      return true;
    }
    default:
      return false;
  }
}

/**
 * Empties the tags of work item `itemId` (its `work.create` record was erased, issue 34): the
 * filter column then holds what a replay of the erased record builds. No-op for an unknown item.
 */
export function eraseWorkTags(s: WorkBoardState, itemId: string): void {
  const row = workRowOf(s, itemId);
  if (row !== undefined) s.rows.tags.set(row, tagListId(s, []));
}

/**
 * The tag lists the rows use, numbered by first use in row order, and the rows' column renumbered:
 * exactly what a replay interns, so a list only erased items used is not packed (issue 34).
 */
function usedTagLists(s: WorkBoardState): { lists: Array<readonly string[]>; column: U32List } {
  const renumber = new Map<number, number>();
  const lists: Array<readonly string[]> = [];
  const column = new U32List(Math.max(16, s.rows.tags.length));
  for (let row = 0; row < s.rows.tags.length; row++) {
    const old = s.rows.tags.at(row);
    let id = renumber.get(old);
    if (id === undefined) {
      id = lists.length;
      renumber.set(old, id);
      lists.push(s.tagLists[old]!);
    }
    column.push(id);
  }
  return { lists, column };
}

// ---- snapshot ----

/** The number of `item.state` in the state column. Throws Error for a state part 3 does not name (a damaged or foreign log). */
function stateCode(item: WorkItem, seq: number): number {
  const code = WORK_STATES.indexOf(item.state);
  if (code < 0) throw new Error(`work record at seq ${seq}: item ${item.id} has unknown state ${JSON.stringify(item.state)}`);
  return code;
}

/** The work board as a state snapshot keeps it: each column an array of its own (by index), the receipts table. */
export interface PackedWork {
  rows: { seq: number; author: number; topic: number; tags: number; state: number; assignee: number; revision: number; leaseUntilMs: number; lastRev: number };
  revs: { seq: number; prev: number };
  names: string[];
  tagLists: Array<readonly string[]>;
  otherIds: Array<[string, number]>;
  byClientId: PackedTable;
  /** WorkBoardState.erasedClientRows; absent in a snapshot written before issue 39 (read as 1: unknown). */
  erasedClientRows?: number;
}

/** Packs the work board; its arrays go to `arrays`. */
export function packWork(s: WorkBoardState, arrays: PackedArrays): PackedWork {
  const r = s.rows;
  const tags = usedTagLists(s);
  return {
    rows: {
      seq: arrays.putList(r.seq),
      author: arrays.putList(r.author),
      topic: arrays.putList(r.topic),
      tags: arrays.putList(tags.column),
      state: arrays.putList(r.state),
      assignee: arrays.putList(r.assignee),
      revision: arrays.putList(r.revision),
      leaseUntilMs: arrays.put(r.leaseUntilMs.toU32()),
      lastRev: arrays.putList(r.lastRev),
    },
    revs: { seq: arrays.putList(s.revs.seq), prev: arrays.putList(s.revs.prev) },
    names: s.names,
    tagLists: tags.lists,
    otherIds: [...s.otherIds],
    byClientId: packTable(s.byClientId, arrays),
    erasedClientRows: s.erasedClientRows,
  };
}

/**
 * Fills the empty board `s` from `p`, as replaying the log would have built it. Throws Error for
 * columns of unequal lengths or a state number part 3 does not name (damaged data; the caller then
 * replays the log).
 */
export function unpackWork(s: WorkBoardState, p: PackedWork, arrays: PackedArrays): void {
  const rows: WorkRows = {
    seq: arrays.takeList(p.rows.seq),
    author: arrays.takeList(p.rows.author),
    topic: arrays.takeList(p.rows.topic),
    tags: arrays.takeList(p.rows.tags),
    state: arrays.takeList(p.rows.state),
    assignee: arrays.takeList(p.rows.assignee),
    revision: arrays.takeList(p.rows.revision),
    leaseUntilMs: F64List.fromU32(arrays.take(p.rows.leaseUntilMs)),
    lastRev: arrays.takeList(p.rows.lastRev),
  };
  const revs: WorkRevisions = { seq: arrays.takeList(p.revs.seq), prev: arrays.takeList(p.revs.prev) };
  const n = rows.seq.length;
  if (Object.values(rows).some((c: { length: number }) => c.length !== n) || revs.prev.length !== revs.seq.length || !Array.isArray(p.names) || !Array.isArray(p.tagLists)) {
    throw new Error('damaged work board');
  }
  for (let row = 0; row < n; row++) if (rows.state.at(row) >= WORK_STATES.length) throw new Error('damaged work board');
  s.rows = rows;
  s.revs = revs;
  s.names = p.names;
  s.nameIds = new Map(p.names.map((name, i) => [name, i]));
  s.tagLists = p.tagLists.map((tags) => Object.freeze([...tags]));
  s.tagListIds = new Map(s.tagLists.map((tags, i) => [JSON.stringify(tags), i]));
  s.otherIds = new Map(p.otherIds);
  s.otherIdOf = new Map(p.otherIds.map(([id, row]) => [row, id]));
  s.byClientId = unpackTable(p.byClientId, arrays);
  s.erasedClientRows = p.erasedClientRows ?? 1;
}

// ---- queries ----

/** Validated GET /api/work query (part 4). */
export interface WorkListQuery {
  after: number;
  limit: number;
  id?: string;
  state?: WorkItemState;
  tag?: string;
  q?: string;
  authorId?: string;
  assigneeId?: string;
  available?: boolean;
}

/**
 * One WorkList page as JSON (part 2): items with sequence > `after` matching every filter, in
 * ascending creation sequence, at most `limit`. nextAfter is the last returned sequence (or
 * `after` when none); hasMore is true when another matching item follows it.
 * Input: the query, now (ms, for lease expiry) and the write-stop flag (for `available`).
 */
export async function listWorkJson(s: WorkBoardState, query: WorkListQuery, ctx: { nowMs: number; writeStop: boolean; reader: Reader }): Promise<string> {
  const lq = query.q !== undefined && query.q !== '' ? query.q.toLowerCase() : undefined;
  const r = s.rows;
  // Filters compare column numbers: an id the board never saw matches no item.
  const stateNo = query.state === undefined ? undefined : WORK_STATES.indexOf(query.state);
  const authorNo = query.authorId === undefined ? undefined : (s.nameIds.get(query.authorId) ?? -1);
  const assigneeNo = query.assigneeId === undefined ? undefined : (s.nameIds.get(query.assigneeId) ?? -2) + 1;
  const tag = query.tag;
  /** Tags are participant text: a hidden item's are matched only for operators (issue 34). */
  const tagsVisible = (row: WorkRow): boolean => {
    if (ctx.reader.operator || ctx.reader.mod.hidden.size === 0) return true;
    return workStatusOf(s, ctx.reader, row, s.revs.seq.at(r.lastRev.at(row))) === VISIBLE;
  };
  const matches = (row: WorkRow): boolean => {
    if (stateNo !== undefined && r.state.at(row) !== stateNo) return false;
    if (authorNo !== undefined && r.author.at(row) !== authorNo) return false;
    if (assigneeNo !== undefined && r.assignee.at(row) !== assigneeNo) return false;
    if (tag !== undefined && (!s.tagLists[r.tags.at(row)]!.includes(tag) || !tagsVisible(row))) return false;
    if (query.available !== undefined && isAvailable(s, row, ctx.nowMs, ctx.writeStop) !== query.available) return false;
    return true;
  };
  /** `q`: title, description or acceptanceCriteria of the current revision, each on its own. */
  const matchesText = (it: WorkItem): boolean =>
    lq === undefined || it.title.toLowerCase().includes(lq) || it.description.toLowerCase().includes(lq) || it.acceptanceCriteria.toLowerCase().includes(lq);
  // Candidates: rows start..end-1 (one item for `id`).
  let start: number;
  let end: number;
  if (query.id !== undefined) {
    const row = workRowOf(s, query.id);
    start = row !== undefined && row + 1 > query.after ? row : 0;
    end = row !== undefined && row + 1 > query.after ? row + 1 : 0;
  } else {
    start = Math.min(query.after, r.seq.length);
    end = r.seq.length;
  }
  const out: string[] = [];
  let nextAfter = query.after;
  let hasMore = false;
  // Without q only the page's items are read back; with q each candidate is, in slices.
  const slice = lq === undefined ? null : await SliceTimer.start();
  for (let row = start; row < end; row++) {
    if (!matches(row)) continue;
    if (out.length === query.limit && lq === undefined) {
      hasMore = true;
      break;
    }
    const seq = s.revs.seq.at(r.lastRev.at(row));
    const item = toWorkItem(workPayloadOf(s, seq).payload.item);
    const status = workStatusOf(s, ctx.reader, row, seq);
    // Hidden text is never matched for a reader who cannot see it (issue 25).
    if (lq !== undefined && status !== VISIBLE && !(status === HIDDEN && ctx.reader.operator)) {
      if (slice !== null && slice.due()) await slice.next();
      continue;
    }
    if (!matchesText(item)) {
      if (slice !== null && slice.due()) await slice.next();
      continue;
    }
    if (out.length === query.limit) {
      hasMore = true;
      break;
    }
    out.push(workItemView(ctx.reader, item, status));
    nextAfter = row + 1;
  }
  return `{"untrusted":true,"items":[${out.join(',')}],"nextAfter":${nextAfter},"hasMore":${hasMore}}`;
}

/** Validated GET /api/work/history query (part 4). */
export interface WorkHistoryQuery {
  workItemId: string;
  afterRevision: number;
  limit: number;
}

/**
 * One WorkHistory page as JSON (part 2): revisions > afterRevision in ascending order, at most
 * `limit`. Throws 404 for an unknown work item.
 */
export function workHistoryJson(s: WorkBoardState, query: WorkHistoryQuery, reader: Reader): string {
  const row = workRowOf(s, query.workItemId);
  if (row === undefined) throw notFound(`no work item with id "${query.workItemId}" (workItemId)`);
  const seqs = workRevisionSeqs(s, row);
  const count = seqs.length;
  const start = Math.min(query.afterRevision, count);
  const end = Math.min(start + query.limit, count);
  const page: string[] = [];
  for (let r = start + 1; r <= end; r++) page.push(workSeqJson(s, row, seqs[r - 1]!, reader));
  const nextAfterRevision = page.length > 0 ? end : query.afterRevision;
  return `{"untrusted":true,"revisions":[${page.join(',')}],"nextAfterRevision":${nextAfterRevision},"hasMore":${end < count}}`;
}
