/**
 * `restore --from s3://bucket/prefix [--to-seq N | --to-time T]` (issue 35;
 * docs/operate/replication.md#restore-runbook): rebuilds a stopped data folder from a replica bucket (format.ts).
 *
 * The sealed segments the manifest lists are read, then the chunks after the last of them (one
 * LIST; fetched RESTORE_PREFETCH_MAX at a time, used in key order); every line is proven on the way (hash chain from record 1, seq continuity, each object's
 * link to the one before), and the lines are written to segment files of the same names at the
 * same offsets as on the leader, so the restored log is the leader's byte for byte. The one pass
 * that proves the lines also makes `verify`'s strict checks (issue 35): every record in
 * canonical JSON form, every tombstone vouched for by a later erase record, every segment file
 * starting with the record it is named after — so the staged folder is verified as `restore DIR`
 * verifies a backup without being read again (its files are exactly the proven bytes, checked by
 * name and size), and installed the same way (the current log
 * moved to `log.replaced-<time>`, never deleted; a marker makes an interrupted restore refuse to
 * start).
 * - To the bucket's last record: the same log — same originId, so every client cursor, receipt
 *   and export checksum stays valid.
 * - To an earlier point (`toSeq`, or `toTime`: the last record at or before that instant): a new
 *   lineage (new originId, `restoredFrom`), as `restore DIR` makes: cursors beyond it get 409.
 *
 * Authentication (issue 50; format.ts): the manifest must be signed by the replica key, each
 * segment object must have the SHA-256 the manifest lists, each chunk must be signed; and the
 * bucket must reach the manifest's head watermark without a gap — a rolled-back or holed bucket is
 * refused, naming the missing object. Nothing in the data folder changes then.
 */
import { mkdirSync, openSync, closeSync, writeSync, fsyncSync, rmSync, writeFileSync } from 'node:fs';
import { removeSnapshot } from '../snapshot.js';
import { join } from 'node:path';
import { LogCorruptError, StoreStateError } from '../errors.js';
import { fsyncDirSync } from '../fsutil.js';
import { listSegments } from '../segment.js';
import { LOG_FORMAT, writeMeta, writeNewMeta } from '../meta.js';
import { RESTORE_MARKER, installStagedLog } from '../archive.js';
import stableStringify from 'fast-json-stable-stringify';
import { ERASE_RECORD_TYPE, GENESIS_HASH, encodeRecordLine, eraseTargetsOf, recordJson } from '../record-format.js';
import { segmentName } from '../segment.js';
import { BUCKET_OBJECT_ADVICE, HOLE_ADVICE, CHUNKS_DIR, MANIFEST_NAME, chunkName, checkSegment, decodeChunk, decodeManifest, firstSeqOfName, proveLines, segmentObjectName, type Manifest } from './format.js';
import type { ReplicaKey } from './keys.js';
import type { ObjectStore } from './object-store.js';
import { RESTORE_PREFETCH_BYTES_MAX, RESTORE_PREFETCH_MAX } from '../../constants.js';

/**
 * The bucket changed under a restore (a compaction deleted a chunk it listed, an erasure rewrote a
 * segment): nothing was changed in the data folder, and running the restore again succeeds.
 */
export class BucketChangedError extends StoreStateError {}

/** Where to stop: the last record (default), a seq, or an instant (the last record at or before it). */
export interface RestorePoint {
  toSeq?: number;
  toTimeMs?: number;
  /**
   * For a point before the bucket's end: builds the payload of the `moderation.erase` record the
   * restore appends after the point for a later erase record (payload, point's seq, its seq) that
   * vouches for a tombstone at or before the point (domain/moderation/restore-erasure.ts). Absent:
   * such a point is refused.
   */
  carryErasure?: (payload: unknown, cutSeq: number, eraseSeq: number) => unknown;
}

/** What `restore --from` did. */
export interface BucketRestoreResult {
  restoredFrom: string;
  records: number;
  lastSeq: number;
  /** The bucket's last record (pointSeq < bucketLastSeq: a point-in-time restore, new lineage). */
  bucketLastSeq: number;
  /** The last record of the bucket kept (the restore point); lastSeq - pointSeq erase records were appended after it. */
  pointSeq: number;
  /** Erase records appended after the point, one per later erasure of a record at or before it. */
  carriedErasures: number;
  originId: string;
  sameLineage: boolean;
  objectsRead: number;
  bytes: number;
  replacedLog: string | null;
  ms: number;
}

/** A run of proven lines on their way into a staging segment file. */
class StagingWriter {
  private fd: number | null = null;
  private file = -1;
  private size = 0;
  bytes = 0;
  /** Each file written: its segment's first seq → its size in bytes. */
  readonly files = new Map<number, number>();

  constructor(private readonly dir: string) {}

  /** Appends `lines` to segment `segment` at byte `offset` (must be where that file ends). Throws LogCorruptError for a gap or overlap. */
  write(segment: number, offset: number, lines: Buffer, where: string): void {
    if (segment !== this.file) {
      this.closeFile();
      if (offset !== 0) throw new LogCorruptError(where, 0, `its lines start at byte ${offset} of segment ${segmentName(segment)}, whose earlier bytes the bucket does not hold`);
      this.fd = openSync(join(this.dir, segmentName(segment)), 'wx', 0o600);
      this.file = segment;
      this.size = 0;
    }
    this.files.set(segment, this.size + lines.length);
    if (offset !== this.size) throw new LogCorruptError(where, 0, `its lines start at byte ${offset} of ${segmentName(segment)}, but the objects before it end at byte ${this.size}`);
    let w = 0;
    while (w < lines.length) w += writeSync(this.fd!, lines, w, lines.length - w);
    this.size += lines.length;
    this.bytes += lines.length;
  }

  /** Appends `lines` where the file written last ends (records the restore adds after the point). */
  append(lines: Buffer, where: string): void {
    this.write(this.file, this.size, lines, where);
  }

  closeFile(): void {
    if (this.fd === null) return;
    fsyncSync(this.fd);
    closeSync(this.fd);
    this.fd = null;
  }
}

/**
 * Yields `[item, await fetch(item)]` for each of `items` in order, with at most `window` fetches
 * in flight ahead of the consumer (objects read in parallel, proven in order) and, when `bytesOf`
 * is given, at most `maxBytes` of them by that measure (always at least the one being waited
 * for). A fetch that rejects rejects the iteration when its turn comes; fetches started ahead of
 * a consumer that stops early are left to settle unobserved (their rejections are caught here).
 */
export async function* readAhead<T, R>(items: readonly T[], fetch: (item: T) => Promise<R>, window: number, bytesOf: (item: T) => number = () => 0, maxBytes = 0): AsyncGenerator<[T, R]> {
  const inFlight: Promise<R>[] = [];
  let started = 0;
  let bytes = 0;
  for (let i = 0; i < items.length; i++) {
    while (started < items.length && started < i + window && (started === i || bytes + bytesOf(items[started]!) <= maxBytes || maxBytes === 0)) {
      bytes += bytesOf(items[started]!);
      const p = fetch(items[started++]!);
      p.catch(() => undefined);
      inFlight.push(p);
    }
    const got = await inFlight.shift()!;
    bytes -= bytesOf(items[i]!);
    yield [items[i]!, got];
  }
}

/** The bucket's manifest, authenticated by `key`. Throws StoreStateError when there is none, LogCorruptError when it does not authenticate. */
async function readManifest(store: ObjectStore, key: ReplicaKey): Promise<Manifest> {
  const url = store.location.url;
  const got = await store.get(MANIFEST_NAME);
  if (got === null) throw new StoreStateError(`${url} holds no ${MANIFEST_NAME}: no Agent Forum replica there (check the URL, the endpoint and the credentials)`);
  return decodeManifest(got.body, `${url}/${MANIFEST_NAME}`, key);
}

/** The refusal of a bucket that is holed or rolled back: `missing` (a chunk name) is gone before the watermark. */
function holedBucket(url: string, missing: string, manifest: Manifest, why: string): LogCorruptError {
  return new LogCorruptError(
    `${url}/${missing}`,
    0,
    `the object is missing (${why}), but the signed head watermark in ${MANIFEST_NAME} says the bucket held records up to ${manifest.head.seq}: the bucket is holed or rolled back`,
    `Nothing was changed. ${HOLE_ADVICE}`,
  );
}

/**
 * Rebuilds `dataDir` (stopped, locked by the caller) from the bucket behind `store`, up to `point`,
 * authenticating every object with `key` (the replica public key). Output: what was restored.
 * Throws StoreStateError (no manifest, a point before record 1 or beyond the bucket, the bucket
 * changed during the restore) or LogCorruptError (an object that does not authenticate or whose
 * lines are not proven, or one missing before the head watermark: named by its key and byte
 * offset); nothing in `dataDir` changes then.
 */
export async function restoreFromBucket(dataDir: string, store: ObjectStore, key: ReplicaKey, point: RestorePoint, nowIso: string): Promise<BucketRestoreResult> {
  const started = Date.now();
  const url = store.location.url;
  const manifest = await readManifest(store, key);
  if (point.toSeq !== undefined && point.toSeq < 1) throw new StoreStateError('--to-seq must be at least 1');
  mkdirSync(dataDir, { recursive: true });
  const staging = join(dataDir, 'log.restoring');
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging);
  const writer = new StagingWriter(staging);
  /** The chain proven so far: its last seq and chained hash (read on past the point while seeking, below). */
  let seq = 0;
  let hash = GENESIS_HASH;
  let objectsRead = 1;
  /** Whether a record beyond the restore point was met: from then on nothing more is kept. */
  let done = false;
  /** The last record kept (the restore point once `done`) and its chained hash. */
  let cutSeq = 0;
  let cutHash = GENESIS_HASH;
  /** Later erase records that vouch for tombstones at or before the point (carried after it). */
  const carried: Array<{ seq: number; payload: unknown }> = [];
  /** The chained hash of the head watermark's record as proven (null until it is passed). */
  let hashAtHead: string | null = manifest.head.seq === 0 ? manifest.head.hash : null;
  /** Tombstones kept and not yet vouched for by a later erase record (seq → stored hash, where). */
  const unvouched = new Map<number, { hash: string; where: string; offset: number }>();
  /**
   * Past the point, the bucket is read on (proven the same way, nothing kept) only while a kept
   * tombstone waits for the later erase record that vouches for it; none is ever added then.
   */
  const seeking = (): boolean => !done || unvouched.size > 0;
  /**
   * Proves `lines` (records seq + 1 …) strictly (canonical form; the erasure contract's
   * vouching), keeps those up to the restore point, writes them; past the point, notes the erase
   * records that vouch for kept tombstones.
   */
  const take = (lines: Buffer, segment: number, offset: number, where: string): void => {
    if (offset === 0 && segment !== seq + 1) throw new LogCorruptError(where, 0, `its lines begin segment ${segmentName(segment)} but start with record ${seq + 1}`);
    let keep = done ? 0 : lines.length;
    const proven = proveLines(lines, seq + 1, hash, where, (record, _json, at, _length, chained) => {
      if (record.seq === manifest.head.seq) hashAtHead = chained;
      if (!done) {
        const beyondSeq = point.toSeq !== undefined && record.seq > point.toSeq;
        const beyondTime = point.toTimeMs !== undefined && Date.parse(record.time) > point.toTimeMs;
        if (beyondSeq || beyondTime) {
          done = true;
          keep = at;
        }
      }
      // As the strict replay of `verify` does (store/log.ts Replay#emit).
      if (!done && record.erased === true) unvouched.set(record.seq, { hash: chained, where, offset: at });
      else if (record.type === ERASE_RECORD_TYPE && record.erased !== true) {
        let vouches = false;
        for (const t of eraseTargetsOf(record.payload)) {
          if (unvouched.get(t.seq)?.hash === t.hash) {
            unvouched.delete(t.seq);
            vouches = true;
          }
        }
        if (done && vouches) carried.push({ seq: record.seq, payload: record.payload });
      }
      if (!done) {
        cutSeq = record.seq;
        cutHash = chained;
      }
    }, true);
    if (keep > 0) writer.write(segment, offset, keep === lines.length ? lines : lines.subarray(0, keep), where);
    seq = proven.lastSeq;
    hash = proven.lastHash;
  };
  let bucketLast = 0;
  /** The restored log's last record and its chained hash: the point, or the last erase record carried after it. */
  let lastSeq = 0;
  let lastHash = GENESIS_HASH;
  try {
    // Segments too are fetched ahead, RESTORE_PREFETCH_BYTES_MAX of them at most (a leader seals
    // small ones for its chunk count: many of them, one GET each).
    const segmentsAhead = readAhead(manifest.segments, (seg) => store.get(segmentObjectName(seg.firstSeq)), RESTORE_PREFETCH_MAX, (seg) => seg.bytes, RESTORE_PREFETCH_BYTES_MAX);
    for await (const [s, got] of segmentsAhead) {
      if (s.firstSeq !== bucketLast + 1) throw new LogCorruptError(`${url}/${MANIFEST_NAME}`, 0, `segment ${s.firstSeq} does not follow record ${bucketLast}`);
      bucketLast = s.lastSeq;
      if (!seeking()) continue;
      const name = segmentObjectName(s.firstSeq);
      const obj = got;
      objectsRead++;
      if (obj === null) throw new LogCorruptError(`${url}/${name}`, 0, `it is listed in the signed ${MANIFEST_NAME} but missing: the bucket is holed`, BUCKET_OBJECT_ADVICE);
      try {
        checkSegment(obj.body, s, `${url}/${name}`, key);
      } catch (err) {
        // An erasure rewrites the segment, then lists its new digest: a restore between the two reads the manifest again.
        const now = await readManifest(store, key);
        if (now.segments.find((n) => n.firstSeq === s.firstSeq)?.sha256 !== s.sha256) throw new BucketChangedError(`${url}/${name} was rewritten during the restore (an erasure); run the restore again`);
        throw err;
      }
      take(obj.body, s.firstSeq, 0, `${url}/${name}`);
      if (seq !== s.lastSeq || hash !== s.lastHash) throw new LogCorruptError(`${url}/${name}`, 0, `it ends at record ${seq}, not at record ${s.lastSeq} with the hash the manifest lists`);
    }
    const names = (await store.list(CHUNKS_DIR)).filter((n) => (firstSeqOfName(n) ?? 0) > bucketLast);
    // Fetched RESTORE_PREFETCH_MAX ahead, proven and written in key order (issue 50: one GET at a
    // time, a fresh follower's restore of 5,000 chunks took minutes).
    for await (const [name, got] of readAhead(names, (n) => store.get(n), RESTORE_PREFETCH_MAX)) {
      const first = firstSeqOfName(name)!;
      if (first !== bucketLast + 1) {
        const now = await readManifest(store, key);
        if ((now.segments.at(-1)?.lastSeq ?? 0) > (manifest.segments.at(-1)?.lastSeq ?? 0)) {
          throw new BucketChangedError(`${url}/${name} does not follow record ${bucketLast}: the bucket changed during the restore (compaction); run the restore again`);
        }
        throw holedBucket(url, chunkName(bucketLast + 1), manifest, `the chunks jump from record ${bucketLast} to ${name}`);
      }
      const obj = got;
      objectsRead++;
      if (obj === null) throw new BucketChangedError(`${url}/${name} vanished during the restore (compaction); run the restore again`);
      const { header, lines } = decodeChunk(obj.body, `${url}/${name}`, key);
      if (header.firstSeq !== first || header.originId !== manifest.originId) throw new LogCorruptError(`${url}/${name}`, 0, "its header does not match its key or the manifest's archive");
      bucketLast = header.lastSeq;
      if (!seeking()) continue;
      if (header.prevHash !== hash) throw new LogCorruptError(`${url}/${name}`, 0, `it does not link to record ${seq} (prevHash differs)`);
      take(lines, header.segment, header.offset, `${url}/${name}`);
      if (seq !== header.lastSeq) throw new LogCorruptError(`${url}/${name}`, 0, `it ends at record ${seq}, not at ${header.lastSeq} as its header says`);
    }
    if (bucketLast < manifest.head.seq) throw holedBucket(url, chunkName(bucketLast + 1), manifest, `the bucket's chunks end at record ${bucketLast}`);
    if (hashAtHead !== null && hashAtHead !== manifest.head.hash) {
      throw new LogCorruptError(`${url}/${MANIFEST_NAME}`, 0, `record ${manifest.head.seq} in the bucket is not the one its signed head watermark names (another chain)`, BUCKET_OBJECT_ADVICE);
    }
    lastSeq = cutSeq;
    lastHash = cutHash;
    if (carried.length > 0 && unvouched.size === 0 && cutSeq > 0) {
      if (point.carryErasure === undefined) {
        throw new StoreStateError(`the log cut at record ${cutSeq} does not verify: an erased record before the cut is vouched for by an erase record after it; restore to a later point; nothing was changed`);
      }
      // The erasures made after the point of records at or before it, appended as records of the
      // new lineage (domain/moderation/restore-erasure.ts): erased text stays erased, and the
      // restored log verifies and replays.
      for (const c of carried) {
        const payloadJson = stableStringify(point.carryErasure(c.payload, cutSeq, c.seq));
        const encoded = encodeRecordLine(lastHash, recordJson(payloadJson, lastSeq + 1, nowIso, ERASE_RECORD_TYPE));
        writer.append(encoded.line, `${staging} (erase record carried from record ${c.seq})`);
        lastSeq++;
        lastHash = encoded.hash;
      }
    }
    writer.closeFile();
  } catch (err) {
    writer.closeFile();
    rmSync(staging, { recursive: true, force: true });
    throw err;
  }
  if (point.toSeq !== undefined && point.toSeq > bucketLast) {
    rmSync(staging, { recursive: true, force: true });
    throw new StoreStateError(`--to-seq ${point.toSeq} is beyond the bucket's last record ${bucketLast}; nothing was changed`);
  }
  if (cutSeq === 0) {
    rmSync(staging, { recursive: true, force: true });
    throw new StoreStateError(`no record of ${url} is at or before the restore point; nothing was changed`);
  }
  // Verified whole as a backup is (tombstones vouched for, canonical form: checked while proving)
  // before anything moves; the staged files are exactly the ones written, of the sizes written.
  const firstUnvouched = unvouched.entries().next();
  if (!firstUnvouched.done) {
    rmSync(staging, { recursive: true, force: true });
    const [tSeq, t] = firstUnvouched.value;
    throw new LogCorruptError(t.where, t.offset, `record ${tSeq} is a tombstone (an erased record) but no later ${ERASE_RECORD_TYPE} record in the bucket names it with its hash: an erasure nobody vouched for is damage`);
  }
  const staged = listSegments(staging);
  if (staged.length !== writer.files.size || staged.some((f) => writer.files.get(f.firstSeq) !== f.sizeBytes)) {
    rmSync(staging, { recursive: true, force: true });
    throw new StoreStateError(`the staged folder ${staging} does not hold exactly the segment files written (${staged.map((f) => `${f.name} ${f.sizeBytes} B`).join(', ')}); nothing was changed`);
  }
  const verified = { lastSeq, lastHash, records: lastSeq };
  fsyncDirSync(staging);
  const marker = join(dataDir, RESTORE_MARKER);
  writeFileSync(marker, `restore of ${url} started ${nowIso}\n`);
  fsyncDirSync(dataDir);
  // Derived files of the replaced archive are checked against the log at start and rebuilt; the
  // state snapshot goes now so that it is never even read against another log.
  removeSnapshot(dataDir);
  const replacedLog = installStagedLog(dataDir, staging, nowIso);
  const checkpoint = { seq: verified.lastSeq, hash: verified.lastHash };
  // A point before the bucket's last record (and so any carried erasure) makes another archive.
  const sameLineage = !done;
  let originId = manifest.originId;
  if (sameLineage) writeMeta(dataDir, { format: LOG_FORMAT, originId, created: manifest.created, ...manifest.lineage, checkpoint });
  else originId = writeNewMeta(dataDir, nowIso, { restoredFrom: manifest.originId, checkpoint }).originId;
  rmSync(marker);
  fsyncDirSync(dataDir);
  return {
    restoredFrom: url,
    records: verified.records,
    lastSeq: verified.lastSeq,
    bucketLastSeq: bucketLast,
    pointSeq: cutSeq,
    carriedErasures: carried.length,
    originId,
    sameLineage,
    objectsRead,
    bytes: writer.bytes,
    replacedLog,
    ms: Date.now() - started,
  };
}
