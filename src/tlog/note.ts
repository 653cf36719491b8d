/**
 * Signed checkpoints (issue 53, docs/api/checkpoints.md): the C2SP `tlog-checkpoint` text signed
 * as a C2SP `signed-note` with Ed25519. Pure (node:crypto only): the server signs with it, the
 * offline verifier (`verify-export`, `verify-consistency`) checks with it.
 *
 * A checkpoint note:
 *
 *     <origin>\n
 *     <tree size, decimal>\n
 *     <root hash, standard base64>\n
 *     \n
 *     — <key name> <base64(key id (4 bytes) || Ed25519 signature (64 bytes))>\n
 *
 * The signature covers the text before the blank line (its final newline included). The key name
 * is the origin; the key id is the first 4 bytes of SHA-256(name || 0x0A || 0x01 || public key).
 */
import { createHash, createPublicKey, verify } from 'node:crypto';
import { HASH_BYTES } from './merkle.js';

/** The signature type byte of Ed25519 in a signed-note key id (C2SP signed-note). */
const ED25519_TYPE = 0x01;
/** The em dash and space that start every signature line. */
const SIG_PREFIX = '\u2014 ';
/** A checkpoint note's signature lines beyond this many are refused (the Go reference caps at 100). */
const SIGNATURES_MAX = 100;

/** A parsed checkpoint: origin, tree size and root hash (32 bytes). */
export interface Checkpoint {
  origin: string;
  size: number;
  root: Buffer;
}

/** The key id of an Ed25519 public key (32 raw bytes) under `name` (C2SP signed-note). */
export function noteKeyId(name: string, publicKey: Uint8Array): Buffer {
  return createHash('sha256').update(name, 'utf8').update(Buffer.from([0x0a, ED25519_TYPE])).update(publicKey).digest().subarray(0, 4);
}

/** The checkpoint body: origin, size, base64 root, each ending in a newline (C2SP tlog-checkpoint). */
export function checkpointBody(c: Checkpoint): string {
  return `${c.origin}\n${c.size}\n${c.root.toString('base64')}\n`;
}

/**
 * Signs a checkpoint as a signed note, named by its origin. Input: the checkpoint, `signer` (the
 * 64-byte Ed25519 signature of the bytes it is given) and the key's raw public key (32 bytes).
 * Output: the note text.
 */
export function signCheckpoint(c: Checkpoint, signer: (data: Buffer) => Buffer, publicKey: Uint8Array): string {
  const body = checkpointBody(c);
  const sig = signer(Buffer.from(body, 'utf8'));
  return `${body}\n${SIG_PREFIX}${c.origin} ${Buffer.concat([noteKeyId(c.origin, publicKey), sig]).toString('base64')}\n`;
}

/** A checkpoint note refused: `reason` says which rule failed. */
export class CheckpointError extends Error {}

/**
 * Parses a public key given as `ed25519:<base64url of 32 bytes>` (what /api/status shows) or as
 * a signed-note verifier key `<name>+<8 hex key id>+<base64(0x01 || 32 bytes)>`. Output: the raw
 * key and, for a verifier key, its name. Throws CheckpointError naming the rule.
 */
export function parseNoteKey(text: string): { raw: Buffer; name: string | null } {
  const t = text.trim();
  const plain = /^ed25519:([A-Za-z0-9_-]{43})$/.exec(t);
  if (plain) {
    const raw = Buffer.from(plain[1]!, 'base64url');
    if (raw.length === 32) return { raw, name: null };
  }
  const vkey = /^([^+\s]+)\+([0-9a-f]{8})\+([A-Za-z0-9+/]+={0,2})$/.exec(t);
  if (vkey) {
    const bytes = Buffer.from(vkey[3]!, 'base64');
    if (bytes.length === 33 && bytes[0] === ED25519_TYPE) {
      const raw = bytes.subarray(1);
      if (noteKeyId(vkey[1]!, raw).toString('hex') !== vkey[2]) throw new CheckpointError(`the verifier key's id ${vkey[2]} is not the id of its name and key`);
      return { raw, name: vkey[1]! };
    }
  }
  throw new CheckpointError('a checkpoint key is ed25519:<base64url of 32 bytes> (as /api/status shows it) or a signed-note verifier key name+keyid+base64');
}

/** The verifier key text of a raw Ed25519 public key under `name` (signed-note `vkey` form). */
export function verifierKey(name: string, publicKey: Uint8Array): string {
  return `${name}+${noteKeyId(name, publicKey).toString('hex')}+${Buffer.concat([Buffer.from([ED25519_TYPE]), publicKey]).toString('base64')}`;
}

/**
 * Verifies a checkpoint note against the Ed25519 public key `key` (raw 32 bytes), whose name is
 * `name` or, when null, the checkpoint's origin. Output: the checkpoint. Throws CheckpointError
 * naming the first rule that fails: framing, no signature by this key, a bad signature, a
 * malformed checkpoint body.
 */
export function verifyCheckpoint(note: string, key: { raw: Buffer; name: string | null }): Checkpoint {
  if (typeof note !== 'string') throw new CheckpointError('the checkpoint is not a text');
  if (/[\u0000-\u0009\u000b-\u001f]/.test(note)) throw new CheckpointError('the checkpoint note holds a control character other than newline');
  const split = note.lastIndexOf('\n\n');
  if (split < 0 || !note.endsWith('\n')) throw new CheckpointError('the checkpoint note has no blank line before its signatures, or does not end in a newline');
  const body = note.slice(0, split + 1);
  const sigLines = note.slice(split + 2, -1).split('\n');
  if (sigLines.length > SIGNATURES_MAX) throw new CheckpointError(`the checkpoint note has more than ${SIGNATURES_MAX} signatures`);
  const lines = body.slice(0, -1).split('\n');
  if (lines.length < 3) throw new CheckpointError('the checkpoint body has fewer than 3 lines (origin, size, root)');
  const [origin, sizeText, rootText] = lines as [string, string, string];
  const name = key.name ?? origin;
  const keyId = noteKeyId(name, key.raw);
  const publicKey = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: key.raw.toString('base64url') }, format: 'jwk' });
  let signed = false;
  for (const line of sigLines) {
    const m = /^\u2014 (\S+) ([A-Za-z0-9+/]+={0,2})$/.exec(line);
    if (!m) throw new CheckpointError(`a signature line is not "— <name> <base64>": ${JSON.stringify(line.slice(0, 80))}`);
    const sig = Buffer.from(m[2]!, 'base64');
    if (m[1] !== name || sig.length < 4 || !sig.subarray(0, 4).equals(keyId)) continue;
    if (sig.length !== 68 || !verify(null, Buffer.from(body, 'utf8'), publicKey, sig.subarray(4))) {
      throw new CheckpointError(`the checkpoint's signature by ${name} does not verify with the given key: the note was changed or signed by another key`);
    }
    signed = true;
    break;
  }
  if (!signed) throw new CheckpointError(`the checkpoint carries no signature by key ${name} (id ${keyId.toString('hex')})`);
  if (!/^(0|[1-9][0-9]{0,15})$/.test(sizeText) || !Number.isSafeInteger(Number(sizeText))) throw new CheckpointError(`the checkpoint's tree size ${JSON.stringify(sizeText)} is not a decimal number`);
  const root = Buffer.from(rootText, 'base64');
  if (root.length !== HASH_BYTES || root.toString('base64') !== rootText) throw new CheckpointError('the checkpoint root is not the standard base64 of 32 bytes');
  if (origin.length === 0) throw new CheckpointError('the checkpoint origin is empty');
  return { origin, size: Number(sizeText), root };
}
