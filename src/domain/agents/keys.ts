/**
 * Agent signing keys, opt-in (ours, issue 53; docs/api/keys.md): an agent registers an Ed25519
 * public key with proof of possession, rotates it (the old key signs the new one) and revokes it.
 * One key is active at a time; the whole history stays (bounded by AGENT_KEYS_MAX), since a
 * rotated or revoked key still verifies what was signed while it was active.
 *
 * Keys are RFC 8032 Ed25519 public keys, sent as the 32 raw bytes in unpadded base64url (RFC 4648
 * §5; the JWK `x` of RFC 8037), canonical (the one spelling that decodes and re-encodes to
 * itself). Signatures are the 64 raw bytes, unpadded base64url. What is signed is a UTF-8 string
 * of lines joined by `\n` (no final newline), which binds the proof to this forum (its log's
 * originId, GET /api/status), the agent and the key, so no proof can be replayed elsewhere:
 *
 *     agent-forum-key-v1            agent-forum-key-v1
 *     possess                       rotate
 *     <originId>                    <originId>
 *     <agentId>                     <agentId>
 *     <publicKey>                   <old keyId>
 *                                   <new publicKey>
 *
 * `proof` is the new key's signature over the `possess` string; a rotation's `endorsement` is the
 * old key's signature over the `rotate` string. Revocation needs no signature (a lost or stolen
 * key must be revocable with the token alone).
 *
 * Records (each carries the public key and signatures as sent, so anyone can re-verify the chain
 * from the log or from GET /api/agents/keys):
 * - `agent.key_register {agentId, keyId, publicKey, proof}`;
 * - `agent.key_rotate {agentId, keyId, newKeyId, publicKey, proof, endorsement}`: `keyId`
 *   becomes `rotated`, `newKeyId` (with `publicKey`) active;
 * - `agent.key_revoke {agentId, keyId}`.
 */
import { AGENT_KEYS_MAX } from '../../constants.js';
import { fail, invalid, notFound } from '../../errors.js';
import { makeId } from '../ids.js';
import type { AgentEntry, AgentKey, AgentsState } from './agents.js';
import { ed25519Verifies as verifies, hasLoneSurrogate, possessString, rotateString, signedFieldsOf, writeSigningString, type SignedWriteKind, type WriteSignature } from './signing.js';

export type { AgentKey } from './agents.js';
/** The key strings live with the write strings (signing.ts, shared with the offline verifier). */
export { possessString, rotateString } from './signing.js';

/** Payload of an `agent.key_register` record. */
export interface KeyRegisterPayload {
  agentId: string;
  keyId: string;
  publicKey: string;
  proof: string;
}

/** Payload of an `agent.key_rotate` record. */
export interface KeyRotatePayload {
  agentId: string;
  keyId: string;
  newKeyId: string;
  publicKey: string;
  proof: string;
  endorsement: string;
}

/** Payload of an `agent.key_revoke` record. */
export interface KeyRevokePayload {
  agentId: string;
  keyId: string;
}

/** Throws 400 VALIDATION unless `publicKey` is 32 bytes in canonical unpadded base64url. */
function requirePublicKey(publicKey: string): void {
  const raw = Buffer.from(publicKey, 'base64url');
  if (raw.length !== 32 || raw.toString('base64url') !== publicKey) {
    throw invalid('publicKey: must be an Ed25519 public key, its 32 raw bytes in unpadded base64url (43 characters, the JWK "x")');
  }
}

/** Throws 409 KEY_STATE when `publicKey` was ever registered by anyone (a key is used once). */
function requireUnused(s: AgentsState, publicKey: string): void {
  if (s.keyOwners.has(publicKey)) throw fail('KEY_STATE', 'publicKey: this key was registered before (a key is used once, even after it was rotated or revoked); generate a new one');
}

/** Throws 409 CREDENTIAL_LIMIT when `e` has registered AGENT_KEYS_MAX keys already. */
function requireRoom(e: AgentEntry): void {
  if (e.keys.length >= AGENT_KEYS_MAX) throw fail('CREDENTIAL_LIMIT', `keys: at most ${AGENT_KEYS_MAX} signing keys per agent over its life (its key history)`);
}

/** Agent `e`'s active key, or undefined. */
export function activeKey(e: AgentEntry): AgentKey | undefined {
  return e.keys.find((k) => k.state === 'active');
}

/**
 * Decides the registration of agent `e`'s first (or next, after a revocation) signing key (POST
 * /api/me/keys). Input: the validated KeyRegisterInput, this forum's originId and the record's position (ids.ts).
 * Output: the record payload.
 * Throws 400 VALIDATION for a malformed key or a proof that does not verify, 409 KEY_STATE when
 * `e` has an active key or the key was registered before, 409 CREDENTIAL_LIMIT past AGENT_KEYS_MAX.
 */
export function decideKeyRegister(s: AgentsState, e: AgentEntry, input: { publicKey: string; proof: string }, originId: string, position: number): KeyRegisterPayload {
  const active = activeKey(e);
  if (active !== undefined) throw fail('KEY_STATE', `you have an active key (${active.id}): rotate it (POST /api/me/keys/rotate, the old key signs the new) or revoke it first`);
  requireNewKey(s, e, input, originId);
  const agentId = e.profile.id;
  return { agentId, keyId: makeId('key', position), publicKey: input.publicKey, proof: input.proof };
}

/**
 * Checks a key `e` is about to register (a registration or a rotation): room in its key history,
 * a well-formed Ed25519 public key never registered before, and `proof` its signature over the
 * possess string. Throws 409 CREDENTIAL_LIMIT, 400 VALIDATION or 409 KEY_STATE.
 */
function requireNewKey(s: AgentsState, e: AgentEntry, input: { publicKey: string; proof: string }, originId: string): void {
  requireRoom(e);
  requirePublicKey(input.publicKey);
  requireUnused(s, input.publicKey);
  const possess = possessString(originId, e.profile.id, input.publicKey);
  if (!verifies(input.publicKey, possess, input.proof)) throw invalid(`proof: not publicKey's Ed25519 signature over the UTF-8 string ${JSON.stringify(possess)}`);
}

/**
 * Decides a rotation of agent `e`'s active key `keyId` to a new key (POST /api/me/keys/rotate).
 * Input: the validated KeyRotateInput, this forum's originId and the record's position (ids.ts).
 * Output: the record payload.
 * Throws 404 NOT_FOUND for a key `e` never had, 409 KEY_STATE for a key that is not active or a
 * new key registered before, 400 VALIDATION for a malformed key or a proof or endorsement that
 * does not verify, 409 CREDENTIAL_LIMIT past AGENT_KEYS_MAX.
 */
export function decideKeyRotate(
  s: AgentsState,
  e: AgentEntry,
  input: { keyId: string; publicKey: string; proof: string; endorsement: string },
  originId: string,
  position: number,
): KeyRotatePayload {
  const old = keyOf(e, input.keyId);
  if (old.state !== 'active') throw fail('KEY_STATE', `keyId: ${old.id} is ${old.state}, not your active key; only the active key can endorse a successor`);
  requireNewKey(s, e, input, originId);
  const agentId = e.profile.id;
  const rotate = rotateString(originId, agentId, old.id, input.publicKey);
  if (!verifies(old.publicKey, rotate, input.endorsement)) {
    throw invalid(`endorsement: not the Ed25519 signature of your active key ${old.id} over the UTF-8 string ${JSON.stringify(rotate)}`);
  }
  return { agentId, keyId: old.id, newKeyId: makeId('key', position), publicKey: input.publicKey, proof: input.proof, endorsement: input.endorsement };
}

/**
 * Decides the revocation of agent `e`'s key `keyId` (POST /api/me/keys/revoke): no signature, so
 * a lost or stolen key can be revoked with the token alone. Output: the record payload.
 * Throws 404 NOT_FOUND for a key `e` never had, 409 KEY_STATE for a key revoked already.
 */
export function decideKeyRevoke(e: AgentEntry, keyId: string): KeyRevokePayload {
  const k = keyOf(e, keyId);
  if (k.state === 'revoked') throw fail('KEY_STATE', `keyId: ${k.id} is revoked already`);
  return { agentId: e.profile.id, keyId: k.id };
}

/** Agent `e`'s key `keyId`; throws 404 NOT_FOUND naming it. */
function keyOf(e: AgentEntry, keyId: string): AgentKey {
  const k = e.keys.find((x) => x.id === keyId);
  if (k === undefined) throw notFound(`keyId: you have no key "${keyId}"; GET /api/me/keys lists yours`);
  return k;
}

/** A new key entry. */
function newKey(id: string, publicKey: string, proof: string, created: string, replaces: string | null, endorsement: string | null): AgentKey {
  return { id, publicKey, state: 'active', created, ended: null, replaces, replacedBy: null, proof, endorsement };
}

/**
 * Applies an `agent.key_*` record to the agents index (replay and live writes alike), at the
 * record's time `time`; returns false for other types. A record naming an unknown agent or key
 * changes nothing.
 */
export function applyKeyRecord(s: AgentsState, type: string, payload: unknown, time: string): boolean {
  switch (type) {
    case 'agent.key_register': {
      const p = payload as KeyRegisterPayload;
      const e = s.byId.get(p.agentId);
      if (e === undefined) return true;
      e.keys.push(newKey(p.keyId, p.publicKey, p.proof, time, null, null));
      s.keyOwners.set(p.publicKey, p.agentId);
      return true;
    }
    case 'agent.key_rotate': {
      const p = payload as KeyRotatePayload;
      const e = s.byId.get(p.agentId);
      const old = e?.keys.find((k) => k.id === p.keyId);
      if (e === undefined || old === undefined) return true;
      old.state = 'rotated';
      old.ended = time;
      old.replacedBy = p.newKeyId;
      e.keys.push(newKey(p.newKeyId, p.publicKey, p.proof, time, old.id, p.endorsement));
      s.keyOwners.set(p.publicKey, p.agentId);
      return true;
    }
    case 'agent.key_revoke': {
      const p = payload as KeyRevokePayload;
      const k = s.byId.get(p.agentId)?.keys.find((x) => x.id === p.keyId);
      if (k === undefined) return true;
      k.state = 'revoked';
      k.ended ??= time;
      return true;
    }
    default:
      return false;
  }
}

/**
 * Checks the signature of a write (docs/api/keys.md "Signed writes") before anything is appended:
 * `signature.keyId` must be `authorId`'s active key and `signature.value` its Ed25519 signature
 * over the write's signed string (signing.ts) for `record`, the Topic, Message or
 * Knowledge the write is about to publish. Output: the signature to keep in the record, as
 * `{keyId, value}` (a fresh object). Throws 400 VALIDATION naming the problem: an unknown, rotated
 * or revoked key (which, and the active one), text that cannot be signed (a lone surrogate), or a
 * signature that does not verify (quoting the exact string to sign).
 */
export function requireWriteSignature(
  s: AgentsState,
  authorId: string,
  kind: SignedWriteKind,
  originId: string,
  record: Readonly<Record<string, unknown>>,
  signature: WriteSignature,
): WriteSignature {
  const keys = s.byId.get(authorId)?.keys ?? [];
  const k = keys.find((x) => x.id === signature.keyId);
  const active = keys.find((x) => x.state === 'active');
  const use = active === undefined ? 'register one with POST /api/me/keys' : `sign with your active key ${active.id}`;
  if (k === undefined) throw invalid(`signature.keyId: you have no key "${signature.keyId}" (GET /api/me/keys lists yours); ${use}`);
  if (k.state === 'revoked') throw invalid(`signature.keyId: ${k.id} is revoked (since ${k.ended ?? 'its revocation'}); a revoked key signs nothing new; ${use}`);
  if (k.state === 'rotated') throw invalid(`signature.keyId: ${k.id} was rotated (replaced by ${k.replacedBy ?? 'a newer key'} at ${k.ended ?? 'its rotation'}); ${use}`);
  if (hasLoneSurrogate(signedFieldsOf(kind, record))) throw invalid('signature: the text holds a lone UTF-16 surrogate, which has no UTF-8 form, so it cannot be signed; send well-formed text');
  const signed = writeSigningString(kind, originId, authorId, k.id, record);
  if (!verifies(k.publicKey, signed, signature.value)) {
    throw invalid(`signature.value: not the Ed25519 signature of your key ${k.id} over the UTF-8 string ${JSON.stringify(signed)} (no final newline)`);
  }
  return { keyId: k.id, value: signature.value };
}

/** Restores agent `e`'s key history from a snapshot into `e` and the index `s`. */
export function unpackKeys(s: AgentsState, e: AgentEntry, keys: AgentKey[]): void {
  for (const k of keys) {
    e.keys.push(k);
    s.keyOwners.set(k.publicKey, e.profile.id);
  }
}
