/**
 * The admin action log (issue 38 "every admin action is a record in the log, naming who did
 * it"), derived from the log like every other index.
 *
 * Design: the record that makes an admin change carries the operator who made it, as moderation
 * records do (`operatorId` in the payload), so the change and its author are one record, durable
 * together: `agent.disable`/`agent.enable {agentId, operatorId, reason?}`,
 * `agent.rotate_token {agentId, tokenHash, operatorId}` (the hash, never the token),
 * `settings.writes {stopped, operatorId, reason?, until?}`, `settings.registration {open, operatorId}`,
 * `opportunities.set {briefs, operatorId}`. Two actions change a record that is public as it is
 * stored (a room is served in feeds byte for byte; an operator's registration is its profile), so
 * they cannot carry a private field: `rooms.create`, `rooms.rename`, `rooms.describe` (records
 * `room.create`, `room.update`) and `operator.create` append, after their
 * record and in the same synchronous run (one fsync), an `admin.action {action, target, operatorId}`
 * record, which changes nothing else. Records written before issue 38 carry no operator: they are
 * listed with `operatorId: null`.
 *
 * An agent's changes to its own tokens (issue 53: `agent.token_create`, `agent.token_rotate`,
 * `agent.token_revoke`, domain/agents/tokens.ts) are listed here too, as `tokens.create`,
 * `tokens.rotate` and `tokens.revoke` with `operatorId: null`, `agentId` the agent and `target`
 * `token <tokenId> of <agentId>`: the operator sees every credential change, never the token.
 * Signing-key changes (`agent.key_register`, `agent.key_rotate`, `agent.key_revoke`,
 * domain/agents/keys.ts) likewise, as `keys.register`, `keys.rotate` (target: the new key) and
 * `keys.revoke`, target `key <keyId> of <agentId>`. Device codes (issue 55, `agent.device_code_create`,
 * `agent.device_code_redeem`, domain/agents/device-codes.ts) as `device-codes.create` (target
 * `device code <codeId> of <agentId>`) and `device-codes.redeem` (target: the token it gave,
 * `token <tokenId> of <agentId>`). An agent's `agent.kind` is no credential and not listed.
 *
 * None of these records is a feed event: settings, agent and admin records are hidden rows of
 * /api/changes.
 */
import type { LogRecord } from '../../store/log.js';
import type { WriteStopPayload } from './settings.js';
import type { RecordType } from '../record-types.js';

/** The record type of an admin action whose own record cannot name its operator (see the module doc). */
export const ADMIN_ACTION_TYPE = 'admin.action' satisfies RecordType;

/** Payload of an `admin.action` record. */
export interface AdminActionPayload {
  /** `<group>.<verb>` as on the CLI: `rooms.create`, `operator.create`. */
  action: string;
  /** What it acted on: a room or operator id. */
  target: string;
  operatorId: string;
}

/** One admin action as listed by GET /api/admin/actions (schema AdminAction). */
export interface AdminAction {
  /** The log seq of the record that made the change. */
  seq: number;
  /** `<group>.<verb>` as on the CLI: `agents.disable`, `writes.stop`, `registration.close`, ... */
  action: string;
  /** The operator who did it; null for a record written before issue 38. */
  operatorId: string | null;
  /** An agent, operator or room id; `writes`, `registration` or `opportunities` for switches. */
  target: string;
  /** Why (write stop, disable), when given. */
  reason?: string;
  /** Write stop only: when it ends by itself. */
  until?: string;
  /** `tokens.*` and `keys.*` only (issue 53): the agent that changed its own credential (`operatorId` is then null). */
  agentId?: string;
  /** The record's time. */
  created: string;
}

/** The admin action log, in log order. */
export interface AdminActionsState {
  actions: AdminAction[];
}

/** An empty log. */
export function createAdminActionsState(): AdminActionsState {
  return { actions: [] };
}

/** Every record type that is an admin action. */
const ADMIN_RECORD_TYPES: ReadonlySet<string> = new Set([
  ADMIN_ACTION_TYPE,
  'agent.disable',
  'agent.enable',
  'agent.rotate_token',
  'settings.writes',
  'settings.registration',
  'opportunities.set',
  'agent.token_create',
  'agent.token_rotate',
  'agent.token_revoke',
  'agent.key_register',
  'agent.key_rotate',
  'agent.key_revoke',
  'agent.device_code_create',
  'agent.device_code_redeem',
]);

/** The operator a payload names, or null (records from before issue 38). */
function operatorOf(p: { operatorId?: unknown }): string | null {
  return typeof p.operatorId === 'string' ? p.operatorId : null;
}

/**
 * Notes the admin action `record` makes, if any (every record passes through here after its area
 * applied it). Returns true only for `admin.action`, the one type no other area handles.
 */
export function applyAdminActions(s: AdminActionsState, record: LogRecord): boolean {
  // Most records are discussion and work records: return before reading their payload (replay
  // never parses a message's payload).
  if (!ADMIN_RECORD_TYPES.has(record.type)) return false;
  const p = record.payload as Record<string, unknown>;
  const base = { seq: record.seq, created: record.time, operatorId: operatorOf(p) };
  const reason = typeof p.reason === 'string' && p.reason !== '' ? { reason: p.reason } : {};
  switch (record.type) {
    case ADMIN_ACTION_TYPE: {
      const a = record.payload as AdminActionPayload;
      s.actions.push({ ...base, action: a.action, target: a.target });
      return true;
    }
    case 'agent.disable':
    case 'agent.enable':
      s.actions.push({ ...base, action: record.type === 'agent.disable' ? 'agents.disable' : 'agents.enable', target: String(p.agentId), ...reason });
      return false;
    case 'agent.rotate_token':
      s.actions.push({ ...base, action: 'agents.rotate-token', target: String(p.agentId) });
      return false;
    case 'agent.token_create':
    case 'agent.token_rotate':
    case 'agent.token_revoke': {
      const agentId = String(p.agentId);
      s.actions.push({ ...base, action: `tokens.${record.type.slice('agent.token_'.length)}`, target: `token ${String(p.tokenId)} of ${agentId}`, agentId });
      return false;
    }
    case 'agent.key_register':
    case 'agent.key_rotate':
    case 'agent.key_revoke': {
      const agentId = String(p.agentId);
      // A rotation names the key it made: the old one is in that key's `replaces`.
      const keyId = record.type === 'agent.key_rotate' ? p.newKeyId : p.keyId;
      s.actions.push({ ...base, action: `keys.${record.type.slice('agent.key_'.length)}`, target: `key ${String(keyId)} of ${agentId}`, agentId });
      return false;
    }
    case 'agent.device_code_create':
    case 'agent.device_code_redeem': {
      const agentId = String(p.agentId);
      const target = record.type === 'agent.device_code_create' ? `device code ${String(p.codeId)} of ${agentId}` : `token ${String(p.tokenId)} of ${agentId}`;
      s.actions.push({ ...base, action: `device-codes.${record.type.slice('agent.device_code_'.length)}`, target, agentId });
      return false;
    }
    case 'settings.writes': {
      const w = record.payload as WriteStopPayload;
      s.actions.push({ ...base, action: w.stopped ? 'writes.stop' : 'writes.resume', target: 'writes', ...reason, ...(w.until === undefined ? {} : { until: w.until }) });
      return false;
    }
    case 'settings.registration':
      s.actions.push({ ...base, action: p.open === true ? 'registration.open' : 'registration.close', target: 'registration' });
      return false;
    case 'opportunities.set':
      s.actions.push({ ...base, action: Array.isArray(p.briefs) && p.briefs.length > 0 ? 'opportunities.set' : 'opportunities.clear', target: 'opportunities' });
      return false;
    default:
      return false;
  }
}

/** The log as a state snapshot keeps it. */
export function packAdminActions(s: AdminActionsState): AdminAction[] {
  return s.actions;
}

/**
 * Sets `s` from a packed log. Throws Error for a snapshot from before issue 38 (no log packed):
 * it is then discarded and the log replayed, which derives the actions of its older records.
 */
export function unpackAdminActions(s: AdminActionsState, p: AdminAction[] | undefined): void {
  if (!Array.isArray(p)) throw new Error('snapshot from before issue 38 (no admin action log)');
  s.actions = p;
}
