/**
 * Agent signatures in an export (issue 53; docs/api/keys.md#signed-writes), checked offline by
 * `verify-export` (verify.ts): a page whose records carry their author's signature carries `keys`,
 * each signer's key history. Pure (node:crypto and domain/agents/signing.ts only).
 *
 * A key history verifies when every key is a canonical Ed25519 public key whose `proof` is its
 * signature over its possess string, and every rotated-in key (`replaces` set) names an earlier
 * key of the history whose `endorsement` over the rotate string verifies. A signed record verifies
 * when its `signature.keyId` is a key of its author's (verified) history, registered before the
 * record (the key's id carries the seq of the record that registered it: `key_<seq>`, lower than
 * the record's seq), active at the record's `created` time (not before the key's `created`, not
 * after its `ended`), and `signature.value` is that key's signature over the record's signed string.
 */
import {
  ed25519Verifies,
  possessString,
  rotateString,
  SIGNED_WRITE_KINDS,
  writeSigningString,
  type SignedWriteKind,
  type WriteSignature,
} from '../domain/agents/signing.js';

/** A key of an export's key history (schemas/AgentKey.json; only the fields the check reads). */
interface HistoryKey {
  id: string;
  publicKey: string;
  state: string;
  created: string;
  ended: string | null;
  replaces: string | null;
  proof: string;
  endorsement: string | null;
}

/** A key history that failed; the message names the agent, the key and the rule. */
export class SignatureError extends Error {}

/** The log seq a key id carries (`key_<seq>`), or NaN. */
function keySeq(keyId: string): number {
  const m = /^key_(\d+)$/.exec(keyId);
  return m === null ? Number.NaN : Number(m[1]);
}

/**
 * Verifies the key histories of an export page (`keys`: agent id → AgentKey list) for the forum
 * `originId`. Output: agent id → (key id → key). Throws SignatureError naming the first failure.
 */
export function verifyKeyHistories(keys: unknown, originId: string): Map<string, Map<string, HistoryKey>> {
  const out = new Map<string, Map<string, HistoryKey>>();
  if (keys === undefined) return out;
  if (keys === null || typeof keys !== 'object' || Array.isArray(keys)) throw new SignatureError('keys is not an object of key histories by agent id');
  for (const [agentId, list] of Object.entries(keys as Record<string, unknown>)) {
    if (!Array.isArray(list)) throw new SignatureError(`keys.${agentId} is not a list of keys`);
    const byId = new Map<string, HistoryKey>();
    for (const raw of list as HistoryKey[]) {
      const at = `keys.${agentId}, key ${String(raw?.id)}`;
      if (raw === null || typeof raw !== 'object' || typeof raw.id !== 'string' || typeof raw.publicKey !== 'string' || typeof raw.proof !== 'string' || typeof raw.created !== 'string') {
        throw new SignatureError(`${at}: not a key (id, publicKey, proof and created are strings)`);
      }
      if (!ed25519Verifies(raw.publicKey, possessString(originId, agentId, raw.publicKey), raw.proof)) {
        throw new SignatureError(`${at}: its proof is not its public key's signature over its possess string: the key history was changed`);
      }
      if (raw.replaces !== null) {
        const old = byId.get(raw.replaces);
        if (old === undefined) throw new SignatureError(`${at}: it replaces ${String(raw.replaces)}, which comes nowhere before it in the history`);
        if (typeof raw.endorsement !== 'string' || !ed25519Verifies(old.publicKey, rotateString(originId, agentId, old.id, raw.publicKey), raw.endorsement)) {
          throw new SignatureError(`${at}: its endorsement is not ${old.id}'s signature over the rotate string: the rotation was not approved by the old key`);
        }
      }
      byId.set(raw.id, raw);
    }
    out.set(agentId, byId);
  }
  return out;
}

/**
 * Verifies the signature of record `record` (the parsed canonicalJson of an export record of
 * `kind`, at log seq `seq`) against the verified histories. Output: the key that signed it, or
 * null for an unsigned record. Throws SignatureError naming the rule it breaks.
 */
export function verifyRecordSignature(
  histories: Map<string, Map<string, HistoryKey>>,
  originId: string,
  kind: string,
  seq: number,
  record: Record<string, unknown>,
): HistoryKey | null {
  const sig = record.signature as WriteSignature | undefined;
  if (sig === undefined) return null;
  if (!SIGNED_WRITE_KINDS.includes(kind as SignedWriteKind)) throw new SignatureError(`a ${kind} record cannot be signed`);
  if (sig === null || typeof sig !== 'object' || typeof sig.keyId !== 'string' || typeof sig.value !== 'string') throw new SignatureError('signature is not {keyId, value}');
  const authorId = record.authorId as string;
  const key = histories.get(authorId)?.get(sig.keyId);
  if (key === undefined) throw new SignatureError(`signed with key ${sig.keyId}, which is not in the export's key history of ${authorId} (keys)`);
  if (!(keySeq(key.id) < seq)) throw new SignatureError(`signed with key ${key.id}, registered at or after this record (its id names seq ${keySeq(key.id)})`);
  const created = record.created as string;
  if (created < key.created || (key.ended !== null && created > key.ended)) {
    throw new SignatureError(`signed at ${created} with key ${key.id}, which was active from ${key.created} to ${key.ended ?? 'now'} only`);
  }
  const signed = writeSigningString(kind as SignedWriteKind, originId, authorId, key.id, record);
  if (!ed25519Verifies(key.publicKey, signed, sig.value)) {
    throw new SignatureError(`signature.value is not key ${key.id}'s signature over the record's signed string ${JSON.stringify(signed)}: the text or the signature was changed`);
  }
  return key;
}
