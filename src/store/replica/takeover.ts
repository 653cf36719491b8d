/**
 * What a leader's start reads and checks in the bucket before it leads (issue 50; leader.ts
 * `takeLeadershipHeld` runs the steps in order): the manifest of a v1 (unsigned) bucket is signed
 * first (`signV1Bucket`); the bucket's head is found from the last sealed segment and the chunks
 * after it (`bucketHead`), checked against the signed head watermark (`checkWatermark`) and
 * against this folder's log (`checkHeadHash`); the writer epoch is taken with one conditional
 * manifest write (`takeEpoch`). Every object read is authenticated with the replica key; what does
 * not authenticate, or shows that this server must not lead, throws ReplicaStartError naming the
 * object and the remedy. The manifest is read (or created for an empty prefix) by
 * `startManifest`; the records the bucket holds beyond this folder's log are taken back by
 * `pullAhead`. These functions keep no state: the leader holds what they find.
 */
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
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
  unsignedManifestOf,
} from './format.js';
import { ReplicaFollower, type FollowerHost } from './follower.js';
import { createSigningKey, type ReplicaKey } from './keys.js';
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
async function signV1Bucket(store: ObjectStore, log: Log, v1: UnsignedManifest, etag: string, keyForNewManifest: () => ReplicaKey): Promise<{ manifest: Manifest; etag: string }> {
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

/** The replica keys a start works with (leader.ts LeaderKeys): the public key the operator gave, and where the signing key file lives. */
interface NewKeySettings {
  publicKey: ReplicaKey | null;
  path: string;
}

/**
 * The signing key for a new bucket manifest (an empty prefix, or a v1 bucket to sign): `held`
 * when there is one, or a new one created at `keys.path` (mode 0600; logged with its public key).
 * Throws ReplicaStartError when a public key was given (FORUM_REPLICA_PUBLIC_KEY) but its signing
 * key is not here.
 */
export function keyForNewManifest(held: ReplicaKey | null, keys: NewKeySettings): ReplicaKey {
  if (held !== null) return held;
  if (keys.publicKey !== null) {
    throw new ReplicaStartError(
      `FORUM_REPLICA_PUBLIC_KEY is ${keys.publicKey.text}, but its signing key is not at ${keys.path}: put the signing key there (or set FORUM_REPLICA_SIGNING_KEY to its path), or unset FORUM_REPLICA_PUBLIC_KEY to let this leader make a new key for this new bucket`,
    );
  }
  const key = createSigningKey(keys.path);
  logger.info('replication_key', `replication: created the replica signing key ${keys.path} (mode 0600; copy it to each standby that may lead); followers and restores need only its public key ${key.text}`, { path: keys.path, publicKey: key.text });
  return key;
}

/** How a start gets at its signing key (leader.ts): the key held now, its file's path, the key for a new manifest (created when needed), and the clock (ms). */
interface StartKeys {
  held(): ReplicaKey | null;
  path: string;
  forNewManifest(): ReplicaKey;
  now(): number;
}

/**
 * The bucket's manifest at a start, authenticated, and its ETag. An empty prefix gets a new
 * manifest first (signed, epoch 0, this folder's originId and lineage; create-only); a v1
 * (unsigned) bucket is signed first (`signV1Bucket`). Throws ReplicaStartError for a prefix that
 * holds other objects but no manifest, when this server holds no signing key for an existing
 * bucket, when the manifest does not authenticate, and for another archive's bucket; the store's
 * error when it cannot be reached.
 */
export async function startManifest(store: ObjectStore, log: Log, keys: StartKeys): Promise<{ manifest: Manifest; etag: string }> {
  const url = store.location.url;
  let got = await store.get(MANIFEST_NAME);
  if (got === null) {
    const existing = await store.list('');
    if (existing.length > 0) {
      throw new ReplicaStartError(`${url} holds ${existing.length} object(s) but no ${MANIFEST_NAME}: it is not an Agent Forum replica; use an empty prefix`);
    }
    const meta = log.meta;
    const lineage = { ...(meta.restoredFrom ? { restoredFrom: meta.restoredFrom } : {}), ...(meta.repairedFrom ? { repairedFrom: meta.repairedFrom } : {}) };
    const key = keys.forNewManifest();
    const fresh: Manifest = { format: MANIFEST_FORMAT, keyId: key.keyId, originId: log.originId, created: meta.created, lineage, epoch: 0, writer: '', leaderUrl: '', since: new Date(keys.now()).toISOString(), segments: [], erased: 0, head: EMPTY_HEAD };
    const r = await store.create(MANIFEST_NAME, encodeManifest(fresh, key));
    if (r.outcome === 'unknown') throw new Error(`creating ${MANIFEST_NAME}: ${r.reason}`);
    got = await store.get(MANIFEST_NAME);
    if (got === null) throw new Error(`${MANIFEST_NAME} vanished after it was created`);
  }
  const v1 = unsignedManifestOf(got.body);
  if (v1 !== null) return signV1Bucket(store, log, v1, got.etag, keys.forNewManifest);
  const key = keys.held();
  if (key === null) {
    throw new ReplicaStartError(
      `${url} already holds a replica, and this server has no replica signing key at ${keys.path}: copy the leader's signing key file there (mode 0600), or set FORUM_REPLICA_SIGNING_KEY to its path. ` +
        'A server with only the public key can follow (FORUM_FOLLOW) but not lead',
    );
  }
  let manifest: Manifest;
  try {
    manifest = decodeManifest(got.body, `${url}/${MANIFEST_NAME}`, key);
  } catch (err) {
    if (err instanceof LogCorruptError) throw new ReplicaStartError(`${err.message} This server does not lead a bucket it cannot authenticate.`);
    throw err;
  }
  if (manifest.originId !== log.originId) {
    throw new ReplicaStartError(
      `${url} replicates archive ${manifest.originId}, but this data folder holds archive ${log.originId}: ` +
        'restore this folder from the bucket (node dist/cli.js restore --from URL), or replicate to another prefix',
    );
  }
  return { manifest, etag: got.etag };
}

/**
 * A start whose bucket holds records beyond the local log (issue 35): a sync-mode batch whose
 * chunk PUT succeeded while its fdatasync did not finish before a crash, or records a later
 * leader wrote after this folder was copied. They are taken back into the local log — proven
 * exactly as a follower proves them, from the local head's hash (ReplicaFollower#pullOnce),
 * appended as they are and applied — up to `bucketSeq`, in three steps of a start (leader.ts
 * takeLeadershipHeld): before the epoch is taken only the first record after the local head (the
 * bucket must be shown to go on from it); once the epoch is taken, up to the head the listing
 * showed (so a writing leader cannot keep a start waiting), its chunks fetched ahead in parallel;
 * while the fence record is placed, everything there is (placeFence: MAX_SAFE_INTEGER). Writes
 * are held meanwhile. They were never acknowledged by this server, but the bucket holds them
 * (followers and restores may already show them), so keeping them is the one consistent choice.
 * Throws ReplicaStartError when the bucket's records do not prove against the local log (the two
 * diverged: a record differs at a seq both hold); the store's error when it cannot be reached.
 */
export async function pullAhead(store: ObjectStore, key: ReplicaKey, host: FollowerHost, bucketSeq: number): Promise<void> {
  const log = host.log;
  const url = store.location.url;
  const from = log.durableSeq;
  const started = performance.now();
  let pulled: number;
  try {
    pulled = await new ReplicaFollower(store, key).pullOnce(host, bucketSeq);
  } catch (err) {
    if (!(err instanceof LogCorruptError)) throw err;
    throw new ReplicaStartError(
      `the records in ${url} after this data folder's record ${from} do not prove against it (${err.message}): the two logs diverged (records written here after another leader took over were never acknowledged by the bucket), or the bucket is damaged. ` +
        `First list what only this folder holds (node dist/cli.js replication lost --from ${url} --out lost.jsonl), then restore this folder from the bucket (node dist/cli.js restore --from ${url} --yes; the replaced log is kept aside)`,
    );
  }
  if (pulled > 0) {
    logger.info('replication_pulled', `replication: took back records ${from + 1}..${log.durableSeq} (${pulled}) from ${url}, which held them beyond this data folder's log, in ${Math.round(performance.now() - started)} ms`, { from: from + 1, to: log.durableSeq, bucket: url });
  }
}
