/**
 * The leader's side of replication (issue 35; README "Replication"): continuous shipping of the
 * log to an S3-compatible bucket (format.ts), fenced with conditional writes alone.
 *
 * Start (`start`): read the manifest (create it for a new bucket); refuse a bucket of another
 * archive (originId); take back the records the bucket holds beyond this folder's log, proven
 * from its head as a follower proves them (`pullAhead`); refuse a bucket whose chain differs
 * from this folder's log (diverged); take the writer epoch by
 * writing the manifest with `If-Match` (epoch + 1); append a `replication.epoch` record and ship
 * everything up to it. That record's chunk occupies the next key, so a stale leader that wakes up
 * loses its next chunk PUT and learns it lost; a start that loses the epoch race stops.
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
 * Point-in-time restore reaches every seq: the log is append-only and never dropped.
 *
 * Erasure: after the local rewrite (store/erase.ts), every chunk and segment object holding an
 * erased record is rewritten from the local (tombstoned) bytes with If-Match, and the manifest
 * counts the erase targets done (`erased`), so a start after a crash finishes the rest.
 */
import { randomUUID } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { REPLICA_CHUNK_BYTES_MAX, REPLICA_RETRY_AFTER_SECONDS, REPLICA_RETRY_MAX_MS, REPLICA_RETRY_MIN_MS } from '../../constants.js';
import { ServiceError } from '../../errors.js';
import { leaderHeader, shownText } from '../../http/header-value.js';
import { logger } from '../../logger.js';
import { LogCorruptError, StoreStateError } from '../errors.js';
import { LOG_DIR, type LineRun, type Log, type WrittenBatch } from '../log.js';
import { GENESIS_HASH } from '../record-format.js';
import { segmentName } from '../segment.js';
import {
  CHUNK_FORMAT,
  CHUNKS_DIR,
  MANIFEST_FORMAT,
  MANIFEST_NAME,
  chunkName,
  decodeChunk,
  decodeManifest,
  encodeChunk,
  encodeManifest,
  firstSeqOfName,
  lastHashOf,
  segmentObjectName,
  type ChunkHeader,
  type Manifest,
} from './format.js';
import { ReplicaFollower, type FollowerHost } from './follower.js';
import type { ObjectStore } from './object-store.js';

/** `async`: acknowledged after the local fdatasync; `sync`: only once the bucket holds it. */
export type ReplicaMode = 'async' | 'sync';

/** Where the leader stands (one log line per change; `replication status`). */
export type ReplicaState = 'connecting' | 'leading' | 'unavailable' | 'fenced' | 'stopped';

/** The payload of a `replication.epoch` record. */
export interface EpochPayload {
  epoch: number;
  writer: string;
  leaderUrl: string;
}

/**
 * What the leader needs from the running service. The follower's hooks (apply, seedErased,
 * erase) take back records the bucket holds beyond the local head at a start.
 */
export interface ReplicaHost extends FollowerHost {
  log: Log;
  /** Appends the `replication.epoch` record (applied like any record); returns its seq. */
  appendEpoch(payload: EpochPayload): number;
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
}

/** A chunk in the bucket after the last sealed segment. */
interface ChunkRef {
  firstSeq: number;
  lastSeq: number;
}

/** A start that must not go on (another archive's bucket, a bucket ahead or diverged, a lost epoch race). */
export class ReplicaStartError extends StoreStateError {}

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
  /** The bucket's chain head as this leader knows it. */
  private shipped = { seq: 0, hash: GENESIS_HASH };
  private chunks: ChunkRef[] = [];
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
   * While a start takes back records from the bucket (`pullAhead`): the bucket's head seq (0
   * otherwise). Meanwhile writes are refused, so every batch is a pulled one, which the sync gate
   * lets through at once (the bucket holds it).
   */
  private pullingTo = 0;
  /** Called once per state change (metrics, tests). */
  onState: ((state: ReplicaState) => void) | null = null;

  constructor(
    readonly store: ObjectStore,
    readonly mode: ReplicaMode,
    private readonly shipIntervalMs: number,
  ) {}

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
    if (this.pullingTo > 0) return this.pullingRefusal();
    if (this.mode === 'sync' && this.stateValue !== 'leading') {
      return new ServiceError(
        'REPLICA_UNAVAILABLE',
        `writes are acknowledged only once the object store holds them (FORUM_REPLICA_MODE=sync) and it is ${this.stateValue === 'connecting' ? 'not connected yet' : 'unreachable'} (${this.lastError ?? 'no answer yet'}); nothing was written; retry after Retry-After seconds`,
        { 'Retry-After': String(REPLICA_RETRY_AFTER_SECONDS) },
      );
    }
    return null;
  }

  /**
   * Connects the leader to the running log: the sync-mode gate (Log#replicate), the wake-up after
   * each group commit, then the start procedure (module doc). `expectEpoch` (a promotion): take
   * the leadership only from that epoch — another server that took it meanwhile wins. Resolves once the first attempt is
   * done: leading, or unavailable (retried in the background). Rejects with ReplicaStartError when
   * this server must not lead this bucket (the server stops).
   */
  async start(host: ReplicaHost, opts: { expectEpoch?: number } = {}): Promise<void> {
    this.host = host;
    this.expectEpoch = opts.expectEpoch ?? null;
    if (this.mode === 'sync') host.log.replicate = (batch) => this.gate(batch);
    try {
      await this.takeLeadership();
    } catch (err) {
      if (err instanceof ReplicaStartError) throw err;
      this.unavailable(err);
    }
    void this.shipLoop();
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

  /** The start procedure: manifest, checks against the local log, epoch, fence record. */
  private async takeLeadership(): Promise<void> {
    const host = this.host!;
    const log = host.log;
    let got = await this.store.get(MANIFEST_NAME);
    if (got === null) {
      const existing = await this.store.list('');
      if (existing.length > 0) {
        throw new ReplicaStartError(`${this.store.location.url} holds ${existing.length} object(s) but no ${MANIFEST_NAME}: it is not an Agent Forum replica; use an empty prefix`);
      }
      const meta = log.meta;
      const lineage = { ...(meta.restoredFrom ? { restoredFrom: meta.restoredFrom } : {}), ...(meta.repairedFrom ? { repairedFrom: meta.repairedFrom } : {}) };
      const fresh: Manifest = { format: MANIFEST_FORMAT, originId: log.originId, created: meta.created, lineage, epoch: 0, writer: '', leaderUrl: '', since: new Date(host.now()).toISOString(), segments: [], erased: 0 };
      const r = await this.store.create(MANIFEST_NAME, encodeManifest(fresh));
      if (r.outcome === 'unknown') throw new Error(`creating ${MANIFEST_NAME}: ${r.reason}`);
      got = await this.store.get(MANIFEST_NAME);
      if (got === null) throw new Error(`${MANIFEST_NAME} vanished after it was created`);
    }
    const manifest = decodeManifest(got.body, `${this.store.location.url}/${MANIFEST_NAME}`);
    if (manifest.originId !== log.originId) {
      throw new ReplicaStartError(
        `${this.store.location.url} replicates archive ${manifest.originId}, but this data folder holds archive ${log.originId}: ` +
          'restore this folder from the bucket (node dist/cli.js restore --from URL), or replicate to another prefix',
      );
    }
    // The bucket's head: the last sealed segment, then the chunks after it (one LIST, one GET).
    const lastSegment = manifest.segments.at(-1);
    let head = lastSegment === undefined ? { seq: 0, hash: GENESIS_HASH } : { seq: lastSegment.lastSeq, hash: lastSegment.lastHash };
    const sealedTo = head.seq;
    const names = await this.store.list(CHUNKS_DIR);
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
      const last = await this.store.get(lastName);
      if (last === null) throw new Error(`${lastName} was listed but is gone (is another server compacting this bucket?)`);
      const { header, lines } = decodeChunk(last.body, lastName);
      const hash = lastHashOf(lines);
      if (hash === null) throw new ReplicaStartError(`${lastName} does not end with a whole record: the bucket is damaged`);
      for (let i = 0; i < firsts.length; i++) chunks.push({ firstSeq: firsts[i]!, lastSeq: i + 1 < firsts.length ? firsts[i + 1]! - 1 : header.lastSeq });
      head = { seq: header.lastSeq, hash };
    }
    if (head.seq > log.durableSeq) await this.pullAhead(head.seq);
    if (head.seq > log.durableSeq) {
      throw new ReplicaStartError(
        `${this.store.location.url} holds records up to ${head.seq} but this data folder's log ends at ${log.durableSeq} after taking back what the bucket held: another leader is writing. ` +
          'Leading now would fork the chain; restore this folder from the bucket first (node dist/cli.js restore --from URL --yes), then start',
      );
    }
    if (head.seq > 0) {
      const local = log.records.storedHashOf(head.seq);
      if (local !== head.hash) {
        throw new ReplicaStartError(
          `record ${head.seq} in ${this.store.location.url} differs from this data folder's record ${head.seq}: the two logs diverged (records written here after another leader took over were never acknowledged by the bucket). ` +
            'Restore this folder from the bucket (node dist/cli.js restore --from URL --yes); the folder is kept aside',
        );
      }
    }
    if (this.expectEpoch !== null && manifest.epoch !== this.expectEpoch) {
      throw new ReplicaStartError(`another server took the leadership of ${this.store.location.url} (epoch ${manifest.epoch}, ${manifest.leaderUrl || 'address unknown'}) while this one was being promoted`);
    }
    // Take the writer epoch: one conditional write; losing it means another server is starting.
    const epoch = manifest.epoch + 1;
    const taken: Manifest = { ...manifest, epoch, writer: this.writer, leaderUrl: host.publicUrl(), since: new Date(host.now()).toISOString() };
    const body = encodeManifest(taken);
    const r = await this.store.replace(MANIFEST_NAME, body, got.etag);
    let etag: string;
    if (r.outcome === 'replaced') etag = r.etag;
    else {
      const now = await this.store.get(MANIFEST_NAME);
      if (now === null || !now.body.equals(body)) {
        const other = now === null ? null : decodeManifest(now.body, MANIFEST_NAME);
        throw new ReplicaStartError(`another server took the leadership of ${this.store.location.url} while this one started (epoch ${other?.epoch ?? '?'}, ${other?.leaderUrl || 'address unknown'}): not starting as a second leader`);
      }
      etag = now.etag;
    }
    this.manifest = taken;
    this.manifestEtag = etag;
    this.epoch = epoch;
    this.shipped = head;
    this.durableTimes = this.durableTimes.filter(([seq]) => seq > head.seq);
    this.chunks = chunks;
    if (stale.length > 0) await this.store.delete(stale).catch(() => undefined);
    // The fence: the epoch record's chunk takes the next key (shipped with everything before it).
    this.setState('leading', `epoch ${epoch} taken; shipping from record ${head.seq + 1}`);
    const seq = host.appendEpoch({ epoch, writer: this.writer, leaderUrl: host.publicUrl() });
    await log.sync();
    if (this.mode === 'async') await this.serial(() => this.catchUp(seq));
    await this.serial(() => this.finishErasures());
  }

  /**
   * A start whose bucket holds records beyond the local log (issue 35): a sync-mode batch whose
   * chunk PUT succeeded while its fdatasync did not finish before a crash, or records a later
   * leader wrote after this folder was copied. They are taken back into the local log — proven
   * exactly as a follower proves them, from the local head's hash (ReplicaFollower#pullOnce),
   * appended as they are and applied — before this server takes the next epoch; writes are
   * refused meanwhile. They were never acknowledged by this server, but the bucket holds them
   * (followers and restores may already show them), so keeping them is the one consistent
   * choice. Throws ReplicaStartError when the bucket's records do not prove against the local
   * log (the two diverged: a record differs at a seq both hold); the store's error when it
   * cannot be reached.
   */
  private async pullAhead(bucketSeq: number): Promise<void> {
    const host = this.host!;
    const log = host.log;
    this.pullingTo = bucketSeq;
    try {
      await host.holdWrites(this.pullingRefusal(), async () => {
        // Writes appended before the hold are made durable first: the bucket must prove against them.
        await log.sync();
        const from = log.durableSeq;
        const started = performance.now();
        let pulled: number;
        try {
          pulled = await new ReplicaFollower(this.store).pullOnce(host);
        } catch (err) {
          if (!(err instanceof LogCorruptError)) throw err;
          throw new ReplicaStartError(
            `the records in ${this.store.location.url} after this data folder's record ${from} do not prove against it (${err.message}): the two logs diverged (records written here after another leader took over were never acknowledged by the bucket), or the bucket is damaged. ` +
              `First list what only this folder holds (node dist/cli.js replication lost --from ${this.store.location.url} --out lost.jsonl), then restore this folder from the bucket (node dist/cli.js restore --from ${this.store.location.url} --yes; the replaced log is kept aside)`,
          );
        }
        if (pulled > 0) logger.info('replication_pulled', `replication: took back records ${from + 1}..${log.durableSeq} (${pulled}) from ${this.store.location.url}, which held them beyond this data folder's log, in ${Math.round(performance.now() - started)} ms`, { from: from + 1, to: log.durableSeq, bucket: this.store.location.url });
      });
    } finally {
      this.pullingTo = 0;
    }
  }

  /** The 503 a write gets while a start takes back records from the bucket. */
  private pullingRefusal(): ServiceError {
    return new ServiceError(
      'REPLICA_UNAVAILABLE',
      `this server is taking back records ${this.host!.log.durableSeq + 1}..${this.pullingTo} from ${this.store.location.url} before it leads; nothing was written; retry after Retry-After seconds`,
      { 'Retry-After': String(REPLICA_RETRY_AFTER_SECONDS) },
    );
  }

  /**
   * The sync-mode gate (Log#replicate): resolves once the batch's chunk is in the bucket; rejects
   * only when fenced. A batch a start takes back from the bucket (`pullAhead`) passes at once.
   */
  private gate(batch: WrittenBatch): Promise<void> | undefined {
    // While a start takes records back, writes are refused: every batch is one the bucket holds.
    if (this.pullingTo > 0) return undefined;
    return this.serial(async () => {
      for (let attempt = 0; ; attempt++) {
        if (this.stateValue === 'fenced') throw this.fencedError!;
        if (this.closed && attempt > 0) {
          // A stop while the store is unreachable: the batch stays on the local disk, never
          // acknowledged, and the next start ships it.
          throw new ServiceError('REPLICA_UNAVAILABLE', 'the server stops while the object store is unreachable: this write was not acknowledged', { 'Retry-After': String(REPLICA_RETRY_AFTER_SECONDS) });
        }
        if (this.stateValue === 'leading') {
          try {
            await this.catchUp(batch.firstSeq - 1);
            if (this.shipped.seq < batch.lastSeq) {
              await this.putChunk({ firstSeq: batch.firstSeq, lastSeq: batch.lastSeq, prevHash: batch.prevHash, lastHash: batch.lastHash, segmentFirstSeq: batch.segmentFirstSeq, offset: batch.offset, bytes: batch.data });
            }
            return;
          } catch (err) {
            if ((this.stateValue as ReplicaState) === 'fenced') throw this.fencedError!;
            this.unavailable(err);
          }
        }
        await this.waitForState(Math.min(REPLICA_RETRY_MAX_MS, REPLICA_RETRY_MIN_MS * 2 ** Math.min(attempt, 5)));
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
        }
        failures = 0;
      } catch (err) {
        if (err instanceof ReplicaStartError) {
          logger.error('replication_start', `replication: ${err.message}`);
          this.fence(new ServiceError('REPLICA_FENCED', `this server does not lead its replica bucket: ${err.message}`, { 'Retry-After': String(REPLICA_RETRY_AFTER_SECONDS) }));
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
    if (run.firstSeq !== this.shipped.seq + 1 || run.prevHash !== this.shipped.hash) {
      throw new Error(`replication: record ${run.firstSeq} does not follow the shipped head ${this.shipped.seq}`);
    }
    const header: ChunkHeader = {
      format: CHUNK_FORMAT,
      originId: this.host!.log.originId,
      epoch: this.epoch!,
      writer: this.writer,
      firstSeq: run.firstSeq,
      lastSeq: run.lastSeq,
      prevHash: run.prevHash,
      segment: run.segmentFirstSeq,
      offset: run.offset,
    };
    const body = encodeChunk(header, run.bytes);
    const name = chunkName(run.firstSeq);
    for (let attempt = 0; ; attempt++) {
      const r = await this.store.create(name, body);
      if (r.outcome === 'created') break;
      const existing = await this.store.get(name);
      if (existing === null) {
        if (attempt >= 3) throw new Error(`creating ${name}: ${r.outcome === 'unknown' ? r.reason : 'refused, yet the key is empty'}`);
        continue;
      }
      if (existing.body.equals(body)) break; // our own attempt, whose answer was lost
      let other: ChunkHeader | null = null;
      try {
        other = decodeChunk(existing.body, name).header;
      } catch {
        // not even a chunk: still not ours
      }
      throw await this.lostTo(`${name} was written by another leader (epoch ${other?.epoch ?? '?'})`);
    }
    this.chunks.push({ firstSeq: run.firstSeq, lastSeq: run.lastSeq });
    this.shipped = { seq: run.lastSeq, hash: run.lastHash };
    const log = this.host!.log;
    let shippedBatches = 0;
    while (shippedBatches < this.durableTimes.length && this.durableTimes[shippedBatches]![0] <= this.shipped.seq) shippedBatches++;
    // The oldest unshipped record now belongs to the first batch past the shipped seq.
    if (shippedBatches > 0) this.durableTimes.splice(0, shippedBatches);
    if (log.durableSeq <= this.shipped.seq) this.durableTimes.length = 0;
  }

  /** Fences this leader after a lost conditional write: reads the manifest for the new leader's URL. Returns the 503 to throw. */
  private async lostTo(why: string): Promise<ServiceError> {
    let leader = '';
    try {
      const m = await this.store.get(MANIFEST_NAME);
      if (m !== null) leader = decodeManifest(m.body, MANIFEST_NAME).leaderUrl;
      this.fencedBy = typeof leader === 'string' && leader !== '' ? leader : null;
    } catch {
      // the URL is a courtesy; the fence holds without it
    }
    const err = new ServiceError(
      'REPLICA_FENCED',
      `this server is no longer the leader (${why}); it acknowledges no writes${leader ? `; the leader is ${shownText(leader)}` : ''}`,
      { 'Retry-After': String(REPLICA_RETRY_AFTER_SECONDS), ...leaderHeader(leader) },
    );
    this.fence(err);
    return err;
  }

  private fence(err: ServiceError): void {
    this.fencedError = err;
    this.setState('fenced', err.message);
    this.host?.log.refuse(err);
  }

  /** Writes the manifest with If-Match; a manifest that is no longer this epoch's fences the leader. */
  private async writeManifest(next: Manifest): Promise<void> {
    const body = encodeManifest(next);
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
      const current = now === null ? null : decodeManifest(now.body, MANIFEST_NAME);
      if (current === null || current.epoch !== this.epoch || current.writer !== this.writer) {
        throw await this.lostTo(`the manifest is at epoch ${current?.epoch ?? '?'}`);
      }
      if (attempt >= 3) throw new Error(`writing ${MANIFEST_NAME}: ${r.outcome === 'unknown' ? r.reason : 'conflict'}`);
      this.manifestEtag = now!.etag;
    }
  }

  /**
   * Compaction: each segment sealed on disk whose records are all shipped is stored whole, listed
   * in the manifest, and the chunks it covers are deleted.
   */
  private async compact(): Promise<void> {
    const log = this.host!.log;
    const segments = log.durableSegments();
    for (let i = 0; i + 1 < segments.length; i++) {
      const seg = segments[i]!;
      const lastSeq = segments[i + 1]!.firstSeq - 1;
      const sealedTo = this.manifest!.segments.at(-1)?.lastSeq ?? 0;
      if (lastSeq <= sealedTo) continue;
      if (lastSeq > this.shipped.seq || seg.firstSeq !== sealedTo + 1) return;
      const bytes = await fsp.readFile(join(log.dataDir, LOG_DIR, segmentName(seg.firstSeq)));
      await this.putSegment(seg.firstSeq, bytes);
      const lastHash = log.records.storedHashOf(lastSeq)!;
      await this.writeManifest({ ...this.manifest!, segments: [...this.manifest!.segments, { firstSeq: seg.firstSeq, lastSeq, bytes: bytes.length, lastHash }] });
      const covered = this.chunks.filter((c) => c.lastSeq <= lastSeq);
      this.chunks = this.chunks.filter((c) => c.lastSeq > lastSeq);
      await this.store.delete(covered.map((c) => chunkName(c.firstSeq)));
    }
  }

  /** Stores a sealed segment's bytes: created, or replaced when an earlier copy differs (an erasure since). */
  private async putSegment(firstSeq: number, bytes: Buffer): Promise<void> {
    const name = segmentObjectName(firstSeq);
    for (let attempt = 0; ; attempt++) {
      const r = await this.store.create(name, bytes);
      if (r.outcome === 'created') return;
      const existing = await this.store.get(name);
      if (existing === null) {
        if (attempt >= 3) throw new Error(`creating ${name}: the key stays empty`);
        continue;
      }
      if (existing.body.equals(bytes)) return;
      const rr = await this.store.replace(name, bytes, existing.etag);
      if (rr.outcome === 'replaced') return;
      if (attempt >= 3) throw new Error(`replacing ${name}: ${rr.outcome}`);
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
    for (const first of segmentsToRewrite) {
      await this.putSegment(first, await fsp.readFile(join(log.dataDir, LOG_DIR, segmentName(first))));
    }
    for (const c of chunksToRewrite) {
      const name = chunkName(c.firstSeq);
      const existing = await this.store.get(name);
      if (existing === null) continue;
      const { header } = decodeChunk(existing.body, name);
      const run = await log.readLines(header.firstSeq, header.lastSeq, Number.MAX_SAFE_INTEGER);
      if (run === null || run.lastSeq !== header.lastSeq) throw new Error(`${name}: records ${header.firstSeq}..${header.lastSeq} cannot be read back`);
      const r = await this.store.replace(name, encodeChunk(header, run.bytes), existing.etag);
      if (r.outcome !== 'replaced') throw new Error(`rewriting ${name} for an erasure: ${r.outcome}`);
    }
    await this.writeManifest({ ...this.manifest!, erased: vouched.length });
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
    await this.chain;
    if (this.stateValue !== 'fenced') this.setState('stopped', 'the server stops');
    this.store.close();
  }
}
