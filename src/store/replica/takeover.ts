/**
 * What a leader's start reads and checks in the bucket before it leads (issue 50; leader.ts
 * `takeLeadershipHeld` runs the steps in order): the manifest of a v1 (unsigned) bucket is signed
 * first (`signV1Bucket`); the bucket's head is found from the last sealed segment and the chunks
 * after it (`bucketHead`), checked against the signed head watermark (`checkWatermark`) and
 * against this folder's log (`checkHeadHash`); the writer epoch is taken with one conditional
 * manifest write (`takeEpoch`). Every object read is authenticated with the replica key; what does
 * not authenticate, or shows that this server must not lead, throws ReplicaStartError naming the
 * object and the remedy. These functions keep no state: the leader holds what they find.
 */
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { REPLICA_TAKE_EPOCH_ATTEMPTS } from '../../constants.js';
import { logger } from '../../logger.js';
import { LogCorruptError, StoreStateError } from '../errors.js';
import { LOG_DIR, type Log } from '../log.js';
import { GENESIS_HASH } from '../record-format.js';
import { segmentName } from '../segment.js';
import {
  CHUNKS_DIR,
  EMPTY_HEAD,
  MANIFEST_FORMAT,
  MANIFEST_NAME,
  chunkName,
  decodeChunk,
  decodeManifest,
  decodeUnsignedChunk,
  encodeChunk,
  encodeManifest,
  firstSeqOfName,
  higherHead,
  lastHashOf,
  segmentObjectName,
  sha256Hex,
  type ChunkFields,
  type ChunkHeader,
  type Manifest,
  type UnsignedManifest,
} from './format.js';
import type { ReplicaKey } from './keys.js';
import { putSegment, type ObjectStore } from './object-store.js';

/** A start that must not go on (another archive's bucket, a bucket ahead or diverged, a lost epoch race). */
export class ReplicaStartError extends StoreStateError {}

/** A record of the chain: its seq and chained hash. */
export interface ChainHead {
  seq: number;
  hash: string;
}

/** A chunk in the bucket after the last sealed segment. */
export interface ChunkRef {
  firstSeq: number;
  lastSeq: number;
}

/**
 * The bucket as one LIST of `chunks/` shows it (`bucketHead`): its head record; the chunks after
 * the last sealed segment; stale chunk names (covered by a segment: a compaction's deletes that did
 * not finish); the first seqs of the chunks after the last segment, in order; the last sealed seq.
 */
export interface BucketHead {
  head: ChainHead;
  chunks: ChunkRef[];
  stale: string[];
  firsts: number[];
  sealedTo: number;
}

/**
 * The bucket's head: the last sealed segment, then the chunks after it (one LIST, one GET).
 * Output: the head, the chunks after the last segment, and stale chunk names (covered by a
 * segment; a compaction's deletes that did not finish).
 */
export async function bucketHead(store: ObjectStore, key: ReplicaKey, manifest: Manifest): Promise<BucketHead> {
  const lastSegment = manifest.segments.at(-1);
  let head = lastSegment === undefined ? { seq: 0, hash: GENESIS_HASH } : { seq: lastSegment.lastSeq, hash: lastSegment.lastHash };
  const sealedTo = head.seq;
  const names = await store.list(CHUNKS_DIR);
  const stale: string[] = [];
  const firsts: number[] = [];
  for (const name of names) {
    const first = firstSeqOfName(name);
    if (first === null) continue;
    if (first <= sealedTo) stale.push(name);
    else firsts.push(first);
  }
  const chunks: ChunkRef[] = [];
  if (firsts.length > 0) {
    const lastName = chunkName(firsts.at(-1)!);
    const last = await store.get(lastName);
    if (last === null) throw new Error(`${lastName} was listed but is gone (is another server compacting this bucket?)`);
    const { header, lines } = authenticChunk(store, key, last.body, lastName);
    const hash = lastHashOf(lines);
    if (hash === null) throw new ReplicaStartError(`${lastName} does not end with a whole record: the bucket is damaged`);
    for (let i = 0; i < firsts.length; i++) chunks.push({ firstSeq: firsts[i]!, lastSeq: i + 1 < firsts.length ? firsts[i + 1]! - 1 : header.lastSeq });
    head = { seq: header.lastSeq, hash };
  }
  return { head, chunks, stale, firsts, sealedTo };
}

/** A chunk of the bucket, authenticated at a start. Throws ReplicaStartError naming it when it does not authenticate. */
function authenticChunk(store: ObjectStore, key: ReplicaKey, body: Buffer, name: string): { header: ChunkHeader; lines: Buffer } {
  try {
    return decodeChunk(body, `${store.location.url}/${name}`, key);
  } catch (err) {
    if (!(err instanceof LogCorruptError)) throw err;
    throw new ReplicaStartError(`${err.message} This server takes back only records it can authenticate: delete the object (it holds nothing a leader wrote), or put back the one it replaced, then start again.`);
  }
}

/**
 * A start's check of the bucket against its signed head watermark (issue 50): chunks that end
 * before it (rolled back) or do not start right after the last sealed segment (holed) are
 * named in the log, and the text is returned (the leader's `lastError`; null when there is
 * nothing to say). A rolled-back tail this folder's log holds is re-shipped from it (the leader
 * ships from the bucket's head); one it does not hold stops the start: throws ReplicaStartError.
 */
export function checkWatermark(store: ObjectStore, log: Log, manifest: Manifest, { head, firsts, sealedTo }: BucketHead): string | null {
  const url = store.location.url;
  const problems: string[] = [];
  if (firsts.length > 0 && firsts[0]! !== sealedTo + 1 && sealedTo + 1 <= manifest.head.seq) {
    problems.push(`${url}/${chunkName(sealedTo + 1)} is missing (the chunks after the last sealed segment start at ${chunkName(firsts[0]!)}): the bucket is holed; followers and restores stop there`);
  }
  if (head.seq < manifest.head.seq) {
    const localHash = log.durableSeq >= manifest.head.seq ? log.records.storedHashOf(manifest.head.seq) : null;
    if (localHash !== manifest.head.hash) {
      throw new ReplicaStartError(
        `${url}/${chunkName(head.seq + 1)} and the chunks after it are missing: the bucket ends at record ${head.seq}, but its signed head watermark says it held records up to ${manifest.head.seq}, ` +
          `and this data folder's log ${log.durableSeq >= manifest.head.seq ? 'differs there' : `ends at ${log.durableSeq}`}: the bucket was rolled back or holed. Put the objects back (a versioned bucket keeps old versions), or start the server whose log holds them`,
      );
    }
    problems.push(`${url}/${chunkName(head.seq + 1)} and the chunks after it are missing: the bucket ends at record ${head.seq}, but its signed head watermark says it held records up to ${manifest.head.seq} (rolled back); re-shipping them from this server's log`);
  }
  if (problems.length === 0) return null;
  const message = problems.join('; ');
  logger.error('replication_holed', `replication: ${message}`, { bucket: url });
  return message;
}

/**
 * The bucket's head record `head` must be this log's record at the same seq (a start whose log
 * reaches past the bucket's head: an async leader's restart, or after the take-back). Throws
 * ReplicaStartError when the two logs diverged.
 */
export function checkHeadHash(store: ObjectStore, log: Log, head: ChainHead): void {
  if (head.seq === 0) return;
  if (log.records.storedHashOf(head.seq) === head.hash) return;
  throw new ReplicaStartError(
    `record ${head.seq} in ${store.location.url} differs from this data folder's record ${head.seq}: the two logs diverged (records written here after another leader took over were never acknowledged by the bucket). ` +
      'Restore this folder from the bucket (node dist/cli.js restore --from URL --yes); the folder is kept aside',
  );
}

/**
 * Writes `taken` over the manifest whose ETag is `etag` (If-Match). When the previous leader
 * rewrote its own manifest meanwhile (same epoch: a head watermark, a compaction, an erasure),
 * the epoch is taken over from that one, for up to REPLICA_TAKE_EPOCH_ATTEMPTS writes. Output:
 * the manifest written and its new ETag. Throws ReplicaStartError when another server took an
 * epoch first.
 */
export async function takeEpoch(store: ObjectStore, taken: Manifest, etag: string, key: ReplicaKey): Promise<{ manifest: Manifest; etag: string }> {
  for (let attempt = 1; ; attempt++) {
    const body = encodeManifest(taken, key);
    const r = await store.replace(MANIFEST_NAME, body, etag);
    if (r.outcome === 'replaced') return { manifest: taken, etag: r.etag };
    const now = await store.get(MANIFEST_NAME);
    if (now !== null && now.body.equals(body)) return { manifest: taken, etag: now.etag };
    let other: Manifest | null = null;
    try {
      other = now === null ? null : decodeManifest(now.body, MANIFEST_NAME, key);
    } catch {
      // not authentic: still not ours
    }
    if (other !== null && other.epoch === taken.epoch - 1 && attempt < REPLICA_TAKE_EPOCH_ATTEMPTS) {
      taken = { ...other, epoch: taken.epoch, writer: taken.writer, leaderUrl: taken.leaderUrl, since: taken.since, head: higherHead(other.head, taken.head) };
      etag = now!.etag;
      continue;
    }
    throw new ReplicaStartError(`another server took the leadership of ${store.location.url} while this one started (epoch ${other?.epoch ?? '?'}, ${other?.leaderUrl || 'address unknown'}): not starting as a second leader`);
  }
}

/**
 * Signs a v1 (unsigned, pre-issue-50) bucket at a leader's start: every sealed segment object is
 * stored again from this folder's segment file (its SHA-256 listed), every chunk after them is
 * re-written signed (If-Match) when its lines are byte for byte this folder's, and the manifest
 * is re-written as v2 (If-Match on the v1 one), its watermark at the last chunk. Output: the new
 * manifest and its ETag. Throws ReplicaStartError for another archive's bucket, for unsigned
 * records beyond this folder's log (they cannot be authenticated, so they are not taken back) or
 * that differ from it, and when another server changed the manifest meanwhile.
 */
export async function signV1Bucket(store: ObjectStore, log: Log, v1: UnsignedManifest, etag: string, keyForNewManifest: () => ReplicaKey): Promise<{ manifest: Manifest; etag: string }> {
  const url = store.location.url;
  if (v1.originId !== log.originId) {
    throw new ReplicaStartError(`${url} replicates archive ${v1.originId}, but this data folder holds archive ${log.originId}: replicate to another prefix`);
  }
  const key = keyForNewManifest();
  const refuse = (name: string, why: string) =>
    new ReplicaStartError(`${url}/${name} is unsigned (a v1 bucket) and ${why}: it cannot be authenticated, so it is not taken back. Delete it (or start the server whose log holds it), then start again`);
  const segments = [];
  for (const s of v1.segments) {
    if (s.lastSeq > log.durableSeq) throw refuse(segmentObjectName(s.firstSeq), `holds records up to ${s.lastSeq}, beyond this data folder's log (it ends at ${log.durableSeq})`);
    const bytes = await fsp.readFile(join(log.dataDir, LOG_DIR, segmentName(s.firstSeq)));
    if (bytes.length !== s.bytes || log.records.storedHashOf(s.lastSeq) !== s.lastHash) throw refuse(segmentObjectName(s.firstSeq), 'differs from this data folder\'s segment');
    await putSegment(store, s.firstSeq, bytes);
    segments.push({ ...s, sha256: sha256Hex(bytes) });
  }
  const sealedTo = segments.at(-1)?.lastSeq ?? 0;
  let head = segments.length === 0 ? EMPTY_HEAD : { seq: sealedTo, hash: segments.at(-1)!.lastHash };
  let signed = 0;
  for (const name of await store.list(CHUNKS_DIR)) {
    const first = firstSeqOfName(name);
    if (first === null || first <= sealedTo) continue;
    const obj = await store.get(name);
    if (obj === null) continue;
    let header: ChunkFields;
    let lines: Buffer;
    try {
      ({ header, lines } = decodeChunk(obj.body, `${url}/${name}`, key)); // signed by an earlier, interrupted start
    } catch {
      ({ header, lines } = decodeUnsignedChunk(obj.body, `${url}/${name}`));
      if (header.lastSeq > log.durableSeq) throw refuse(name, `holds records ${header.firstSeq}..${header.lastSeq}, beyond this data folder's log (it ends at ${log.durableSeq})`);
      const run = await log.readLines(header.firstSeq, header.lastSeq, Number.MAX_SAFE_INTEGER);
      if (run === null || run.lastSeq !== header.lastSeq || run.prevHash !== header.prevHash || !run.bytes.equals(lines)) throw refuse(name, "its lines are not byte for byte this data folder's");
      const r = await store.replace(name, encodeChunk({ ...header, segment: run.segmentFirstSeq, offset: run.offset }, run.bytes, key), obj.etag);
      if (r.outcome !== 'replaced') throw new ReplicaStartError(`signing ${url}/${name}: another server changed it meanwhile (${r.outcome}); start again`);
      signed++;
    }
    head = { seq: header.lastSeq, hash: lastHashOf(lines) ?? head.hash };
  }
  const manifest: Manifest = { ...v1, format: MANIFEST_FORMAT, keyId: key.keyId, segments, erased: v1.erased ?? 0, head };
  const r = await store.replace(MANIFEST_NAME, encodeManifest(manifest, key), etag);
  if (r.outcome !== 'replaced') throw new ReplicaStartError(`signing ${url}/${MANIFEST_NAME}: another server changed it meanwhile (${r.outcome}); start again`);
  logger.info('replication_signed', `replication: signed the v1 bucket ${url} (${segments.length} segment(s), ${signed} chunk(s), the manifest) with the replica key ${key.text}`, { bucket: url });
  return { manifest, etag: r.etag };
}
