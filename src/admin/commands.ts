/**
 * Operator commands (issue 2 "Operator CLI"). The same functions serve the admin channel of a
 * running server and the CLI working on a stopped data folder, so both paths behave alike.
 * Each command takes the open App and a JSON argument object and resolves to a JSON result
 * after its record is durable. Errors are ServiceErrors (rendered by the channel and the CLI).
 */
import type { App } from '../app.js';
import { agentView, decideOperator, decideRotateToken, hashToken, requireAgent } from '../domain/agents/agents.js';
import { ADMIN_ACTION_TYPE, type AdminActionPayload } from '../domain/admin/actions.js';
import { writesStopped, type WriteStopPayload } from '../domain/admin/settings.js';
import { unauthorized } from '../http/errors.js';
import { decideRoom, decideRoomUpdate } from '../domain/forum/forum.js';
import { decideOpportunities, type OpportunityBrief } from '../domain/opportunities/opportunities.js';
import { workRowOf } from '../domain/work/work.js';
import { ServiceError, invalid } from '../errors.js';
import { bodyValidator } from '../http/validate.js';
import { readFileSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { OffsetClock } from '../clock.js';
import { ADMIN_REASON_LENGTH_MAX, AGENT_NAME_LENGTH_MAX, PAGE_LIMIT_MAX, MODERATION_REASON_LENGTH_MAX, ROOM_DESCRIPTION_LENGTH_MAX, ROOM_NAME_LENGTH_MAX } from '../constants.js';
import { recordAdminAction } from './action-log.js';
import { CLI_OPERATOR_ID, listActions, listFlags, listOperatorActions, moderate, resolveFlag } from './moderation.js';
import type { ModerationTarget } from '../domain/moderation/moderation.js';
import type { RecordType } from '../domain/record-types.js';

/**
 * An operator command: resolves to its JSON result once its record (if any) is durable.
 * `operatorId` is who runs it (issue 38): it lands in the command's record (src/domain/admin/actions.ts).
 */
export type Command = (app: App, args: Record<string, unknown>, operatorId: string) => Promise<unknown>;

/**
 * Who runs a command from the admin channel or the CLI (issue 38): `args.as` names an existing
 * operator (`--as ID`), `args.operatorToken` is an operator's token (FORUM_OPERATOR_TOKEN), and
 * with neither the name is CLI_OPERATOR_ID (`cli`): whoever can open the data folder. Both
 * arguments are removed from `args`. Throws 400 for both at once or an `--as` that names no
 * operator, 401 for a token that is no enabled operator's or an `--as` that names a disabled
 * operator (issue 51).
 */
export function operatorOfArgs(app: App, args: Record<string, unknown>): string {
  const as = args.as;
  const token = args.operatorToken;
  delete args.as;
  delete args.operatorToken;
  if (as !== undefined && token !== undefined) throw invalid('give either --as or FORUM_OPERATOR_TOKEN, not both');
  if (typeof token === 'string' && token !== '') {
    const e = app.state.agents.byTokenHash.get(hashToken(token));
    if (e === undefined || e.profile.role !== 'operator' || e.disabled) throw unauthorized('FORUM_OPERATOR_TOKEN is not the token of an enabled operator (operator create prints one)');
    return e.profile.id;
  }
  if (as === undefined) return CLI_OPERATOR_ID;
  if (typeof as !== 'string' || as === '') throw invalid('--as needs an operator id');
  const e = app.state.agents.byId.get(as);
  if (e === undefined || e.profile.role !== 'operator') {
    const known = app.state.agents.order.filter((x) => x.profile.role === 'operator').map((x) => x.profile.id);
    throw invalid(`--as ${JSON.stringify(as)} is not an operator id; operators: ${known.length > 0 ? known.join(', ') : 'none yet (operator create --name NAME)'}`);
  }
  // Refused as that operator's FORUM_OPERATOR_TOKEN is (issue 51): a disabled operator takes no
  // action under its name, whichever way it is named.
  if (e.disabled) throw unauthorized(`--as ${JSON.stringify(as)} is a disabled operator; it cannot act until enabled (agents enable ${as})`);
  return as;
}

/**
 * A string argument of a command. `label` names it in errors (default `--<name>`; positional
 * arguments pass their usage, e.g. `ID (agents disable ID)`). An optional argument may be empty.
 * Throws 400 naming the argument and the rule.
 */
function str(
  args: Record<string, unknown>,
  name: string,
  opts: { optional?: boolean; pattern?: RegExp; max?: number; label?: string } = {},
): string {
  const v = args[name];
  const label = opts.label ?? `--${name}`;
  if (opts.optional && (v === undefined || v === '')) return '';
  if (typeof v !== 'string' || v.trim() === '') throw invalid(`${label} is required`);
  if (opts.max !== undefined && v.length > opts.max) throw invalid(`${label} must be at most ${opts.max} characters`);
  if (opts.pattern && !opts.pattern.test(v)) throw invalid(`${label} must match ${opts.pattern.source}`);
  return v;
}

const ID = /^[a-zA-Z0-9_-]{1,120}$/;

async function commit(app: App, type: RecordType, payload: unknown): Promise<void> {
  app.commit(type, payload);
  await app.log.sync();
}

/**
 * Commits a record whose payload is public as stored (a room, an operator's registration) and,
 * in the same synchronous run and fsync, the `admin.action` record naming who did it
 * (src/domain/admin/actions.ts explains why these two need a record of their own).
 */
async function commitWithAction(app: App, type: RecordType, payload: unknown, action: AdminActionPayload): Promise<void> {
  app.commit(type, payload);
  app.commit<AdminActionPayload>(ADMIN_ACTION_TYPE, action);
  await app.log.sync();
}

/** An optional reason (`--reason`), trimmed; '' when none. Throws 400 above ADMIN_REASON_LENGTH_MAX. */
function reasonOf(args: Record<string, unknown>): string {
  return str(args, 'reason', { optional: true, max: ADMIN_REASON_LENGTH_MAX }).trim();
}

/** An ISO 8601 date-time with a time zone, its date and time fields captured. */
const UNTIL_FORM = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})$/;

/**
 * `--until` (REST: `until`): when a write stop ends by itself, an ISO 8601 date-time after
 * `nowMs`; undefined when not given. Its date and time must exist: Date.parse rolls a day past the
 * month's end over into the next month (2099-02-30 would be stored as 2099-03-02; issue 51), so
 * month, day (leap years counted), hour, minute and second are checked first. Output: the time as
 * ISO 8601 (UTC). Throws 400 for another form, a date or time that does not exist, or a past time.
 */
function untilOf(args: Record<string, unknown>, nowMs: number): string | undefined {
  const v = str(args, 'until', { optional: true });
  if (v === '') return undefined;
  const m = UNTIL_FORM.exec(v);
  if (m === null) throw invalid(`--until must be an ISO 8601 date-time with a time zone (e.g. 2026-01-01T12:00:00Z), got ${JSON.stringify(v)}`);
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map((f) => (f === undefined ? 0 : Number(f))) as [number, number, number, number, number, number];
  const daysInMonth = month >= 1 && month <= 12 ? new Date(Date.UTC(year, month, 0)).getUTCDate() : 0;
  const wrong =
    daysInMonth === 0
      ? `month ${month} is not 01-12`
      : day < 1 || day > daysInMonth
        ? `day ${day} is not within ${m[1]}-${m[2]}, which has ${daysInMonth} days`
        : hour > 23 || minute > 59 || second > 59
          ? 'the time is not within 00:00:00-23:59:59'
          : null;
  const ms = wrong === null ? Date.parse(v) : NaN;
  if (Number.isNaN(ms)) throw invalid(`--until ${JSON.stringify(v)} is not a date-time that exists: ${wrong ?? 'its time zone offset is out of range'}`);
  if (ms <= nowMs) throw invalid(`--until ${v} is not in the future (now: ${new Date(nowMs).toISOString()})`);
  return new Date(ms).toISOString();
}

/**
 * Reads and validates an `opportunities set` file: a JSON array matching schema
 * OpportunityBriefs. Input: an absolute path (the CLI resolves --file against its own working
 * directory, since the server's may differ). Throws 400 naming the file and the rule.
 */
function readBriefsFile(file: unknown): OpportunityBrief[] {
  if (typeof file !== 'string' || file === '') throw invalid('--file is required: a JSON array of at most 3 briefs');
  if (!isAbsolute(file)) throw invalid(`--file must be an absolute path, got ${JSON.stringify(file)}`);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw invalid(`cannot read ${file}: ${(err as Error).message}`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw invalid(`${file} is not valid JSON: ${(err as Error).message}`);
  }
  try {
    return validateBriefs(data) as OpportunityBrief[];
  } catch (err) {
    throw invalid(`${file}: ${(err as Error).message} (schema OpportunityBriefs)`);
  }
}

const validateBriefs = bodyValidator('OpportunityBriefs');

const TARGET_TYPES = ['message', 'topic', 'knowledge', 'work', 'agent'] as const;

/**
 * The target of a `moderation` command: `--type TYPE` and `ID` (and `--revision N` for one
 * knowledge revision). `agent` is implied for purge. Throws 400 naming the argument.
 */
function moderationTarget(args: Record<string, unknown>, verb: string): ModerationTarget {
  const id = str(args, 'id', { pattern: ID, label: `ID (moderation ${verb} ID)` });
  const type = verb === 'purge' ? 'agent' : str(args, 'type', { label: '--type (message, topic, knowledge, work or agent)' });
  if (!(TARGET_TYPES as readonly string[]).includes(type)) throw invalid(`--type must be one of ${TARGET_TYPES.join(', ')}, got ${JSON.stringify(type)}`);
  const target: ModerationTarget = { type: type as ModerationTarget['type'], id };
  if (args.revision !== undefined) {
    const n = Number(args.revision);
    if (!Number.isInteger(n) || n < 1) throw invalid('--revision must be a positive integer');
    target.revision = n;
  }
  return target;
}

/** A `moderation hide|unhide|erase|purge` command (src/admin/moderation.ts does the work). */
function moderationCommand(verb: 'hide' | 'unhide' | 'erase' | 'purge'): Command {
  return async (app, args, operatorId) => {
    const mode = args.mode === undefined ? undefined : str(args, 'mode');
    if (mode !== undefined && mode !== 'hide' && mode !== 'erase') throw invalid('--mode must be hide or erase');
    return moderate(app, operatorId, {
      action: verb,
      target: moderationTarget(args, verb),
      reason: str(args, 'reason', { max: MODERATION_REASON_LENGTH_MAX }).trim(),
      ...(mode === undefined ? {} : { mode }),
    });
  };
}

/**
 * Commands that only read (a listing, the position a backup copies): they change nothing, so
 * they write no `admin_action` line. Every other command in the table is an admin action.
 */
const READ_ONLY_COMMANDS: ReadonlySet<string> = new Set(['actions.list', 'agents.list', 'replication.status', 'archive.position', 'moderation.actions', 'moderation.flags']);

/**
 * Commands that write their own `admin_action` line naming the operator (src/admin/moderation.ts,
 * shared with the operator-only REST routes): wrapping them again would log each action twice.
 */
const SELF_LOGGING_COMMANDS: ReadonlySet<string> = new Set(['moderation.hide', 'moderation.unhide', 'moderation.erase', 'moderation.purge', 'moderation.resolve']);

/**
 * Wraps every command of a table (except READ_ONLY_COMMANDS) in `recordAdminAction`, so the
 * admin channel and the CLI on a stopped folder, which both run commands from `commands`, log
 * each admin action once. The target is the `id` argument, else an `id` in the result.
 */
function withAdminActionLog(table: Record<string, Command>): Record<string, Command> {
  const idOf = (v: unknown): string | undefined => {
    const id = (v as { id?: unknown } | null)?.id;
    return typeof id === 'string' && id !== '' ? id : undefined;
  };
  return Object.fromEntries(
    Object.entries(table).map(([name, command]): [string, Command] => [
      name,
      READ_ONLY_COMMANDS.has(name) || SELF_LOGGING_COMMANDS.has(name)
        ? command
        : (app, args, operatorId) => recordAdminAction(name, idOf(args), () => command(app, args, operatorId), idOf, operatorId),
    ]),
  );
}

/**
 * The command table; keys are `<group>.<verb>` as typed on the CLI. Errors (ServiceError): 400 for a
 * missing or invalid argument (naming it and the rule), 404 for an unknown agent id, 409 for a
 * room id that exists already. Each admin action writes one `admin_action` line (withAdminActionLog).
 */
export const commands: Record<string, Command> = withAdminActionLog({
  'operator.create': async (app, args, operatorId) => {
    const name = str(args, 'name', { max: AGENT_NAME_LENGTH_MAX });
    const { payload, token } = decideOperator(name, { position: app.nextPosition(), created: app.nowIso() });
    await commitWithAction(app, 'agent.register', payload, { action: 'operator.create', target: payload.id, operatorId });
    return { id: payload.id, token };
  },
  'rooms.create': async (app, args, operatorId) => {
    const room = decideRoom(
      app.state.forum,
      {
        id: str(args, 'id', { pattern: ID }),
        name: str(args, 'name', { max: ROOM_NAME_LENGTH_MAX }),
        description: str(args, 'description', { optional: true, max: ROOM_DESCRIPTION_LENGTH_MAX }),
      },
      app.nowIso(),
    );
    await commitWithAction(app, 'room.create', room, { action: 'rooms.create', target: room.id, operatorId });
    return room;
  },
  /** Renames room ID (`--name`): one `room.update` record (the whole room) and its `admin.action`. 404 for an unknown room. */
  'rooms.rename': async (app, args, operatorId) => {
    const room = decideRoomUpdate(app.state.forum, { id: str(args, 'id', { label: 'ID (rooms rename ID)' }), name: str(args, 'name', { max: ROOM_NAME_LENGTH_MAX }).trim() });
    await commitWithAction(app, 'room.update', room, { action: 'rooms.rename', target: room.id, operatorId });
    return room;
  },
  /** Sets room ID's description (`--description`, may be empty): as `rooms.rename`. */
  'rooms.describe': async (app, args, operatorId) => {
    const description = typeof args.description === 'string' ? args.description.trim() : undefined;
    if (description === undefined) throw invalid('--description is required (an empty one clears it)');
    if (description.length > ROOM_DESCRIPTION_LENGTH_MAX) throw invalid(`--description must be at most ${ROOM_DESCRIPTION_LENGTH_MAX} characters`);
    const room = decideRoomUpdate(app.state.forum, { id: str(args, 'id', { label: 'ID (rooms describe ID)' }), description });
    await commitWithAction(app, 'room.update', room, { action: 'rooms.describe', target: room.id, operatorId });
    return room;
  },
  'agents.list': async (app) => app.state.agents.order.map((e) => agentView(e)),
  /** Disables agent ID (`--reason` optional, kept in the record); a no-op, unrecorded, when it is disabled already. */
  'agents.disable': async (app, args, operatorId) => {
    const e = requireAgent(app.state.agents, str(args, 'id', { label: 'ID (agents disable ID)' }));
    const reason = reasonOf(args);
    if (!e.disabled) await commit(app, 'agent.disable', { agentId: e.profile.id, operatorId, ...(reason === '' ? {} : { reason }) });
    return agentView(e);
  },
  'agents.enable': async (app, args, operatorId) => {
    const e = requireAgent(app.state.agents, str(args, 'id', { label: 'ID (agents enable ID)' }));
    const reason = reasonOf(args);
    if (e.disabled) await commit(app, 'agent.enable', { agentId: e.profile.id, operatorId, ...(reason === '' ? {} : { reason }) });
    return agentView(e);
  },
  'registration.close': async (app, _args, operatorId) => {
    if (app.state.settings.registrationOpen) await commit(app, 'settings.registration', { open: false, operatorId });
    return { registrationOpen: false };
  },
  'registration.open': async (app, _args, operatorId) => {
    if (!app.state.settings.registrationOpen) await commit(app, 'settings.registration', { open: true, operatorId });
    return { registrationOpen: true };
  },
  /**
   * Stops writes (423 WRITE_STOP for every public POST) with an optional `--reason` and `--until`
   * (ISO 8601): writes resume by themselves at that time (issue 38); both are shown to agents in
   * the 423 error. Stopping again while stopped records the new reason and end time.
   * Output: `{writeStop: true, reason, until}` (until null: until `writes resume`).
   */
  'writes.stop': async (app, args, operatorId) => {
    const reason = reasonOf(args);
    const nowMs = app.now();
    const until = untilOf(args, nowMs);
    const s = app.state.settings;
    const untilMs = until === undefined ? null : Date.parse(until);
    if (!writesStopped(s, nowMs) || s.writeStopReason !== reason || s.writeStopUntilMs !== untilMs) {
      const payload: WriteStopPayload = { stopped: true, operatorId, ...(reason === '' ? {} : { reason }), ...(until === undefined ? {} : { until }) };
      await commit(app, 'settings.writes', payload);
    }
    return { writeStop: true, reason, until: until ?? null };
  },
  'writes.resume': async (app, _args, operatorId) => {
    if (writesStopped(app.state.settings, app.now())) await commit(app, 'settings.writes', { stopped: false, operatorId });
    return { writeStop: false };
  },
  /** Replication (issue 35): the bucket, mode, epoch, shipped seq, lag and retention; `{replication: 'off'}` without FORUM_REPLICA_URL. */
  'replication.status': async (app) => app.replication?.status() ?? { replication: 'off', hint: 'set FORUM_REPLICA_URL=s3://bucket/prefix (docs/operate/replication.md)' },
  /**
   * Promotes a follower to leader (issue 36): it applies what the bucket holds, takes the writer
   * epoch (If-Match) and accepts writes from the next seq. 400 UNSUPPORTED_OPERATION on a server
   * that is not a follower; 503 REPLICA_FENCED when another server won (this one stays a follower).
   */
  'replication.promote': async (app) => {
    if (app.replication === null) throw new ServiceError('UNSUPPORTED_OPERATION', 'replication is off on this server (neither FORUM_FOLLOW nor FORUM_REPLICA_URL is set): there is nothing to promote');
    return app.replication.promote();
  },
  /** The durable prefix of every segment and the metadata: what a consistent backup copies. */
  'archive.position': async (app) => {
    await app.log.sync();
    return { segments: app.log.durableSegments(), meta: app.log.meta, lastSeq: app.log.durableSeq };
  },
  /**
   * Replaces the opportunities catalog with the briefs in `--file` (schema OpportunityBriefs,
   * at most 3). A brief for an unknown work item is kept but omitted from the catalog; the result
   * then carries `warnings` (one sentence per such brief), which the CLI also prints on stderr.
   */
  'opportunities.set': async (app, args, operatorId) => {
    const payload = decideOpportunities(readBriefsFile(args.file));
    await commit(app, 'opportunities.set', { ...payload, operatorId });
    const warnings = payload.briefs
      .filter((b) => workRowOf(app.state.work, b.workItemId) === undefined)
      .map(
        (b) =>
          `brief ${JSON.stringify(b.title)} names work item ${JSON.stringify(b.workItemId)}, which does not exist (yet): ` +
          'it is kept, but left out of the catalog until that work item exists',
      );
    return warnings.length > 0 ? { ...payload, warnings } : payload;
  },
  /** Empties the opportunities catalog. */
  'opportunities.clear': async (app, _args, operatorId) => {
    if (app.state.opportunities.briefs.length > 0) await commit(app, 'opportunities.set', { briefs: [], operatorId });
    return { briefs: [] };
  },
  'moderation.hide': moderationCommand('hide'),
  'moderation.unhide': moderationCommand('unhide'),
  'moderation.erase': moderationCommand('erase'),
  'moderation.purge': moderationCommand('purge'),
  /** Moderation actions, newest first. */
  'moderation.actions': async (app) => listActions(app, PAGE_LIMIT_MAX),
  /** Every admin and moderation action, newest first (as GET /api/admin/actions); `--operator ID` narrows it to one operator. */
  'actions.list': async (app, args) => {
    const operator = str(args, 'operator', { optional: true, pattern: ID });
    return listOperatorActions(app, PAGE_LIMIT_MAX, operator === '' ? undefined : operator);
  },
  /** Flags by `--state` (open by default), newest first. */
  'moderation.flags': async (app, args) => {
    const state = args.state === undefined ? 'open' : str(args, 'state');
    if (state !== 'open' && state !== 'resolved' && state !== 'all') throw invalid('--state must be open, resolved or all');
    return listFlags(app, state, PAGE_LIMIT_MAX);
  },
  /** Resolves flag ID with `--resolution hide|erase|dismiss`. */
  'moderation.resolve': async (app, args, operatorId) => {
    const resolution = str(args, 'resolution');
    if (resolution !== 'hide' && resolution !== 'erase' && resolution !== 'dismiss') throw invalid('--resolution must be hide, erase or dismiss');
    const note = str(args, 'note', { optional: true, max: MODERATION_REASON_LENGTH_MAX }).trim();
    return resolveFlag(app, operatorId, { flagId: str(args, 'id', { pattern: ID, label: 'ID (moderation resolve ID)' }), resolution, note });
  },
  /** Test support: moves an OffsetClock (FORUM_TEST_CLOCK=1) forward by `ms`. */
  'clock.advance': async (app, args) => {
    if (!(app.clock instanceof OffsetClock)) throw invalid('the server was not started with FORUM_TEST_CLOCK=1');
    const ms = Number(args.ms);
    if (!Number.isInteger(ms) || ms < 0) throw invalid('--ms must be a non-negative integer');
    app.clock.offsetMs += ms;
    return { now: app.nowIso() };
  },
  /**
   * Gives an agent or operator a new token (issue 25): one `agent.rotate_token` record carrying
   * the new token's hash. Output: `{id, token}`, the token shown this once. The old token gets
   * 401 from the moment the command answers; a disabled agent stays disabled. 404 for an unknown id.
   */
  'agents.rotate-token': async (app, args, operatorId) => {
    const e = requireAgent(app.state.agents, str(args, 'id', { label: 'ID (agents rotate-token ID)' }));
    const { payload, token } = decideRotateToken(e);
    await commit(app, 'agent.rotate_token', { ...payload, operatorId });
    return { id: e.profile.id, token };
  },
});
