/**
 * Moderation actions (issue 25), shared by the operator-only REST endpoints
 * (src/api/moderation/routes.ts) and the CLI (`moderation hide|unhide|erase|purge|flags`, through
 * the admin channel or on a stopped data folder): one record per action, durable before it is
 * answered, one `admin_action` log line naming the operator, the action and the target (never the
 * content, never a token), and for an erasure the store's byte removal once the record is durable.
 */
import type { App } from '../app.js';
import { logger } from '../logger.js';
import { decideModeration, requireOpenFlag, type ModerationInput } from '../domain/moderation/decide.js';
import { flagView, MODERATION_EVENT_TYPE, type ModerationAction, type ModerationEventPayload, type ModerationPayload } from '../domain/moderation/moderation.js';
import type { LogRecord } from '../store/log.js';

/** The operator id recorded for actions taken with the CLI (it authenticates by file access, not a token). */
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
function commitAction(app: App, type: string, payload: ModerationPayload): LogRecord<ModerationPayload> {
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
 * moderation record, which names the flag), `dismiss` appends `flag.resolve`. Output: the flag
 * and the action, if any. Throws 404 (unknown flag), 409 (already resolved), and what
 * `moderate` throws.
 */
export async function resolveFlag(
  app: App,
  operatorId: string,
  input: { flagId: string; resolution: 'hide' | 'erase' | 'dismiss'; note: string },
): Promise<{ flag: Record<string, unknown>; action: ModerationAction | null }> {
  const f = requireOpenFlag(app.state, input.flagId);
  let action: ModerationAction | null = null;
  if (input.resolution === 'dismiss') {
    app.commit('flag.resolve', { flagId: f.flag.id, resolution: 'dismiss', note: input.note, operatorId });
    await app.log.sync();
    logger.info('admin_action', `flag ${f.flag.id} dismissed by ${operatorId}`, { operator: operatorId, action: 'flag.dismiss', target: f.flag.target, flagId: f.flag.id });
  } else {
    action = await moderate(app, operatorId, { action: input.resolution, target: f.flag.target, reason: input.note, flagId: f.flag.id });
  }
  return { flag: flagView(f), action };
}

/** Flags by state, newest first, at most `limit`. */
export function listFlags(app: App, state: 'open' | 'resolved' | 'all', limit: number): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  const order = app.state.moderation.flagOrder;
  for (let i = order.length - 1; i >= 0 && out.length < limit; i--) {
    const f = order[i]!;
    if (state === 'all' || (state === 'open') === (f.resolution === null)) out.push(flagView(f));
  }
  return out;
}

/** Moderation actions, newest first, at most `limit`. */
export function listActions(app: App, limit: number): ModerationAction[] {
  return app.state.moderation.actions.slice(-limit).reverse();
}
