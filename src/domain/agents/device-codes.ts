/**
 * Device codes (ours, issue 55 "add another device"; docs/api/tokens.md#device-codes): a signed-in
 * agent or person makes a short one-time code (POST /api/me/device-codes); another browser or
 * device enters it (POST /api/device-codes/redeem, no token) and gets a new named token of that
 * agent, shown once. No token travels in a URL or between the devices; only the code does, typed
 * by the person.
 *
 * A code is DEVICE_CODE_LENGTH characters of DEVICE_CODE_ALPHABET (about 40 bits), good for
 * DEVICE_CODE_TTL_MS, used once, and an agent may make at most DEVICE_CODES_MAX within that time
 * (409 CREDENTIAL_LIMIT). Guessing is bounded by the redeem route's rate limit (per client
 * address). The log and the index keep the code's scrypt hash only (DEVICE_CODE_SCRYPT_COST: a
 * plain SHA-256 of 40 bits could be reversed within the code's lifetime by trying them all).
 *
 * Records, each carrying the hash, never the code:
 * - `agent.device_code_create {agentId, codeId, codeHash, name, scopes, expiresAt}`;
 * - `agent.device_code_redeem {agentId, codeId, tokenId, name, scopes, tokenHash}`: the code is
 *   used, and the agent holds a new named token `tokenId` (like `agent.token_create`, tokens.ts).
 *
 * Forgetting: applying an agent's `agent.device_code_create` drops that agent's codes that expired
 * by the record's time, so an agent's list holds at most DEVICE_CODES_MAX codes plus those that
 * expired since its last one; a replay and a state snapshot keep the same ones. A forgotten code
 * is unknown (404); a known one that expired or was used is gone (409 DEVICE_CODE_GONE: part 7 allows POST no 410).
 */
import { randomInt, scrypt } from 'node:crypto';
import { DEVICE_CODE_ALPHABET, DEVICE_CODE_LENGTH, DEVICE_CODE_SCRYPT_COST, DEVICE_CODES_MAX, DEVICE_CODE_TTL_MS } from '../../constants.js';
import { fail, invalid, notFound } from '../../errors.js';
import { makeId } from '../ids.js';
import { hashToken, newToken, type AgentEntry, type AgentsState, type DeviceCode, type TokenScope } from './agents.js';
import { addNamedToken, assertNamedTokenRoom } from './tokens.js';

/** Salt of every device code's scrypt hash: fixed, since a code is looked up by its hash. */
const SCRYPT_SALT = 'agent-forum device code v1';
/** scrypt's block size r and output length, bytes. */
const SCRYPT_BLOCK_SIZE = 8;
const SCRYPT_KEY_BYTES = 32;

/** Payload of an `agent.device_code_create` record. */
interface DeviceCodeCreatePayload {
  agentId: string;
  codeId: string;
  codeHash: string;
  name: string;
  scopes: TokenScope[];
  /** ISO 8601 UTC. */
  expiresAt: string;
}

/** Payload of an `agent.device_code_redeem` record. */
interface DeviceCodeRedeemPayload {
  agentId: string;
  codeId: string;
  tokenId: string;
  name: string;
  scopes: TokenScope[];
  tokenHash: string;
}

/** A fresh random code: DEVICE_CODE_LENGTH characters of DEVICE_CODE_ALPHABET (crypto.randomInt, uniform). */
export function newDeviceCode(): string {
  let out = '';
  for (let i = 0; i < DEVICE_CODE_LENGTH; i++) out += DEVICE_CODE_ALPHABET[randomInt(DEVICE_CODE_ALPHABET.length)];
  return out;
}

/**
 * A code as a person typed it, in its canonical form: capitals, without spaces and hyphens (the
 * reader shows it as `ABCD-EFGH`). Throws 400 VALIDATION naming the rule when what is left is not
 * DEVICE_CODE_LENGTH characters of DEVICE_CODE_ALPHABET.
 */
export function normalizeDeviceCode(typed: string): string {
  const code = typed.toUpperCase().replace(/[\s-]/g, '');
  const allowed = code.length === DEVICE_CODE_LENGTH && [...code].every((c) => DEVICE_CODE_ALPHABET.includes(c));
  if (!allowed) {
    throw invalid(`code: ${DEVICE_CODE_LENGTH} characters from ${DEVICE_CODE_ALPHABET} (no 0, 1, I, L or O; spaces and hyphens are ignored, lower case is read as capitals)`);
  }
  return code;
}

/** The hash the log and the index keep of canonical code `code` (scrypt, hex); async so the event loop keeps running. */
export function hashDeviceCode(code: string): Promise<string> {
  return new Promise((resolve, reject) => {
    scrypt(code, SCRYPT_SALT, SCRYPT_KEY_BYTES, { N: DEVICE_CODE_SCRYPT_COST, r: SCRYPT_BLOCK_SIZE, p: 1 }, (err, key) => (err ? reject(err) : resolve(key.toString('hex'))));
  });
}

/** Agent `e`'s codes still good or used at `nowMs` (made within DEVICE_CODE_TTL_MS), oldest first. */
function unexpired(e: AgentEntry, nowMs: number): DeviceCode[] {
  return e.deviceCodes.filter((c) => c.expiresMs > nowMs);
}

/**
 * Decides a device code for agent `e` (POST /api/me/device-codes). Input: the validated
 * DeviceCodeInput (name trimmed 1..80, scopes containing `read`), the code and its hash (made by
 * the route, hashing is async), the record's position (ids.ts) and the time, ms. Output: the record payload.
 * Throws 409 CREDENTIAL_LIMIT when `e` holds AGENT_TOKENS_MAX named tokens (the code could give
 * none) or made DEVICE_CODES_MAX codes within DEVICE_CODE_TTL_MS.
 */
export function decideDeviceCodeCreate(
  e: AgentEntry,
  input: { name: string; scopes: TokenScope[] },
  code: { hash: string },
  opts: { position: number; nowMs: number },
): DeviceCodeCreatePayload {
  assertNamedTokenRoom(e, (max) => `tokens: you hold ${max} named tokens, the most an agent may besides the registration token, so a device code could give none; revoke one first (POST /api/me/tokens/revoke)`);
  const live = unexpired(e, opts.nowMs);
  if (live.length >= DEVICE_CODES_MAX) {
    const freeAt = new Date(live[0]!.expiresMs).toISOString();
    throw fail('CREDENTIAL_LIMIT', `device codes: at most ${DEVICE_CODES_MAX} per ${DEVICE_CODE_TTL_MS / 60_000} minutes; the oldest expires at ${freeAt}`);
  }
  const scopes = (['read', 'write'] as const).filter((s) => input.scopes.includes(s));
  return { agentId: e.profile.id, codeId: makeId('dc', opts.position), codeHash: code.hash, name: input.name, scopes, expiresAt: new Date(opts.nowMs + DEVICE_CODE_TTL_MS).toISOString() };
}

/**
 * Decides the redemption of the code whose hash is `codeHash` (POST /api/device-codes/redeem) at
 * `nowMs`. Output: the record payload, the new token (to show once) and the agent.
 * Throws 404 NOT_FOUND for a code nobody made (or one forgotten), 409 DEVICE_CODE_GONE for one
 * used already, expired, or of a disabled agent, 409 CREDENTIAL_LIMIT when its agent holds
 * AGENT_TOKENS_MAX named tokens by now.
 */
export function decideDeviceCodeRedeem(s: AgentsState, codeHash: string, opts: { position: number; nowMs: number }): { payload: DeviceCodeRedeemPayload; token: string; agent: AgentEntry } {
  const c = s.byDeviceCodeHash.get(codeHash);
  const e = c === undefined ? undefined : s.byId.get(c.agentId);
  if (c === undefined || e === undefined) throw notFound('code: no such device code; check it, or make a new one on your signed-in device (Add a device)');
  if (c.redeemedTokenId !== null) throw fail('DEVICE_CODE_GONE', 'code: this device code was used already (each code adds one device); make a new one on your signed-in device');
  if (opts.nowMs >= c.expiresMs) throw fail('DEVICE_CODE_GONE', `code: this device code expired at ${new Date(c.expiresMs).toISOString()} (codes last ${DEVICE_CODE_TTL_MS / 60_000} minutes); make a new one on your signed-in device`);
  if (e.disabled === 1) throw fail('DEVICE_CODE_GONE', 'code: the account this device code belongs to is disabled');
  assertNamedTokenRoom(e, (max) => `tokens: the account holds ${max} named tokens, the most an agent may; revoke one on a signed-in device first (POST /api/me/tokens/revoke)`);
  const token = newToken();
  return { token, agent: e, payload: { agentId: e.profile.id, codeId: c.id, tokenId: makeId('tk', opts.position), name: c.name, scopes: [...c.scopes], tokenHash: hashToken(token) } };
}

/**
 * Applies an `agent.device_code_*` record (replay and live writes alike; `time` is the record's,
 * ISO 8601); returns false for other types. A record naming an unknown agent or code changes
 * nothing but what it can.
 */
export function applyDeviceCodeRecord(s: AgentsState, type: string, payload: unknown, time: string): boolean {
  switch (type) {
    case 'agent.device_code_create': {
      const p = payload as DeviceCodeCreatePayload;
      const e = s.byId.get(p.agentId);
      if (e === undefined) return true;
      const createdMs = Date.parse(time);
      forgetExpired(s, e, createdMs);
      const c: DeviceCode = { id: p.codeId, agentId: p.agentId, codeHash: p.codeHash, name: p.name, scopes: p.scopes, createdMs, expiresMs: Date.parse(p.expiresAt), redeemedTokenId: null };
      e.deviceCodes.push(c);
      s.byDeviceCodeHash.set(c.codeHash, c);
      return true;
    }
    case 'agent.device_code_redeem': {
      const p = payload as DeviceCodeRedeemPayload;
      const e = s.byId.get(p.agentId);
      if (e === undefined) return true;
      const c = e.deviceCodes.find((x) => x.id === p.codeId);
      if (c !== undefined) c.redeemedTokenId = p.tokenId;
      addNamedToken(s, e, { id: p.tokenId, agentId: p.agentId, name: p.name, scopes: p.scopes, created: time, tokenHash: p.tokenHash, lastUsedMs: null });
      return true;
    }
    default:
      return false;
  }
}

/** Drops agent `e`'s codes that expired by `nowMs` (see the module doc). */
function forgetExpired(s: AgentsState, e: AgentEntry, nowMs: number): void {
  if (e.deviceCodes.every((c) => c.expiresMs > nowMs)) return;
  for (const c of e.deviceCodes) if (c.expiresMs <= nowMs) s.byDeviceCodeHash.delete(c.codeHash);
  e.deviceCodes = e.deviceCodes.filter((c) => c.expiresMs > nowMs);
}

/** Restores agent `e`'s packed device codes into `e` and the index `s` (a state snapshot keeps them as they are). */
export function unpackDeviceCodes(s: AgentsState, e: AgentEntry, packed: DeviceCode[] | undefined): void {
  for (const c of packed ?? []) {
    e.deviceCodes.push(c);
    s.byDeviceCodeHash.set(c.codeHash, c);
  }
}
