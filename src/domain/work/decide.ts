/**
 * Work board decisions (parts 3, 4 "Work"): a validated create or action request, checked against
 * the board's current state, becomes the complete next revision — the payload of the one
 * `work.create` or `work.action` record that commits it — or an identical retry's receipt, or a
 * refusal with its status. Decisions only read the board (work.ts); apply.ts applies the record.
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
import { DEFAULT_ROOM_ID, MS_PER_MINUTE, WORK_SNAPSHOT_BYTES_MAX } from '../../constants.js';
import { fail, notFound } from '../../errors.js';
import type { ForumState, Topic } from '../forum/forum.js';
import { makeId } from '../ids.js';
import type { DecisionContext } from '../decision.js';
import {
  leaseExpired,
  normalizeActionRequest,
  normalizeCreateRequest,
  toWorkItem,
  workReceiptOf,
  workRevision,
  workRowOf,
  type WorkActionInput,
  type WorkActionPayload,
  type WorkBoardState,
  type WorkCreateInput,
  type WorkCreatePayload,
  type WorkItem,
  type WorkItemState,
  type WorkReceipt,
  type WorkRow,
} from './work.js';

/** JSON of a snapshot, checked against WORK_SNAPSHOT_BYTES_MAX (part 8); throws 400 `WORK_SNAPSHOT_TOO_LARGE` above it. */
function checkedSnapshotJson(item: WorkItem): string {
  const json = JSON.stringify(item);
  const sizeBytes = Buffer.byteLength(json, 'utf8');
  if (sizeBytes > WORK_SNAPSHOT_BYTES_MAX) {
    throw fail('WORK_SNAPSHOT_TOO_LARGE', `the resulting work item snapshot would be ${sizeBytes} bytes of serialized JSON; the limit is ${WORK_SNAPSHOT_BYTES_MAX} UTF-8 bytes (part 8); shorten the text`);
  }
  return json;
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
      ? { id: makeId('tp', ctx.position), roomId: DEFAULT_ROOM_ID, authorId: ctx.authorId, title: input.title, created }
      : null;
  const item: WorkItem = {
    id: makeId('wk', ctx.position),
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
  const next = nextRevision(s, row, cur, input, ctx);
  checkedSnapshotJson(next);
  return { payload: { item: next, request, authorId: ctx.authorId, clientId: input.clientId } };
}

/**
 * The checks an action on `cur` shares: `wrongState` builds the 409 WORK_STATE error naming the
 * action and the item; `requireClaimedAssignee` throws 409 unless the item is claimed, then 403
 * WORK_ROLE unless the caller is its assignee; `requireCreatorOrOperator` throws 403 WORK_ROLE
 * unless the caller created the item or is the operator.
 */
function actionChecks(cur: WorkItem, action: WorkActionInput['action'], ctx: DecisionContext) {
  const wrongState = (what: string) => fail('WORK_STATE', `cannot ${action} ${cur.id}: ${what}`);
  const requireClaimedAssignee = (): void => {
    if (cur.state !== 'claimed') throw wrongState(`it is ${cur.state}, not claimed`);
    if (ctx.authorId !== cur.assigneeId) throw fail('WORK_ROLE', `only the assignee (${cur.assigneeId}) can ${action} ${cur.id}`);
  };
  const requireCreatorOrOperator = (): void => {
    if (ctx.authorId !== cur.authorId && !ctx.isOperator) {
      throw fail('WORK_ROLE', `only the creator (${cur.authorId}) or the operator can ${action} ${cur.id}`);
    }
  };
  return { wrongState, requireClaimedAssignee, requireCreatorOrOperator };
}

/**
 * The revision `input` makes of `cur`, the current revision of the unclosed item in row `row`:
 * part 3's transition table and its rules, in the check order of the module comment (role 403,
 * then state 409; for renew, release and submit state first). Throws 403 WORK_ROLE, 409 WORK_STATE.
 */
function nextRevision(s: WorkBoardState, row: WorkRow, cur: WorkItem, input: WorkActionInput, ctx: DecisionContext): WorkItem {
  const now = ctx.nowMs;
  const nowIso = new Date(now).toISOString();
  const caller = ctx.authorId;
  const next: WorkItem = { ...toWorkItem(cur), revision: cur.revision + 1, updated: nowIso, updatedBy: caller };
  const { wrongState, requireClaimedAssignee, requireCreatorOrOperator } = actionChecks(cur, input.action, ctx);
  switch (input.action) {
    case 'claim': {
      if (caller === cur.authorId) throw fail('WORK_ROLE', 'a creator cannot claim their own work');
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
  return next;
}
