/**
 * Agents: registration, tokens, roles, disable/enable, token rotation (parts 2 Agent, 4 POST
 * /api/register, 5; issue 25). Records: `agent.register`, `agent.disable`, `agent.enable`,
 * `agent.rotate_token {agentId, tokenHash}`, and the `agent.token_*` records of the tokens an
 * agent manages itself and the `agent.key_*` records of its signing keys (issue 53, tokens.ts,
 * keys.ts).
 *
 * Tokens are 32 random bytes (base64url, prefixed `af_`), shown once; only their SHA-256 is kept,
 * in the log and in memory. `lastActive` is kept in memory (updated on every authenticated
 * request) and restored at startup from the time of the agent's latest record, so reads never
 * write log records.
 */
import { hash, randomBytes } from 'node:crypto';
import { ACTIVE_AGENT_WINDOW_MS, TOKEN_BYTES } from '../../constants.js';
import { fail, notFound } from '../../errors.js';
import { makeId } from '../ids.js';

/** Agent `kind` (part 2). */
export type AgentKind = 'agent' | 'human' | 'integration';
/** Roles behind 403 (part 5 item 10, ours): `operator` may review and cancel any work. */
export type Role = 'agent' | 'operator';

/** What an agent is registered as (part 2): the fields the public Agent and its register record share. */
interface AgentIdentity {
  id: string;
  name: string;
  provider: string;
  description: string;
  kind: AgentKind;
  verification: string;
  created: string;
}

/** The public Agent record (part 2); `agentView` builds it field by field, so no secret leaks. */
export interface Agent extends AgentIdentity {
  lastActive: string | null;
  disabled: 0 | 1;
  /** Present when a purge hid the agent (issue 34): name, provider and description are placeholders for all but operators. */
  hidden?: true;
  /** Present when a purge with mode `erase` erased the agent's profile (issue 34). */
  erased?: true;
}

/**
 * Payload of an `agent.register` record: the identity plus the role and the token's hash;
 * `erased` once a purge with mode `erase` replaced the profile by its placeholder (issue 34).
 */
export interface AgentRegisterPayload extends AgentIdentity {
  role: Role;
  tokenHash: string;
  erased?: true;
}

/** What a token may do (issue 53): every token reads; `write` adds every POST of the API. */
export type TokenScope = 'read' | 'write';

/** One token of an agent, as the index holds it: its hash, never the token. */
export interface AgentToken {
  /** `primary` for the registration token, else `tk_<seq>` of its create record. */
  id: string;
  agentId: string;
  name: string;
  scopes: readonly TokenScope[];
  /** When it was created (the registration time for the registration token). */
  created: string;
  /** SHA-256 hex of the token. */
  tokenHash: string;
  /** When it last authenticated a request, ms; in memory only (see the module doc). */
  lastUsedMs: number | null;
}

/** A key's state: `active` (at most one per agent), `rotated` (replaced by a newer key) or `revoked`. */
export type KeyState = 'active' | 'rotated' | 'revoked';

/** One signing key of an agent, as the index holds it and GET /api/me/keys lists it (schema AgentKey). */
export interface AgentKey {
  /** `key_<seq>` of the record that registered it. */
  id: string;
  /** Ed25519 public key, 32 bytes, unpadded base64url. */
  publicKey: string;
  state: KeyState;
  /** When it was registered. */
  created: string;
  /** When it stopped being active (rotated or revoked), else null. */
  ended: string | null;
  /** The key it replaced (a rotation), else null. */
  replaces: string | null;
  /** The key that replaced it, else null. */
  replacedBy: string | null;
  /** Its signature over its `possess` string. */
  proof: string;
  /** The replaced key's signature over the `rotate` string (a rotation), else null. */
  endorsement: string | null;
}

/** An indexed agent: its registration record, disabled flag and in-memory activity time (ms). */
export interface AgentEntry {
  profile: AgentRegisterPayload;
  disabled: 0 | 1;
  lastActiveMs: number | null;
  /**
   * Time of the agent's latest record, ms (null before any): what a replay of the log knows of
   * its activity, and so what a state snapshot keeps (requests also move `lastActiveMs`).
   */
  lastRecordMs: number | null;
  /** The registration token (issue 53): its hash is `profile.tokenHash`. */
  primary: AgentToken;
  /** The named tokens the agent created and has not revoked (issue 53), in creation order. */
  tokens: AgentToken[];
  /** The agent's signing keys (issue 53), its whole history in registration order; at most one active. */
  keys: AgentKey[];
  /** Device codes the agent made (issue 55, device-codes.ts), oldest first: those not yet forgotten (see there). */
  deviceCodes: DeviceCode[];
}

/**
 * A one-time code that adds another device (issue 55; device-codes.ts): whoever enters it within
 * DEVICE_CODE_TTL_MS gets a new named token of the agent. The index holds its hash, never the code.
 */
export interface DeviceCode {
  /** `dc_<seq>` of the record that made it. */
  id: string;
  agentId: string;
  /** scrypt hash (hex) of the code (device-codes.ts `hashDeviceCode`). */
  codeHash: string;
  /** Name and scopes of the token it gives. */
  name: string;
  scopes: readonly TokenScope[];
  /** When it was made and when it stops being good, ms. */
  createdMs: number;
  expiresMs: number;
  /** The token it gave, once redeemed; null before. */
  redeemedTokenId: string | null;
}

/** Agents by id and by token hash, and in registration order. */
export interface AgentsState {
  byId: Map<string, AgentEntry>;
  /** Registration tokens (of agents and operators) by hash. */
  byTokenHash: Map<string, AgentEntry>;
  /** Named tokens (issue 53) by hash: authenticate an agent with their scopes, never as an operator's CLI token. */
  byNamedTokenHash: Map<string, AgentToken>;
  /** Every signing key ever registered (issue 53), by public key, to its agent: a key is used once. */
  keyOwners: Map<string, string>;
  /** The device codes of every agent's `deviceCodes` (issue 55), by hash. */
  byDeviceCodeHash: Map<string, DeviceCode>;
  /** Registration order (participants and operators). */
  order: AgentEntry[];
  /**
   * Registered participants: identities created by POST /api/register (role `agent`), the
   * count behind FORUM_MAX_AGENTS. Operators created with the CLI are not counted.
   */
  participants: number;
}

/** An empty agents index. */
export function createAgentsState(): AgentsState {
  return { byId: new Map(), byTokenHash: new Map(), byNamedTokenHash: new Map(), keyOwners: new Map(), byDeviceCodeHash: new Map(), order: [], participants: 0 };
}

/**
 * SHA-256 hex of a token; the only form in which tokens are stored. Runs on every authenticated
 * request: the one-shot `hash` (Node ≥ 20.12) costs about a third of a Hash object's
 * create/update/digest (issue 30 "hot paths").
 */
export function hashToken(token: string): string {
  return hash('sha256', token, 'hex');
}

/** A fresh random bearer token (TOKEN_BYTES random bytes, base64url). */
export function newToken(): string {
  return `af_${randomBytes(TOKEN_BYTES).toString('base64url')}`;
}

/** The profile fields of an agent a purge hid, as everyone but operators sees them (docs/operate/moderation.md). */
const HIDDEN_AGENT_PROFILE = { name: '(hidden)', provider: '', description: '' } as const;

/**
 * The public Agent view of an entry (part 2). `moderation.hidden` (a purge hid the agent) gives
 * operators the whole profile and everyone else its placeholder, both with `"hidden": true`; an
 * erased profile (a purge with mode `erase`) is its placeholder with `"erased": true` for
 * everyone. Without `moderation`, the profile as stored (the CLI, an agent's own profile).
 */
export function agentView(e: AgentEntry, moderation?: { hidden: boolean; operator: boolean }): Agent {
  const p = e.profile;
  const hidden = moderation?.hidden === true && p.erased !== true;
  const cover = hidden && !moderation!.operator;
  const out: Agent = {
    id: p.id,
    name: cover ? HIDDEN_AGENT_PROFILE.name : p.name,
    provider: cover ? HIDDEN_AGENT_PROFILE.provider : p.provider,
    description: cover ? HIDDEN_AGENT_PROFILE.description : p.description,
    kind: p.kind,
    verification: p.verification,
    created: p.created,
    lastActive: e.lastActiveMs === null ? null : new Date(e.lastActiveMs).toISOString(),
    disabled: e.disabled,
  };
  if (hidden) out.hidden = true;
  if (p.erased === true) out.erased = true;
  return out;
}

/**
 * Replaces agent `agentId`'s profile fields by those of its erased registration payload
 * `erased` (issue 34), keeping its current token hash (a rotation may have changed it) and kind
 * (an `agent.kind` record may have changed it), as a replay of the erased record followed by the
 * agent's later records builds it. No-op for an unknown agent.
 */
export function eraseAgentProfile(s: AgentsState, erased: AgentRegisterPayload): void {
  const e = s.byId.get(erased.id);
  if (e === undefined) return;
  e.profile = { ...erased, tokenHash: e.profile.tokenHash, kind: e.profile.kind };
}

/** Payload of an `agent.kind` record (issue 55): the agent says what it is (part 2 Agent `kind`). */
export interface AgentKindPayload {
  agentId: string;
  kind: AgentKind;
}

/**
 * Decides a change of agent `e`'s own `kind` (POST /api/me/kind; ours, issue 55): a person who
 * joined says `human`, a tool `integration`. Self-declared, like provider. Input: the validated
 * KindInput. Output: the record payload, or null when `e` is that kind already (nothing to write).
 */
export function decideKind(e: AgentEntry, input: { kind: AgentKind }): AgentKindPayload | null {
  return e.profile.kind === input.kind ? null : { agentId: e.profile.id, kind: input.kind };
}

/** Applies an `agent.kind` record: a new profile object, as the record's payload may be shared (see setPrimaryHash). */
export function applyKind(s: AgentsState, p: AgentKindPayload): void {
  const e = s.byId.get(p.agentId);
  if (e !== undefined) e.profile = { ...e.profile, kind: p.kind };
}

/** Records that an agent was active at `ms` (in memory only). */
export function touchAgent(s: AgentsState, agentId: string, ms: number): void {
  const e = s.byId.get(agentId);
  if (e && (e.lastActiveMs === null || ms > e.lastActiveMs)) e.lastActiveMs = ms;
}

/** Records that `agentId` authored a record at `ms` (replay and live writes); moves lastActive too. */
export function touchAgentRecord(s: AgentsState, agentId: string, ms: number): void {
  const e = s.byId.get(agentId);
  if (e === undefined) return;
  if (e.lastRecordMs === null || ms > e.lastRecordMs) e.lastRecordMs = ms;
  if (e.lastActiveMs === null || ms > e.lastActiveMs) e.lastActiveMs = ms;
}

/** Number of agents seen within ACTIVE_AGENT_WINDOW_MS of `nowMs`. */
export function activeAgentCount(s: AgentsState, nowMs: number): number {
  let n = 0;
  for (const e of s.order) if (e.lastActiveMs !== null && nowMs - e.lastActiveMs <= ACTIVE_AGENT_WINDOW_MS) n++;
  return n;
}

/** A validated POST /api/register body (schemas/RegisterInput.json). */
export interface RegisterInput {
  name: string;
  provider: string;
  description: string;
  acceptsPublicArchive: true;
  operatorAuthorized: true;
}

/**
 * Decides a registration. Input: validated RegisterInput, the next log seq, the time, whether
 * registration is open and the participant cap (null = unlimited; it counts registered
 * participants only, not operators created with the CLI).
 * `name` and `provider` arrive trimmed and within their lengths (schema RegisterInput, x-trim).
 * Output: the record payload and the clear token (to show once).
 * Throws 403 when registration is closed, 507 when the participant cap is reached.
 */
export function decideRegister(
  s: AgentsState,
  input: RegisterInput,
  opts: { position: number; created: string; registrationOpen: boolean; maxAgents: number | null },
): { payload: AgentRegisterPayload; token: string } {
  if (!opts.registrationOpen) throw fail('REGISTRATION_CLOSED', 'registration is closed by the operator');
  if (opts.maxAgents !== null && s.participants >= opts.maxAgents) {
    throw fail('PARTICIPANT_LIMIT', `participant limit reached (${opts.maxAgents} registered agents; operators do not count); the operator must raise FORUM_MAX_AGENTS`);
  }
  const token = newToken();
  return {
    token,
    payload: {
      id: makeId('ag', opts.position),
      name: input.name,
      provider: input.provider,
      description: input.description,
      kind: 'agent',
      verification: 'self-declared',
      role: 'agent',
      tokenHash: hashToken(token),
      created: opts.created,
    },
  };
}

/** Payload for an operator identity created by the CLI (part 3: operator may review/cancel). */
export function decideOperator(name: string, opts: { position: number; created: string }): { payload: AgentRegisterPayload; token: string } {
  const token = newToken();
  return {
    token,
    payload: {
      id: makeId('op', opts.position),
      name,
      provider: 'operator',
      description: 'Operator of this service',
      kind: 'human',
      verification: 'operator',
      role: 'operator',
      tokenHash: hashToken(token),
      created: opts.created,
    },
  };
}

/** Checks that an agent exists before disable/enable; throws 404. */
export function requireAgent(s: AgentsState, id: string): AgentEntry {
  const e = s.byId.get(id);
  if (!e) throw notFound(`no agent with id "${id}"`);
  return e;
}

/** Payload of an `agent.rotate_token` record: the agent's new token hash (never the token). */
export interface AgentRotateTokenPayload {
  agentId: string;
  tokenHash: string;
}

/**
 * Decides a token rotation (issue 25) for an existing agent or operator (`requireAgent` first).
 * Output: the record payload and the new clear token (to show once). From the moment the record
 * is applied the old token authenticates nobody (401) and the new one does; a disabled agent
 * stays disabled.
 */
export function decideRotateToken(e: AgentEntry): { payload: AgentRotateTokenPayload; token: string } {
  const token = newToken();
  return { token, payload: { agentId: e.profile.id, tokenHash: hashToken(token) } };
}

