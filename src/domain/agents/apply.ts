/**
 * The agents index built from the log and kept in a state snapshot (part 5; issue 53): `agent.*`
 * records applied to AgentsState (registration, disabling, token rotation, and the named tokens and
 * signing keys of tokens.ts and keys.ts), and the index packed for a snapshot and unpacked from one.
 * Kept apart from agents.ts so that tokens.ts and keys.ts depend on agents.ts and nothing depends
 * back on them but this module (no import circle).
 */
import type { LogRecord } from '../../store/log.js';
import { applyKind, type AgentEntry, type AgentKindPayload, type AgentRegisterPayload, type AgentRotateTokenPayload, type AgentsState, type DeviceCode } from './agents.js';
import { applyDeviceCodeRecord, unpackDeviceCodes } from './device-codes.js';
import { applyKeyRecord, unpackKeys } from './keys.js';
import { applyTokenRecord, packTokens, primaryToken, setPrimaryHash, unpackTokens, type PackedToken } from './tokens.js';

/** Applies `agent.*` records; returns false for other types. */
export function applyAgents(s: AgentsState, record: LogRecord): boolean {
  switch (record.type) {
    case 'agent.register': {
      const p = record.payload as AgentRegisterPayload;
      const entry: AgentEntry = { profile: p, disabled: 0, lastActiveMs: null, lastRecordMs: null, primary: primaryToken(p.id, p.created, p.tokenHash), tokens: [], keys: [], deviceCodes: [] };
      s.byId.set(p.id, entry);
      s.byTokenHash.set(p.tokenHash, entry);
      s.order.push(entry);
      if (p.role === 'agent') s.participants++;
      return true;
    }
    case 'agent.disable':
    case 'agent.enable': {
      const { agentId } = record.payload as { agentId: string };
      const e = s.byId.get(agentId);
      if (e) e.disabled = record.type === 'agent.disable' ? 1 : 0;
      return true;
    }
    case 'agent.rotate_token': {
      const { agentId, tokenHash } = record.payload as AgentRotateTokenPayload;
      const e = s.byId.get(agentId);
      if (e) setPrimaryHash(s, e, tokenHash);
      return true;
    }
    case 'agent.kind':
      applyKind(s, record.payload as AgentKindPayload);
      return true;
    default:
      return (
        applyTokenRecord(s, record.type, record.payload, record.time) ||
        applyKeyRecord(s, record.type, record.payload, record.time) ||
        applyDeviceCodeRecord(s, record.type, record.payload, record.time)
      );
  }
}

/**
 * The agents index as a state snapshot keeps it (issue 17): each entry's profile, disabled flag,
 * latest record time, named tokens and signing keys (issue 53) and device codes (issue 55; absent
 * in snapshots from before them, which held none), in registration order. `lastActive` and the
 * tokens' `lastUsed` from requests are left out, as a replay would not know them either.
 */
export interface PackedAgents {
  order: Array<Pick<AgentEntry, 'profile' | 'disabled' | 'lastRecordMs' | 'keys'> & { tokens: PackedToken[]; deviceCodes?: DeviceCode[] }>;
  participants: number;
}

/** Packs the agents index (see PackedAgents). */
export function packAgents(s: AgentsState): PackedAgents {
  return { order: s.order.map((e) => ({ profile: e.profile, disabled: e.disabled, lastRecordMs: e.lastRecordMs, tokens: packTokens(e), keys: e.keys, deviceCodes: e.deviceCodes })), participants: s.participants };
}

/** Fills the empty index `s` from `p`, as replaying the log would have built it. */
export function unpackAgents(s: AgentsState, p: PackedAgents): void {
  for (const a of p.order) {
    const p = a.profile;
    const e: AgentEntry = { profile: p, disabled: a.disabled, lastActiveMs: a.lastRecordMs, lastRecordMs: a.lastRecordMs, primary: primaryToken(p.id, p.created, p.tokenHash), tokens: [], keys: [], deviceCodes: [] };
    s.byId.set(p.id, e);
    s.byTokenHash.set(p.tokenHash, e);
    unpackTokens(s, e, a.tokens);
    unpackKeys(s, e, a.keys);
    unpackDeviceCodes(s, e, a.deviceCodes);
    s.order.push(e);
  }
  s.participants = p.participants;
}
