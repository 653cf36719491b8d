/**
 * A read-only follower of a replica bucket (issue 36; docs/operate/replication.md#followers): started
 * with FORUM_FOLLOW=s3://bucket/prefix, it holds the leader's log — same originId, same seqs, same
 * bytes — so feed cursors, receipts and export checksums are interchangeable with the leader's.
 *
 * Tailing: every FOLLOW_POLL_MS it asks for the chunk that starts right after its head (one GET;
 * 404 while there is none). When that key is missing for longer (the leader compacted it into a
 * sealed segment, or this follower's head is not on a chunk boundary), it reads the manifest and
 * the chunk list once to find the object that holds its next record. A follower that finds the next
 * chunk FOLLOW_CATCH_UP_AFTER_STEPS polls in a row is behind: it lists the chunks after its head once
 * and fetches them FOLLOW_PREFETCH_MAX at a time, appending what has arrived with one fdatasync
 * (`drain`, as a promotion's take-back does). Every line is proven before it
 * is applied: the chunk's header must name this archive, link to the follower's head (prevHash)
 * and every line must pass the hash chain (format.ts `proveLines`). An object that does not prove
 * stops the tailing — nothing of it is applied — and is reported (`status`, one log line); the
 * follower goes on serving what it holds.
 *
 * Applying: the proven lines are appended to the local log as they are (Log#appendProven) and
 * applied to the state like the leader's own commits; reads see them once they are durable. A
 * line that begins a segment on the leader (its chunk header's offset 0, or a segment object)
 * begins one here too (Log#startSegmentAt; issue 50), and the local log never rolls over anywhere
 * else — not at its own size limit, not for an erasure (Log#followsSegments) — so the segment files
 * stay the leader's and a promoted follower's chunks name segments a restore can rebuild. A
 * `moderation.erase` record erases its targets in the local log too, as on the leader. A tombstone
 * (erased on the leader after it was shipped) is applied with the emptied payload that its later
 * erase record carries: the follower reads ahead until that record, then applies in order.
 *
 * Authentication (issue 50; format.ts): the manifest, every chunk and every segment object must
 * authenticate under the replica key (a follower needs only the public key and read access); and
 * a record the manifest's signed head watermark says the bucket held but whose object is gone
 * (a holed or rolled-back bucket) stops the tailing, naming the missing object.
 *
 * Promotion (`replication promote`): the follower applies what the bucket holds, stops tailing,
 * and becomes the leader (leader.ts: it takes the writer epoch with If-Match and writes its fence
 * record at the next seq); when another server wins the epoch it stays a follower.
 */
import { performance } from 'node:perf_hooks';
import { FOLLOW_APPLY_BATCH_BYTES_MAX, FOLLOW_CATCH_UP_AFTER_STEPS, FOLLOW_LOOKAHEAD_BYTES_MAX, FOLLOW_POLL_MS, FOLLOW_PREFETCH_MAX, FOLLOW_RESYNC_AFTER_MISSES, FOLLOW_RESYNC_AFTER_MISSES_MAX } from '../../constants.js';
import { logger } from '../../logger.js';
import { LogCorruptError } from '../errors.js';
import type { Log } from '../log.js';
import { ERASE_RECORD_TYPE, eraseTargetsOf, type EraseTarget, type LogRecord } from '../record-format.js';
import { BUCKET_OBJECT_ADVICE, HOLE_ADVICE, CHUNKS_DIR, MANIFEST_NAME, checkSegment, chunkName, decodeChunk, decodeManifest, firstSeqOfName, proveLines, segmentObjectName, type Manifest } from './format.js';
import type { ReplicaKey } from './keys.js';
import type { ObjectStore } from './object-store.js';
import { stoppedFollowerRefusal } from './refusals.js';

/** Where the follower stands: `following` (tailing), `stopped` (an object did not prove; see lastError), `promoting`, `promoted`. */
export type FollowerState = 'starting' | 'following' | 'stopped' | 'promoting' | 'promoted';

/** What the follower needs from the running service. */
export interface FollowerHost {
  log: Log;
  /** Applies a proven record to the state (and the search index), as a commit would. */
  apply(record: LogRecord, payloadJson: string): void;
  /** Seeds the emptied payloads an erase record carries, before its tombstones are applied. */
  seedErased(erasePayload: unknown): void;
  /** Erases targets in the local log (after the erase record is durable), as the leader did. */
  erase(targets: EraseTarget[]): Promise<void>;
}

/** `replication status` on a follower. */
export interface FollowerStatus {
  role: 'follower';
  url: string;
  state: FollowerState;
  /** The leader's epoch and public URL as the manifest names them (last read). */
  epoch: number | null;
  leaderUrl: string | null;
  appliedSeq: number;
  /** True when the last poll found nothing newer in the bucket. */
  caughtUp: boolean;
  /** ms since the last poll that found the follower at the bucket's head (null: never). */
  sinceCaughtUpMs: number | null;
  requests: { puts: number; gets: number; lists: number; deletes: number; failures: number };
  lastError: string | null;
  /** The replica public key every object is verified with (`ed25519:…`). */
  publicKey: string;
}

/** One proven line waiting to be applied. */
interface ProvenLine {
  line: Buffer;
  record: LogRecord;
  payloadJson: string;
  hash: string;
  /** The line begins a segment on the leader (its object says so): the local log rolls over there too. */
  startsSegment: boolean;
}

/** The follower. Create it, then `start(host)`; `close()` stops tailing. */
export class ReplicaFollower {
  private stateValue: FollowerState = 'starting';
  private host: FollowerHost | null = null;
  private manifest: Manifest | null = null;
  private misses = 0;
  /** Misses before the next manifest-and-list resync; doubles while the bucket has nothing new (fewer LISTs when idle). */
  private resyncAfter = FOLLOW_RESYNC_AFTER_MISSES;
  private caughtUpAt: number | null = null;
  private caughtUp = false;
  private lastError: string | null = null;
  private closed = false;
  private loop: Promise<void> = Promise.resolve();
  /**
   * Each tailing loop's number: a promotion moves it on, so a loop whose request is still in
   * flight applies nothing of what it brings back (issue 50: a promotion does not wait for a
   * stalled poll, up to the store client's timeouts and retries).
   */
  private generation = 0;
  /** The batch being applied now (appended and made durable), which a promotion waits for. */
  private applying: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  /** Called with the new head after each applied batch (tests, metrics). */
  onApplied: ((seq: number) => void) | null = null;

  /** `key`: the replica key every object must authenticate under (the public half suffices). */
  constructor(
    readonly store: ObjectStore,
    readonly key: ReplicaKey,
    private readonly pollMs: number = FOLLOW_POLL_MS,
  ) {}

  get state(): FollowerState {
    return this.stateValue;
  }

  private setState(next: FollowerState, why: string): void {
    if (this.stateValue === next) return;
    this.stateValue = next;
    const level = next === 'stopped' ? 'error' : 'info';
    logger[level]('follower_state', `follower: ${next} (${why})`, { state: next, bucket: this.store.location.url, seq: this.host?.log.durableSeq });
  }

  /**
   * Checks that the bucket holds this folder's archive, catches up once, then tails in the
   * background. Rejects with Error when the bucket has no manifest or names another archive,
   * LogCorruptError when the manifest does not authenticate under the replica key.
   */
  async start(host: FollowerHost): Promise<void> {
    this.host = host;
    this.manifest = await this.readManifest();
    if (this.manifest.originId !== host.log.originId) {
      throw new Error(`${this.store.location.url} replicates archive ${this.manifest.originId}, but this data folder holds archive ${host.log.originId}: start the follower on an empty folder (it restores from the bucket)`);
    }
    // Issue 50: its log rolls over only where the leader's segments begin, never by its own size.
    host.log.followsSegments(true);
    this.setState('following', `from record ${host.log.durableSeq + 1}`);
    await this.step().catch((err) => this.fail(err));
    this.loop = this.tail();
  }

  /** The background loop: one step per poll interval while following. */
  private async tail(): Promise<void> {
    const generation = ++this.generation;
    /** Polls in a row that found the next chunk: past FOLLOW_CATCH_UP_AFTER_STEPS, the follower catches up (`drain`). */
    let streak = 0;
    while (!this.closed && this.stateValue === 'following' && generation === this.generation) {
      let progressed = false;
      try {
        progressed = streak >= FOLLOW_CATCH_UP_AFTER_STEPS ? await this.drain(Number.MAX_SAFE_INTEGER, generation) : await this.step(generation);
        streak = progressed && streak < FOLLOW_CATCH_UP_AFTER_STEPS ? streak + 1 : 0;
      } catch (err) {
        streak = 0;
        if (generation !== this.generation) return;
        this.fail(err);
        if (err instanceof LogCorruptError) return;
      }
      if (progressed) continue;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        setTimeout(resolve, this.pollMs).unref();
      });
      this.wake = null;
    }
  }

  private fail(err: unknown): void {
    this.lastError = (err as Error).message;
    if (err instanceof LogCorruptError) {
      this.setState('stopped', `an object in the bucket does not prove; nothing of it was applied: ${this.lastError}`);
    } else {
      logger.warn('follower_poll', `follower: the object store did not answer (${this.lastError}); retrying`);
    }
  }

  /**
   * One poll: fetches the object that holds the next record, proves and applies it. Output: true
   * when records were applied. Throws LogCorruptError for an object that does not prove, the
   * store's error when it cannot be reached. `generation`: a tailing loop's number; when a
   * promotion has moved it on by the time the object arrives, nothing is applied (false).
   */
  private async step(generation?: number): Promise<boolean> {
    const log = this.host!.log;
    const next = log.headSeq + 1;
    const body = await this.store.get(chunkName(next));
    let lines: ProvenLine[] | null = null;
    if (body !== null) {
      lines = this.proveChunk(body.body, chunkName(next), next);
    } else {
      this.misses++;
      if (this.misses < this.resyncAfter) return this.noNews();
      this.misses = 0;
      lines = await this.locate(next);
      if (lines === null) {
        this.resyncAfter = Math.min(this.resyncAfter * 2, FOLLOW_RESYNC_AFTER_MISSES_MAX);
        return this.noNews();
      }
    }
    if (generation !== undefined && generation !== this.generation) return false;
    this.misses = 0;
    this.resyncAfter = FOLLOW_RESYNC_AFTER_MISSES;
    const applying = this.applyLines(lines);
    this.applying = applying;
    try {
      await applying;
    } finally {
      if (this.applying === applying) this.applying = null;
    }
    return true;
  }

  private noNews(): false {
    this.caughtUp = true;
    this.caughtUpAt = performance.now();
    return false;
  }

  /** Proves a chunk's lines from `next` on (a chunk may begin before it). Throws LogCorruptError. */
  private proveChunk(body: Buffer, name: string, next: number): ProvenLine[] {
    const where = `${this.store.location.url}/${name}`;
    const { header, lines } = decodeChunk(body, where, this.key);
    if (header.originId !== this.host!.log.originId) throw new LogCorruptError(where, 0, `the chunk belongs to archive ${header.originId}`);
    if (header.firstSeq > next || header.lastSeq < next) throw new LogCorruptError(where, 0, `it holds records ${header.firstSeq}..${header.lastSeq}, not record ${next}`);
    return this.proveFrom(lines, header.firstSeq, header.prevHash, next, where, header.offset === 0 ? header.segment : null);
  }

  /**
   * Proves `lines` (records from `firstSeq`, linked to `prevHash`) and returns the ones from
   * `next` on. The record before `next` must carry this log's head hash. Throws LogCorruptError.
   */
  private proveFrom(lines: Buffer, firstSeq: number, prevHash: string, next: number, where: string, segmentStart: number | null): ProvenLine[] {
    const head = this.host!.log.headHash;
    if (firstSeq === next && prevHash !== head) throw new LogCorruptError(where, 0, `it does not link to this follower's record ${next - 1} (another chain, or a tampered object)`);
    const out: ProvenLine[] = [];
    proveLines(lines, firstSeq, prevHash, where, (record, payloadJson, offset, length, hash) => {
      if (record.seq === next - 1 && hash !== head) throw new LogCorruptError(where, offset, `its record ${next - 1} differs from this follower's (another chain, or a tampered object)`);
      if (record.seq >= next) out.push({ line: lines.subarray(offset, offset + length), record, payloadJson, hash, startsSegment: record.seq === segmentStart });
    });
    return out;
  }

  /** Reads and authenticates the manifest. Throws Error when it is gone, LogCorruptError when it does not authenticate. */
  private async readManifest(): Promise<Manifest> {
    const got = await this.store.get(MANIFEST_NAME);
    if (got === null) throw new Error(`${this.store.location.url} holds no ${MANIFEST_NAME}: no leader replicates there (yet)`);
    return decodeManifest(got.body, `${this.store.location.url}/${MANIFEST_NAME}`, this.key);
  }

  /**
   * Finds the object holding record `next` when its chunk key is missing: a sealed segment the
   * manifest lists, or the chunk before the next key. Output: its proven lines from `next`, or
   * null when the bucket holds nothing after the follower's head. Throws LogCorruptError when an
   * object does not authenticate, or when record `next` is at or before the manifest's head
   * watermark and no object holds it (checked twice, with the manifest read again: a compaction
   * or an erasure in between moves objects, a hole stays).
   */
  private async locate(next: number, again = true): Promise<ProvenLine[] | null> {
    const manifest = (this.manifest = await this.readManifest());
    const seg = manifest.segments.find((s) => s.firstSeq <= next && next <= s.lastSeq);
    if (seg !== undefined) {
      const name = segmentObjectName(seg.firstSeq);
      const where = `${this.store.location.url}/${name}`;
      const obj = await this.store.get(name);
      if (obj === null) throw new LogCorruptError(where, 0, `it is listed in the signed ${MANIFEST_NAME} but missing: the bucket is holed`, BUCKET_OBJECT_ADVICE);
      try {
        checkSegment(obj.body, seg, where, this.key);
      } catch (err) {
        if (again) return this.locate(next, false); // rewritten by an erasure since the manifest was read
        throw err;
      }
      // A sealed segment starts at its first record; its own link is the previous segment's last hash.
      const prev = manifest.segments.find((s) => s.lastSeq === seg.firstSeq - 1);
      const prevHash = seg.firstSeq === 1 ? '0'.repeat(64) : prev?.lastHash ?? this.host!.log.headHash;
      return this.proveFrom(obj.body, seg.firstSeq, prevHash, next, where, seg.firstSeq);
    }
    const firsts = (await this.store.list(CHUNKS_DIR)).map(firstSeqOfName).filter((n): n is number => n !== null && n <= next);
    const first = firsts.at(-1);
    const obj = first === undefined ? null : await this.store.get(chunkName(first));
    if (obj !== null) {
      const { header } = decodeChunk(obj.body, `${this.store.location.url}/${chunkName(first!)}`, this.key);
      if (header.lastSeq >= next) return this.proveChunk(obj.body, chunkName(first!), next);
    }
    if (next > manifest.head.seq) return null;
    if (again) return this.locate(next, false);
    throw new LogCorruptError(
      `${this.store.location.url}/${chunkName(next)}`,
      0,
      `the object is missing, but the signed head watermark in ${MANIFEST_NAME} says the bucket held records up to ${manifest.head.seq}: the bucket is holed or rolled back; this follower stays at record ${next - 1}`,
      HOLE_ADVICE,
    );
  }

  /**
   * Applies proven lines in order: appended to the local log, applied to the state; durable before
   * the next object is read. A tombstone whose erase record is not known yet makes the follower
   * read ahead (bounded by FOLLOW_LOOKAHEAD_BYTES_MAX) until that record, whose emptied payloads
   * are seeded first.
   */
  private async applyLines(lines: ProvenLine[]): Promise<void> {
    if (this.hasPendingTombstones(lines)) {
      const log = this.host!.log;
      const pending = lines.filter((l) => l.record.erased === true && !log.records.isErased(l.record.seq)).map((l) => l.record.seq);
      await this.seedAhead(lines, new Set(pending));
    }
    await this.finishApply(await this.appendLines(lines));
  }

  /** True when `lines` hold a tombstone whose erase record this log has not seen yet. */
  private hasPendingTombstones(lines: ProvenLine[]): boolean {
    const records = this.host!.log.records;
    return lines.some((l) => l.record.erased === true && !records.isErased(l.record.seq));
  }

  /**
   * Appends proven lines to the local log and applies them (not yet durable, except what comes
   * before a line that begins a segment on the leader: the local log rolls over there too,
   * Log#startSegmentAt). Output: the targets of the erase records among them.
   */
  private async appendLines(lines: ProvenLine[]): Promise<EraseTarget[][]> {
    const host = this.host!;
    const erasures: EraseTarget[][] = [];
    for (const l of lines) {
      if (l.startsSegment) await host.log.startSegmentAt(l.record.seq);
      host.log.appendProven(l.line, l.record, l.payloadJson, l.hash);
      host.apply(l.record, l.payloadJson);
      if (l.record.type === ERASE_RECORD_TYPE && l.record.erased !== true) erasures.push(eraseTargetsOf(l.record.payload));
    }
    return erasures;
  }

  /** Makes what was appended durable (one fdatasync), then erases the targets of its erase records in the local log. */
  private async finishApply(erasures: EraseTarget[][]): Promise<void> {
    const host = this.host!;
    const log = host.log;
    await log.sync();
    for (const targets of erasures) {
      const live = targets.filter((t) => t.seq <= log.durableSeq && !log.records.isTombstone(t.seq));
      if (live.length > 0) await host.erase(live);
    }
    this.caughtUp = false;
    this.onApplied?.(log.durableSeq);
  }

  /** Reads the chunks after `lines` until every seq in `tombstones` is named by an erase record; seeds their payloads. */
  private async seedAhead(lines: ProvenLine[], tombstones: Set<number>): Promise<void> {
    const seed = (l: ProvenLine) => {
      if (l.record.type !== ERASE_RECORD_TYPE || l.record.erased === true) return;
      this.host!.seedErased(l.record.payload);
      for (const t of eraseTargetsOf(l.record.payload)) tombstones.delete(t.seq);
    };
    for (const l of lines) seed(l);
    let next = lines.at(-1)!.record.seq + 1;
    let read = 0;
    while (tombstones.size > 0) {
      if (read > FOLLOW_LOOKAHEAD_BYTES_MAX) throw new Error(`records ${[...tombstones].join(', ')} are erased but no erase record naming them was found in the next ${read} bytes`);
      const obj = await this.store.get(chunkName(next));
      if (obj === null) throw new Error(`records ${[...tombstones].join(', ')} are erased but the bucket does not hold their erase record yet`);
      read += obj.body.length;
      const { header, lines: more } = decodeChunk(obj.body, `${this.store.location.url}/${chunkName(next)}`, this.key);
      // Only read for the payloads here; the chunk is proven again when it is applied.
      proveLines(more, header.firstSeq, header.prevHash, chunkName(next), (record) => seed({ line: Buffer.alloc(0), record, payloadJson: '', hash: '', startsSegment: false }));
      next = header.lastSeq + 1;
    }
  }

  /**
   * Stops tailing for `replication promote` (issue 50): the leader's start then takes back what
   * the bucket holds, bounded, after it took the epoch (leader.ts). Resolves once no batch is
   * being applied (a poll still in flight applies nothing when it returns). Throws 400 UNSUPPORTED_OPERATION when the follower stopped on damage
   * (stoppedFollowerRefusal: it cannot prove what follows its head, so it must not lead).
   */
  async stopForPromotion(): Promise<void> {
    if (this.stateValue === 'stopped') throw stoppedFollowerRefusal(this.store.location.url, this.host?.log.durableSeq ?? 0, this.lastError);
    // The tailing loop stops here: a request it has in flight applies nothing when it returns
    // (a stalled GET may take the store client's timeouts and retries); only a batch being
    // applied now is waited for.
    this.generation++;
    this.setState('promoting', 'replication promote');
    this.wake?.();
    await this.applying?.catch(() => undefined);
  }

  /**
   * Applies object after object until the bucket holds nothing after the local head, or the head
   * reaches `untilSeq`. The chunk keys one LIST shows after the head are fetched ahead
   * (ChunkPrefetch, FOLLOW_PREFETCH_MAX at a time) and what has arrived is applied together
   * (`applyRun`); a record no listed key starts at is found as a poll finds it (`step`; a take-back,
   * with no `generation`, also looks for it in the manifest's segments at once). `generation`: the
   * tailing loop's number; once a promotion moved it on, nothing more is applied. Output: whether
   * anything was applied.
   */
  private async drain(untilSeq: number, generation?: number): Promise<boolean> {
    const log = this.host!.log;
    const from = log.headSeq;
    const listed = (await this.store.list(CHUNKS_DIR, chunkName(log.headSeq)))
      .map(firstSeqOfName)
      .filter((n): n is number => n !== null && n > log.headSeq && n <= untilSeq);
    const ahead = new ChunkPrefetch(this.store, listed);
    while (log.headSeq < untilSeq) {
      const got = ahead.take(log.headSeq + 1, false);
      const obj = got === undefined ? null : await got;
      if (generation !== undefined && generation !== this.generation) break;
      if (obj === null) {
        // Not listed, or compacted away since the listing: the chunk or segment that holds it.
        if (generation === undefined) this.misses = this.resyncAfter;
        if (!(await this.step(generation))) break;
        continue;
      }
      const applying = this.applyRun(obj.body, ahead, untilSeq);
      this.applying = applying;
      try {
        await applying;
      } finally {
        if (this.applying === applying) this.applying = null;
      }
      this.misses = 0;
      this.resyncAfter = FOLLOW_RESYNC_AFTER_MISSES;
    }
    return log.headSeq > from;
  }

  /**
   * Proves and appends the chunk `body` (it starts at the record after the local head), then
   * every following chunk `ahead` has already fetched, up to FOLLOW_APPLY_BATCH_BYTES_MAX bytes or
   * `untilSeq`, and makes them durable with one fdatasync. A chunk with a tombstone is applied
   * on its own (applyLines reads ahead for its erase record). Throws LogCorruptError when a chunk
   * does not prove (nothing of it is appended; what was appended before it is made durable).
   */
  private async applyRun(body: Buffer, ahead: ChunkPrefetch, untilSeq: number): Promise<void> {
    const log = this.host!.log;
    const erasures: EraseTarget[][] = [];
    let bytes = 0;
    try {
      for (;;) {
        const next = log.headSeq + 1;
        const lines = this.proveChunk(body, chunkName(next), next);
        if (this.hasPendingTombstones(lines)) {
          await this.finishApply(erasures.splice(0));
          await this.applyLines(lines);
          return;
        }
        erasures.push(...(await this.appendLines(lines)));
        bytes += body.length;
        if (bytes >= FOLLOW_APPLY_BATCH_BYTES_MAX || log.headSeq >= untilSeq) break;
        const more = ahead.take(log.headSeq + 1, true);
        const obj = more === undefined ? null : await more;
        if (obj === null) break;
        body = obj.body;
      }
    } finally {
      await this.finishApply(erasures);
    }
  }

  /**
   * A leader's start (leader.ts; issue 35): applies, once and without tailing, every record the
   * bucket holds after `host.log`'s head, proven exactly as a follower proves them (the first
   * object must link to the local head's hash). Output: how many records were applied. Throws
   * LogCorruptError when an object does not prove against the local log (the two diverged, or the
   * object is damaged): nothing of that object is applied; the store's error when it cannot be reached.
   * `untilSeq`: stop once the local head reaches it (a start takes back only up to the head it
   * listed, so a leader still writing cannot hold it up).
   */
  async pullOnce(host: FollowerHost, untilSeq = Number.MAX_SAFE_INTEGER): Promise<number> {
    this.host = host;
    const from = host.log.headSeq;
    // The records taken back lie in the bucket's segments: the log follows them (issue 50) until
    // the leader appends its own fence record (leader.ts placeFence turns it off).
    host.log.followsSegments(true);
    await this.drain(untilSeq);
    return host.log.headSeq - from;
  }

  /** Goes back to tailing after a promotion that lost the epoch race. */
  resume(why: string): void {
    this.host?.log.followsSegments(true);
    this.setState('following', why);
    this.loop = this.tail();
  }

  /** Marks the follower promoted (its leader takes over). */
  promoted(): void {
    this.setState('promoted', 'this server now leads the bucket');
    this.closed = true;
  }

  status(): FollowerStatus {
    return {
      role: 'follower',
      url: this.store.location.url,
      state: this.stateValue,
      epoch: this.manifest?.epoch ?? null,
      leaderUrl: this.manifest?.leaderUrl || null,
      appliedSeq: this.host?.log.durableSeq ?? 0,
      caughtUp: this.caughtUp,
      sinceCaughtUpMs: this.caughtUpAt === null ? null : Math.round(performance.now() - this.caughtUpAt),
      requests: { ...this.store.counters },
      lastError: this.lastError,
      publicKey: this.key.text,
    };
  }

  /** Stops tailing (at shutdown). */
  async close(): Promise<void> {
    this.closed = true;
    this.wake?.();
    await this.loop.catch(() => undefined);
  }
}

/**
 * Chunk objects fetched ahead of the apply (ReplicaFollower#drain): the listed chunk keys, in key
 * order, at most FOLLOW_PREFETCH_MAX GETs in flight. `take(firstSeq)` hands over the fetch of the
 * chunk that starts at that record (a promise of the object, or of null when the key is gone by
 * then), or undefined when no listed key starts there; fetches of keys before it are dropped.
 */
class ChunkPrefetch {
  private readonly inFlight = new Map<number, { got: Promise<{ body: Buffer } | null>; settled: boolean }>();
  private nextIndex = 0;

  constructor(
    private readonly store: ObjectStore,
    private readonly firsts: readonly number[],
  ) {
    this.fill();
  }

  private fill(): void {
    while (this.inFlight.size < FOLLOW_PREFETCH_MAX && this.nextIndex < this.firsts.length) {
      const first = this.firsts[this.nextIndex++]!;
      const entry = { got: this.store.get(chunkName(first)), settled: false };
      // Observed here so a fetch nobody takes (the drain stopped early) is no unhandled rejection.
      entry.got.then(
        () => (entry.settled = true),
        () => (entry.settled = true),
      );
      this.inFlight.set(first, entry);
    }
  }

  /** The fetch of the chunk starting at `firstSeq`; with `settledOnly`, only when it has already arrived. */
  take(firstSeq: number, settledOnly: boolean): Promise<{ body: Buffer } | null> | undefined {
    for (const key of this.inFlight.keys()) if (key < firstSeq) this.inFlight.delete(key);
    const entry = this.inFlight.get(firstSeq);
    if (entry === undefined || (settledOnly && !entry.settled)) return undefined;
    this.inFlight.delete(firstSeq);
    this.fill();
    return entry.got;
  }
}
