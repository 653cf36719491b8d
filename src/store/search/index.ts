/**
 * The n-gram search index: candidate documents for a `q` search without scanning every message
 * (issue 17 "Search that does not scan"; docs/internals/search-index.md).
 *
 * Documents (a message's lower-cased content; a knowledge revision's lower-cased title and
 * content, as separate texts) are identified by their log seq. Their grams of 1, 2 and 3 UTF-16
 * code units are posted into a live in-memory shard; every NGRAM_SHARD_DOCS_MAX documents the
 * live shard is sealed into an immutable shard file once the log records it covers are durable.
 * The index is derived from the log: a shard file is trusted only when its checks pass and the
 * caller has matched its (lastSeq, lastHash) against the log; otherwise it is deleted and its
 * documents are added again from the log.
 */
import { mkdirSync, readdirSync, renameSync, rmSync, unlinkSync } from 'node:fs';
import { basename, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { NGRAM_ESTIMATE_DOCS_MIN, NGRAM_MERGE_DOCS_MAX, NGRAM_MERGE_FACTOR, NGRAM_QUERY_TRIGRAMS_MAX, NGRAM_SEAL_SLICE_MS, NGRAM_SHARD_DOCS_MAX } from '../../constants.js';
import { fsyncDir, TEMP_FILE_PATTERN, writeFileAtomic } from '../fsutil.js';
import type { MergeInput, MergeResult } from './merge.js';
import { planMerge, type MergePolicy } from './merge-policy.js';
import { queryKeys } from './ngram.js';
import { LiveShard } from './live.js';
import { assertKey, encodeShardSliced, parseShardFileName, ShardDamage, ShardReader, shardFileName, intersectInto, type ShardMeta, type PostingEntry } from './shard.js';

export type { ShardMeta } from './shard.js';

/**
 * A shard file failed a checksum while a query read it. The file has been deleted and reported
 * through onDrop; the caller should answer this query by scanning, then truncateFrom(firstSeq)
 * and add the documents from firstSeq on again from the log. Not a ServiceError: unhandled, it is
 * answered as 500 `INTERNAL`.
 */
export class NgramIndexDamagedError extends Error {
  readonly code = 'NGRAM_INDEX_DAMAGED';
  constructor(
    readonly file: string,
    readonly firstSeq: number,
    readonly reason: string,
  ) {
    super(`search index shard ${file} damaged: ${reason}`);
    this.name = 'NgramIndexDamagedError';
  }
}

/** Options of NgramIndex.open. */
export interface NgramIndexOptions {
  /** Documents per shard (default NGRAM_SHARD_DOCS_MAX). */
  shardDocsMax?: number;
  /** Told about every shard file deleted as damaged, stale or unusable: its path and why. */
  onDrop?: (file: string, reason: string) => void;
  /**
   * The derived-file key (32 bytes; store/derived-key.ts): every shard file is written with an
   * HMAC under it and one that fails it at open is dropped. Required.
   */
  key: Buffer;
  /**
   * Neighbouring shard files of one size tier merged at a time (merge-policy.ts; default
   * NGRAM_MERGE_FACTOR); 0 or 1 turns merging off.
   */
  mergeFactor?: number;
  /** Documents above which no merged file is made (default NGRAM_MERGE_DOCS_MAX). */
  mergeDocsMax?: number;
  /** Told when a merge failed (merging then stays off until the index is opened again); the inputs stay in use. */
  onMergeError?: (message: string) => void;
}

/** A merge in flight: its inputs (neighbours in `persisted`, oldest first), the file it makes and its temp file. */
interface MergeJob {
  inputs: ShardReader[];
  name: string;
  tmp: string;
  worker: Worker | null;
  cancelled: boolean;
  done: Promise<void>;
}

/** A shard a query visits: in memory (live or being sealed) or a file. */
type Source = LiveShard | ShardReader;

/** Ordinal buffers shared by queries (each shard step runs to completion before it yields). */
let ordsA = new Uint32Array(0);
let ordsB = new Uint32Array(0);

/** See the module comment. One instance per index folder; not safe across processes (the store's lock covers the data folder). */
export class NgramIndex {
  private readonly persisted: ShardReader[] = [];
  /** Frozen live shards whose files are being written, oldest first; they keep answering. */
  private sealing: LiveShard[] = [];
  private live: LiveShard;
  private sealChain: Promise<void> = Promise.resolve();
  /** The encoded file of each shard in `sealing` once encoded, until written (kept for a retry). */
  private readonly encoded = new Map<LiveShard, Buffer>();
  private closed = false;
  private readonly shardDocsMax: number;
  private readonly onDrop: (file: string, reason: string) => void;
  private readonly key: Buffer;
  private readonly policy: MergePolicy | null;
  private readonly onMergeError: (message: string) => void;
  private merging: MergeJob | null = null;
  /** Set after a failed merge: no further merge until the index is opened again. */
  private mergesOff = false;
  /** Inputs of the last adopted merge, unlinked once the merged file's rename is durable (or at once by truncateFrom). */
  private pendingUnlinks: string[] = [];
  /** Bytes written to shard files by seals and by merges since open (write amplification). */
  private readonly written = { sealBytes: 0, mergeBytes: 0, merges: 0 };

  private constructor(
    private readonly dir: string,
    opts: NgramIndexOptions,
  ) {
    this.shardDocsMax = opts.shardDocsMax ?? NGRAM_SHARD_DOCS_MAX;
    if (!Number.isInteger(this.shardDocsMax) || this.shardDocsMax < 1 || this.shardDocsMax > 0x7fffffff) {
      throw new RangeError('NgramIndex: shardDocsMax must be a positive integer');
    }
    this.onDrop = opts.onDrop ?? (() => {});
    assertKey(opts.key);
    this.key = opts.key;
    this.live = new LiveShard(1, this.shardDocsMax);
    const factor = opts.mergeFactor ?? NGRAM_MERGE_FACTOR;
    if (!Number.isInteger(factor) || factor < 0) throw new RangeError('NgramIndex: mergeFactor must be a non-negative integer');
    this.policy = factor >= 2 ? { baseDocs: this.shardDocsMax, factor, maxDocs: opts.mergeDocsMax ?? NGRAM_MERGE_DOCS_MAX } : null;
    this.onMergeError = opts.onMergeError ?? (() => {});
  }

  /**
   * Opens (creating) `dir` synchronously; checks each shard file's header, seq table and sample,
   * and its MAC over the whole file under opts.key (its postings' CRCs are checked on every read,
   * against damage after open). A forged (MAC), damaged or unreadable shard file, a
   * leftover temp file, and a shard not contiguous with the ones before it (the first must start
   * at seq 1) are deleted and reported through opts.onDrop; damage never throws. Files that
   * overlap (a crash during a merge leaves the merged file beside its inputs) resolve to the
   * largest valid file: of the files starting at the next expected seq the one reaching furthest
   * is tried first, and any file lying wholly inside a kept file is deleted as covered; a merged
   * file that fails its checks is deleted and its inputs are kept. Throws only for
   * programmer errors (bad options) or when `dir` cannot be created or listed.
   */
  static open(dir: string, opts: NgramIndexOptions): NgramIndex {
    const index = new NgramIndex(dir, opts);
    mkdirSync(dir, { recursive: true });
    const found: { name: string; firstSeq: number; lastSeq: number }[] = [];
    for (const name of readdirSync(dir)) {
      if (TEMP_FILE_PATTERN.test(name)) {
        index.drop(name, 'unfinished temp file');
        continue;
      }
      const seqs = parseShardFileName(name);
      if (seqs) found.push({ name, ...seqs });
    }
    found.sort((a, b) => a.firstSeq - b.firstSeq || b.lastSeq - a.lastSeq);
    let expected = 1;
    for (const f of found) {
      if (f.lastSeq < expected && f.firstSeq <= f.lastSeq) {
        index.drop(f.name, `covered by a merged shard file (through ${expected - 1})`);
        continue;
      }
      if (f.firstSeq !== expected || f.lastSeq < f.firstSeq) {
        index.drop(f.name, `not contiguous: covers ${f.firstSeq}..${f.lastSeq}, expected a shard from ${expected}`);
        continue;
      }
      let reader: ShardReader;
      try {
        reader = ShardReader.open(join(dir, f.name), f, index.key);
      } catch (err) {
        index.drop(f.name, err instanceof ShardDamage ? err.reason : `unreadable: ${(err as Error).message}`);
        continue;
      }
      index.persisted.push(reader);
      expected = f.lastSeq + 1;
    }
    index.live = new LiveShard(expected, index.shardDocsMax);
    index.maybeMerge();
    return index;
  }

  /** Persisted shards in seq order (contiguous: shard k+1 starts at shard k's lastSeq + 1). */
  shards(): readonly ShardMeta[] {
    return this.persisted.map((r) => ({ ...r.meta }));
  }

  /** Highest log seq covered (persisted shards, shards being sealed, live documents); add() needs a greater seq. */
  get throughSeq(): number {
    return this.live.lastDocSeq;
  }

  /** Documents in memory, not yet in a shard file (live shard and shards being sealed). */
  get liveDocs(): number {
    return this.live.docs + this.sealing.reduce((sum, s) => sum + s.docs, 0);
  }

  /**
   * Drops every persisted shard whose lastSeq >= seq (deleting its file), every shard being
   * sealed with lastSeq >= seq (its file is deleted once written) and all of the live shard; after
   * it, throughSeq < seq. Used when a shard does not match the log.
   */
  truncateFrom(seq: number): void {
    // The inputs of an adopted merge are gone from `persisted`: remove their files before any seal can reuse a name.
    for (const name of this.pendingUnlinks.splice(0)) this.unlink(name);
    const job = this.merging;
    if (job !== null && job.inputs[job.inputs.length - 1]!.meta.lastSeq >= seq) this.cancelMerge(job);
    while (this.persisted.length > 0 && this.persisted[this.persisted.length - 1]!.meta.lastSeq >= seq) {
      const r = this.persisted.pop()!;
      r.close();
      this.unlink(shardFileName(r.meta.firstSeq, r.meta.lastSeq));
    }
    const keep: LiveShard[] = [];
    for (const s of this.sealing) {
      if (s.lastSeq >= seq) {
        s.cancelled = true;
        this.encoded.delete(s);
      } else keep.push(s);
    }
    this.sealing = keep;
    const last = keep.length > 0 ? keep[keep.length - 1]!.lastSeq : this.persisted.length > 0 ? this.persisted[this.persisted.length - 1]!.meta.lastSeq : 0;
    this.live = new LiveShard(last + 1, this.shardDocsMax);
  }

  /**
   * Adds document `seq` (> throughSeq, else a RangeError: a programmer error) with its lower-cased
   * texts: a message [content.toLowerCase()], a knowledge revision [title.toLowerCase(),
   * content.toLowerCase()]. Grams never span two texts.
   */
  add(seq: number, lcTexts: readonly string[]): void {
    if (!Number.isSafeInteger(seq) || seq <= this.throughSeq) {
      throw new RangeError(`NgramIndex.add: seq ${seq} must be an integer above throughSeq ${this.throughSeq}`);
    }
    this.live.add(seq, lcTexts);
  }

  /**
   * Marks log record `seq` (chained hash `hash`, 64 lower-case hex digits) durable. Call it after
   * add() for every document up to `seq`. When the live shard holds >= shardDocsMax documents, all
   * with seq <= `seq`, it is frozen and sealed into a shard file covering firstSeq..seq with
   * lastHash = hash: encoded in slices of NGRAM_SEAL_SLICE_MS (about 0.1 s of CPU per 32768
   * documents in all), then written temp → fsync → rename → fsync dir; it keeps answering queries
   * until the file is in place. A `hash` that is not 64 lower-case hex digits is a RangeError. Seals run one at a time in order. Returns the promise of that seal (or of the
   * seals in flight). A failed write (disk full) rejects it and leaves the shard in memory, still
   * answering; the next seal writes it first, so shard files stay contiguous.
   */
  durable(seq: number, hash: string): Promise<void> {
    if (!/^[0-9a-f]{64}$/.test(hash)) throw new RangeError('NgramIndex.durable: hash must be 64 lower-case hex digits');
    const live = this.live;
    if (live.docs < this.shardDocsMax || live.lastDocSeq > seq) return this.sealChain;
    live.lastSeq = seq;
    live.lastHash = hash;
    this.sealing.push(live);
    this.live = new LiveShard(seq + 1, this.shardDocsMax);
    const done = this.sealChain.then(() => this.writePending());
    this.sealChain = done.catch(() => {});
    return done;
  }

  /** Resolves when every seal started so far has finished (or failed). */
  flush(): Promise<void> {
    return this.sealChain;
  }

  /** Writes the shards in `sealing`, oldest first; stops at (and rethrows) the first failure. */
  private async writePending(): Promise<void> {
    for (;;) {
      const shard = this.sealing.find((s) => !s.cancelled);
      if (shard === undefined) return;
      await this.writeShard(shard);
    }
  }

  /** Writes one frozen shard's file; on success (or when cancelled) it leaves `sealing`. */
  private async writeShard(shard: LiveShard): Promise<void> {
    try {
      let file = this.encoded.get(shard);
      if (file === undefined) {
        file = await encodeShardSliced(shard, NGRAM_SEAL_SLICE_MS, this.key);
        if (!shard.cancelled) this.encoded.set(shard, file);
      }
      await this.writeShardFile(shard, file);
    } catch (err) {
      if (!shard.cancelled) throw err;
    }
    this.sealing = this.sealing.filter((s) => s !== shard);
    this.encoded.delete(shard);
  }

  private async writeShardFile(shard: LiveShard, file: Buffer): Promise<void> {
    if (shard.cancelled) return;
    const name = shardFileName(shard.firstSeq, shard.lastSeq);
    const path = join(this.dir, name);
    if (!(await writeFileAtomic(path, file, { abandon: () => shard.cancelled }))) return;
    if (shard.cancelled) {
      this.unlink(name);
      return;
    }
    if (this.closed) return;
    this.persisted.push(ShardReader.open(path, shard, this.key, true));
    this.written.sealBytes += file.length;
    this.maybeMerge();
  }

  /** Starts the merge the policy asks for, unless one runs, merging is off or the index is closed. */
  private maybeMerge(): void {
    // A closed reader is a damaged file awaiting truncateFrom: no merge until it is gone.
    if (this.policy === null || this.merging !== null || this.mergesOff || this.closed || this.persisted.some((r) => r.closed)) return;
    const run = planMerge(
      this.persisted.map((r) => r.meta.docs),
      this.policy,
    );
    if (run === null) return;
    const inputs = this.persisted.slice(run.start, run.end);
    const name = shardFileName(inputs[0]!.meta.firstSeq, inputs[inputs.length - 1]!.meta.lastSeq);
    const job: MergeJob = { inputs, name, tmp: join(this.dir, `${name}.merge.tmp-${process.pid}`), worker: null, cancelled: false, done: Promise.resolve() };
    this.merging = job;
    job.done = this.runMerge(job)
      .catch((err: Error) => {
        this.mergesOff = true;
        this.onMergeError(err.message);
      })
      .finally(() => {
        if (this.merging === job) this.merging = null;
        this.maybeMerge();
      });
  }

  /**
   * Merges job.inputs on a worker thread into job.tmp, then (unless cancelled meanwhile) renames
   * it into place, opens it and swaps it for the inputs in one synchronous step; the inputs'
   * files are unlinked once the rename is durable. Rejects when the worker fails or the merged
   * file does not open (both files' inputs stay in use).
   */
  private async runMerge(job: MergeJob): Promise<void> {
    let result: MergeResult;
    try {
      result = await new Promise<MergeResult>((resolve, reject) => {
        const inputs: MergeInput[] = job.inputs.map((r) => ({ path: join(this.dir, shardFileName(r.meta.firstSeq, r.meta.lastSeq)), firstSeq: r.meta.firstSeq, lastSeq: r.meta.lastSeq }));
        const worker = new Worker(new URL('./merge-worker.js', import.meta.url), { workerData: { inputs, out: job.tmp, key: this.key } });
        job.worker = worker;
        worker.once('message', (m: { ok: true; result: MergeResult } | { ok: false; message: string }) => (m.ok ? resolve(m.result) : reject(new Error(m.message))));
        worker.once('error', reject);
        worker.once('exit', (code) => reject(new Error(`merge worker exited with code ${code}`)));
      });
    } catch (err) {
      rmSync(job.tmp, { force: true });
      if (job.cancelled) return;
      throw err;
    }
    const at = this.persisted.indexOf(job.inputs[0]!);
    if (job.cancelled || this.closed || at < 0 || job.inputs.some((r, i) => this.persisted[at + i] !== r)) {
      rmSync(job.tmp, { force: true });
      return;
    }
    const first = job.inputs[0]!.meta;
    const last = job.inputs[job.inputs.length - 1]!.meta;
    const path = join(this.dir, job.name);
    renameSync(job.tmp, path);
    let merged: ShardReader;
    try {
      // The worker checked the written file whole (MAC included); its header, table, sample and filter are read and checked again here.
      merged = ShardReader.open(path, { firstSeq: first.firstSeq, lastSeq: last.lastSeq }, this.key, true);
      if (merged.meta.docs !== job.inputs.reduce((sum, r) => sum + r.meta.docs, 0) || merged.meta.lastHash !== last.lastHash) {
        merged.close();
        throw new ShardDamage('merged file differs from its inputs');
      }
    } catch (err) {
      this.drop(job.name, err instanceof ShardDamage ? err.reason : `unreadable: ${(err as Error).message}`);
      throw err;
    }
    this.persisted.splice(at, job.inputs.length, merged);
    for (const r of job.inputs) {
      r.supersededBy = merged;
      r.close();
    }
    this.written.mergeBytes += result.bytes;
    this.written.merges++;
    const names = job.inputs.map((r) => shardFileName(r.meta.firstSeq, r.meta.lastSeq));
    this.pendingUnlinks = names;
    await fsyncDir(this.dir);
    // Unless truncateFrom already removed them.
    if (this.pendingUnlinks === names) {
      this.pendingUnlinks = [];
      for (const name of names) this.unlink(name);
    }
  }

  private cancelMerge(job: MergeJob): void {
    job.cancelled = true;
    void job.worker?.terminate();
  }

  /** Resolves when no merge runs and none is due (after the seals in flight). For tests and benchmarks. */
  async whenMerged(): Promise<void> {
    await this.sealChain;
    while (this.merging !== null) await this.merging.done;
  }

  /**
   * Bytes written to shard files since open: by seals, by merges, and how many merges were
   * adopted. Write amplification = (sealBytes + mergeBytes) / the bytes of the files in the end.
   */
  writeStats(): { sealBytes: number; mergeBytes: number; merges: number } {
    return { ...this.written };
  }

  /**
   * Candidate document seqs for the lower-cased, non-empty query `lq`, in descending seq order,
   * without duplicates, restricted to seq < opts.beforeSeq when given. Lazy: shards are visited
   * newest first as iteration proceeds, each with a few positional reads. A superset of the
   * documents with a text containing `lq` (the caller verifies each); exactly that set when `lq`
   * has 1 or 2 code units. Shard files are asked for at most NGRAM_QUERY_TRIGRAMS_MAX of the
   * query's trigrams (the rarest), the live shard for all. Throws a TypeError for an empty `lq`,
   * and NgramIndexDamagedError when a shard file fails a checksum while read (see there).
   * Documents added while an iteration is paused are not among its candidates.
   */
  *candidates(lq: string, opts: { beforeSeq?: number } = {}): Generator<number, void, undefined> {
    const keys = queryKeys(lq);
    const before = opts.beforeSeq ?? Infinity;
    const sources: Source[] = [this.live, ...[...this.sealing].reverse(), ...[...this.persisted].reverse()];
    const fileKeys = keys.length > NGRAM_QUERY_TRIGRAMS_MAX ? this.rarest(keys) : keys;
    for (const src of sources) {
      if (src instanceof LiveShard) {
        if (src.firstSeq >= before) continue;
        const ords = liveOrdinals(src, keys);
        for (let i = ords.length - 1; i >= 0; i--) {
          const seq = src.seqAt(ords[i]!);
          if (seq < before) yield seq;
        }
        continue;
      }
      if (src.meta.firstSeq >= before) continue;
      // A file merged away since this query listed it: read the merged file, within this file's seqs.
      let reader = src;
      while (reader.supersededBy !== null) reader = reader.supersededBy;
      if (reader.closed) continue;
      let ords: Uint32Array;
      try {
        ords = fileOrdinals(reader, fileKeys);
      } catch (err) {
        if (!(err instanceof ShardDamage)) throw err;
        throw this.damaged(reader, err.reason);
      }
      const below = Math.min(before, src.meta.lastSeq + 1);
      const from = src.meta.firstSeq;
      for (let i = ords.length - 1; i >= 0; i--) {
        const seq = reader.seqAt(ords[i]!);
        if (seq < below && seq >= from) yield seq;
      }
    }
  }

  /**
   * The NGRAM_QUERY_TRIGRAMS_MAX keys of `keys` held by the fewest documents, rarest first, as
   * estimated from the live shard, or from the newest shard file while the live shard is small.
   * Throws NgramIndexDamagedError when that file fails a checksum.
   */
  private rarest(keys: number[]): number[] {
    const newest = this.persisted[this.persisted.length - 1];
    const useLive = this.live.docs >= NGRAM_ESTIMATE_DOCS_MIN || newest === undefined;
    const counts = new Map<number, number>();
    for (const key of keys) {
      if (useLive) {
        const slot = this.live.lookup(key);
        counts.set(key, slot < 0 ? 0 : this.live.count(slot));
        continue;
      }
      try {
        counts.set(key, newest.lookup(key)?.count ?? 0);
      } catch (err) {
        if (err instanceof ShardDamage) throw this.damaged(newest, err.reason);
        throw err;
      }
    }
    return [...keys].sort((a, b) => counts.get(a)! - counts.get(b)!).slice(0, NGRAM_QUERY_TRIGRAMS_MAX);
  }

  /** Bytes of memory the index holds: live shard, shards being sealed, and per persisted shard its seq table, sample and Bloom filter. */
  memoryBytes(): { live: number; sealing: number; persisted: number } {
    return {
      live: this.live.memoryBytes(),
      sealing: this.sealing.reduce((sum, s) => sum + s.memoryBytes(), 0),
      persisted: this.persisted.reduce((sum, r) => sum + r.memoryBytes(), 0),
    };
  }

  /** Closes every shard file. Seals in flight still write their files (not opened); await flush() first for a clean stop. */
  close(): void {
    this.closed = true;
    if (this.merging !== null) {
      this.cancelMerge(this.merging);
      rmSync(this.merging.tmp, { force: true });
    }
    for (const r of this.persisted) r.close();
  }

  private damaged(reader: ShardReader, reason: string): NgramIndexDamagedError {
    const name = shardFileName(reader.meta.firstSeq, reader.meta.lastSeq);
    reader.close();
    this.drop(name, reason);
    return new NgramIndexDamagedError(name, reader.meta.firstSeq, reason);
  }

  private drop(name: string, reason: string): void {
    this.unlink(name);
    this.onDrop(join(this.dir, name), reason);
  }

  private unlink(name: string): void {
    try {
      unlinkSync(join(this.dir, name));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }

  /**
   * Adopts a finished shard file written outside this index (a build worker of
   * domain/search-indexer.ts; issue 30): `path` must be named for firstSeq..lastSeq
   * (shardFileName) with firstSeq = throughSeq + 1 while no document is held in memory (else a
   * RangeError). The file is checked like open() checks one (header, tables, MAC under the key;
   * ShardDamage otherwise), moved into this index's folder and served. Output: its meta; the
   * caller still matches (lastSeq, lastHash) against the log.
   */
  adoptFile(path: string): ShardMeta {
    const name = basename(path);
    const seqs = parseShardFileName(name);
    if (seqs === null || this.live.docs > 0 || this.sealing.length > 0 || seqs.firstSeq !== this.live.firstSeq) {
      throw new RangeError(`NgramIndex.adoptFile: ${name} does not follow throughSeq ${this.throughSeq}`);
    }
    const reader = ShardReader.open(path, seqs, this.key);
    renameSync(path, join(this.dir, name));
    this.persisted.push(reader);
    this.live = new LiveShard(seqs.lastSeq + 1, this.shardDocsMax);
    this.maybeMerge();
    return { ...reader.meta };
  }
}

function ensureScratch(docs: number): void {
  if (ordsA.length < docs) {
    ordsA = new Uint32Array(docs);
    ordsB = new Uint32Array(docs);
  }
}

/** Ordinals of the live shard's documents holding every gram of `keys`, ascending (a fresh array). */
function liveOrdinals(live: LiveShard, keys: number[]): Uint32Array {
  const slots: number[] = [];
  for (const key of keys) {
    const slot = live.lookup(key);
    if (slot < 0) return new Uint32Array(0);
    slots.push(slot);
  }
  slots.sort((a, b) => live.count(a) - live.count(b));
  ensureScratch(live.docs);
  let n = live.decode(slots[0]!, ordsA);
  for (let i = 1; i < slots.length && n > 0; i++) n = intersectInto(ordsA, n, ordsB, live.decode(slots[i]!, ordsB));
  return ordsA.slice(0, n);
}

/**
 * Ordinals of a shard file's documents holding every gram of `keys`, ascending (a fresh array).
 * Looks the keys up in the order given (the planner's rarest first), stopping at the first the
 * shard lacks, then intersects the lists from the shortest. Throws ShardDamage.
 */
function fileOrdinals(reader: ShardReader, keys: number[]): Uint32Array {
  // The Bloom filter rules a file out without a dictionary read when it lacks any of the keys.
  for (const key of keys) if (!reader.mayHave(key)) return new Uint32Array(0);
  const entries: PostingEntry[] = [];
  for (const key of keys) {
    const entry = reader.lookup(key);
    if (entry === null) return new Uint32Array(0);
    entries.push(entry);
  }
  entries.sort((a, b) => a.count - b.count);
  ensureScratch(reader.meta.docs);
  let n = reader.decode(entries[0]!, ordsA);
  for (let i = 1; i < entries.length && n > 0; i++) n = reader.filter(entries[i]!, ordsA, n, ordsB);
  return ordsA.slice(0, n);
}
