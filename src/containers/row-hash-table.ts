/**
 * An allocation-free multimap from 32-bit hashes to row numbers (issue 17), for indexes whose
 * full key lives on disk.
 */

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
