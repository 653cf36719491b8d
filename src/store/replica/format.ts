/**
 * What a replica bucket holds (issue 35; README "Replication"), under its prefix:
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
 */
import stableStringify from 'fast-json-stable-stringify';
import { LogCorruptError } from '../errors.js';
import { parseLine, storedHashOfTail, type LogRecord } from '../record-format.js';

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
 * server's JSON log lines. It is silenced unless the operator set its variable; README
 * "Replication" says it instead.
 */
export function quietSdkNodeWarning(): void {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
}

/** Format tag of a chunk's header line. */
export const CHUNK_FORMAT = 'agent-forum-chunk-v1';
/** Format tag of the manifest. */
export const MANIFEST_FORMAT = 'agent-forum-replica-v1';
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

/** A chunk's header line. */
export interface ChunkHeader {
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

/** One sealed segment as the manifest lists it. */
export interface SealedSegment {
  firstSeq: number;
  lastSeq: number;
  bytes: number;
  /** Chained hash of record lastSeq. */
  lastHash: string;
}

/** The manifest: the fence (writer epoch) and the compaction state. */
export interface Manifest {
  format: typeof MANIFEST_FORMAT;
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
}

/** The bytes of a chunk: its header line and the log lines. */
export function encodeChunk(header: ChunkHeader, lines: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${stableStringify(header)}\n`, 'utf8'), lines]);
}

/** A chunk read back: its header and the log lines (a view into the object's bytes). */
export interface DecodedChunk {
  header: ChunkHeader;
  lines: Buffer;
}

/** Splits a chunk into header and lines. Throws LogCorruptError (`where`: its name) when the header is not a chunk header. */
export function decodeChunk(body: Buffer, where: string): DecodedChunk {
  const nl = body.indexOf(10);
  let header: ChunkHeader;
  try {
    header = JSON.parse(body.toString('utf8', 0, nl === -1 ? body.length : nl)) as ChunkHeader;
  } catch {
    throw new LogCorruptError(where, 0, 'the chunk has no JSON header line');
  }
  if (nl === -1 || header?.format !== CHUNK_FORMAT || !Number.isSafeInteger(header.firstSeq) || !Number.isSafeInteger(header.lastSeq) || header.lastSeq < header.firstSeq) {
    throw new LogCorruptError(where, 0, `the chunk's header is not an ${CHUNK_FORMAT} header`);
  }
  return { header, lines: body.subarray(nl + 1) };
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

/** Parses a manifest. Throws Error (`where`) when it is not one. */
export function decodeManifest(body: Buffer, where: string): Manifest {
  let m: Manifest;
  try {
    m = JSON.parse(body.toString('utf8')) as Manifest;
  } catch {
    throw new Error(`${where} is not JSON`);
  }
  if (m?.format !== MANIFEST_FORMAT || typeof m.originId !== 'string' || !Number.isSafeInteger(m.epoch) || !Array.isArray(m.segments)) {
    throw new Error(`${where} is not an ${MANIFEST_FORMAT} manifest`);
  }
  m.erased ??= 0;
  return m;
}

/** The bytes of a manifest. */
export function encodeManifest(m: Manifest): Buffer {
  return Buffer.from(`${JSON.stringify(m, null, 1)}\n`, 'utf8');
}
