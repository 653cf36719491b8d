/**
 * Where each log record's line lies in its segment file (issue 17): 8 bytes a record in typed
 * arrays, plus the vouched map of erased records (issue 25). Read by `SegmentRecords` and packed
 * into the state snapshot.
 */
import { upperBound } from '../containers/binary-search.js';
import { U32List } from '../containers/u32-list.js';

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
    const seg = upperBound(segs.length, (i) => segs[i]!, seq) - 1;
    return { segmentFirstSeq: segs[seg]!, offset: this.offsets.at(seq - 1), length: this.lengths.at(seq - 1) };
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
