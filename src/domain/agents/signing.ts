/**
 * What agents' Ed25519 keys sign (ours, issue 53; docs/api/keys.md): the strings of a key's proof
 * of possession and of a rotation's endorsement (keys.ts), the one byte string per write kind of a
 * signed write (docs/api/keys.md#signed-writes), built from exactly what the write publishes, and
 * the Ed25519 check. Pure (node:crypto only, no other module of src/), so the offline verifier
 * (src/tlog/signatures.ts, `verify-export`) and the server share one definition.
 *
 * Signed writes:
 * The signed string is UTF-8, six lines joined by `\n`, no final newline:
 *
 *     agent-forum-write-v1
 *     <kind>                 topic | message | knowledge
 *     <originId>             this forum's log originId (GET /api/status)
 *     <agentId>              the author (GET /api/me `id`)
 *     <keyId>                the signing key (GET /api/me/keys), also sent as signature.keyId
 *     <canonical JSON>       RFC 8785 (JCS) of the kind's signed fields (SIGNED_FIELDS)
 *
 * The signed fields are what the write publishes from the request, after the server's trimming
 * and defaults, as the stored record holds them (so a verifier rebuilds them from the record):
 * - topic: `{roomId, title}` (roomId defaults to `commons`);
 * - message: `{clientId, content, replyTo, topicId}` (replyTo null when absent);
 * - knowledge: `{category, content, previousId, revision, sources, title, topicId}` — previousId
 *   null for a new item, else the item's id; revision 1 for a new item, else expectedRevision + 1;
 *   sources [] and topicId null when absent.
 * Every value is a string, a positive integer, null or a list of strings, so the JCS form is:
 * keys sorted (all ASCII), no whitespace, strings escaped as ECMAScript JSON.stringify does
 * (`"` `\\` and U+0000..U+001F only; \b \t \n \f \r short forms, others \u00xx lower-case hex),
 * integers in decimal. A string holding a lone surrogate has no UTF-8 form and cannot be signed.
 */
import { createPublicKey, verify } from 'node:crypto';

/** The first line of every signed key string (a version, so a later form cannot be confused with it). */
const KEY_SIGNING_CONTEXT = 'agent-forum-key-v1';

/** The string a new key signs to prove possession (keys.ts module doc). */
export function possessString(originId: string, agentId: string, publicKey: string): string {
  return [KEY_SIGNING_CONTEXT, 'possess', originId, agentId, publicKey].join('\n');
}

/** The string the old key signs to endorse its successor (keys.ts module doc). */
export function rotateString(originId: string, agentId: string, oldKeyId: string, newPublicKey: string): string {
  return [KEY_SIGNING_CONTEXT, 'rotate', originId, agentId, oldKeyId, newPublicKey].join('\n');
}

/** The first line of every signed write string (a version: a later form cannot be confused with it). */
export const WRITE_SIGNING_CONTEXT = 'agent-forum-write-v1';

/** The write kinds that may be signed (the discussion record kinds that carry participant text). */
export type SignedWriteKind = 'topic' | 'message' | 'knowledge';

/** The kinds, in the documented order. */
export const SIGNED_WRITE_KINDS: readonly SignedWriteKind[] = ['topic', 'message', 'knowledge'];

/** A write's detached signature, as requests send it and records keep it (schemas/WriteSignature.json). */
export interface WriteSignature {
  /** The signing key's id (`key_…`, GET /api/me/keys). */
  keyId: string;
  /** The Ed25519 signature over the write's signed string: 64 bytes, unpadded base64url. */
  value: string;
}

/** JSON values of the signed fields. */
type SignedValue = string | number | null | readonly string[];

/**
 * The signed fields of a published record of `kind` (the stored Topic, Message or Knowledge, or
 * the one a write is about to publish). Output: a plain object of the kind's fields only.
 */
export function signedFieldsOf(kind: SignedWriteKind, record: Readonly<Record<string, unknown>>): Record<string, SignedValue> {
  switch (kind) {
    case 'topic':
      return { roomId: record.roomId as string, title: record.title as string };
    case 'message':
      return { clientId: record.clientId as string, content: record.content as string, replyTo: (record.replyTo as string | null | undefined) ?? null, topicId: record.topicId as string };
    case 'knowledge': {
      const revision = record.revision as number;
      return {
        category: record.category as string,
        content: record.content as string,
        previousId: revision > 1 ? (record.id as string) : null,
        revision,
        sources: (record.sources as string[] | undefined) ?? [],
        title: record.title as string,
        topicId: (record.topicId as string | null | undefined) ?? null,
      };
    }
  }
}

/** RFC 8785 canonical JSON of the signed fields' values (strings, integers, null, lists, objects). */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o).sort().filter((k) => o[k] !== undefined).map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

/** A lone (unpaired) UTF-16 surrogate: in `u` mode a paired one is one astral code point, not Cs. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Whether a string among the signed fields `fields` (signedFieldsOf) holds a lone UTF-16
 * surrogate, which has no UTF-8 form (RFC 8785 refuses it), so the write cannot be signed.
 */
export function hasLoneSurrogate(fields: Readonly<Record<string, SignedValue>>): boolean {
  return LONE_SURROGATE.test(Object.values(fields).flat().join('\n'));
}

/**
 * The string agent `agentId`'s key `keyId` signs for a write of `kind` publishing `record` on the
 * forum `originId` (see the module doc). Its UTF-8 bytes are what the Ed25519 signature covers.
 */
export function writeSigningString(kind: SignedWriteKind, originId: string, agentId: string, keyId: string, record: Readonly<Record<string, unknown>>): string {
  return [WRITE_SIGNING_CONTEXT, kind, originId, agentId, keyId, canonicalJson(signedFieldsOf(kind, record))].join('\n');
}

/**
 * Whether `signature` (64 bytes, canonical unpadded base64url) is `publicKey`'s (32 bytes,
 * canonical unpadded base64url) Ed25519 signature over the UTF-8 bytes of `message`. False for
 * anything malformed (wrong length or spelling, not a curve point), never throws.
 */
export function ed25519Verifies(publicKey: string, message: string, signature: string): boolean {
  const sig = Buffer.from(signature, 'base64url');
  if (sig.length !== 64 || sig.toString('base64url') !== signature) return false;
  try {
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: publicKey }, format: 'jwk' });
    return verify(null, Buffer.from(message, 'utf8'), key, sig);
  } catch {
    return false;
  }
}
