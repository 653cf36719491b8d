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
import { RecordLocations } from './record-locations.js';
import {
  ERASED_PREFIX,
  GENESIS_HASH,
  HASH_HEX_LENGTH,
  HASH_SUFFIX_LENGTH,
  proveLine,
  splitRecordText,
  storedHashOfTail,
  type StoredRecord,
} from './record-format.js';

import { segmentName } from './segment.js';

export { splitRecordText, type StoredRecord };

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
