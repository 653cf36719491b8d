/**
 * The n-gram search index: candidate documents for a `q` search without scanning every message
 * (issue 17 "Search that does not scan"; README "Search index").
 *
 * Documents (a message's lower-cased content; a knowledge revision's lower-cased title and
 * content, as separate texts) are identified by their log seq. Their grams of 1, 2 and 3 UTF-16
 * code units are posted into a live in-memory shard; every NGRAM_SHARD_DOCS_MAX documents the
 * live shard is sealed into an immutable shard file once the log records it covers are durable.
 * The index is derived from the log: a shard file is trusted only when its checks pass and the
 * caller has matched its (lastSeq, lastHash) against the log; otherwise it is deleted and its
 * documents are added again from the log.
 */
import { mkdirSync, readdirSync, renameSync, unlinkSync } from 'node:fs';
import { basename, join } from 'node:path';
import { NGRAM_ESTIMATE_DOCS_MIN, NGRAM_QUERY_TRIGRAMS_MAX, NGRAM_SEAL_SLICE_MS, NGRAM_SHARD_DOCS_MAX } from '../../constants.js';
import { TEMP_FILE_PATTERN, writeFileAtomic } from '../fsutil.js';
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
  }

  /**
   * Opens (creating) `dir` synchronously; checks each shard file's header, seq table and sample,
   * and its MAC over the whole file under opts.key (its postings' CRCs are checked on every read,
   * against damage after open). A forged (MAC), damaged or unreadable shard file, a
   * leftover temp file, and a shard not contiguous with the ones before it (the first must start
   * at seq 1) are deleted and reported through opts.onDrop; damage never throws. Throws only for
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
    found.sort((a, b) => a.firstSeq - b.firstSeq);
    let expected = 1;
    for (const f of found) {
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
      if (src instanceof LiveShard ? src.firstSeq >= before : src.closed || src.meta.firstSeq >= before) continue;
      let ords: Uint32Array;
      try {
        ords = src instanceof LiveShard ? liveOrdinals(src, keys) : fileOrdinals(src, fileKeys);
      } catch (err) {
        if (!(err instanceof ShardDamage) || src instanceof LiveShard) throw err;
        throw this.damaged(src, err.reason);
      }
      for (let i = ords.length - 1; i >= 0; i--) {
        const seq = src.seqAt(ords[i]!);
        if (seq < before) yield seq;
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

  /** Bytes of memory the index holds: live shard, shards being sealed, and per persisted shard its seq table and sample. */
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
