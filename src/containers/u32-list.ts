/**
 * A growable list of unsigned 32-bit integers (issue 17: index memory of 4 bytes an entry, not an
 * object each). Used for message rows, feeds and per-topic lists; packed into snapshots as the
 * Uint32Array it wraps.
 */
import { upperBound } from './binary-search.js';

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
    const d = this.data;
    return upperBound(this.length, (i) => d[i]!, v);
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
