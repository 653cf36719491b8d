/**
 * The live n-gram shard: the newest documents of the search index, in memory, until it is sealed
 * into an immutable shard file (README "Search index"; issue 17).
 *
 * Compact by construction: an open-addressing table from gram key (a double) to a slot number,
 * a Uint32Array of per-slot fields, and one byte arena holding every gram's posting list as
 * delta varints of document ordinals in chained blocks (12, 24, 48 … 4096 bytes, the first 4 bytes
 * of a block link to the next). No JS object per gram or per posting. A gram repeated in one
 * document is posted once: a slot remembers the last ordinal it was posted for.
 */
import { hashKey } from './ngram.js';

const P16 = 65536;
const P32 = 4294967296;
const P48 = 281474976710656;

// Slot fields (Uint32Array, SLOT_FIELDS per slot).
const HEAD = 0; // arena offset of the first block
const TAIL_START = 1; // arena offset of the last block
const TAIL_POS = 2; // next free byte in the last block
const TAIL_END = 3; // end of the last block
const LAST = 4; // last ordinal posted + 1 (0: none yet)
const COUNT = 5; // documents posted
const BYTES = 6; // varint bytes written
const SLOT_FIELDS = 7;

const BLOCK_FIRST_BYTES = 12;
const BLOCK_MAX_BYTES = 4096;

/** Size of the block after one of `size` bytes. */
function nextBlockBytes(size: number): number {
  return size >= BLOCK_MAX_BYTES / 2 ? BLOCK_MAX_BYTES : size * 2;
}

/** One in-memory shard: documents with ordinals 0..docs-1 and their gram postings. */
export class LiveShard {
  /** Documents held. */
  docs = 0;
  /** Log seq of each document, by ordinal (ascending). */
  private seqs = new Float64Array(1024);
  private tableKeys: Float64Array;
  private tableSlots: Int32Array;
  private tableMask: number;
  private slots = new Uint32Array(SLOT_FIELDS * 4096);
  /** Distinct grams held. */
  grams = 0;
  private arena = new Uint8Array(1 << 16);
  /** Arena bytes in use; offset 0 is never a block, so a 0 link means "none". */
  private arenaUsed = 4;
  /** Set when a seal is abandoned (truncateFrom ran while its file was being written). */
  cancelled = false;
  /** Covered log range end and its chained hash, set when the shard is frozen for sealing. */
  lastSeq = 0;
  lastHash = '';

  /** `firstSeq`: first log seq this shard covers (the previous shard's lastSeq + 1). */
  constructor(readonly firstSeq: number) {
    this.tableKeys = new Float64Array(1 << 12);
    this.tableSlots = new Int32Array(1 << 12);
    this.tableMask = (1 << 12) - 1;
  }

  /** Seq of the newest document, or firstSeq - 1 when empty. */
  get lastDocSeq(): number {
    return this.docs === 0 ? this.firstSeq - 1 : this.seqs[this.docs - 1]!;
  }

  /** Log seq of the document with ordinal `ord`. */
  seqAt(ord: number): number {
    return this.seqs[ord]!;
  }

  /**
   * Adds document `seq` (greater than every seq already held) with its lower-cased texts; grams
   * of each text are posted under the next ordinal; grams never span two texts.
   */
  add(seq: number, lcTexts: readonly string[]): void {
    const ord = this.docs;
    if (ord === this.seqs.length) {
      const grown = new Float64Array(ord * 2);
      grown.set(this.seqs);
      this.seqs = grown;
    }
    this.seqs[ord] = seq;
    for (const text of lcTexts) {
      let p2 = 0;
      let p1 = 0;
      for (let i = 0; i < text.length; i++) {
        const c = text.charCodeAt(i);
        this.post(P48 + c * P32, ord);
        if (i >= 1) this.post(2 * P48 + p1 * P32 + c * P16, ord);
        if (i >= 2) this.post(3 * P48 + p2 * P32 + p1 * P16 + c, ord);
        p2 = p1;
        p1 = c;
      }
    }
    this.docs = ord + 1;
  }

  /** Slot of `key`, or -1 when no document holds it. */
  lookup(key: number): number {
    const keys = this.tableKeys;
    const mask = this.tableMask;
    let i = hashKey(key) & mask;
    for (;;) {
      const k = keys[i]!;
      if (k === key) return this.tableSlots[i]!;
      if (k === 0) return -1;
      i = (i + 1) & mask;
    }
  }

  /** Documents posted under slot `slot`. */
  count(slot: number): number {
    return this.slots[slot * SLOT_FIELDS + COUNT]!;
  }

  /** Varint bytes of slot `slot`'s posting list. */
  postingBytes(slot: number): number {
    return this.slots[slot * SLOT_FIELDS + BYTES]!;
  }

  /** Every gram key held, ascending (a fresh Float64Array). */
  sortedKeys(): Float64Array {
    const out = new Float64Array(this.grams);
    let n = 0;
    const keys = this.tableKeys;
    for (let i = 0; i < keys.length; i++) if (keys[i] !== 0) out[n++] = keys[i]!;
    return out.sort();
  }

  /**
   * Copies slot `slot`'s posting list (delta varints: ord + 1 - (previous ord + 1), the first
   * relative to 0) into `out` at `pos`; returns the position after it.
   */
  copyPostings(slot: number, out: Uint8Array, pos: number): number {
    const s = slot * SLOT_FIELDS;
    const tailStart = this.slots[s + TAIL_START]!;
    const arena = this.arena;
    let block = this.slots[s + HEAD]!;
    let size = BLOCK_FIRST_BYTES;
    for (;;) {
      const end = block === tailStart ? this.slots[s + TAIL_POS]! : block + size;
      out.set(arena.subarray(block + 4, end), pos);
      pos += end - block - 4;
      if (block === tailStart) return pos;
      block = arena[block]! | (arena[block + 1]! << 8) | (arena[block + 2]! << 16) | (arena[block + 3]! * 16777216);
      size = nextBlockBytes(size);
    }
  }

  /** Decodes slot `slot`'s ordinals, ascending, into `into`; returns how many. */
  decode(slot: number, into: Uint32Array): number {
    const bytes = new Uint8Array(this.postingBytes(slot));
    this.copyPostings(slot, bytes, 0);
    return decodeDeltas(bytes, 0, bytes.length, into);
  }

  /** Bytes of typed-array memory this shard holds (table, slots, arena, seq table). */
  memoryBytes(): number {
    return this.tableKeys.byteLength + this.tableSlots.byteLength + this.slots.byteLength + this.arena.byteLength + this.seqs.byteLength;
  }

  private post(key: number, ord: number): void {
    // Find or insert the slot.
    const keys = this.tableKeys;
    const mask = this.tableMask;
    let i = hashKey(key) & mask;
    let slot: number;
    for (;;) {
      const k = keys[i]!;
      if (k === key) {
        slot = this.tableSlots[i]!;
        break;
      }
      if (k === 0) {
        slot = this.newSlot();
        keys[i] = key;
        this.tableSlots[i] = slot;
        if (this.grams * 2 > mask) this.growTable();
        break;
      }
      i = (i + 1) & mask;
    }
    const s = slot * SLOT_FIELDS;
    const slots = this.slots;
    const last = slots[s + LAST]!;
    if (last === ord + 1) return;
    let delta = ord + 1 - last;
    slots[s + LAST] = ord + 1;
    slots[s + COUNT]!++;
    while (delta >= 0x80) {
      this.writeByte(s, (delta & 0x7f) | 0x80);
      delta >>>= 7;
    }
    this.writeByte(s, delta);
  }

  private writeByte(s: number, byte: number): void {
    const slots = this.slots;
    let pos = slots[s + TAIL_POS]!;
    if (pos === slots[s + TAIL_END]!) {
      const tailStart = slots[s + TAIL_START]!;
      const size = nextBlockBytes(slots[s + TAIL_END]! - tailStart);
      const block = this.alloc(size);
      const arena = this.arena;
      arena[tailStart] = block & 0xff;
      arena[tailStart + 1] = (block >>> 8) & 0xff;
      arena[tailStart + 2] = (block >>> 16) & 0xff;
      arena[tailStart + 3] = block >>> 24;
      slots[s + TAIL_START] = block;
      slots[s + TAIL_END] = block + size;
      pos = block + 4;
    }
    this.arena[pos] = byte;
    slots[s + TAIL_POS] = pos + 1;
    slots[s + BYTES]!++;
  }

  private alloc(size: number): number {
    const at = this.arenaUsed;
    if (at + size > this.arena.length) {
      let cap = this.arena.length * 2;
      while (at + size > cap) cap *= 2;
      const grown = new Uint8Array(cap);
      grown.set(this.arena.subarray(0, at));
      this.arena = grown;
    }
    this.arenaUsed = at + size;
    return at;
  }

  private newSlot(): number {
    const slot = this.grams++;
    if ((slot + 1) * SLOT_FIELDS > this.slots.length) {
      const grown = new Uint32Array(this.slots.length * 2);
      grown.set(this.slots);
      this.slots = grown;
    }
    const block = this.alloc(BLOCK_FIRST_BYTES);
    const s = slot * SLOT_FIELDS;
    const slots = this.slots;
    slots[s + HEAD] = block;
    slots[s + TAIL_START] = block;
    slots[s + TAIL_POS] = block + 4;
    slots[s + TAIL_END] = block + BLOCK_FIRST_BYTES;
    slots[s + LAST] = 0;
    slots[s + COUNT] = 0;
    slots[s + BYTES] = 0;
    return slot;
  }

  private growTable(): void {
    const oldKeys = this.tableKeys;
    const oldSlots = this.tableSlots;
    const cap = oldKeys.length * 2;
    const keys = new Float64Array(cap);
    const slots = new Int32Array(cap);
    const mask = cap - 1;
    for (let j = 0; j < oldKeys.length; j++) {
      const k = oldKeys[j]!;
      if (k === 0) continue;
      let i = hashKey(k) & mask;
      while (keys[i] !== 0) i = (i + 1) & mask;
      keys[i] = k;
      slots[i] = oldSlots[j]!;
    }
    this.tableKeys = keys;
    this.tableSlots = slots;
    this.tableMask = mask;
  }
}

/**
 * Decodes delta varints in `bytes[start, end)` (each delta = ord + 1 - previous (ord + 1)) into
 * ascending ordinals in `into`; returns how many. Returns -1 when the bytes are not a well-formed
 * list that fits `into` (damage).
 */
export function decodeDeltas(bytes: Uint8Array, start: number, end: number, into: Uint32Array): number {
  let n = 0;
  let prev = 0;
  let i = start;
  while (i < end) {
    let b = bytes[i++]!;
    let delta = b & 0x7f;
    let shift = 7;
    while (b & 0x80) {
      if (i >= end || shift > 21) return -1;
      b = bytes[i++]!;
      delta |= (b & 0x7f) << shift;
      shift += 7;
    }
    if (delta === 0 || n >= into.length) return -1;
    prev += delta;
    into[n++] = prev - 1;
  }
  return n;
}
