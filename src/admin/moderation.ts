/**
 * Moderation actions (issue 25), shared by the operator-only REST endpoints
 * (src/api/moderation/routes.ts) and the CLI (`moderation hide|unhide|erase|purge|flags`, through
 * the admin channel or on a stopped data folder): one record per action, durable before it is
 * answered, one `admin_action` log line naming the operator, the action and the target (never the
 * content, never a token), and for an erasure the store's byte removal once the record is durable.
 */
import type { App } from '../app.js';
import { logger } from '../logger.js';
import { decideModeration, flaggedRecords, requireOpenFlag, targetErased, type ModerationInput } from '../domain/moderation/decide.js';
import {
  flagView,
  MODERATION_EVENT_TYPE,
  type FlagEntry,
  type ModerationAction,
  type ModerationEventPayload,
  type ModerationPayload,
  type ModerationTarget,
} from '../domain/moderation/moderation.js';
import type { AdminAction } from '../domain/admin/actions.js';
import { FLAG_EXCERPT_CHARS_MAX } from '../constants.js';
import type { LogRecord } from '../store/log.js';
import type { RecordType } from '../domain/record-types.js';

/**
 * The operator id recorded for actions taken with the CLI without `--as` or FORUM_OPERATOR_TOKEN
 * (it authenticates by file access, not a token; issue 38).
 */
export const CLI_OPERATOR_ID = 'cli';

/**
 * Performs one moderation action as `operatorId`. Output: the action as listed by
 * GET /api/moderation/actions. Throws what `decideModeration` throws (400, 404, 409).
 */
export async function moderate(app: App, operatorId: string, input: ModerationInput): Promise<ModerationAction> {
  // Every record an erasure may name must be durable and located, so its stored hash is known.
  await app.log.sync();
  const { type, payload } = decideModeration(app.state, input, { operatorId, hashOf: (seq) => app.records.storedHashOf(seq) });
  const record = commitAction(app, type, payload);
  await app.log.sync();
  logger.info('admin_action', `moderation: ${input.action} ${input.target.type} ${input.target.id} by ${operatorId}`, {
    operator: operatorId,
    action: `moderation.${input.action}`,
    target: input.target,
    seq: record.seq,
    ...(payload.targets === undefined ? {} : { erasedRecords: payload.targets.length }),
  });
  if (payload.targets !== undefined && payload.targets.length > 0) await app.eraseRecords(payload.targets);
  return app.state.moderation.actions[app.state.moderation.actions.length - 1]!;
}

/**
 * Appends one action: first one `moderation.event` record per discussion event (so each event
 * has a log position, and so a `seq`, of its own), then the action record, which names where its
 * events start (`eventsFrom`). All in one synchronous run: nothing else is appended in between,
 * and the events join the feed only when the action record is applied — a crash that keeps the
 * event records without the action leaves records that change nothing.
 * Output: the action record.
 */
function commitAction(app: App, type: RecordType, payload: ModerationPayload): LogRecord<ModerationPayload> {
  const timeMs = app.now();
  if (payload.events.length === 0) return app.commit<ModerationPayload>(type, payload, timeMs);
  const from = app.nextSeq();
  const of = from + payload.events.length;
  for (const target of payload.events) app.commit<ModerationEventPayload>(MODERATION_EVENT_TYPE, { of, target }, timeMs);
  const record = app.commit<ModerationPayload>(type, { ...payload, eventsFrom: from }, timeMs);
  if (record.seq !== of) throw new Error(`moderation record at seq ${record.seq}, expected ${of}: its events are not adjacent`);
  return record;
}

/**
 * Resolves an open flag: `hide` or `erase` performs that action on the flag's target (one
 * moderation record, which names the flag), `dismiss` appends `flag.resolve`. A flag whose
 * target is already erased (by another flag or a direct erasure) is resolved by any of the three
 * with a `flag.resolve` record naming the resolution asked for and no action (issue 51: hide and
 * erase used to answer 409 ALREADY_EXISTS while dismiss answered 200; there is nothing left to
 * hide or erase). Output: the flag and the action, if any (null: dismiss, or the content was
 * already erased). Throws 404 (unknown flag), 409 (already resolved), and what `moderate` throws.
 */
export async function resolveFlag(
  app: App,
  operatorId: string,
  input: { flagId: string; resolution: 'hide' | 'erase' | 'dismiss'; note: string },
): Promise<{ flag: Record<string, unknown>; action: ModerationAction | null }> {
  const f = requireOpenFlag(app.state, input.flagId);
  let action: ModerationAction | null = null;
  if (input.resolution === 'dismiss' || targetErased(app.state, f.flag.target)) {
    app.commit('flag.resolve', { flagId: f.flag.id, resolution: input.resolution, note: input.note, operatorId });
    await app.log.sync();
    const how = input.resolution === 'dismiss' ? 'dismissed' : `resolved (${input.resolution}; its content was already erased)`;
    logger.info('admin_action', `flag ${f.flag.id} ${how} by ${operatorId}`, { operator: operatorId, action: `flag.${input.resolution}`, target: f.flag.target, flagId: f.flag.id });
  } else {
    action = await moderate(app, operatorId, { action: input.resolution, target: f.flag.target, reason: input.note, flagId: f.flag.id });
  }
  return { flag: flagView(f), action };
}

/**
 * What a flag is about, for the operator deciding it (issue 38): the target's `kind`, its
 * `authorId` and an `excerpt` of its text (a message's content; a topic's title; a knowledge
 * item's or work item's title and text, latest revision) of at most FLAG_EXCERPT_CHARS_MAX
 * characters, `…` marking a cut. Erased content reads as its emptied placeholder; null when the
 * target is gone or is an agent (then `authorId` is the agent).
 */
export function flaggedContent(app: App, target: ModerationTarget): { kind: string; authorId: string | null; excerpt: string | null } {
  if (target.type === 'agent') return { kind: 'agent', authorId: target.id, excerpt: null };
  let seqs: number[];
  try {
    seqs = flaggedRecords(app.state, target);
  } catch {
    return { kind: target.type, authorId: null, excerpt: null };
  }
  const seq = seqs[seqs.length - 1];
  if (seq === undefined) return { kind: target.type, authorId: null, excerpt: null };
  let o = JSON.parse(app.state.feeds.records.read(seq).payloadJson) as Record<string, unknown> | null;
  // A work record holds the item (and, in work.create, its topic).
  if (o !== null && typeof o.item === 'object' && o.item !== null) o = o.item as Record<string, unknown>;
  if (o === null) return { kind: target.type, authorId: null, excerpt: null };
  const parts = [o.title, o.content, o.description].filter((v): v is string => typeof v === 'string' && v !== '');
  const text = parts.join(' — ').replace(/\s+/g, ' ').trim();
  const excerpt = text.length > FLAG_EXCERPT_CHARS_MAX ? `${text.slice(0, FLAG_EXCERPT_CHARS_MAX - 1)}…` : text;
  return { kind: target.type, authorId: typeof o.authorId === 'string' ? o.authorId : null, excerpt };
}

/** A flag as listed for operators: the flag, its state, and what was flagged (`flaggedContent` as `content`). */
function flagListing(app: App, f: FlagEntry): Record<string, unknown> {
  return { ...flagView(f), content: flaggedContent(app, f.flag.target) };
}

/** Flags by state, newest first, at most `limit`, each with what was flagged (`content`). */
export function listFlags(app: App, state: 'open' | 'resolved' | 'all', limit: number): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  const order = app.state.moderation.flagOrder;
  for (let i = order.length - 1; i >= 0 && out.length < limit; i--) {
    const f = order[i]!;
    if (state === 'all' || (state === 'open') === (f.resolution === null)) out.push(flagListing(app, f));
  }
  return out;
}

/** Moderation actions, newest first, at most `limit`. */
export function listActions(app: App, limit: number): ModerationAction[] {
  return app.state.moderation.actions.slice(-limit).reverse();
}

/**
 * One entry of the operator action log (GET /api/admin/actions, schema OperatorAction): the admin
 * record's shape (domain/admin/actions.ts), which moderation actions and flag dismissals take too
 * (`target` then `message msg_…`-style).
 */
export type OperatorAction = AdminAction;

/** A moderation action in the operator log's shape. */
function fromModeration(a: ModerationAction): OperatorAction {
  const t = a.target;
  const target = `${t.type} ${t.id}${t.revision === undefined ? '' : ` revision ${t.revision}`}`;
  return { seq: a.seq, action: `moderation.${a.action}`, operatorId: a.operatorId, target, ...(a.reason === '' ? {} : { reason: a.reason }), created: a.created };
}

/** An admin action in the operator log's shape. */
function fromAdmin(a: AdminAction): OperatorAction {
  return { ...a };
}

/**
 * Every admin and moderation action (issue 38 "the action log with who did what"), newest
 * first, at most `limit`; `operatorId` narrows it to one operator. Flag dismissals are listed as
 * `flags.dismiss` (a hide or erase that resolves a flag is its moderation action). Input: limit
 * ≥ 1. Output: entries merged by log seq.
 */
export function listOperatorActions(app: App, limit: number, operatorId?: string): OperatorAction[] {
  const admin = app.state.admin.actions;
  const mod = app.state.moderation.actions;
  const dismissed = app.state.moderation.flagOrder
    .filter((f) => f.resolution?.resolution === 'dismiss')
    .map((f): OperatorAction => ({
      seq: f.resolution!.seq,
      action: 'flags.dismiss',
      operatorId: f.resolution!.operatorId,
      target: `flag ${f.flag.id}`,
      ...(f.resolution!.note === '' ? {} : { reason: f.resolution!.note }),
      created: f.resolution!.resolved,
    }));
  const out: OperatorAction[] = [];
  let i = admin.length - 1;
  let j = mod.length - 1;
  dismissed.sort((a, b) => b.seq - a.seq);
  let k = 0;
  while (out.length < limit && (i >= 0 || j >= 0 || k < dismissed.length)) {
    const a = i >= 0 ? admin[i]!.seq : -1;
    const m = j >= 0 ? mod[j]!.seq : -1;
    const d = k < dismissed.length ? dismissed[k]!.seq : -1;
    let next: OperatorAction;
    if (a >= m && a >= d) next = fromAdmin(admin[i--]!);
    else if (m >= d) next = fromModeration(mod[j--]!);
    else next = dismissed[k++]!;
    if (operatorId === undefined || next.operatorId === operatorId) out.push(next);
  }
  return out;
}
