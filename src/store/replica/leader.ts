/**
 * The leader's side of replication (issue 35; docs/operate/replication.md): continuous shipping of the
 * log to an S3-compatible bucket (format.ts), fenced with conditional writes alone.
 *
 * Start (`start`): read the manifest (create it for a new bucket); refuse a bucket of another
 * archive (originId) or whose chain differs from this folder's log (diverged: the first object
 * after the local head must prove against it); take the writer epoch by writing the manifest with
 * `If-Match` (epoch + 1); take back the records the bucket holds beyond this folder's log, proven
 * from its head as a follower proves them (`pullAhead`, fetched ahead in parallel); ship this
 * folder's own backlog; then place the fence: a `replication.epoch` record's chunk is created at
 * the next key before the record is appended locally (`placeFence`). That chunk occupies the
 * key, so a stale leader that wakes up loses its next chunk PUT and learns it lost; a start that
 * loses the epoch race stops. The reading and checking of the bucket at a start (its head, the
 * watermark, a v1 bucket's signing, the epoch's conditional write) is in takeover.ts.
 *
 * Shipping: a chunk is created with `If-None-Match: *` under a key fixed by its first seq. When
 * the PUT finds the key taken (412, or an unknown outcome: a 5xx, a timeout), the chunk is read
 * back: the same bytes are our own earlier attempt whose answer was lost; anything else is
 * another leader's chunk, and this one is fenced — it stops acknowledging writes at once (503
 * REPLICA_FENCED naming the new leader's URL) and ships nothing more.
 * - `async` (default): a write is acknowledged after the local fdatasync; durable records are
 *   gathered for REPLICA_SHIP_INTERVAL_MS and shipped as one chunk (RPO ≤ about 1 s). When the
 *   store is unreachable the server keeps serving; the backlog waits on the local disk and is
 *   shipped when the store answers again (`status` reports it).
 * - `sync`: each group commit's batch becomes durable (readable, acknowledged) only once its
 *   chunk is in the bucket and its fdatasync is done (Log#replicate: the PUT runs alongside the
 *   fdatasync): RPO 0 for the loss of the box; group commit amortises the PUT. While the store
 *   is unreachable writes are refused (503 REPLICA_UNAVAILABLE) and a write already queued gets
 *   that answer after REPLICA_ACK_TIMEOUT_MS, unacknowledged.
 *
 * Compaction: once a segment is sealed on disk and all its records are shipped, the whole segment
 * is stored as one object, the manifest lists it (If-Match), and the chunks it covers are deleted.
 * Besides size and erasure, the leader seals its active segment once the bucket holds
 * REPLICA_SEAL_CHUNKS chunks after its last segment (at most once per
 * REPLICA_SEAL_MIN_INTERVAL_MS; issue 50), so followers and restores never read thousands.
 * Point-in-time restore reaches every seq: the log is append-only and never dropped.
 *
 * Erasure: after the local rewrite (store/erase.ts), every chunk and segment object holding an
 * erased record is rewritten from the local (tombstoned) bytes with If-Match, and the manifest
 * counts the erase targets done (`erased`), so a start after a crash finishes the rest.
 *
 * Authentication (issue 50; format.ts, keys.ts): every chunk and manifest this leader writes is
 * signed with the replica signing key (an erasure rewrite re-signs), every sealed segment is listed
 * with its SHA-256; a start reads only what authenticates (a forged or altered object stops it,
 * named) and takes back only records it can authenticate. The manifest's head watermark is raised
 * whenever the manifest is written anyway and at most every REPLICA_WATERMARK_INTERVAL_MS while
 * the head moves (`raiseWatermark`; never on the write path); a start whose bucket ends before it
 * names the missing objects and re-ships them from its own log. A leader of a new bucket without a
 * signing key creates one (keys.ts); on an existing bucket it refuses to start without it.
 */
import { randomUUID } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  REPLICA_BUCKET_CHECK_MS,
  REPLICA_CHUNK_BYTES_MAX,
  REPLICA_EPOCH_CHECK_MS,
  REPLICA_RETRY_MAX_MS,
  REPLICA_RETRY_MIN_MS,
  REPLICA_SEAL_CHUNKS,
  REPLICA_SEAL_MIN_INTERVAL_MS,
  REPLICA_SYNC_RETRY_MAX_MS,
  REPLICA_TAKEOVER_MAX_MS,
  REPLICA_WATERMARK_INTERVAL_MS,
} from '../../constants.js';
import type { ServiceError } from '../../errors.js';
import { shownText } from '../../header-value.js';
import { logger } from '../../logger.js';
import { LOG_DIR, type LineRun, type Log, type WrittenBatch } from '../log.js';
import { GENESIS_HASH, type LogRecord } from '../record-format.js';
import { segmentName } from '../segment.js';
import {
  CHUNK_FORMAT,
  MANIFEST_NAME,
  chunkName,
  decodeChunk,
  decodeManifest,
  encodeChunk,
  encodeManifest,
  higherHead,
  sha256Hex,
  type ChunkFields,
  type ChunkHeader,
  type Manifest,
} from './format.js';
import { checkBucket, type BucketCheck } from './bucket-check.js';
import type { ReplicaKey } from './keys.js';
import type { FollowerHost } from './follower.js';
import { putSegment, type ObjectStore } from './object-store.js';
import { ReplicaStartError, bucketHead, checkHeadHash, checkWatermark, keyForNewManifest, pullAhead, startManifest, takeEpoch, type ChainHead, type ChunkRef } from './takeover.js';
import { replicaFenced, replicaUnavailable, takingBackRefusal, takingLeadershipRefusal } from './refusals.js';

/** `async`: acknowledged after the local fdatasync; `sync`: only once the bucket holds it. */
export type ReplicaMode = 'async' | 'sync';

/** Where the leader stands (one log line per change; `replication status`). */
export type ReplicaState = 'connecting' | 'leading' | 'unavailable' | 'fenced' | 'stopped';

/** The payload of a `replication.epoch` record. */
export interface EpochPayload {
  epoch: number;
  writer: string;
  leaderUrl: string;
  /**
   * Present when this writer took the epoch from another writer (issue 50; domain/positions.ts):
   * the epoch record's position, past every position the previous writer may have given.
   */
  positionBase?: number;
}

/**
 * What the leader needs from the running service. The follower's hooks (apply, seedErased,
 * erase) take back records the bucket holds beyond the local head at a start.
 */
export interface ReplicaHost extends FollowerHost {
  log: Log;
  /**
   * Encodes the `replication.epoch` record as the log's next record without appending it
   * (Log#encodeNext with the service's clock): the start places it in the bucket first, then
   * appends and applies the same bytes (`log.appendProven`, `apply`).
   */
  encodeEpoch(payload: EpochPayload, rebase: boolean): { record: LogRecord; payloadJson: string; line: Buffer; hash: string };
  /**
   * Whether this data folder was the writer of `epoch` (it placed that epoch's fence and nobody
   * wrote since): then its log holds everything that writer acknowledged, and its epoch record
   * keeps positions as they are; otherwise `encodeEpoch` is asked to rebase them.
   */
  wasWriterOf(epoch: number): boolean;
  /** Called once this folder leads at `epoch` (its fence record appended), so a later start knows it was the last writer. */
  leading(epoch: number): void;
  /** The server's public URL (FORUM_PUBLIC_URL or the bound address), written in the manifest. */
  publicUrl(): string;
  /** Current time, ms. */
  now(): number;
  /** Runs `task` while every write is refused with `refusal` (App#commit), then lifts it. */
  holdWrites<T>(refusal: ServiceError, task: () => Promise<T>): Promise<T>;
}

/** `replication status`: the bucket, mode, epoch and how far shipping is behind. */
export interface ReplicaStatus {
  role: 'leader';
  url: string;
  mode: ReplicaMode;
  state: ReplicaState;
  epoch: number | null;
  writer: string;
  leaderUrl: string | null;
  durableSeq: number;
  shippedSeq: number;
  /** Durable records not yet in the bucket, and how long the oldest of them has waited (s). */
  lag: { records: number; seconds: number };
  /** Sealed segment objects and chunk objects after them. */
  segments: number;
  chunks: number;
  /** Point-in-time restore reaches every seq from 1 to shippedSeq (the log is never dropped). */
  pointInTimeRestore: { fromSeq: number; toSeq: number; window: string };
  requests: { puts: number; gets: number; lists: number; deletes: number; failures: number };
  lastError: string | null;
  /** The replica public key (`ed25519:…`) followers and restores verify with (FORUM_REPLICA_PUBLIC_KEY); null until the key is known. */
  publicKey: string | null;
  /** The bucket's signed head watermark (format.ts Manifest.head). */
  watermark: { seq: number } | null;
  /** The last periodic bucket check (issue 50): when, the objects it found missing, and those it put back. */
  bucketCheck: BucketCheck | null;
}

/**
 * The leader's replica key (keys.ts): the signing key when this server holds its file; the file's
 * path (a leader creating a new bucket manifest creates it there); the public key the operator
 * gave (FORUM_REPLICA_PUBLIC_KEY), which must be the signing key's.
 */
export interface LeaderKeys {
  signing: ReplicaKey | null;
  path: string;
  publicKey: ReplicaKey | null;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/**
 * The leader. Create it, hand it to the log (`attach`), then `start`. Input: the bucket, the
 * mode, and the shipping interval in ms (async mode).
 */
export class ReplicaLeader {
  readonly writer = randomUUID();
  private stateValue: ReplicaState = 'connecting';
  private manifest: Manifest | null = null;
  private manifestEtag = '';
  private epoch: number | null = null;
  /** Whether the epoch being taken came from another writer (its fence record then rebases positions). */
  private rebase = false;
  /** The bucket's chain head as this leader knows it. */
  private shipped = { seq: 0, hash: GENESIS_HASH };
  private chunks: ChunkRef[] = [];
  /** When sealForChunkCount last sealed a segment (performance.now() ms; null: never). */
  private sealedForCountAt: number | null = null;
  private host: ReplicaHost | null = null;
  /** Serialises every mutation of the bucket (chunk PUTs, compaction, erasure). */
  private chain: Promise<unknown> = Promise.resolve();
  private lastError: string | null = null;
  private fencedError: ServiceError | null = null;
  /** The leader that fenced this one, as the bucket's manifest named it then (status shows it; issue 50). */
  private fencedBy: string | null = null;
  /**
   * When each group commit not yet shipped became durable: [last seq of the batch, performance.now()],
   * oldest first. The lag in seconds is the age of the oldest entry past the shipped seq.
   */
  private durableTimes: Array<[number, number]> = [];
  private closed = false;
  /** A promotion's start takes the epoch only from this one (the manifest's when the promotion began). */
  private expectEpoch: number | null = null;
  private kickResolve: (() => void) | null = null;
  private stateWaiters: Array<() => void> = [];
  /**
   * While a start takes back records from the bucket (`pullAhead`): the seq it takes them back
   * up to (0 otherwise). Meanwhile writes are refused, so every batch is a pulled one, which the sync gate
   * lets through at once (the bucket holds it).
   */
  private pullingTo = 0;
  /** While a start takes the leadership (epoch, take-back, fence record): writes are held. */
  private taking = false;
  /** The last periodic bucket check (`checkBucket`), and when it ran (performance.now()). */
  private bucketCheck: BucketCheck | null = null;
  private bucketCheckedAt = 0;
  /** The epoch this leader wrote into the manifest (set at the If-Match, before the fence record is placed). */
  private tookEpoch: number | null = null;
  /** Called once per state change (metrics, tests). */
  onState: ((state: ReplicaState) => void) | null = null;
  /** The signing key (null until loaded or, for a new bucket, created). */
  private key: ReplicaKey | null;
  /** performance.now() of the last manifest write (the head watermark's age). */
  private watermarkAt = 0;

  constructor(
    readonly store: ObjectStore,
    readonly mode: ReplicaMode,
    private readonly shipIntervalMs: number,
    private readonly keys: LeaderKeys,
    /** The periodic bucket check's interval, ms (FORUM_REPLICA_CHECK_MS). */
    private readonly bucketCheckMs: number = REPLICA_BUCKET_CHECK_MS,
  ) {
    this.key = keys.signing;
  }

  get state(): ReplicaState {
    return this.stateValue;
  }

  private setState(next: ReplicaState, why: string): void {
    if (this.stateValue === next) return;
    this.stateValue = next;
    const level = next === 'fenced' || next === 'unavailable' ? 'warn' : 'info';
    logger[level]('replication_state', `replication: ${next} (${why})`, { state: next, bucket: this.store.location.url, epoch: this.epoch });
    this.onState?.(next);
    const waiters = this.stateWaiters;
    this.stateWaiters = [];
    for (const w of waiters) w();
  }

  /**
   * Refuses a write before it is appended, or returns null to let it through: 503 REPLICA_FENCED
   * once fenced; in sync mode, 503 REPLICA_UNAVAILABLE until the leadership is taken and while
   * the store is unreachable (a write could not be acknowledged).
   */
  refusal(): ServiceError | null {
    if (this.stateValue === 'fenced') return this.fencedError;
    if (this.pullingTo > 0) return takingBackRefusal(this.store.location.url, this.host!.log.durableSeq + 1);
    if (this.taking || this.epoch === null) {
      // Nothing is acknowledged before the start has checked the bucket and placed its fence
      // record (issue 50): an old leader restarted after a failover must not take writes it
      // would have to refuse at the next step.
      return replicaUnavailable(
        `this server has not taken the leadership of ${this.store.location.url} yet (${this.taking ? 'taking it now' : this.lastError ?? 'no answer from the object store yet'}); nothing was written; retry after Retry-After seconds`,
      );
    }
    if (this.mode === 'sync' && this.stateValue !== 'leading') {
      return replicaUnavailable(
        `writes are acknowledged only once the object store holds them (FORUM_REPLICA_MODE=sync) and it is ${this.stateValue === 'connecting' ? 'not connected yet' : 'unreachable'} (${this.lastError ?? 'no answer yet'}); nothing was written; retry after Retry-After seconds`,
      );
    }
    return null;
  }

  /**
   * Connects the leader to the running log: the sync-mode gate (Log#replicate), the wake-up after
   * each group commit, then the start procedure (module doc). `expectEpoch` (a promotion): take
   * the leadership only from that epoch — another server that took it meanwhile wins. Resolves
   * once the first attempt is done: leading, or unavailable (retried in the background). Rejects
   * with ReplicaStartError when this server must not lead this bucket (the server stops).
   */
  async start(host: ReplicaHost, opts: { expectEpoch?: number } = {}): Promise<void> {
    this.host = host;
    this.expectEpoch = opts.expectEpoch ?? null;
    if (this.mode === 'sync') host.log.replicate = (batch) => this.gate(batch);
    try {
      await this.takeLeadership();
    } catch (err) {
      if (err instanceof ReplicaStartError) throw err;
      // A promotion that changed nothing in the bucket answers now (its follower goes on
      // following); once it holds the epoch it must finish the take-over: retried below.
      if (opts.expectEpoch !== undefined && this.tookEpoch === null) {
        this.closed = true;
        throw err;
      }
      this.unavailable(err);
    }
    void this.shipLoop();
    void this.watchEpoch();
  }

  /**
   * Every REPLICA_EPOCH_CHECK_MS while leading (issue 50): one GET of the manifest; when it names
   * another writer (a promotion or a later start took the epoch), this leader fences itself at
   * once instead of at its next conditional write, which in a quiet forum may be minutes away.
   * This bounds how long a takeover waits for the previous leader to stop writing. A store that
   * does not answer is left to the shipping paths to report.
   */
  private async watchEpoch(): Promise<void> {
    while (!this.closed && this.stateValue !== 'fenced') {
      await sleep(REPLICA_EPOCH_CHECK_MS);
      if (this.closed || this.taking || this.epoch === null || (this.stateValue as ReplicaState) === 'fenced') continue;
      let current: Manifest;
      try {
        const got = await this.store.get(MANIFEST_NAME);
        if (got === null) continue;
        current = decodeManifest(got.body, MANIFEST_NAME, this.key!);
      } catch {
        // Unreachable, or not signed by our key (a forged manifest fences no one).
        continue;
      }
      if (this.closed || this.taking || (this.stateValue as ReplicaState) === 'fenced') continue;
      if (current.epoch !== this.epoch || current.writer !== this.writer) {
        await this.lostTo(`the manifest names epoch ${current.epoch}, taken by another server`);
      }
    }
  }

  /** Wakes the shipping loop (async mode): called after every group commit. */
  kick(): void {
    const durable = this.host?.log.durableSeq ?? 0;
    const last = this.durableTimes.at(-1);
    if (durable > this.shipped.seq && (last === undefined || last[0] < durable)) this.durableTimes.push([durable, performance.now()]);
    const r = this.kickResolve;
    this.kickResolve = null;
    r?.();
  }

  private unavailable(err: unknown): void {
    this.lastError = (err as Error).message;
    if (this.stateValue !== 'fenced') this.setState('unavailable', `the object store did not answer: ${this.lastError}`);
  }

  /** Runs `task` after every bucket mutation queued before it. */
  private serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.chain.then(task);
    this.chain = run.catch(() => undefined);
    return run;
  }

  /**
   * The start procedure (module doc; issue 50): with writes held, read the manifest, check the
   * bucket against the local log (the first object after the local head must prove against it),
   * take the writer epoch (If-Match), take back (bounded: up to the head the listing showed) what
   * the bucket holds beyond the local head, then place the fence record.
   * Throws ReplicaStartError when this server must not lead (another archive, diverged, a newer
   * leader won); the store's error when it cannot be reached (retried by the caller).
   */
  private async takeLeadership(): Promise<void> {
    const host = this.host!;
    this.taking = true;
    try {
      await host.holdWrites(takingLeadershipRefusal(this.store.location.url), () => this.takeLeadershipHeld());
    } finally {
      this.taking = false;
    }
    // Sync mode ships from the gate and async mode from the loop; erasures left from a crash first.
    this.setState('leading', `epoch ${this.epoch} taken; shipping from record ${this.shipped.seq + 1}; replica public key ${this.key!.text} (FORUM_REPLICA_PUBLIC_KEY for followers and restores)`);
    await this.serial(() => this.finishErasures());
  }

  /** The start procedure's steps (takeLeadership's docstring), run while writes are held. */
  private async takeLeadershipHeld(): Promise<void> {
    const host = this.host!;
    const log = host.log;
    // Writes appended before the hold are made durable first: the bucket must prove against them.
    await log.quiesce();
    const { manifest, etag: manifestEtag } = await startManifest(this.store, log, {
      held: () => this.key,
      path: this.keys.path,
      forNewManifest: () => this.keyForNewManifest(),
      now: () => host.now(),
    });
    const key = this.key!;
    const bucket = await bucketHead(this.store, key, manifest);
    const { head, chunks, stale } = bucket;
    const problems = checkWatermark(this.store, log, manifest, bucket);
    if (problems !== null) this.lastError = problems;
    // Before the epoch is taken, the bucket must be shown to go on from this log's head: the first
    // object after it is taken back now (it proves against the local head's hash), the rest only
    // once the epoch is taken, so a previous leader still writing stops within
    // REPLICA_EPOCH_CHECK_MS instead of writing for as long as the take-back lasts.
    if (head.seq > log.durableSeq) await this.pullAhead(log.durableSeq + 1);
    else checkHeadHash(this.store, log, head);
    const { manifest: taken, etag } = await this.takeOrResumeEpoch(manifest, manifestEtag, head, key);
    const epoch = taken.epoch;
    // Bounded: only up to the head this listing showed; what the previous leader wrote after it
    // is taken back while the fence record is placed.
    if (head.seq > log.durableSeq) await this.pullAhead(head.seq);
    if (head.seq > log.durableSeq) {
      throw new ReplicaStartError(
        `${this.store.location.url} holds records up to ${head.seq} but this data folder's log ends at ${log.durableSeq} after taking back what the bucket held: another leader is writing. ` +
          'Leading now would fork the chain; restore this folder from the bucket first (node dist/cli.js restore --from URL --yes), then start',
      );
    }
    checkHeadHash(this.store, log, head);
    this.manifest = taken;
    this.manifestEtag = etag;
    this.watermarkAt = performance.now();
    this.shipped = head;
    this.durableTimes = this.durableTimes.filter(([seq]) => seq > head.seq);
    this.chunks = chunks;
    if (stale.length > 0) await this.store.delete(stale).catch(() => undefined);
    await this.placeFence(epoch);
    // Only now does this server lead: the shipping paths and the epoch watch key on it.
    this.epoch = epoch;
    host.leading(epoch);
  }

  /**
   * The writer epoch for this start: the one this leader took on an earlier attempt that did not
   * get to place its fence (the manifest still names it), or the next one, taken with one
   * conditional manifest write (takeover.ts takeEpoch). Output: the manifest naming this leader
   * and its ETag. Throws ReplicaStartError when a promotion finds the epoch moved on
   * (`expectEpoch`) or another server took it first.
   */
  private async takeOrResumeEpoch(manifest: Manifest, etag: string, head: ChainHead, key: ReplicaKey): Promise<{ manifest: Manifest; etag: string }> {
    if (this.tookEpoch !== null && manifest.epoch === this.tookEpoch && manifest.writer === this.writer) return { manifest, etag };
    // Issue 50: positions go on as they are only after this folder's own epoch (a restart);
    // taken from anyone else (a promotion, a takeover), the new writer's records start past the gap.
    this.rebase = manifest.epoch > 0 && !this.host!.wasWriterOf(manifest.epoch);
    if (this.expectEpoch !== null && manifest.epoch !== this.expectEpoch) {
      throw new ReplicaStartError(`another server took the leadership of ${this.store.location.url} (epoch ${manifest.epoch}, ${manifest.leaderUrl || 'address unknown'}) while this one was being promoted`);
    }
    // Take the writer epoch: one conditional write; losing it means another server is starting.
    const host = this.host!;
    const epoch = manifest.epoch + 1;
    const taken: Manifest = { ...manifest, epoch, writer: this.writer, leaderUrl: host.publicUrl(), since: new Date(host.now()).toISOString(), head: higherHead(manifest.head, head) };
    // Set before the write: an answer lost on the way may still have taken it.
    this.tookEpoch = epoch;
    try {
      return await takeEpoch(this.store, taken, etag, key);
    } catch (err) {
      if (err instanceof ReplicaStartError) this.tookEpoch = null;
      throw err;
    }
  }

  /**
   * The fence (issue 50): the epoch record's chunk takes the key after everything this log holds,
   * created in the bucket BEFORE the record is appended locally, so a start that loses the key
   * leaves nothing behind in its log. First ships the local backlog (records durable here but not
   * in the bucket: an async leader's restart). When the previous leader, still writing until it
   * sees the new epoch (REPLICA_EPOCH_CHECK_MS), took the key first, its records are taken back
   * (proven) and the next key is tried, for at most REPLICA_TAKEOVER_MAX_MS. Throws
   * ReplicaStartError when a leader of a later epoch holds the key, or past the bound.
   */
  private async placeFence(epoch: number): Promise<void> {
    const host = this.host!;
    const log = host.log;
    const deadline = performance.now() + REPLICA_TAKEOVER_MAX_MS;
    for (let round = 0; ; round++) {
      await this.catchUp(log.durableSeq);
      await log.quiesce();
      // Everything taken back from the bucket is written: from the fence record on, the log's
      // segments are this leader's own, rolled over by size again (issue 50, Log#followsSegments).
      log.followsSegments(false);
      const entry = host.encodeEpoch({ epoch, writer: this.writer, leaderUrl: host.publicUrl() }, this.rebase);
      const pos = log.nextPosition(entry.line.length);
      const run: LineRun = {
        firstSeq: entry.record.seq,
        lastSeq: entry.record.seq,
        prevHash: log.headHash,
        lastHash: entry.hash,
        segmentFirstSeq: pos.segmentFirstSeq,
        offset: pos.offset,
        bytes: entry.line,
      };
      const lost = await this.tryPutChunk(run);
      if (lost === null) {
        this.shipped = { seq: run.lastSeq, hash: run.lastHash };
        this.chunks.push({ firstSeq: run.firstSeq, lastSeq: run.lastSeq });
        log.appendProven(entry.line, entry.record, entry.payloadJson, entry.hash);
        host.apply(entry.record, entry.payloadJson);
        await log.sync();
        if (round > 0) logger.info('replication_fence', `replication: the fence record took key ${chunkName(run.firstSeq)} after ${round} key(s) the previous leader wrote first`);
        return;
      }
      if (lost.epoch === null || lost.epoch >= epoch) {
        throw new ReplicaStartError(`${chunkName(run.firstSeq)} was written by ${lost.epoch === null ? 'an unknown writer' : `the leader of epoch ${lost.epoch}`} while this server took epoch ${epoch}: not starting as a second leader`);
      }
      if (performance.now() > deadline) {
        throw new ReplicaStartError(`the leader of epoch ${lost.epoch} kept writing for ${REPLICA_TAKEOVER_MAX_MS} ms after epoch ${epoch} was taken: the fence record could not be placed`);
      }
      // The previous leader's chunk: take its records back (proven from this log's head), then try the next key.
      await this.pullAhead(Number.MAX_SAFE_INTEGER);
      this.shipped = { seq: log.durableSeq, hash: log.headHash };
      this.chunks = (await bucketHead(this.store, this.key!, this.manifest!)).chunks.filter((c) => c.firstSeq <= log.durableSeq);
    }
  }

  /** The signing key for a new (or v1) bucket manifest (takeover.ts keyForNewManifest), kept as this leader's key. */
  private keyForNewManifest(): ReplicaKey {
    this.key = keyForNewManifest(this.key, this.keys);
    return this.key;
  }

  /**
   * Raises the manifest's head watermark to the shipped head (a manifest write): when it moved and
   * REPLICA_WATERMARK_INTERVAL_MS passed since the last manifest write, or at once (`now`: a clean
   * stop). Called from the shipping loop, never on the write path.
   */
  private async raiseWatermark(now: boolean): Promise<void> {
    if (this.manifest === null || this.stateValue !== 'leading' || this.shipped.seq <= this.manifest.head.seq) return;
    if (!now && performance.now() - this.watermarkAt < REPLICA_WATERMARK_INTERVAL_MS) return;
    await this.writeManifest({ ...this.manifest });
  }

  /**
   * Takes back the records the bucket holds beyond the local log, up to `bucketSeq` (takeover.ts
   * pullAhead: when and why), while writes are refused with `takingBackRefusal` and the sync gate
   * lets the taken-back batches through.
   */
  private async pullAhead(bucketSeq: number): Promise<void> {
    this.pullingTo = bucketSeq;
    try {
      await pullAhead(this.store, this.key!, this.host!, bucketSeq);
    } finally {
      this.pullingTo = 0;
    }
  }

  /**
   * The sync-mode gate (Log#replicate): resolves once the batch's chunk is in the bucket; rejects
   * only when fenced. A batch a start takes back from the bucket (`pullAhead`) passes at once.
   */
  private gate(batch: WrittenBatch): Promise<void> | undefined {
    // While a start takes records back, writes are refused: every batch is one the bucket holds;
    // so is the fence record, which the start put in the bucket before appending it.
    if (this.pullingTo > 0 || batch.lastSeq <= this.shipped.seq) return undefined;
    return this.serial(async () => {
      for (let attempt = 0; ; attempt++) {
        if (this.stateValue === 'fenced') throw this.fencedError!;
        if (this.closed && attempt > 0) {
          // A stop while the store is unreachable: the batch stays on the local disk, never
          // acknowledged, and the next start ships it.
          throw replicaUnavailable('the server stops while the object store is unreachable: this write was not acknowledged');
        }
        // Every attempt is its own probe (issue 50): the gate never waits for another task to see
        // the store answer again — that task may be queued behind this one (a deadlock).
        if (this.epoch !== null) {
          try {
            await this.catchUp(batch.firstSeq - 1);
            if (this.shipped.seq < batch.lastSeq) {
              await this.putChunk({ firstSeq: batch.firstSeq, lastSeq: batch.lastSeq, prevHash: batch.prevHash, lastHash: batch.lastHash, segmentFirstSeq: batch.segmentFirstSeq, offset: batch.offset, bytes: batch.data });
            }
            if (this.stateValue === 'unavailable') this.setState('leading', 'the object store answers again');
            return;
          } catch (err) {
            if ((this.stateValue as ReplicaState) === 'fenced') throw this.fencedError!;
            this.unavailable(err);
          }
        }
        // Throttling (503 SlowDown) and outages back off, but never past REPLICA_SYNC_RETRY_MAX_MS:
        // a write waits at most its ack timeout, and the next attempt must come well before it.
        await this.waitForState(Math.min(REPLICA_SYNC_RETRY_MAX_MS, REPLICA_RETRY_MIN_MS * 2 ** Math.min(attempt, 5)));
      }
    });
  }

  /** Resolves at the next state change or after `ms`. */
  private waitForState(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      t.unref();
      this.stateWaiters.push(() => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  /**
   * The background loop: (re)takes the leadership while it is not held, ships durable records in
   * async mode (every shipIntervalMs while there are any), seals segments, finishes erasures;
   * backs off while the store is unreachable.
   */
  private async shipLoop(): Promise<void> {
    let failures = 0;
    while (!this.closed && this.stateValue !== 'fenced') {
      const log = this.host!.log;
      try {
        if (this.epoch === null) {
          await this.takeLeadership();
        } else if (this.stateValue === 'unavailable' && this.mode === 'sync') {
          // The sync gate retries on its own; a successful probe lets it (and new writes) go on.
          await this.store.get(MANIFEST_NAME);
          this.setState('leading', 'the object store answers again');
        } else if (this.mode === 'async' && log.durableSeq > this.shipped.seq) {
          await sleep(this.shipIntervalMs);
          await this.serial(() => this.catchUp(log.durableSeq));
          if (this.stateValue === 'unavailable') this.setState('leading', 'the object store answers again');
        }
        if (!this.closed && this.stateValue === 'leading') {
          await this.serial(() => this.compact());
          await this.serial(() => this.finishErasures());
          await this.serial(() => this.raiseWatermark(false));
          await this.serial(() => this.checkBucket());
        }
        failures = 0;
      } catch (err) {
        if (err instanceof ReplicaStartError) {
          logger.error('replication_start', `replication: ${err.message}`);
          this.fence(replicaFenced(`this server does not lead its replica bucket: ${err.message}`));
          return;
        }
        if ((this.stateValue as ReplicaState) === 'fenced') return;
        this.unavailable(err);
        failures++;
        await sleep(Math.min(REPLICA_RETRY_MAX_MS, REPLICA_RETRY_MIN_MS * 2 ** Math.min(failures, 5)));
        continue;
      }
      if (this.mode === 'async' && log.durableSeq > this.shipped.seq) continue;
      if (this.stateValue === 'unavailable') {
        await sleep(REPLICA_RETRY_MIN_MS);
        continue;
      }
      await new Promise<void>((resolve) => {
        this.kickResolve = resolve;
        // Sync mode ships from the gate; the loop only wakes for compaction and erasures.
        setTimeout(resolve, this.mode === 'sync' ? 1000 : 60_000).unref();
      });
    }
  }

  /** Ships every durable record up to `seq` that the bucket lacks, as chunks read back from the segment files. */
  private async catchUp(seq: number): Promise<void> {
    const log = this.host!.log;
    while (this.shipped.seq < Math.min(seq, log.durableSeq)) {
      const run = await log.readLines(this.shipped.seq + 1, seq, REPLICA_CHUNK_BYTES_MAX);
      if (run === null) return;
      await this.putChunk(run);
    }
  }

  /**
   * Creates the chunk for `run` (If-None-Match: *). Our own earlier attempt (same bytes) counts as
   * done; another writer's chunk fences this leader (throws its 503 REPLICA_FENCED). Throws the
   * store's error when it cannot be reached.
   */
  private async putChunk(run: LineRun): Promise<void> {
    const lost = await this.tryPutChunk(run);
    if (lost !== null) throw await this.lostTo(`${chunkName(run.firstSeq)} was written by another leader (epoch ${lost.epoch ?? '?'})`);
    this.chunks.push({ firstSeq: run.firstSeq, lastSeq: run.lastSeq });
    this.shipped = { seq: run.lastSeq, hash: run.lastHash };
    const log = this.host!.log;
    let shippedBatches = 0;
    while (shippedBatches < this.durableTimes.length && this.durableTimes[shippedBatches]![0] <= this.shipped.seq) shippedBatches++;
    // The oldest unshipped record now belongs to the first batch past the shipped seq.
    if (shippedBatches > 0) this.durableTimes.splice(0, shippedBatches);
    if (log.durableSeq <= this.shipped.seq) this.durableTimes.length = 0;
  }

  /**
   * The signed bytes of the chunk holding `run`, written by this leader at its epoch: the one it
   * leads at, or during its start the one it took (`tookEpoch`: the backlog and the fence record
   * are shipped before `epoch` is set).
   */
  private chunkBody(run: LineRun): Buffer {
    const header: ChunkFields = {
      format: CHUNK_FORMAT,
      originId: this.host!.log.originId,
      epoch: (this.epoch ?? this.tookEpoch)!,
      writer: this.writer,
      firstSeq: run.firstSeq,
      lastSeq: run.lastSeq,
      prevHash: run.prevHash,
      segment: run.segmentFirstSeq,
      offset: run.offset,
    };
    return encodeChunk(header, run.bytes, this.key!);
  }

  /**
   * The periodic bucket check (bucket-check.ts), at most every `bucketCheckMs` while leading: its
   * result is shown by `replication status`; what it found missing becomes `lastError`. Throws
   * the store's error when it cannot be reached (the loop retries).
   */
  private async checkBucket(): Promise<void> {
    const now = performance.now();
    if (this.manifest === null || now - this.bucketCheckedAt < this.bucketCheckMs) return;
    this.bucketCheckedAt = now;
    const host = this.host!;
    const { check, problem } = await checkBucket({
      store: this.store,
      log: host.log,
      manifest: this.manifest,
      chunks: this.chunks,
      shippedSeq: this.shipped.seq,
      chunkBody: (run) => this.chunkBody(run),
      now: () => host.now(),
    });
    this.bucketCheck = check;
    if (problem !== null) this.lastError = problem;
  }

  /**
   * Creates the chunk for `run` (If-None-Match: *). Output: null when the bucket holds it (created
   * now, or our own earlier attempt whose answer was lost: same bytes); otherwise the epoch of the
   * chunk another writer put there (null epoch: not a chunk signed by the replica key). Throws the
   * store's error when it cannot be reached.
   */
  private async tryPutChunk(run: LineRun): Promise<{ epoch: number | null } | null> {
    if (run.firstSeq !== this.shipped.seq + 1 || run.prevHash !== this.shipped.hash) {
      throw new Error(`replication: record ${run.firstSeq} does not follow the shipped head ${this.shipped.seq}`);
    }
    const body = this.chunkBody(run);
    const name = chunkName(run.firstSeq);
    for (let attempt = 0; ; attempt++) {
      const r = await this.store.create(name, body);
      if (r.outcome === 'created') break;
      const existing = await this.store.get(name);
      if (existing === null) {
        if (attempt >= 3) throw new Error(`creating ${name}: ${r.outcome === 'unknown' ? r.reason : 'refused, yet the key is empty'}`);
        continue;
      }
      if (existing.body.equals(body)) return null; // our own attempt, whose answer was lost
      let other: ChunkHeader | null = null;
      try {
        other = decodeChunk(existing.body, name, this.key!).header;
      } catch {
        // not signed by the replica key (forged or altered in the bucket): still not ours
      }
      return { epoch: other?.epoch ?? null };
    }
    return null;
  }

  /** Fences this leader after a lost conditional write: reads the manifest for the new leader's URL. Returns the 503 to throw. */
  private async lostTo(why: string): Promise<ServiceError> {
    let leader = '';
    try {
      const m = await this.store.get(MANIFEST_NAME);
      if (m !== null) leader = decodeManifest(m.body, MANIFEST_NAME, this.key!).leaderUrl;
      this.fencedBy = typeof leader === 'string' && leader !== '' ? leader : null;
    } catch {
      // the URL is a courtesy; the fence holds without it
    }
    const err = replicaFenced(`this server is no longer the leader (${why}); it acknowledges no writes${leader ? `; the leader is ${shownText(leader)}` : ''}`, leader);
    this.fence(err);
    return err;
  }

  private fence(err: ServiceError): void {
    this.fencedError = err;
    this.setState('fenced', err.message);
    this.host?.log.refuse(err);
  }

  /**
   * Writes the manifest with If-Match, signed, its head watermark raised to the shipped head; a
   * manifest that is no longer this epoch's fences the leader.
   */
  private async writeManifest(raised: Manifest): Promise<void> {
    const next: Manifest = { ...raised, head: higherHead(raised.head, this.shipped) };
    const body = encodeManifest(next, this.key!);
    this.watermarkAt = performance.now();
    for (let attempt = 0; ; attempt++) {
      const r = await this.store.replace(MANIFEST_NAME, body, this.manifestEtag);
      if (r.outcome === 'replaced') {
        this.manifest = next;
        this.manifestEtag = r.etag;
        return;
      }
      const now = await this.store.get(MANIFEST_NAME);
      if (now !== null && now.body.equals(body)) {
        this.manifest = next;
        this.manifestEtag = now.etag;
        return;
      }
      const current = now === null ? null : decodeManifest(now.body, `${this.store.location.url}/${MANIFEST_NAME}`, this.key!);
      if (current === null || current.epoch !== this.epoch || current.writer !== this.writer) {
        throw await this.lostTo(`the manifest is at epoch ${current?.epoch ?? '?'}`);
      }
      if (attempt >= 3) throw new Error(`writing ${MANIFEST_NAME}: ${r.outcome === 'unknown' ? r.reason : 'conflict'}`);
      this.manifestEtag = now!.etag;
    }
  }

  /**
   * Seals the active segment on disk (Log#requestSeal) once the bucket holds REPLICA_SEAL_CHUNKS
   * chunks after its last sealed segment, at most once per REPLICA_SEAL_MIN_INTERVAL_MS (issue 50):
   * compaction then stores it whole and deletes its chunks, so the bucket never holds thousands of
   * small chunks for a follower, a restore or a take-back to read one by one.
   */
  private sealForChunkCount(): void {
    const log = this.host!.log;
    const first = this.chunks[0];
    if (first === undefined || this.chunks.length < REPLICA_SEAL_CHUNKS) return;
    if (this.sealedForCountAt !== null && performance.now() - this.sealedForCountAt < REPLICA_SEAL_MIN_INTERVAL_MS) return;
    // Only a segment that holds the oldest uncompacted chunk: one sealed since waits for compaction.
    const active = log.durableSegments().at(-1);
    if (active === undefined || active.firstSeq > first.firstSeq) return;
    const sealing = log.requestSeal();
    if (sealing === null) return;
    this.sealedForCountAt = performance.now();
    logger.info('replication_seal', `replication: the bucket holds ${this.chunks.length} chunks after its last segment; segment ${segmentName(sealing)} is sealed at the next write and then compacted`, { chunks: this.chunks.length });
  }

  /**
   * Compaction: each segment sealed on disk whose records are all shipped is stored whole, listed
   * in the manifest, and the chunks it covers are deleted.
   */
  private async compact(): Promise<void> {
    const log = this.host!.log;
    this.sealForChunkCount();
    const segments = log.durableSegments();
    for (let i = 0; i + 1 < segments.length; i++) {
      const seg = segments[i]!;
      const lastSeq = segments[i + 1]!.firstSeq - 1;
      const sealedTo = this.manifest!.segments.at(-1)?.lastSeq ?? 0;
      if (lastSeq <= sealedTo) continue;
      if (lastSeq > this.shipped.seq || seg.firstSeq !== sealedTo + 1) return;
      const bytes = await fsp.readFile(join(log.dataDir, LOG_DIR, segmentName(seg.firstSeq)));
      await putSegment(this.store, seg.firstSeq, bytes);
      const lastHash = log.records.storedHashOf(lastSeq)!;
      await this.writeManifest({ ...this.manifest!, segments: [...this.manifest!.segments, { firstSeq: seg.firstSeq, lastSeq, bytes: bytes.length, lastHash, sha256: sha256Hex(bytes) }] });
      const covered = this.chunks.filter((c) => c.lastSeq <= lastSeq);
      this.chunks = this.chunks.filter((c) => c.lastSeq > lastSeq);
      await this.store.delete(covered.map((c) => chunkName(c.firstSeq)));
    }
  }

  /**
   * Erasure in the bucket: every erase target (the log's vouched map, in log order) past the
   * manifest's `erased` count that the bucket holds is rewritten from the local tombstoned bytes;
   * then the manifest counts them. Idempotent: a crash in between redoes it at the next start.
   */
  private async finishErasures(): Promise<void> {
    const log = this.host!.log;
    const vouched = [...log.records.locations.vouched.keys()];
    const done = this.manifest!.erased;
    if (vouched.length <= done) return;
    const sealed = this.manifest!.segments;
    const segmentsToRewrite = new Set<number>();
    const chunksToRewrite = new Set<ChunkRef>();
    for (const seq of vouched.slice(done)) {
      if (seq > this.shipped.seq) continue;
      const seg = sealed.find((s) => s.firstSeq <= seq && seq <= s.lastSeq);
      if (seg !== undefined) segmentsToRewrite.add(seg.firstSeq);
      const chunk = this.chunks.find((c) => c.firstSeq <= seq && seq <= c.lastSeq);
      if (chunk !== undefined) chunksToRewrite.add(chunk);
    }
    // The local rewrite must be complete first (Log#erase runs one at a time; it is done when the
    // record reads as a tombstone), or the bucket would get the original bytes back.
    for (const seq of vouched.slice(done)) if (seq <= log.durableSeq && !log.records.isTombstone(seq)) return;
    const digests = new Map<number, string>();
    for (const first of segmentsToRewrite) {
      const bytes = await fsp.readFile(join(log.dataDir, LOG_DIR, segmentName(first)));
      await putSegment(this.store, first, bytes);
      digests.set(first, sha256Hex(bytes));
    }
    for (const c of chunksToRewrite) {
      const name = chunkName(c.firstSeq);
      const existing = await this.store.get(name);
      if (existing === null) continue;
      const { header } = decodeChunk(existing.body, `${this.store.location.url}/${name}`, this.key!);
      const run = await log.readLines(header.firstSeq, header.lastSeq, Number.MAX_SAFE_INTEGER);
      if (run === null || run.lastSeq !== header.lastSeq) throw new Error(`${name}: records ${header.firstSeq}..${header.lastSeq} cannot be read back`);
      const r = await this.store.replace(name, encodeChunk(header, run.bytes, this.key!), existing.etag);
      if (r.outcome !== 'replaced') throw new Error(`rewriting ${name} for an erasure: ${r.outcome}`);
    }
    // The rewritten segments' new digests are listed with the count (a reader between the two reads the manifest again).
    const segments = this.manifest!.segments.map((s) => (digests.has(s.firstSeq) ? { ...s, sha256: digests.get(s.firstSeq)! } : s));
    await this.writeManifest({ ...this.manifest!, segments, erased: vouched.length });
    if (segmentsToRewrite.size + chunksToRewrite.size > 0) {
      logger.info('replication_erased', `replication: erased ${vouched.length - done} record(s) in the bucket too (${segmentsToRewrite.size} segment and ${chunksToRewrite.size} chunk object(s) rewritten)`);
    }
  }

  /** After a local erasure (Log#erase): rewrites the bucket's copies now (and at every start until done). */
  erased(): Promise<void> {
    if (this.stateValue !== 'leading') return Promise.resolve();
    return this.serial(() => this.finishErasures()).catch((err) => {
      logger.warn('replication_erase', `replication: the bucket's copies of erased records are not rewritten yet (${(err as Error).message}); retried in the background`);
    });
  }

  /** `replication status`. */
  status(): ReplicaStatus {
    const log = this.host?.log;
    const durableSeq = log?.durableSeq ?? 0;
    const lagRecords = Math.max(0, durableSeq - this.shipped.seq);
    return {
      role: 'leader',
      url: this.store.location.url,
      mode: this.mode,
      state: this.stateValue,
      epoch: this.epoch,
      writer: this.writer,
      leaderUrl: this.fencedBy ?? this.manifest?.leaderUrl ?? null,
      durableSeq,
      shippedSeq: this.shipped.seq,
      lag: { records: lagRecords, seconds: lagRecords === 0 || this.durableTimes.length === 0 ? 0 : Math.round(performance.now() - this.durableTimes[0]![1]) / 1000 },
      segments: this.manifest?.segments.length ?? 0,
      chunks: this.chunks.length,
      pointInTimeRestore: { fromSeq: this.shipped.seq > 0 ? 1 : 0, toSeq: this.shipped.seq, window: 'the whole history: the log is append-only and never dropped' },
      requests: { ...this.store.counters },
      lastError: this.lastError,
      publicKey: this.key?.text ?? null,
      watermark: this.manifest === null ? null : { seq: this.manifest.head.seq },
      bucketCheck: this.bucketCheck,
    };
  }

  /**
   * Stops shipping after what is queued; in async mode first ships what is durable (one attempt,
   * so a stop is not held up by an unreachable store).
   */
  async close(): Promise<void> {
    this.closed = true;
    this.kick();
    for (const w of this.stateWaiters.splice(0)) w();
    if (this.mode === 'async' && this.stateValue === 'leading' && this.host !== null) {
      const log = this.host.log;
      await this.serial(() => this.catchUp(log.durableSeq)).catch((err) => logger.warn('replication_close', `replication: records after ${this.shipped.seq} were not shipped before the stop (${(err as Error).message}); the next start ships them`));
    }
    if (this.stateValue === 'leading') await this.serial(() => this.raiseWatermark(true)).catch(() => undefined);
    await this.chain;
    if (this.stateValue !== 'fenced') this.setState('stopped', 'the server stops');
    this.store.close();
  }
}
