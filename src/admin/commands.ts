/**
 * Operator commands (issue 2 "Operator CLI"). The same functions serve the admin channel of a
 * running server and the CLI working on a stopped data folder, so both paths behave alike.
 * Each command takes the open App and a JSON argument object and resolves to a JSON result
 * after its record is durable. Errors are ServiceErrors (rendered by the channel and the CLI).
 */
import type { App } from '../app.js';
import { agentView, decideOperator, decideRotateToken, requireAgent } from '../domain/agents/agents.js';
import { decideRoom } from '../domain/forum/forum.js';
import { decideOpportunities, type OpportunityBrief } from '../domain/opportunities/opportunities.js';
import { workRowOf } from '../domain/work/work.js';
import { ServiceError, invalid } from '../errors.js';
import { bodyValidator } from '../http/validate.js';
import { readFileSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { OffsetClock } from '../clock.js';
import { logger } from '../logger.js';
import { AGENT_NAME_LENGTH_MAX, PAGE_LIMIT_MAX, MODERATION_REASON_LENGTH_MAX, ROOM_DESCRIPTION_LENGTH_MAX, ROOM_NAME_LENGTH_MAX } from '../constants.js';
import { CLI_OPERATOR_ID, listActions, listFlags, moderate, resolveFlag } from './moderation.js';
import type { ModerationTarget } from '../domain/moderation/moderation.js';

/** An operator command: resolves to its JSON result once its record (if any) is durable. */
export type Command = (app: App, args: Record<string, unknown>) => Promise<unknown>;

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

async function commit(app: App, type: string, payload: unknown): Promise<void> {
  app.commit(type, payload);
  await app.log.sync();
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
  return async (app, args) => {
    const mode = args.mode === undefined ? undefined : str(args, 'mode');
    if (mode !== undefined && mode !== 'hide' && mode !== 'erase') throw invalid('--mode must be hide or erase');
    return moderate(app, CLI_OPERATOR_ID, {
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
const READ_ONLY_COMMANDS: ReadonlySet<string> = new Set(['agents.list', 'replication.status', 'archive.position', 'moderation.actions', 'moderation.flags']);

/**
 * Commands that write their own `admin_action` line naming the operator (src/admin/moderation.ts,
 * shared with the operator-only REST routes): wrapping them again would log each action twice.
 */
const SELF_LOGGING_COMMANDS: ReadonlySet<string> = new Set(['moderation.hide', 'moderation.unhide', 'moderation.erase', 'moderation.purge', 'moderation.resolve']);

/**
 * Runs one admin action and writes its one `admin_action` log line (issue 25), on success and on
 * refusal alike: `{"event": "admin_action", "action", "target", "outcome", "code"?}` where
 * `action` is `<group>.<verb>` (`agents.disable`, `restore`), `target` what it acted on (an
 * agent, room or operator id, a folder, else the command's group), `outcome` `ok`, `refused` (a
 * 4xx ServiceError, with its `code`) or `failed` (any other error, with its class as `error`,
 * e.g. StoreStateError). Arguments, results and error messages are never logged: they may hold
 * a token (operator create, rotate-token) or content.
 * Input: the action's name, the target when known before it runs, the action, and a function
 * picking the target from its result (operator create learns its id only then).
 * Output: the action's result; its error is rethrown unchanged.
 */
export async function recordAdminAction<T>(
  action: string,
  target: string | undefined,
  run: () => Promise<T>,
  targetOf: (result: T) => string | undefined = () => undefined,
): Promise<T> {
  const fallback = action.split('.')[0]!;
  try {
    const result = await run();
    const t = target ?? targetOf(result) ?? fallback;
    logger.info('admin_action', `${action} ${t}: ok`, { action, target: t, outcome: 'ok' });
    return result;
  } catch (err) {
    const t = target ?? fallback;
    if (err instanceof ServiceError && err.status < 500) {
      logger.info('admin_action', `${action} ${t}: refused (${err.code})`, { action, target: t, outcome: 'refused', code: err.code });
    } else {
      const error = err instanceof Error ? err.name : typeof err;
      logger.info('admin_action', `${action} ${t}: failed (${error})`, { action, target: t, outcome: 'failed', error });
    }
    throw err;
  }
}

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
      READ_ONLY_COMMANDS.has(name) || SELF_LOGGING_COMMANDS.has(name) ? command : (app, args) => recordAdminAction(name, idOf(args), () => command(app, args), idOf),
    ]),
  );
}

/**
 * The command table; keys are `<group>.<verb>` as typed on the CLI. Errors (ServiceError): 400 for a
 * missing or invalid argument (naming it and the rule), 404 for an unknown agent id, 409 for a
 * room id that exists already. Each admin action writes one `admin_action` line (withAdminActionLog).
 */
export const commands: Record<string, Command> = withAdminActionLog({
  'operator.create': async (app, args) => {
    const name = str(args, 'name', { max: AGENT_NAME_LENGTH_MAX });
    const { payload, token } = decideOperator(name, { seq: app.nextSeq(), created: app.nowIso() });
    await commit(app, 'agent.register', payload);
    return { id: payload.id, token };
  },
  'rooms.create': async (app, args) => {
    const room = decideRoom(
      app.state.forum,
      {
        id: str(args, 'id', { pattern: ID }),
        name: str(args, 'name', { max: ROOM_NAME_LENGTH_MAX }),
        description: str(args, 'description', { optional: true, max: ROOM_DESCRIPTION_LENGTH_MAX }),
      },
      app.nowIso(),
    );
    await commit(app, 'room.create', room);
    return room;
  },
  'agents.list': async (app) => app.state.agents.order.map((e) => agentView(e)),
  'agents.disable': async (app, args) => {
    const e = requireAgent(app.state.agents, str(args, 'id', { label: 'ID (agents disable ID)' }));
    if (!e.disabled) await commit(app, 'agent.disable', { agentId: e.profile.id });
    return agentView(e);
  },
  'agents.enable': async (app, args) => {
    const e = requireAgent(app.state.agents, str(args, 'id', { label: 'ID (agents enable ID)' }));
    if (e.disabled) await commit(app, 'agent.enable', { agentId: e.profile.id });
    return agentView(e);
  },
  'registration.close': async (app) => {
    if (app.state.settings.registrationOpen) await commit(app, 'settings.registration', { open: false });
    return { registrationOpen: false };
  },
  'registration.open': async (app) => {
    if (!app.state.settings.registrationOpen) await commit(app, 'settings.registration', { open: true });
    return { registrationOpen: true };
  },
  'writes.stop': async (app) => {
    if (!app.state.settings.writeStop) await commit(app, 'settings.writes', { stopped: true });
    return { writeStop: true };
  },
  'writes.resume': async (app) => {
    if (app.state.settings.writeStop) await commit(app, 'settings.writes', { stopped: false });
    return { writeStop: false };
  },
  /** Replication (issue 35): the bucket, mode, epoch, shipped seq, lag and retention; `{replication: 'off'}` without FORUM_REPLICA_URL. */
  'replication.status': async (app) => app.replication?.status() ?? { replication: 'off', hint: 'set FORUM_REPLICA_URL=s3://bucket/prefix (README "Replication")' },
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
  'opportunities.set': async (app, args) => {
    const payload = decideOpportunities(readBriefsFile(args.file));
    await commit(app, 'opportunities.set', payload);
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
  'opportunities.clear': async (app) => {
    if (app.state.opportunities.briefs.length > 0) await commit(app, 'opportunities.set', { briefs: [] });
    return { briefs: [] };
  },
  'moderation.hide': moderationCommand('hide'),
  'moderation.unhide': moderationCommand('unhide'),
  'moderation.erase': moderationCommand('erase'),
  'moderation.purge': moderationCommand('purge'),
  /** Moderation actions, newest first. */
  'moderation.actions': async (app) => listActions(app, PAGE_LIMIT_MAX),
  /** Flags by `--state` (open by default), newest first. */
  'moderation.flags': async (app, args) => {
    const state = args.state === undefined ? 'open' : str(args, 'state');
    if (state !== 'open' && state !== 'resolved' && state !== 'all') throw invalid('--state must be open, resolved or all');
    return listFlags(app, state, PAGE_LIMIT_MAX);
  },
  /** Resolves flag ID with `--resolution hide|erase|dismiss`. */
  'moderation.resolve': async (app, args) => {
    const resolution = str(args, 'resolution');
    if (resolution !== 'hide' && resolution !== 'erase' && resolution !== 'dismiss') throw invalid('--resolution must be hide, erase or dismiss');
    const note = str(args, 'note', { optional: true, max: MODERATION_REASON_LENGTH_MAX }).trim();
    return resolveFlag(app, CLI_OPERATOR_ID, { flagId: str(args, 'id', { pattern: ID, label: 'ID (moderation resolve ID)' }), resolution, note });
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
  'agents.rotate-token': async (app, args) => {
    const e = requireAgent(app.state.agents, str(args, 'id', { label: 'ID (agents rotate-token ID)' }));
    const { payload, token } = decideRotateToken(e);
    await commit(app, 'agent.rotate_token', payload);
    return { id: e.profile.id, token };
  },
});
