/**
 * A growable list of 64-bit floats (issue 30: a number column that does not fit 32 bits, e.g. a
 * lease end in ms, at 8 bytes an entry instead of an object field each). Packed into snapshots
 * as the Uint32Array view of its bytes.
 */

/**
 * Below this many elements a full F64List doubles; from it on it grows by a quarter (as U32List
 * does), so a list of millions of entries carries at most 25 % spare capacity.
 */
const F64LIST_DOUBLING_MAX = 1 << 20;

/**
 * A growable Float64Array: 8 bytes an element, amortised O(1) push. Its own class beside U32List
 * rather than one generic base over both array types: `at` and `push` then each see one array
 * type, so they stay monomorphic where replay and queries call them millions of times.
 */
export class F64List {
  private data: Float64Array<ArrayBufferLike>;
  length = 0;

  constructor(capacity = 16) {
    this.data = new Float64Array(capacity);
  }

  /** Appends `v` (any double, NaN included). */
  push(v: number): void {
    if (this.length === this.data.length) {
      const n = this.data.length;
      const next = new Float64Array(n < F64LIST_DOUBLING_MAX ? n * 2 : n + (n >>> 2));
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

  /** The elements' bytes as 2 × length Uint32s, in a buffer of their own (for snapshots). */
  toU32(): Uint32Array {
    return new Uint32Array(this.data.slice(0, this.length).buffer);
  }

  /** The list whose bytes `toU32` gave. Throws Error for an odd length (damaged data). */
  static fromU32(words: Uint32Array): F64List {
    if (words.length % 2 !== 0) throw new Error('damaged float column');
    // A Float64Array view needs an 8-byte aligned offset; copy when the words are not.
    const own = words.byteOffset % 8 === 0 ? words : words.slice();
    const list = new F64List(1);
    const values = new Float64Array(own.buffer, own.byteOffset, own.length / 2);
    list.data = values.length > 0 ? values : new Float64Array(1);
    list.length = values.length;
    return list;
  }
}
