/**
 * The state snapshot: the derived index persisted at a log position, so a start replays only the
 * records after it (issue 17 "Restart in seconds"). It is derived data: never a source of truth,
 * never a reason to refuse to start.
 *
 * File `<dataDir>/index/state.snapshot`: one JSON header line, then the body: its parts one
 * after the other — part 0 the packed state's objects (`v8.serialize`), each later part the raw
 * bytes of one of its Uint32Arrays (columns, lists, hash tables), so a load reads each array
 * straight into a buffer of its own and the peak memory of a load is the state itself, not the
 * state plus a deserialized copy. The header says which log it belongs to and where:
 *
 *     {"format":"agent-forum-state-v10","originId":…,"seq":S,"hash":"<chained hash of record S>",
 *      "lastTime":…,"byteOrder":"LE","partBytes":[…],"bodyBytes":N,"created":…,"segments":[…],
 *      "mac":"<64 hex>"}
 *
 * `mac` is HMAC-SHA-256, under the data folder's derived-file key (store/derived-key.ts), of the
 * header line's bytes before `,"mac":` followed by every body byte: it authenticates the header
 * and the body together, so a field changed without the key (a rewound `seq`, another
 * `lastTime`, `segments` removed, a body edited with any checksum recomputed) is detected.
 *
 * It is used only when it provably matches the log (see `App.open`): same format and originId,
 * MAC intact, every header field well-formed and cross-checked — record S, read back from its
 * segment at the location the snapshot recorded, is record S, carries exactly the chained hash H
 * (the hash chain then vouches for every record before it as it did when the snapshot was
 * written) and the time `lastTime`; the body locates exactly records 1..S; and every segment it
 * covers is still there with the size and modification time it had then (the last may have
 * grown), so an edited, cut or removed segment is caught by a whole replay. Any mismatch
 * (missing, damaged, forged, another lineage, a log that was cut or replaced) means a full replay
 * and a new snapshot — never a refusal to start, never a state served from it. A snapshot older
 * than the log (a crash since it was written) is fine: the records after S are replayed from the
 * log, with their hashes chained from H.
 *
 * Written with the store's crash-safe sequence (temp file → fsync → rename → fsync directory),
 * so a crash leaves the old snapshot or the new one, never a mix.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { closeSync, existsSync, fstatSync, mkdirSync, openSync, readSync, rmSync, statSync } from 'node:fs';
import { endianness } from 'node:os';
import { join } from 'node:path';
import { writeFileAtomicSync } from './fsutil.js';
import { listSegments } from './segment.js';
import { SNAPSHOT_HEADER_BYTES_MAX } from '../constants.js';

/** Folder of derived index files inside the data folder. */
export const INDEX_DIR = 'index';
/** Folder of the n-gram search index's shard files, inside INDEX_DIR (store/search). */
export const SEARCH_INDEX_DIR = 'search';
const SNAPSHOT_FILE = 'state.snapshot';
/**
 * Bumped whenever the header or the packed state's shape changes: an older snapshot is then
 * rebuilt once. v4: the header carries `mac` (HMAC of header and body) instead of `bodySha256`;
 * v7: the packed state holds the inbox (issue 37); v8: the inbox files knowledge corrections
 * (issue 37), so a v7 snapshot's inbox lacks them; v9: each agent carries its named tokens
 * (issue 53), so a v8 snapshot would lose them; v10: the forum keeps each topic's lower-cased
 * title and author (issue 55, the title search), which a v9 snapshot lacks.
 */
export const SNAPSHOT_FORMAT = 'agent-forum-state-v11';
/** What precedes the MAC at the end of a header line: `<fields>,"mac":"<64 hex>"}`. */
const MAC_FIELD = ',"mac":"';

/** What a snapshot's header records (see the module doc). */
export interface SnapshotHeader {
  format: string;
  originId: string;
  /** The last record the packed state includes. */
  seq: number;
  /** Chained hash of record `seq` (64 hex). */
  hash: string;
  /** Time of record `seq` (ISO 8601), or null for an empty log. */
  lastTime: string | null;
  /** Byte order of the arrays' parts (`os.endianness()` of the writer); another is not used. */
  byteOrder: 'LE' | 'BE';
  /** Length of each body part in bytes: part 0 the objects, then one per Uint32Array (a multiple of 4). */
  partBytes: number[];
  bodyBytes: number;
  created: string;
  /** Every segment file when the snapshot was written: name, size and modification time. */
  segments: SegmentStamp[];
}

/** A segment file's name, size (bytes) and modification time (ms, sub-ms precision). */
export interface SegmentStamp {
  name: string;
  sizeBytes: number;
  mtimeMs: number;
}

/** The stamps of every segment file of `logDir`, in seq order. */
export function segmentStamps(logDir: string): SegmentStamp[] {
  return listSegments(logDir).map((seg) => ({ name: seg.name, sizeBytes: seg.sizeBytes, mtimeMs: statSync(join(logDir, seg.name)).mtimeMs }));
}

/**
 * Why the segments of `logDir` are not the ones the snapshot was taken over, or null when they
 * are: every segment it recorded must still be there unchanged (size and modification time),
 * except that the last one may have grown (records appended after the snapshot). A segment
 * edited, truncated, replaced or removed since then makes the snapshot unusable, so the whole
 * log is replayed and checked record by record.
 */
export function segmentsChangedSince(logDir: string, recorded: readonly SegmentStamp[]): string | null {
  const now = new Map(segmentStamps(logDir).map((st) => [st.name, st]));
  for (let i = 0; i < recorded.length; i++) {
    const was = recorded[i]!;
    const is = now.get(was.name);
    if (is === undefined) return `covers segment ${was.name}, which is gone`;
    const last = i === recorded.length - 1;
    if (is.sizeBytes < was.sizeBytes || (!last && is.sizeBytes !== was.sizeBytes)) return `covers segment ${was.name} at ${was.sizeBytes} bytes, which now has ${is.sizeBytes}`;
    if (is.sizeBytes === was.sizeBytes && is.mtimeMs !== was.mtimeMs) return `covers segment ${was.name}, which was modified since`;
  }
  return null;
}

/** Path of the snapshot file of a data folder. */
export function snapshotPath(dataDir: string): string {
  return join(dataDir, INDEX_DIR, SNAPSHOT_FILE);
}

/** A packed state: its objects (`v8.serialize`) and the Uint32Arrays they refer to by index. */
export interface SnapshotBody {
  objects: Buffer;
  arrays: Uint32Array[];
}

/** The bytes of a typed array, without copying. */
const bytesOf = (a: Uint32Array): Buffer => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

/**
 * Writes the snapshot of `dataDir` atomically. Input: the header fields (format, byteOrder,
 * partBytes and bodyBytes are filled in here), the body, and the derived-file key (32 bytes) its
 * MAC is made with. Throws the file system's error (the caller logs it: a snapshot that could not
 * be written only makes the next start slower).
 */
export function writeSnapshot(dataDir: string, header: Omit<SnapshotHeader, 'format' | 'byteOrder' | 'partBytes' | 'bodyBytes'>, body: SnapshotBody, key: Buffer): void {
  const dir = join(dataDir, INDEX_DIR);
  mkdirSync(dir, { recursive: true });
  const parts = [body.objects, ...body.arrays.map(bytesOf)];
  const full: SnapshotHeader = {
    format: SNAPSHOT_FORMAT,
    originId: header.originId,
    seq: header.seq,
    hash: header.hash,
    lastTime: header.lastTime,
    byteOrder: endianness(),
    partBytes: parts.map((p) => p.length),
    bodyBytes: parts.reduce((n, p) => n + p.length, 0),
    created: header.created,
    segments: header.segments,
  };
  const fields = Buffer.from(JSON.stringify(full).slice(0, -1), 'utf8');
  const mac = createHmac('sha256', key).update(fields);
  for (const part of parts) mac.update(part);
  const headLine = Buffer.concat([fields, Buffer.from(`${MAC_FIELD}${mac.digest('hex')}"}\n`, 'latin1')]);
  const path = snapshotPath(dataDir);
  // A failed write removes its temp file: tens of MB of a half-written snapshot must not stay on
  // a disk that just ran full.
  writeFileAtomicSync(path, [headLine, ...parts]);
}

/**
 * Reads the snapshot of `dataDir` and checks it under `key` (the derived-file key). Output:
 * `{header, body}` (each array read into a buffer of its own), `null` when there is none, or
 * `{reason}` when the file is not a whole, authentic snapshot of the current format with
 * well-formed header fields (the caller replays the log instead). What the header says is checked
 * against the log by the caller (App.open). Never throws for a damaged file.
 */
export function readSnapshot(dataDir: string, key: Buffer): { header: SnapshotHeader; body: SnapshotBody } | { reason: string } | null {
  const path = snapshotPath(dataDir);
  if (!existsSync(path)) return null;
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    return { reason: `cannot be read (${(err as Error).message})` };
  }
  try {
    return readOpenSnapshot(fd, key);
  } catch (err) {
    return { reason: `cannot be read (${(err as Error).message})` };
  } finally {
    closeSync(fd);
  }
}

/** readSnapshot on an open file. Throws only for I/O errors. */
function readOpenSnapshot(fd: number, key: Buffer): { header: SnapshotHeader; body: SnapshotBody } | { reason: string } {
  const size = fstatSync(fd).size;
  // The header line: read in growing chunks until its newline.
  let head = Buffer.alloc(0);
  let nl = -1;
  while (nl === -1) {
    if (head.length >= Math.min(size, SNAPSHOT_HEADER_BYTES_MAX)) return { reason: 'has no header line' };
    const chunk = Buffer.alloc(Math.min(64 * 1024, size - head.length));
    const n = readSync(fd, chunk, 0, chunk.length, head.length);
    if (n === 0) return { reason: 'has no header line' };
    head = Buffer.concat([head, chunk.subarray(0, n)]);
    nl = head.indexOf(10);
  }
  let header: SnapshotHeader;
  try {
    header = JSON.parse(head.toString('utf8', 0, nl)) as SnapshotHeader;
  } catch {
    return { reason: 'has a header that is not JSON' };
  }
  if (header === null || typeof header !== 'object') return { reason: 'has a header that is not a JSON object' };
  if (header.format !== SNAPSHOT_FORMAT) return { reason: `is of format ${JSON.stringify(header.format)}, not ${SNAPSHOT_FORMAT}` };
  // The MAC is the header line's last field, so what it covers is the line's bytes before it.
  const macAt = nl - (MAC_FIELD.length + 64 + 2);
  if (macAt < 0 || head.toString('latin1', macAt, macAt + MAC_FIELD.length) !== MAC_FIELD || head.toString('latin1', nl - 2, nl) !== '"}') {
    return { reason: 'has no MAC at the end of its header (fails its authentication)' };
  }
  const storedMac = Buffer.from(head.toString('latin1', macAt + MAC_FIELD.length, nl - 2), 'hex');
  if (storedMac.length !== 32) return { reason: 'has a malformed MAC (fails its authentication)' };
  const mac = createHmac('sha256', key).update(head.subarray(0, macAt));
  if (header.byteOrder !== endianness()) return { reason: `was written on a machine of byte order ${header.byteOrder}, this one is ${endianness()}` };
  const bodyStart = nl + 1;
  const parts = header.partBytes;
  if (!Array.isArray(parts) || parts.length === 0 || !parts.every((n, i) => Number.isSafeInteger(n) && n >= 0 && (i === 0 || n % 4 === 0))) {
    return { reason: 'has a header whose part sizes are not valid' };
  }
  const bodyBytes = size - bodyStart;
  if (bodyBytes !== header.bodyBytes || parts.reduce((a, b) => a + b, 0) !== bodyBytes) {
    return { reason: `has ${bodyBytes} body bytes, its header says ${header.bodyBytes} (cut short?)` };
  }
  let pos = bodyStart;
  const read = (target: Buffer): void => {
    let got = 0;
    while (got < target.length) {
      const n = readSync(fd, target, got, target.length - got, pos + got);
      if (n === 0) throw new Error('unexpected end of file');
      got += n;
    }
    mac.update(target);
    pos += target.length;
  };
  const objects = Buffer.allocUnsafe(parts[0]!);
  read(objects);
  const arrays = parts.slice(1).map((n) => {
    const a = new Uint32Array(n / 4);
    read(bytesOf(a));
    return a;
  });
  if (!timingSafeEqual(mac.digest(), storedMac)) return { reason: 'fails its authentication (HMAC of header and body: damaged bytes, or written without this folder\'s key)' };
  const malformed = malformedField(header);
  if (malformed !== null) return { reason: `has a header whose ${malformed}` };
  return { header, body: { objects, arrays } };
}

const HEX64 = /^[0-9a-f]{64}$/;
const SEGMENT_FILE = /^\d{16}\.jsonl$/;

/**
 * Which header field is not of its shape (a phrase for the log), or null when all are. Defence in
 * depth behind the MAC: a snapshot an older or buggy writer produced is rebuilt, not trusted.
 */
function malformedField(h: SnapshotHeader): string | null {
  if (typeof h.originId !== 'string' || h.originId === '') return 'originId is not a string';
  if (!Number.isSafeInteger(h.seq) || h.seq < 1) return 'seq is not a positive integer';
  if (typeof h.hash !== 'string' || !HEX64.test(h.hash)) return 'hash is not 64 hex digits';
  if (typeof h.lastTime !== 'string' || Number.isNaN(Date.parse(h.lastTime)) || new Date(Date.parse(h.lastTime)).toISOString() !== h.lastTime) {
    return 'lastTime is not an ISO 8601 UTC time';
  }
  if (typeof h.created !== 'string') return 'created is not a string';
  if (!Array.isArray(h.segments) || h.segments.length === 0) return 'segments are missing';
  let previous = '';
  for (const st of h.segments as unknown[]) {
    const s = st as Partial<SegmentStamp> | null;
    if (s === null || typeof s !== 'object' || typeof s.name !== 'string' || !SEGMENT_FILE.test(s.name) || s.name <= previous) return 'segments are not segment files in order';
    if (!Number.isSafeInteger(s.sizeBytes) || s.sizeBytes! < 0 || typeof s.mtimeMs !== 'number' || !Number.isFinite(s.mtimeMs)) return 'segments have malformed stamps';
    previous = s.name;
  }
  return null;
}

/** Removes the snapshot of `dataDir`, if any (after it was found not to match the log). */
export function removeSnapshot(dataDir: string): void {
  rmSync(snapshotPath(dataDir), { force: true });
}
