/**
 * Reading records back from the log's segment files (issue 17 "Index memory grows with the number
 * of records, not with their text").
 *
 * The index keeps no record text for messages: it keeps, per log seq, where the record's line
 * lies in its segment (`RecordLocations`: 8 bytes a record in typed arrays) and reads the line back
 * with one positional read when a response needs it (`SegmentRecords`), through a bounded cache of
 * decoded records (`RecordCache`, FORUM_RECORD_CACHE_MB). Records appended but not yet written
 * are served from memory until their flush assigns them a location.
 *
 * What a read returns is the record's payload JSON exactly as stored (canonical, sorted keys) and
 * the record's time, so responses built from it are byte-identical to ones built at append time.
 *
 * Proven reads (issue 28): every line read back from a segment is proven against the hash chain
 * before any byte of it is used: sha256(previous record's stored hash + record text) must equal
 * its stored hash (record-format.ts `proveLine`). The previous hash is read in the same
 * positional read when the previous line is in the same segment (the 67 bytes before the line),
 * else from the last line of the previous segment. An erased record's tombstone is proven by
 * the vouched map instead (seq → hash named by a later `moderation.erase` record). Only proven
 * records enter the cache, so a hit costs nothing more. A line that is not proven is never
 * returned: the read throws RecordDamagedError (500 INTERNAL), logged once per record as one
 * `record_damaged` error line naming file, byte offset and seq, and `damaged` reports it
 * (`/api/status` `archiveDamaged`).
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { LRUCache } from 'lru-cache';
import { RECORD_CACHE_BYTES_DEFAULT, SEGMENT_FDS_MAX } from '../constants.js';
import { logger } from '../logger.js';
import { RecordDamagedError } from './errors.js';
import {
  ERASED_PREFIX,
  GENESIS_HASH,
  HASH_HEX_LENGTH,
  HASH_SUFFIX_LENGTH,
  proveLine,
  segmentName,
  splitRecordText,
  storedHashOfTail,
  type StoredRecord,
} from './record-format.js';

export { segmentName, splitRecordText, type StoredRecord };

/** Bytes before a line that a proven read takes with it: the previous line's hash, `"}` and newline. */
const PREV_HASH_LEAD = HASH_HEX_LENGTH + 3;
const PREV_LINE_END = Buffer.from('"}\n', 'latin1');
const ERASED_PREFIX_BYTES = Buffer.from(ERASED_PREFIX, 'latin1');

/** Where records can be read back from, by log seq. */
export interface RecordSource {
  /**
   * The payload JSON, time and type of record `seq` (1..head); `erased: true` with payloadJson
   * `'null'` for an erased record. Throws Error for an unknown seq, and (segment reads)
   * RecordDamagedError (500 INTERNAL) for a record the hash chain does not prove.
   */
  read(seq: number): StoredRecord;
}

/**
 * Below this many elements a full U32List doubles; from it on it grows by a quarter, so a list
 * of millions of entries (message rows, feeds) carries at most 25 % spare capacity, not 100 %.
 */
const U32LIST_DOUBLING_MAX = 1 << 20;

/**
 * A growable Uint32Array: 4 bytes an element; doubled when full while small, grown by a quarter
 * once it holds U32LIST_DOUBLING_MAX elements (amortised O(1) either way).
 */
export class U32List {
  private data: Uint32Array<ArrayBufferLike>;
  length = 0;

  constructor(capacity = 16) {
    this.data = new Uint32Array(capacity);
  }

  /** Appends `v` (0..2^32-1). */
  push(v: number): void {
    if (this.length === this.data.length) {
      const n = this.data.length;
      const next = new Uint32Array(n < U32LIST_DOUBLING_MAX ? n * 2 : n + (n >>> 2));
      next.set(this.data);
      this.data = next;
    }
    this.data[this.length++] = v;
  }

  /** Element `i` (0 ≤ i < length). */
  at(i: number): number {
    return this.data[i]!;
  }

  /** Overwrites element `i` (0 ≤ i < length). */
  set(i: number, v: number): void {
    this.data[i] = v;
  }

  /** Index of the first element greater than `v`, for a list in ascending order (binary search). */
  upperBound(v: number): number {
    let lo = 0;
    let hi = this.length;
    const d = this.data;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (d[mid]! <= v) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Drops every element from index `n` on. */
  truncate(n: number): void {
    if (n < this.length) this.length = n;
  }

  /** Bytes held (capacity × 4). */
  get bytes(): number {
    return this.data.byteLength;
  }

  /** A copy of the elements (for snapshots). */
  toArray(): Uint32Array {
    return this.data.slice(0, this.length);
  }

  /**
   * A list holding `values` (taken over, not copied: pass a copy when `values` is a view into a
   * larger buffer that should be freed, see `ownedCopy`).
   */
  static of(values: Uint32Array): U32List {
    const list = new U32List(1);
    list.data = values.length > 0 ? values : new Uint32Array(1);
    list.length = values.length;
    return list;
  }
}

/**
 * Where each record's line lies: per seq, the byte offset of the line in its segment and the
 * length of its record text (the line up to its `,"hash"` field). Segments are contiguous seq
 * ranges, so the segment of a seq is found by binary search over segment first seqs.
 */
export class RecordLocations {
  private offsets: U32List = new U32List(1024);
  private lengths: U32List = new U32List(1024);
  /** First seq of each segment, ascending, and the segment's file name. */
  private readonly segmentFirst: number[] = [];
  /**
   * The vouched map (erasure contract): seq → original chained hash, for every record a
   * `moderation.erase` record names. A tombstone at seq is proven when its stored hash equals it.
   * Kept here so that it travels in the state snapshot with the locations.
   */
  readonly vouched = new Map<number, string>();

  /** Number of located records (they are seqs 1..count). */
  get count(): number {
    return this.offsets.length;
  }

  /**
   * Records that `seq` (must be count + 1) lies at `offset` in the segment starting at
   * `segmentFirstSeq`, with `length` bytes of record text. Offsets and lengths fit 32 bits
   * because a segment is closed at SEGMENT_BYTES_MAX (64 MiB) plus at most one batch.
   */
  add(seq: number, segmentFirstSeq: number, offset: number, length: number): void {
    if (seq !== this.offsets.length + 1) throw new Error(`record ${seq} located out of order (expected ${this.offsets.length + 1})`);
    if (offset > 0xffffffff || length > 0xffffffff) throw new Error(`record ${seq} lies beyond 4 GiB in its segment`);
    const n = this.segmentFirst.length;
    if (n === 0 || this.segmentFirst[n - 1]! !== segmentFirstSeq) this.segmentFirst.push(segmentFirstSeq);
    this.offsets.push(offset);
    this.lengths.push(length);
  }

  /** The segment's first seq, the byte offset and the record-text length of `seq`. */
  locate(seq: number): { segmentFirstSeq: number; offset: number; length: number } | undefined {
    if (seq < 1 || seq > this.offsets.length) return undefined;
    const segs = this.segmentFirst;
    let lo = 0;
    let hi = segs.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (segs[mid]! <= seq) lo = mid + 1;
      else hi = mid;
    }
    return { segmentFirstSeq: segs[lo - 1]!, offset: this.offsets.at(seq - 1), length: this.lengths.at(seq - 1) };
  }

  /** Bytes held by the location arrays. */
  get bytes(): number {
    return this.offsets.bytes + this.lengths.bytes + this.segmentFirst.length * 8;
  }

  /** The locations and the vouched map (as [seq, hash] pairs) as plain data (for snapshots). */
  pack(): { offsets: Uint32Array; lengths: Uint32Array; segmentFirst: number[]; vouched: Array<[number, string]> } {
    return { offsets: this.offsets.toArray(), lengths: this.lengths.toArray(), segmentFirst: [...this.segmentFirst], vouched: [...this.vouched] };
  }

  /**
   * Replaces every location with packed ones (snapshot load; the table must be empty). A snapshot
   * written before erasure existed has no `vouched` pairs.
   */
  restore(p: { offsets: Uint32Array; lengths: Uint32Array; segmentFirst: number[]; vouched?: Array<[number, string]> }): void {
    if (this.count !== 0) throw new Error('record locations can only be restored into an empty table');
    if (p.offsets.length !== p.lengths.length) throw new Error('damaged record locations');
    this.offsets = U32List.of(p.offsets);
    this.lengths = U32List.of(p.lengths);
    this.segmentFirst.push(...p.segmentFirst);
    for (const [seq, hash] of p.vouched ?? []) this.vouched.set(seq, hash);
  }
}

/** The size a cached record is charged: its UTF-16 text (2 bytes a character) plus 64 bytes of overhead. */
function cachedSize(r: StoredRecord): number {
  return 2 * (r.payloadJson.length + r.time.length) + 64;
}

/**
 * Least-recently-used cache of decoded records, bounded by the UTF-16 size of what it holds
 * (about 2 bytes a character, see `cachedSize`). Backed by lru-cache, whose recency order is a
 * linked list over typed arrays: a hit relinks two slots and never mutates the key Map. (A Map
 * re-inserted on every hit leaves a deleted entry in the hot key's hash chain each time; with
 * tens of thousands of entries every lookup of a hot record would walk hundreds of them.)
 */
export class RecordCache {
  private readonly lru: LRUCache<number, StoredRecord> | undefined;
  /** Hits and misses since start, for benchmarks and metrics. */
  readonly stats = { hits: 0, misses: 0 };

  /** Input: the most bytes to hold (0 disables caching). */
  constructor(readonly maxBytes: number = RECORD_CACHE_BYTES_DEFAULT) {
    this.lru = maxBytes > 0 ? new LRUCache<number, StoredRecord>({ maxSize: maxBytes, maxEntrySize: maxBytes, sizeCalculation: cachedSize }) : undefined;
  }

  /** The cached record `seq` (now the most recently used), or undefined. */
  get(seq: number): StoredRecord | undefined {
    const r = this.lru?.get(seq);
    if (r === undefined) this.stats.misses++;
    else this.stats.hits++;
    return r;
  }

  /**
   * Adds record `seq`, evicting the least recently used records beyond `maxBytes`; a record
   * larger than the whole cache is not kept.
   */
  set(seq: number, r: StoredRecord): void {
    // lru-cache itself skips a record over maxEntrySize (= maxBytes), sizing it once.
    this.lru?.set(seq, r);
  }

  /** Forgets record `seq` (its line was rewritten: erasure). */
  delete(seq: number): void {
    this.lru?.delete(seq);
  }

  /** Bytes held now (estimate, see `cachedSize`). */
  get bytes(): number {
    return this.lru?.calculatedSize ?? 0;
  }
}

/**
 * Records read back from the segment files of one log directory: located by `locations`, read
 * with one positional read each, decoded once and kept in a bounded `RecordCache`. Records not
 * yet written (appended, waiting for their group commit) are held in memory until `located`.
 */
export class SegmentRecords implements RecordSource {
  readonly locations = new RecordLocations();
  readonly cache: RecordCache;
  /** Appended records whose line has no location yet (seq → record). */
  private readonly unlocated = new Map<number, StoredRecord>();
  /** Open segment file descriptors, least recently used first (at most SEGMENT_FDS_MAX). */
  private readonly fds = new Map<number, number>();
  private scratch = Buffer.allocUnsafe(64 * 1024);

  /** Input: the log directory and the cache size in bytes. */
  constructor(
    private readonly logDir: string,
    cacheBytes: number = RECORD_CACHE_BYTES_DEFAULT,
  ) {
    this.cache = new RecordCache(cacheBytes);
  }

  /** Holds a record appended but not yet written, until `located` is called for it. */
  appended(seq: number, record: StoredRecord): void {
    this.unlocated.set(seq, record);
  }

  /**
   * Records the location of `seq` once its line is written (replay, or a flushed batch); a
   * record held by `appended` moves into the cache.
   */
  located(seq: number, segmentFirstSeq: number, offset: number, length: number): void {
    this.locations.add(seq, segmentFirstSeq, offset, length);
    const held = this.unlocated.get(seq);
    if (held !== undefined) {
      this.unlocated.delete(seq);
      this.cache.set(seq, held);
    }
  }

  /**
   * Record `seq` (see RecordSource), proven against the hash chain (see the module doc). `keep`
   * false reads it without adding it to the cache (bulk passes such as building the search index
   * must not evict what responses use). An erased record reads back as `erased: true` with
   * payloadJson `'null'`. Throws RecordDamagedError (500 INTERNAL) when its line is not proven,
   * Error when `seq` is not in the log.
   */
  read(seq: number, keep = true): StoredRecord {
    const cached = this.cache.get(seq);
    if (cached !== undefined) return cached;
    const held = this.unlocated.get(seq);
    if (held !== undefined) return held;
    const record = this.readProven(seq).record;
    if (keep) this.cache.set(seq, record);
    return record;
  }

  /**
   * The chained hash stored in record `seq`'s line (64 hex), once the line is proven (see
   * `read`); null when `seq` has no location. Throws RecordDamagedError when it is not proven.
   */
  storedHashOf(seq: number): string | null {
    if (this.locations.locate(seq) === undefined) return null;
    return this.readProven(seq).hash;
  }

  /** Damaged records found by reads since start (seq → where), for `/api/status` and tests. */
  get damaged(): ReadonlyMap<number, RecordDamagedError> {
    return this.damage;
  }
  private readonly damage = new Map<number, RecordDamagedError>();

  /** Records that `seq` is named, with its original chained hash, by a `moderation.erase` record. */
  vouch(seq: number, hash: string): void {
    this.locations.vouched.set(seq, hash);
  }

  /** Whether a `moderation.erase` record names `seq` (its line is a tombstone, or is about to be). */
  isErased(seq: number): boolean {
    return this.locations.vouched.has(seq);
  }

  /** Whether record `seq`'s line on disk is a tombstone (reads its first bytes; false when unlocated). */
  isTombstone(seq: number): boolean {
    const loc = this.locations.locate(seq);
    if (loc === undefined) return false;
    const buf = Buffer.alloc(ERASED_PREFIX_BYTES.length);
    const n = readSync(this.fd(loc.segmentFirstSeq), buf, 0, buf.length, loc.offset);
    return n === buf.length && buf.equals(ERASED_PREFIX_BYTES);
  }

  /**
   * Forgets what is cached of segment `segmentFirstSeq` and of records `seqs` after the segment
   * file was replaced (erasure): the next read opens the new file.
   */
  segmentReplaced(segmentFirstSeq: number, seqs: readonly number[]): void {
    const fd = this.fds.get(segmentFirstSeq);
    if (fd !== undefined) {
      this.fds.delete(segmentFirstSeq);
      closeSync(fd);
    }
    for (const seq of seqs) this.cache.delete(seq);
  }

  /**
   * Reads record `seq`'s line with the hash before it and proves it (record-format.ts
   * `proveLine`). Output: the record and its stored hash. Throws RecordDamagedError (logged once
   * per record) when it is not proven, Error when `seq` is not in the log.
   */
  private readProven(seq: number): { record: StoredRecord; hash: string } {
    const known = this.damage.get(seq);
    if (known !== undefined) throw known;
    const loc = this.locations.locate(seq);
    if (loc === undefined) throw new Error(`record ${seq} is not in the log`);
    const lineBytes = loc.length + HASH_SUFFIX_LENGTH + 1;
    const need = PREV_HASH_LEAD + lineBytes;
    if (this.scratch.length < need) this.scratch = Buffer.allocUnsafe(Math.max(need, this.scratch.length * 2));
    const buf = this.scratch;
    // The file name is built only for a damage report (path joins cost as much as the hash).
    const file = () => join(this.logDir, segmentName(loc.segmentFirstSeq));
    let prevHash: string;
    let ok: boolean;
    if (seq > loc.segmentFirstSeq && loc.offset >= PREV_HASH_LEAD) {
      // The previous line ends right before this one: one read takes its hash and this line.
      ok = this.readFully(loc.segmentFirstSeq, buf, 0, need, loc.offset - PREV_HASH_LEAD);
      if (ok && !buf.subarray(HASH_HEX_LENGTH, PREV_HASH_LEAD).equals(PREV_LINE_END)) return this.damaged_(seq, file, loc.offset, 'the line before it does not end as a record line');
      prevHash = buf.toString('latin1', 0, HASH_HEX_LENGTH);
    } else {
      const prev = seq === 1 ? GENESIS_HASH : this.lastHashBefore(seq);
      if (prev === null) return this.damaged_(seq, file, loc.offset, 'the hash of the record before it cannot be read');
      prevHash = prev;
      ok = this.readFully(loc.segmentFirstSeq, buf, PREV_HASH_LEAD, lineBytes, loc.offset);
    }
    if (!ok) return this.damaged_(seq, file, loc.offset, 'its segment ends before the line (was it truncated?)');
    const proven = proveLine(buf, PREV_HASH_LEAD, loc.length, seq, prevHash, this.locations.vouched.get(seq));
    if (proven.damage !== null) return this.damaged_(seq, file, loc.offset, proven.damage);
    return { record: proven.record, hash: proven.hash };
  }

  /** The stored hash (unproven) at the end of record `seq - 1`'s line, or null when it is not a hash field. */
  private lastHashBefore(seq: number): string | null {
    const loc = this.locations.locate(seq - 1);
    if (loc === undefined) return null;
    const buf = Buffer.allocUnsafe(HASH_SUFFIX_LENGTH);
    if (!this.readFully(loc.segmentFirstSeq, buf, 0, HASH_SUFFIX_LENGTH, loc.offset + loc.length)) return null;
    return storedHashOfTail(buf, HASH_SUFFIX_LENGTH);
  }

  /** Reads `n` bytes at `position` of a segment into `buf[at..]`; false when the file ends first. */
  private readFully(segmentFirstSeq: number, buf: Buffer, at: number, n: number, position: number): boolean {
    const fd = this.fd(segmentFirstSeq);
    let got = 0;
    while (got < n) {
      const r = readSync(fd, buf, at + got, n - got, position + got);
      if (r === 0) return false;
      got += r;
    }
    return true;
  }

  /** Records, logs (once) and throws the damage of record `seq` at `file`:`offset`. */
  private damaged_(seq: number, fileOf: () => string, offset: number, reason: string): never {
    const file = fileOf();
    const err = new RecordDamagedError(file, offset, seq, reason);
    this.damage.set(seq, err);
    logger.error('record_damaged', `record ${seq} in ${file} at byte offset ${offset} is not served: ${reason}. ${err.advice}`, { file, offset, seq });
    throw err;
  }

  /** The open descriptor of a segment, opening it (and closing the least recently used) as needed. */
  private fd(segmentFirstSeq: number): number {
    let fd = this.fds.get(segmentFirstSeq);
    if (fd !== undefined) {
      this.fds.delete(segmentFirstSeq);
      this.fds.set(segmentFirstSeq, fd);
      return fd;
    }
    fd = openSync(join(this.logDir, segmentName(segmentFirstSeq)), 'r');
    this.fds.set(segmentFirstSeq, fd);
    if (this.fds.size > SEGMENT_FDS_MAX) {
      const [k, v] = this.fds.entries().next().value as [number, number];
      this.fds.delete(k);
      closeSync(v);
    }
    return fd;
  }

  /** Closes every segment descriptor. */
  close(): void {
    for (const fd of this.fds.values()) closeSync(fd);
    this.fds.clear();
  }
}

/**
 * Records kept in memory, for tests and tools that apply records without a log on disk
 * (`createState()` without a source). Holds every record's text: not for the server.
 */
export class MemoryRecords implements RecordSource {
  private readonly records = new Map<number, StoredRecord>();

  /** Keeps record `seq`. */
  put(seq: number, record: StoredRecord): void {
    this.records.set(seq, record);
  }

  read(seq: number): StoredRecord {
    const r = this.records.get(seq);
    if (r === undefined) throw new Error(`record ${seq} is not in the log`);
    return r;
  }
}

/**
 * A hash table from 32-bit keys to row numbers, for lookups by a key whose full value lives on
 * disk (e.g. a message's (author, clientId)): open addressing with linear probing over a Uint32Array
 * (row + 1; 0 is empty), kept at most three-quarters full, so a lookup visits a short run of
 * slots and costs no allocation. Several rows may share a key; `find` visits every candidate and
 * the caller confirms each one. Memory: about 10.7 to 21 bytes a row.
 */
export class RowHashTable {
  private slots: Uint32Array<ArrayBufferLike> = new Uint32Array(1024);
  private keys: Uint32Array<ArrayBufferLike> = new Uint32Array(1024);
  private count = 0;

  /** Adds `row` (0..2^32-2) under `key` (a 32-bit hash). */
  add(key: number, row: number): void {
    if ((this.count + 1) * 4 > this.slots.length * 3) this.grow();
    this.insert(key >>> 0, row + 1);
    this.count++;
  }

  /** Calls `visit(row)` for each row added under `key`, newest first; stops when it returns true. */
  find(key: number, visit: (row: number) => boolean): number | undefined {
    const k = key >>> 0;
    const mask = this.slots.length - 1;
    const hits: number[] = [];
    for (let i = k & mask; this.slots[i] !== 0; i = (i + 1) & mask) if (this.keys[i] === k) hits.push(this.slots[i]! - 1);
    hits.sort((a, b) => b - a);
    for (const row of hits) if (visit(row)) return row;
    return undefined;
  }

  private insert(key: number, value: number): void {
    const mask = this.slots.length - 1;
    let i = key & mask;
    while (this.slots[i] !== 0) i = (i + 1) & mask;
    this.slots[i] = value;
    this.keys[i] = key;
  }

  private grow(): void {
    const oldSlots = this.slots;
    const oldKeys = this.keys;
    this.slots = new Uint32Array(oldSlots.length * 2);
    this.keys = new Uint32Array(oldKeys.length * 2);
    for (let i = 0; i < oldSlots.length; i++) if (oldSlots[i] !== 0) this.insert(oldKeys[i]!, oldSlots[i]!);
  }

  /** Bytes held. */
  get bytes(): number {
    return this.slots.byteLength + this.keys.byteLength;
  }

  /** The table as plain data (for snapshots). */
  pack(): { slots: Uint32Array; keys: Uint32Array; count: number } {
    return { slots: this.slots, keys: this.keys, count: this.count };
  }

  /** A table from packed data (taken over, not copied). Throws Error for damaged data. */
  static unpack(p: { slots: Uint32Array; keys: Uint32Array; count: number }): RowHashTable {
    const n = p.slots.length;
    if (n < 2 || (n & (n - 1)) !== 0 || p.keys.length !== n || p.count * 4 > n * 3) throw new Error('damaged row hash table');
    const t = new RowHashTable();
    t.slots = p.slots;
    t.keys = p.keys;
    t.count = p.count;
    return t;
  }
}
