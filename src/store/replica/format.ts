/**
 * What a replica bucket holds (issue 35; docs/operate/replication.md), under its prefix:
 *
 *     manifest.json                      the writer epoch and the sealed segments (updated only with If-Match)
 *     chunks/<16-digit first seq>        a run of log lines shipped by the leader (created only with If-None-Match: *)
 *     segments/<16-digit first seq>.jsonl  a sealed segment, byte for byte as on the leader's disk
 *
 * A chunk is one header line (JSON, below) followed by log lines exactly as they lie in the
 * leader's segment file (`agent-forum-log-v1`, store/log.ts): the bytes from `offset` in segment
 * `segment`. Its key is fixed by its first seq, so two writers that both think they lead contend
 * for the same key and only one wins: the chain can never fork in the bucket. Keys are
 * contiguous: a chunk covers its first seq up to the next chunk's first seq minus one (the last
 * chunk up to its header's `lastSeq`), so one LIST and one GET find the head. The chunks a sealed
 * segment covers are deleted once the manifest lists that segment (compaction): a restore reads
 * the segments and the few chunks after the last of them.
 *
 * Every line is proven on the way back (hash chain from `prevHash`, seq continuity), so a chunk
 * that was tampered with or belongs to another chain is refused, never applied.
 *
 * Authentication (issue 50): every object is signed, or listed with its SHA-256 in a signed one,
 * under the replica key (keys.ts: Ed25519; the signing key never enters the bucket), so bucket
 * write access alone cannot make a record that a follower, a restore or a leader's start accepts.
 * One documented byte string per object kind is signed, each starting with its format tag (domain
 * separation: a signature of one kind never verifies as another):
 * - a chunk: `"agent-forum-chunk-v2\n" + stableStringify(header without sig)`; the header holds
 *   `linesSha256`, the SHA-256 of the log lines after it, so the signature covers them too;
 * - the manifest: `"agent-forum-replica-v2\n" + stableStringify(manifest without sig)`; each sealed
 *   segment it lists carries the SHA-256 of the segment object's bytes, and `head` (the head
 *   watermark: a seq and its chained hash the bucket is known to have held) lets a reader tell a
 *   rolled-back or holed bucket from a current one.
 * A v1 (unsigned) bucket is refused by readers; a leader's start signs it (leader.ts).
 */
import { createHash } from 'node:crypto';
import stableStringify from 'fast-json-stable-stringify';
import { LogCorruptError } from '../errors.js';
import { GENESIS_HASH, parseLine, storedHashOfTail, type LogRecord } from '../record-format.js';
import type { ReplicaKey } from './keys.js';

/** Where a replica lives: `s3://bucket/prefix` split into its parts (the prefix without slashes at its ends). */
export interface ReplicaLocation {
  bucket: string;
  /** Key prefix, '' for the bucket's root; keys are `<prefix>/<name>`. */
  prefix: string;
  /** The URL as given, for messages and status. */
  url: string;
}

/**
 * Parses FORUM_REPLICA_URL / FORUM_FOLLOW / `restore --from`: `s3://bucket[/prefix]`.
 * Throws Error naming the rule for anything else (the caller says which setting it came from).
 */
export function parseReplicaUrl(url: string): ReplicaLocation {
  // Issue 50: a URL with "@" may carry credentials (s3://KEY:SECRET@bucket/x); it is refused
  // without being echoed, and any other refused URL is shown only up to its scheme and host.
  if (url.includes('@')) throw new Error('a replica URL must be s3://BUCKET[/PREFIX] with no "@" in it (the URL given is not shown: it may hold credentials); credentials go in the standard AWS variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), never in the URL');
  const m = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/([\x21-\x7e]*))?$/.exec(url);
  if (!m) throw new Error(`a replica URL must be s3://BUCKET[/PREFIX] (bucket: 3-63 lower-case letters, digits, dots or hyphens; prefix: visible ASCII), got ${shownUrlStart(url)}`);
  const prefix = (m[2] ?? '').replace(/^\/+|\/+$/g, '');
  if (prefix.split('/').some((part) => part === '.' || part === '..')) throw new Error(`a replica URL's prefix must not contain . or .. parts, got ${JSON.stringify(url)}`);
  return { bucket: m[1]!, prefix, url };
}

/** A refused URL in a message: its scheme and host part only (never a path or query that may hold a key), JSON-quoted. */
function shownUrlStart(url: string): string {
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/?#]*)/.exec(url);
  const start = m ? m[1]! : url.slice(0, 8);
  return `${JSON.stringify(start.slice(0, 80))}${start.length < url.length ? ' (the rest not shown)' : ''}`;
}

/**
 * Before the AWS SDK is loaded: its pinned version supports Node 20 but prints, once, that its
 * releases after January 2027 will need Node 22 — a plain-text warning in the middle of the
 * server's JSON log lines. It is silenced unless the operator set its variable;
 * docs/operate/replication.md says it instead.
 */
export function quietSdkNodeWarning(): void {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
}

/** Format tag of a chunk's header line (v2: signed; issue 50). */
export const CHUNK_FORMAT = 'agent-forum-chunk-v2';
/** Format tag of the manifest (v2: signed, with segment digests and the head watermark; issue 50). */
export const MANIFEST_FORMAT = 'agent-forum-replica-v2';
/** The unsigned formats before issue 50: refused by readers, signed by a leader's start. */
export const CHUNK_FORMAT_V1 = 'agent-forum-chunk-v1';
export const MANIFEST_FORMAT_V1 = 'agent-forum-replica-v1';

/** What to do about an object in the bucket that does not authenticate or prove. */
export const BUCKET_OBJECT_ADVICE =
  'Nothing of it was used. Only a server holding the replica signing key writes objects that authenticate: this one was altered or forged ' +
  "in the bucket, or the bucket is signed by another key (compare FORUM_REPLICA_PUBLIC_KEY with the leader's publicKey in \"replication status\").";

/** What to do about an object missing before the head watermark (a holed or rolled-back bucket). */
export const HOLE_ADVICE =
  'Nothing of the bucket was used past it. Deleting objects, or putting back older ones, needs only bucket write access: put the object back ' +
  "(a versioned bucket keeps old versions), or start the leader, whose start re-ships a rolled-back tail from its own log.";

/** The SHA-256 of `bytes`, hex. */
export function sha256Hex(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}
/** The manifest's name under the prefix. */
export const MANIFEST_NAME = 'manifest.json';
/** Folder of chunk objects under the prefix. */
export const CHUNKS_DIR = 'chunks/';
/** Folder of sealed segment objects under the prefix. */
export const SEGMENTS_DIR = 'segments/';

/** The name of the chunk whose first record is `firstSeq`. */
export function chunkName(firstSeq: number): string {
  return `${CHUNKS_DIR}${String(firstSeq).padStart(16, '0')}`;
}

/** The name of the sealed segment whose first record is `firstSeq` (the segment file's own name). */
export function segmentObjectName(firstSeq: number): string {
  return `${SEGMENTS_DIR}${String(firstSeq).padStart(16, '0')}.jsonl`;
}

/** The first seq a chunk or segment object name carries, or null for another name. */
export function firstSeqOfName(name: string): number | null {
  const m = /^(?:chunks\/(\d{16})|segments\/(\d{16})\.jsonl)$/.exec(name);
  return m ? Number(m[1] ?? m[2]) : null;
}

/** A chunk's header line as the leader fills it in; `encodeChunk` adds the digest and the signature. */
export interface ChunkFields {
  format: typeof CHUNK_FORMAT;
  /** The log's originId (part 2 Cursor): a chunk of another archive is refused. */
  originId: string;
  /** The writer epoch of the leader that shipped it (the manifest's at the time). */
  epoch: number;
  /** The shipping process's random id: a retried PUT recognises its own chunk by it and its bytes. */
  writer: string;
  firstSeq: number;
  lastSeq: number;
  /** Chained hash of record firstSeq - 1 (64 zeros for the first record): the chunk's link. */
  prevHash: string;
  /** First seq of the segment file these lines lie in, and their byte offset there. */
  segment: number;
  offset: number;
}

/** A chunk's header line as stored: the fields, the lines' SHA-256 (hex) and the signature over both (base64url). */
export interface ChunkHeader extends ChunkFields {
  linesSha256: string;
  sig: string;
}

/** One sealed segment as the manifest lists it. */
export interface SealedSegment {
  firstSeq: number;
  lastSeq: number;
  bytes: number;
  /** Chained hash of record lastSeq. */
  lastHash: string;
  /** SHA-256 (hex) of the segment object's bytes: the object is authenticated through the signed manifest. */
  sha256: string;
}

/** A record the bucket held: its seq and chained hash (GENESIS_HASH at seq 0). */
export interface HeadMark {
  seq: number;
  hash: string;
}

/** The manifest: the fence (writer epoch) and the compaction state. */
export interface Manifest {
  format: typeof MANIFEST_FORMAT;
  /** The first 16 hex digits of the SHA-256 of the raw public key that signs this bucket (keys.ts). */
  keyId: string;
  originId: string;
  /** When the archive began (its meta.json `created`) and what it was restored or repaired from: a restore writes them back. */
  created: string;
  lineage?: { restoredFrom?: string; repairedFrom?: string };
  /** Raised by one with If-Match each time a server takes the leadership; a stale leader's next conditional write fails. */
  epoch: number;
  /** The leader's process id (random) and its public URL, as it started. */
  writer: string;
  leaderUrl: string;
  /** When this epoch began (ISO). */
  since: string;
  /** Sealed segments in the bucket, in order; chunks cover what follows the last. */
  segments: SealedSegment[];
  /**
   * How many entries of the log's vouched map (erase targets, in log order) are erased in the
   * bucket too: a start finishes the rest (the erasure contract's crash rule for the bucket).
   */
  erased: number;
  /**
   * The head watermark: the bucket held every record up to this one. Raised by the leader whenever
   * it writes the manifest (epoch, compaction, erasure, a clean stop) and at most every
   * REPLICA_WATERMARK_INTERVAL_MS while the head moves; never lowered. Chunks that end before it,
   * or a gap in the chunks before it, mean the bucket was rolled back or holed.
   */
  head: HeadMark;
}

/** The watermark of an empty bucket. */
export const EMPTY_HEAD: HeadMark = { seq: 0, hash: GENESIS_HASH };

/** The byte string a signature of `kind` (a format tag) covers: the tag, a newline, the fields' canonical JSON. */
function signedBytes(kind: string, fields: object): Buffer {
  return Buffer.from(`${kind}\n${stableStringify(fields)}`, 'utf8');
}

/**
 * The bytes of a chunk: its header line — `fields` with the lines' SHA-256 and the signature by
 * `key` (a decoded header's old digest and signature are replaced: an erasure re-signs) — and the
 * log lines. Throws Error when `key` cannot sign.
 */
export function encodeChunk(fields: ChunkFields | ChunkHeader, lines: Buffer, key: ReplicaKey): Buffer {
  const { linesSha256: _digest, sig: _sig, ...rest } = fields as ChunkHeader;
  const signed = { ...rest, format: CHUNK_FORMAT as typeof CHUNK_FORMAT, linesSha256: sha256Hex(lines) };
  const header: ChunkHeader = { ...signed, sig: key.sign(signedBytes(CHUNK_FORMAT, signed)) };
  return Buffer.concat([Buffer.from(`${stableStringify(header)}\n`, 'utf8'), lines]);
}

/** A chunk read back: its header and the log lines (a view into the object's bytes). */
export interface DecodedChunk {
  header: ChunkHeader;
  lines: Buffer;
}

/** The advice for an unsigned (v1) bucket. */
const UNSIGNED_BUCKET_ADVICE =
  'Nothing of it was used. Start the leader once with this version: its start signs the bucket (it rewrites the manifest and every chunk it holds locally); then start this server again.';

/** Splits a chunk into its header line (parsed, unchecked) and its lines. Throws LogCorruptError when there is no JSON header line. */
function splitChunk(body: Buffer, where: string): { header: ChunkHeader; lines: Buffer } {
  const nl = body.indexOf(10);
  let header: ChunkHeader;
  try {
    header = JSON.parse(body.toString('utf8', 0, nl === -1 ? body.length : nl)) as ChunkHeader;
  } catch {
    throw new LogCorruptError(where, 0, 'the chunk has no JSON header line', BUCKET_OBJECT_ADVICE);
  }
  if (nl === -1 || header === null || typeof header !== 'object') throw new LogCorruptError(where, 0, 'the chunk has no header line', BUCKET_OBJECT_ADVICE);
  return { header, lines: body.subarray(nl + 1) };
}

/** True for a header's seq fields: safe integers, lastSeq ≥ firstSeq. */
const seqsValid = (h: ChunkFields): boolean => Number.isSafeInteger(h.firstSeq) && Number.isSafeInteger(h.lastSeq) && h.lastSeq >= h.firstSeq;

/**
 * Splits a chunk into header and lines and authenticates it: an `agent-forum-chunk-v2` header
 * signed by `key` whose `linesSha256` is the lines'. Throws LogCorruptError (`where`: its name)
 * for anything else — an unsigned v1 chunk, another key's signature, altered lines — naming the
 * key it is not signed by.
 */
export function decodeChunk(body: Buffer, where: string, key: ReplicaKey): DecodedChunk {
  const { header, lines } = splitChunk(body, where);
  if ((header.format as string) === CHUNK_FORMAT_V1) throw new LogCorruptError(where, 0, `it is an unsigned ${CHUNK_FORMAT_V1} chunk (a bucket written before this version)`, UNSIGNED_BUCKET_ADVICE);
  if (header.format !== CHUNK_FORMAT || !seqsValid(header)) throw new LogCorruptError(where, 0, `the chunk's header is not an ${CHUNK_FORMAT} header`, BUCKET_OBJECT_ADVICE);
  const { sig, ...signed } = header;
  if (!key.verify(signedBytes(CHUNK_FORMAT, signed), sig)) throw new LogCorruptError(where, 0, `the chunk is not signed by the replica key ${key.text}`, BUCKET_OBJECT_ADVICE);
  if (sha256Hex(lines) !== header.linesSha256) throw new LogCorruptError(where, 0, `its lines are not the ones its signed header names (linesSha256 differs): they were altered; it is not signed by the replica key ${key.text}`, BUCKET_OBJECT_ADVICE);
  return { header, lines };
}

/**
 * A v1 (unsigned) chunk's header and lines, for the leader that signs a v1 bucket (leader.ts): it
 * keeps only chunks whose lines are byte for byte its own. Throws LogCorruptError when `body` is
 * not a v1 chunk.
 */
export function decodeUnsignedChunk(body: Buffer, where: string): { header: ChunkFields; lines: Buffer } {
  const { header, lines } = splitChunk(body, where);
  if ((header.format as string) !== CHUNK_FORMAT_V1 || !seqsValid(header)) throw new LogCorruptError(where, 0, `the chunk's header is not an ${CHUNK_FORMAT_V1} header`, BUCKET_OBJECT_ADVICE);
  return { header: { ...header, format: CHUNK_FORMAT }, lines };
}

/**
 * Authenticates a sealed segment object through the signed manifest: its bytes must have the
 * SHA-256 the manifest lists. Throws LogCorruptError (`where`) otherwise.
 */
export function checkSegment(body: Buffer, entry: SealedSegment, where: string, key: ReplicaKey): void {
  if (sha256Hex(body) !== entry.sha256) {
    throw new LogCorruptError(where, 0, `its bytes are not the ones the signed manifest lists (sha256 differs): it is not signed by the replica key ${key.text}`, BUCKET_OBJECT_ADVICE);
  }
}

/** The last chained hash of a run of whole log lines (the stored hash of its last line), or null when it does not end in one. */
export function lastHashOf(lines: Buffer): string | null {
  if (lines.length === 0 || lines[lines.length - 1] !== 10) return null;
  return storedHashOfTail(lines, lines.length - 1);
}

/**
 * Proves a run of log lines: each line is framed and hash-checked (parseLine), chained from
 * `prevHash` and numbered from `firstSeq`; `onRecord` gets each record (an erased record with
 * `erased: true`), the offset and length of its line in `lines` (newline included) and its chained hash. Output: the last seq and its chained
 * hash. `strict`: each record (not a tombstone) must also be in canonical JSON form, as `verify`
 * checks (a restore; issue 35). Throws LogCorruptError (`where`, byte offset) at the first line
 * that is not proven.
 */
export function proveLines(
  lines: Buffer,
  firstSeq: number,
  prevHash: string,
  where: string,
  onRecord?: (record: LogRecord, payloadJson: string, offset: number, length: number, hash: string) => void,
  strict = false,
): { lastSeq: number; lastHash: string } {
  let pos = 0;
  let seq = firstSeq;
  let hash = prevHash;
  while (pos < lines.length) {
    const nl = lines.indexOf(10, pos);
    if (nl === -1) throw new LogCorruptError(where, pos, 'the last line is incomplete');
    const parsed = parseLine(lines, pos, nl, hash, seq, where, strict, stableStringify);
    onRecord?.(parsed.record, parsed.payloadJson, pos, nl + 1 - pos, parsed.hash);
    hash = parsed.hash;
    seq++;
    pos = nl + 1;
  }
  return { lastSeq: seq - 1, lastHash: hash };
}

/** A manifest of the unsigned v1 format (a bucket written before issue 50): no keyId, head or segment digests. */
export type UnsignedManifest = Omit<Manifest, 'format' | 'keyId' | 'head' | 'segments'> & { format: typeof MANIFEST_FORMAT_V1; segments: Array<Omit<SealedSegment, 'sha256'>> };

/** The v1 manifest `body` holds, or null when it is not one (leader.ts signs such a bucket). */
export function unsignedManifestOf(body: Buffer): UnsignedManifest | null {
  let m: UnsignedManifest;
  try {
    m = JSON.parse(body.toString('utf8')) as UnsignedManifest;
  } catch {
    return null;
  }
  if (m?.format !== MANIFEST_FORMAT_V1 || typeof m.originId !== 'string' || !Number.isSafeInteger(m.epoch) || !Array.isArray(m.segments)) return null;
  return { ...m, erased: m.erased ?? 0 };
}

/** A v1 (unsigned) manifest where a signed one is required: refused by readers; a leader's start signs the bucket. */
export class UnsignedBucketError extends LogCorruptError {
  constructor(where: string) {
    super(where, 0, `it is an unsigned ${MANIFEST_FORMAT_V1} manifest (a bucket written before this version)`, UNSIGNED_BUCKET_ADVICE);
  }
}

/**
 * Parses a manifest and authenticates it: an `agent-forum-replica-v2` manifest signed by `key`.
 * Output: the manifest (without its signature). Throws LogCorruptError (`where`) when it is not
 * one or does not authenticate (naming the key), UnsignedBucketError for a v1 manifest.
 */
export function decodeManifest(body: Buffer, where: string, key: ReplicaKey): Manifest {
  let m: Manifest & { sig?: unknown };
  try {
    m = JSON.parse(body.toString('utf8')) as Manifest;
  } catch {
    throw new LogCorruptError(where, 0, 'it is not JSON', BUCKET_OBJECT_ADVICE);
  }
  if (unsignedManifestOf(body) !== null) throw new UnsignedBucketError(where);
  if (m?.format !== MANIFEST_FORMAT || typeof m.originId !== 'string' || !Number.isSafeInteger(m.epoch) || !Array.isArray(m.segments)) {
    throw new LogCorruptError(where, 0, `it is not an ${MANIFEST_FORMAT} manifest`, BUCKET_OBJECT_ADVICE);
  }
  const { sig, ...signed } = m;
  if (m.keyId !== key.keyId) {
    throw new LogCorruptError(where, 0, `it is signed by the replica key with keyId ${JSON.stringify(m.keyId)}, not by the replica key ${key.text} (keyId ${key.keyId})`, BUCKET_OBJECT_ADVICE);
  }
  if (!key.verify(signedBytes(MANIFEST_FORMAT, signed), sig)) throw new LogCorruptError(where, 0, `it is not signed by the replica key ${key.text}`, BUCKET_OBJECT_ADVICE);
  if (!Number.isSafeInteger(signed.head?.seq) || typeof signed.head.hash !== 'string') throw new LogCorruptError(where, 0, 'its head watermark is malformed', BUCKET_OBJECT_ADVICE);
  return signed;
}

/** The bytes of a manifest, signed by `key` (its keyId set; an old signature replaced). Throws Error when `key` cannot sign. */
export function encodeManifest(m: Manifest, key: ReplicaKey): Buffer {
  const { sig: _sig, ...rest } = m as Manifest & { sig?: string };
  const signed: Manifest = { ...rest, format: MANIFEST_FORMAT, keyId: key.keyId };
  return Buffer.from(`${JSON.stringify({ ...signed, sig: key.sign(signedBytes(MANIFEST_FORMAT, signed)) }, null, 1)}\n`, 'utf8');
}

/** The higher of two watermarks (a watermark is never lowered). */
export function higherHead(a: HeadMark, b: HeadMark): HeadMark {
  return b.seq > a.seq ? b : a;
}
