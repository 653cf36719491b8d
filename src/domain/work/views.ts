/**
 * Work board views and queries (parts 2, 4 "Work"; issues 25, 34): what a reader sees of the
 * board. A revision is read back from its record (work.ts) and shown through moderation — as
 * committed, hidden or erased, with a purged agent's result or review emptied — as one WorkItem,
 * a receipt, a WorkList page (GET /api/work) or a WorkHistory page (GET /api/work/history).
 * Reading is a rendering concern only: the decisions (decide.ts) read the stored records. What an
 * erasure keeps of a work record (`redactWorkPayload`) is the same emptying as the placeholder's.
 */
import { notFound } from '../../errors.js';
import type { Topic } from '../forum/forum.js';
import { SliceTimer } from '../slices.js';
import { agentKey, ERASED, erasedClientId, HIDDEN, statusOf, VISIBLE, type ModerationStatus, type Reader } from '../moderation/moderation.js';
import { emptyText, RECORD_TYPES } from '../record-types.js';
import {
  isAvailable,
  toWorkItem,
  WORK_STATES,
  workIdOf,
  workPayloadOf,
  workRevisionSeqs,
  workRowOf,
  type WorkBoardState,
  type WorkItem,
  type WorkItemState,
  type WorkReceipt,
  type WorkRequest,
  type WorkRow,
} from './work.js';

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
 * A receipt's response and request as `reader` sees them (issue 25): the committed snapshot
 * through `workItemView`, and the request with its text emptied when the reader may not see it.
 */
export function workReceiptView(s: WorkBoardState, r: WorkReceipt, reader: Reader): { responseJson: string; requestJson: string } {
  const status = workStatusOf(s, reader, workRowOf(s, r.response.id)!, r.seq);
  const textShown = status === VISIBLE || (status === HIDDEN && reader.operator);
  const request = textShown ? r.request : (redactWorkPayload({ item: r.response, request: r.request }).request as WorkRequest);
  return { responseJson: workItemView(reader, r.response, status), requestJson: JSON.stringify(request) };
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
