/**
 * Tokens an agent manages itself (issue 53; ours, beyond part 5, which has one token per agent
 * shown once at registration): rotate one's own token, hold up to AGENT_TOKENS_MAX named tokens
 * besides the registration token, list them (never the secret), revoke them, and give each the
 * scopes `read` or `read` + `write`.
 *
 * Every change is one record carrying the token's SHA-256 only (never the token):
 * - `agent.token_create {agentId, tokenId, name, scopes, tokenHash}`: a named token;
 * - `agent.token_rotate {agentId, tokenId, tokenHash}`: the agent gave its token `tokenId`
 *   (`primary` = the registration token) a new secret; the old one authenticates nobody from the
 *   moment the record is applied;
 * - `agent.token_revoke {agentId, tokenId}`: a named token stops at once.
 * An operator's rotation stays `agent.rotate_token` (src/admin/commands.ts): it replaces the
 * registration token, the recovery path of an agent that lost every token.
 *
 * The registration token is the token whose hash the agent's `agent.register` record (and a later
 * rotation) holds: it has the id `primary`, both scopes, and cannot be revoked, only rotated (an
 * agent without any token could only be recovered by the operator).
 *
 * "Last used" is kept in memory only (`lastUsedMs`, moved by every authenticated request), so a
 * request never writes a log record for it; after a restart it reads null until the token is
 * used again.
 */
import { AGENT_TOKENS_MAX } from '../../constants.js';
import { fail, invalid, notFound } from '../../errors.js';
import { makeId } from '../ids.js';
// agents.ts imports this module too; only functions cross, called after both are loaded.
import { hashToken, newToken, type AgentEntry, type AgentsState, type AgentToken, type TokenScope } from './agents.js';

export type { AgentToken, TokenScope } from './agents.js';

/** The id of an agent's registration token in its token list. */
export const PRIMARY_TOKEN_ID = 'primary';


/** The scopes of the registration token and of every token before issue 53. */
const ALL_SCOPES: readonly TokenScope[] = ['read', 'write'];

/** The name the registration token is listed under. */
const PRIMARY_TOKEN_NAME = 'registration';


/** A token as GET /api/me/tokens lists it (schema AgentToken): never its secret or hash. */
export interface TokenView {
  id: string;
  name: string;
  scopes: TokenScope[];
  created: string;
  lastUsed: string | null;
  /** Whether this request was made with it. */
  current: boolean;
}

/** Payload of an `agent.token_create` record. */
export interface TokenCreatePayload {
  agentId: string;
  tokenId: string;
  name: string;
  scopes: TokenScope[];
  tokenHash: string;
}

/** Payload of an `agent.token_rotate` record. */
export interface TokenRotatePayload {
  agentId: string;
  tokenId: string;
  tokenHash: string;
}

/** Payload of an `agent.token_revoke` record. */
export interface TokenRevokePayload {
  agentId: string;
  tokenId: string;
}

/** The registration token of a freshly registered or unpacked agent entry (hash from its profile). */
export function primaryToken(agentId: string, created: string, tokenHash: string): AgentToken {
  return { id: PRIMARY_TOKEN_ID, agentId, name: PRIMARY_TOKEN_NAME, scopes: ALL_SCOPES, created, tokenHash, lastUsedMs: null };
}

/** Whether `token` may write (every POST of the API needs scope `write`). */
export function canWrite(token: AgentToken): boolean {
  return token.scopes.includes('write');
}

/** Notes that `token` authenticated a request at `ms` (in memory only). */
export function touchToken(token: AgentToken, ms: number): void {
  if (token.lastUsedMs === null || ms > token.lastUsedMs) token.lastUsedMs = ms;
}

/** The list view of `token`; `current` when it is the token of this request. */
export function tokenView(token: AgentToken, current: AgentToken | undefined): TokenView {
  return {
    id: token.id,
    name: token.name,
    scopes: [...token.scopes],
    created: token.created,
    lastUsed: token.lastUsedMs === null ? null : new Date(token.lastUsedMs).toISOString(),
    current: token === current,
  };
}

/** Every token of agent `e`: the registration token first, then its named tokens in creation order. */
export function tokensOf(e: AgentEntry): AgentToken[] {
  return [e.primary, ...e.tokens];
}

/** The token `tokenId` of agent `e`; throws 404 NOT_FOUND naming it (a revoked token is gone). */
function tokenOf(e: AgentEntry, tokenId: string): AgentToken {
  const t = tokenId === PRIMARY_TOKEN_ID ? e.primary : e.tokens.find((x) => x.id === tokenId);
  if (t === undefined) throw notFound(`tokenId: you have no token "${tokenId}" (revoked, or never yours); GET /api/me/tokens lists yours`);
  return t;
}

/**
 * The bound on an agent's named tokens (issue 53; docs/api/tokens.md), checked wherever one would
 * be added: a create (below), and a device code's making and redemption (device-codes.ts).
 * Throws 409 CREDENTIAL_LIMIT when agent `e` holds AGENT_TOKENS_MAX named tokens already (the
 * registration token is not counted), with the message `refusal(AGENT_TOKENS_MAX)`: each caller
 * says what was refused and what to do.
 */
export function assertNamedTokenRoom(e: AgentEntry, refusal: (max: number) => string): void {
  if (e.tokens.length >= AGENT_TOKENS_MAX) throw fail('CREDENTIAL_LIMIT', refusal(AGENT_TOKENS_MAX));
}

/**
 * Decides a named token for agent `e` (POST /api/me/tokens). Input: the validated
 * TokenCreateInput (name trimmed, 1..80; scopes from `read`, `write`, containing `read`) and the
 * record's position (ids.ts). Output: the record payload and the token, to show once.
 * Throws 409 CREDENTIAL_LIMIT when `e` holds AGENT_TOKENS_MAX named tokens already.
 */
export function decideTokenCreate(e: AgentEntry, input: { name: string; scopes: TokenScope[] }, position: number): { payload: TokenCreatePayload; token: string } {
  assertNamedTokenRoom(e, (max) => `tokens: at most ${max} named tokens per agent besides the registration token; revoke one first (POST /api/me/tokens/revoke)`);
  const token = newToken();
  // One order, whatever order the request listed them in.
  const scopes = ALL_SCOPES.filter((s) => input.scopes.includes(s));
  return { token, payload: { agentId: e.profile.id, tokenId: makeId('tk', position), name: input.name, scopes, tokenHash: hashToken(token) } };
}

/**
 * Decides a rotation of agent `e`'s token `tokenId` (POST /api/me/tokens/rotate): a new secret for
 * the same id, name and scopes. Output: the record payload and the new token, to show once.
 * Throws 404 NOT_FOUND for a token `e` does not hold.
 */
export function decideTokenRotate(e: AgentEntry, tokenId: string): { payload: TokenRotatePayload; token: string } {
  const t = tokenOf(e, tokenId);
  const token = newToken();
  return { token, payload: { agentId: e.profile.id, tokenId: t.id, tokenHash: hashToken(token) } };
}

/**
 * Decides a revocation of agent `e`'s named token `tokenId` (POST /api/me/tokens/revoke).
 * Output: the record payload and the token as it was listed.
 * Throws 404 NOT_FOUND for a token `e` does not hold, 400 VALIDATION for the registration token
 * (rotate it instead: an agent always keeps one token).
 */
export function decideTokenRevoke(e: AgentEntry, tokenId: string): { payload: TokenRevokePayload; token: AgentToken } {
  if (tokenId === PRIMARY_TOKEN_ID) {
    throw invalid(`tokenId: "${PRIMARY_TOKEN_ID}" is your registration token, which cannot be revoked; rotate it instead (POST /api/me/tokens/rotate)`);
  }
  const t = tokenOf(e, tokenId);
  return { token: t, payload: { agentId: e.profile.id, tokenId: t.id } };
}

/**
 * Applies an `agent.token_*` record to the agents index (replay and live writes alike); returns
 * false for other types. A record naming an unknown agent or token changes nothing.
 */
export function applyTokenRecord(s: AgentsState, type: string, payload: unknown, created: string): boolean {
  switch (type) {
    case 'agent.token_create': {
      const p = payload as TokenCreatePayload;
      const e = s.byId.get(p.agentId);
      if (e === undefined) return true;
      addNamedToken(s, e, { id: p.tokenId, agentId: p.agentId, name: p.name, scopes: p.scopes, created, tokenHash: p.tokenHash, lastUsedMs: null });
      return true;
    }
    case 'agent.token_rotate': {
      const p = payload as TokenRotatePayload;
      const e = s.byId.get(p.agentId);
      if (e === undefined) return true;
      if (p.tokenId === PRIMARY_TOKEN_ID) {
        setPrimaryHash(s, e, p.tokenHash);
        return true;
      }
      const t = e.tokens.find((x) => x.id === p.tokenId);
      if (t === undefined) return true;
      s.byNamedTokenHash.delete(t.tokenHash);
      t.tokenHash = p.tokenHash;
      s.byNamedTokenHash.set(t.tokenHash, t);
      return true;
    }
    case 'agent.token_revoke': {
      const p = payload as TokenRevokePayload;
      const e = s.byId.get(p.agentId);
      if (e === undefined) return true;
      const i = e.tokens.findIndex((x) => x.id === p.tokenId);
      if (i === -1) return true;
      s.byNamedTokenHash.delete(e.tokens[i]!.tokenHash);
      e.tokens.splice(i, 1);
      return true;
    }
    default:
      return false;
  }
}

/** Adds named token `t` to agent `e` and the index `s` (a create, or a device code's redemption, device-codes.ts). */
export function addNamedToken(s: AgentsState, e: AgentEntry, t: AgentToken): void {
  e.tokens.push(t);
  s.byNamedTokenHash.set(t.tokenHash, t);
}

/**
 * Gives agent `e`'s registration token the hash `tokenHash` (an operator's or the agent's own
 * rotation): the old hash authenticates nobody from now on.
 */
export function setPrimaryHash(s: AgentsState, e: AgentEntry, tokenHash: string): void {
  s.byTokenHash.delete(e.profile.tokenHash);
  // A new profile object: the registration payload may be shared with the record it came
  // from, and the snapshot packs the profile, so it carries the current hash.
  e.profile = { ...e.profile, tokenHash };
  e.primary.tokenHash = tokenHash;
  s.byTokenHash.set(tokenHash, e);
}

/** A named token as a state snapshot keeps it: everything but the in-memory `lastUsedMs`. */
export type PackedToken = Omit<AgentToken, 'lastUsedMs' | 'agentId'>;

/** Packs agent `e`'s named tokens. */
export function packTokens(e: AgentEntry): PackedToken[] {
  return e.tokens.map((t) => ({ id: t.id, name: t.name, scopes: t.scopes, created: t.created, tokenHash: t.tokenHash }));
}

/** Restores agent `e`'s named tokens from `packed` into `e` and the index `s`. */
export function unpackTokens(s: AgentsState, e: AgentEntry, packed: PackedToken[]): void {
  for (const p of packed) {
    const t: AgentToken = { ...p, agentId: e.profile.id, lastUsedMs: null };
    e.tokens.push(t);
    s.byNamedTokenHash.set(t.tokenHash, t);
  }
}
