/**
 * The live n-gram shard: the newest documents of the search index, in memory, until it is sealed
 * into an immutable shard file (docs/internals/search-index.md; issue 17).
 *
 * Compact by construction: an open-addressing table from gram key (a double) to a slot number,
 * a Uint32Array of per-slot fields, and a byte arena of 1 MiB pages holding every gram's posting
 * list as delta varints of document ordinals in chained blocks (12, 24, 48 … 4096 bytes, the first
 * 4 bytes of a block link to the next). A gram whose list grows past a bitmap of `bitmapDocs` bits
 * switches to that bitmap (frequent grams such as "e" or " th" cost 4 KiB, not 32 KiB); ordinals
 * past the bitmap go on a varint chain again. No JS object per gram or per posting. A gram repeated
 * in one document is posted once: a slot remembers the last ordinal it was posted for.
 */
import { hashKey } from './ngram.js';

const P16 = 65536;
const P32 = 4294967296;
const P48 = 281474976710656;

// Slot fields (Uint32Array, SLOT_FIELDS per slot).
const HEAD = 0; // arena offset of the first block of the varint chain
const TAIL_START = 1; // arena offset of the chain's last block
const TAIL_POS = 2; // next free byte in the last block
const TAIL_END = 3; // end of the last block
const LAST = 4; // last ordinal posted + 1 (0: none yet)
const COUNT = 5; // documents posted
const BYTES = 6; // varint bytes in the chain
const BITMAP = 7; // arena offset of the bitmap, 0 while the list is a varint chain only
const BASE = 8; // last ordinal in the bitmap + 1: the chain after a bitmap counts its deltas from it
const SLOT_FIELDS = 9;

const BLOCK_FIRST_BYTES = 12;
const BLOCK_MAX_BYTES = 4096;
const PAGE_SHIFT = 20;
const PAGE_BYTES = 1 << PAGE_SHIFT;
const PAGE_MASK = PAGE_BYTES - 1;

/** Free-list index of a chain block of `size` bytes (12 · 2^k, capped at BLOCK_MAX_BYTES). */
function blockClass(size: number): number {
  return size === BLOCK_MAX_BYTES ? 15 : 31 - Math.clz32(size / BLOCK_FIRST_BYTES);
}

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
  /** Arena pages; an arena offset is page · 2^20 + byte. No block or bitmap crosses a page. */
  private pages: Uint8Array[] = [new Uint8Array(PAGE_BYTES)];
  /** Arena bytes in use (next free offset); offset 0 is never a block, so a 0 link means "none". */
  private arenaUsed = 4;
  /** Per block size class, the first free chain block (linked through its first 4 bytes), 0: none. */
  private readonly freeBlocks = new Uint32Array(16);
  /** Bytes of a bitmap (0: bitmaps off, when `bitmapDocs` bits would not fit a quarter page). */
  private readonly bitmapBytes: number;
  /** Set when a seal is abandoned (truncateFrom ran while its file was being written). */
  cancelled = false;
  /** Covered log range end and its chained hash, set when the shard is frozen for sealing. */
  lastSeq = 0;
  lastHash = '';

  /**
   * `firstSeq`: first log seq this shard covers (the previous shard's lastSeq + 1);
   * `bitmapDocs`: ordinals a bitmap holds (the shard's planned size, shardDocsMax).
   */
  constructor(
    readonly firstSeq: number,
    readonly bitmapDocs: number,
  ) {
    this.tableKeys = new Float64Array(1 << 12);
    this.tableSlots = new Int32Array(1 << 12);
    this.tableMask = (1 << 12) - 1;
    const bytes = Math.ceil(bitmapDocs / 8);
    this.bitmapBytes = bytes <= PAGE_BYTES / 4 ? bytes : 0;
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

  /** True when slot `slot`'s list is (mostly) a bitmap; its file form is then a bitmap too. */
  isBitmap(slot: number): boolean {
    return this.slots[slot * SLOT_FIELDS + BITMAP] !== 0;
  }

  /** Varint bytes of slot `slot`'s posting list (meaningful when !isBitmap(slot)). */
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
   * Copies slot `slot`'s varint chain (delta varints: ord + 1 - (previous ord + 1), the first
   * relative to 0 for a list that never was a bitmap) into `out` at `pos`; returns the position
   * after it.
   */
  copyPostings(slot: number, out: Uint8Array, pos: number): number {
    const s = slot * SLOT_FIELDS;
    const tailStart = this.slots[s + TAIL_START]!;
    let block = this.slots[s + HEAD]!;
    let size = BLOCK_FIRST_BYTES;
    for (;;) {
      const page = this.pages[block >>> PAGE_SHIFT]!;
      const at = block & PAGE_MASK;
      const end = block === tailStart ? this.slots[s + TAIL_POS]! : block + size;
      out.set(page.subarray(at + 4, at + (end - block)), pos);
      pos += end - block - 4;
      if (block === tailStart) return pos;
      block = page[at]! | (page[at + 1]! << 8) | (page[at + 2]! << 16) | (page[at + 3]! * 16777216);
      size = nextBlockBytes(size);
    }
  }

  /** Decodes slot `slot`'s ordinals, ascending, into `into`; returns how many. */
  decode(slot: number, into: Uint32Array): number {
    const s = slot * SLOT_FIELDS;
    let n = 0;
    const bitmap = this.slots[s + BITMAP]!;
    if (bitmap !== 0) {
      const page = this.pages[bitmap >>> PAGE_SHIFT]!;
      const at = bitmap & PAGE_MASK;
      for (let byte = 0; byte < this.bitmapBytes; byte++) {
        let bits = page[at + byte]!;
        while (bits !== 0) {
          const low = bits & -bits;
          into[n++] = byte * 8 + (31 - Math.clz32(low));
          bits ^= low;
        }
      }
    }
    const bytes = new Uint8Array(this.postingBytes(slot));
    this.copyPostings(slot, bytes, 0);
    return n + decodeDeltas(bytes, 0, bytes.length, into.subarray(n), this.slots[s + BASE]!);
  }

  /**
   * Writes slot `slot`'s ordinals (a bitmap slot: isBitmap) as a bitmap into `out` at `pos`,
   * which must hold ceil(docs / 8) zeroed bytes: the bitmap is copied, ordinals past it are set
   * one by one.
   */
  writeBitmap(slot: number, out: Uint8Array, pos: number): void {
    const s = slot * SLOT_FIELDS;
    const bitmap = this.slots[s + BITMAP]!;
    const page = this.pages[bitmap >>> PAGE_SHIFT]!;
    const at = bitmap & PAGE_MASK;
    out.set(page.subarray(at, at + this.bitmapBytes), pos);
    const bytes = new Uint8Array(this.postingBytes(slot));
    if (bytes.length === 0) return;
    const tail = new Uint32Array(bytes.length); // a varint is at least one byte
    this.copyPostings(slot, bytes, 0);
    const n = decodeDeltas(bytes, 0, bytes.length, tail, this.slots[s + BASE]!);
    for (let i = 0; i < n; i++) out[pos + (tail[i]! >>> 3)]! |= 1 << (tail[i]! & 7);
  }

  /** Bytes of typed-array memory this shard holds (table, slots, arena pages, seq table). */
  memoryBytes(): number {
    return this.tableKeys.byteLength + this.tableSlots.byteLength + this.slots.byteLength + this.pages.length * PAGE_BYTES + this.seqs.byteLength;
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
    slots[s + LAST] = ord + 1;
    slots[s + COUNT] = slots[s + COUNT]! + 1;
    const bitmap = slots[s + BITMAP]!;
    if (bitmap !== 0 && ord < this.bitmapDocs) {
      const page = this.pages[bitmap >>> PAGE_SHIFT]!;
      page[(bitmap & PAGE_MASK) + (ord >>> 3)]! |= 1 << (ord & 7);
      slots[s + BASE] = ord + 1; // the chain is empty until an ordinal past the bitmap comes
      return;
    }
    let delta = ord + 1 - last;
    while (delta >= 0x80) {
      this.writeByte(s, (delta & 0x7f) | 0x80);
      delta >>>= 7;
    }
    this.writeByte(s, delta);
    if (bitmap === 0 && this.bitmapBytes !== 0 && slots[s + BYTES]! > this.bitmapBytes && ord < this.bitmapDocs) this.toBitmap(slot);
  }

  /** Moves slot `slot`'s ordinals (all below bitmapDocs) into a bitmap and restarts its chain empty. */
  private toBitmap(slot: number): void {
    const ords = new Uint32Array(this.count(slot));
    const n = this.decode(slot, ords);
    const bitmap = this.alloc(this.bitmapBytes);
    const page = this.pages[bitmap >>> PAGE_SHIFT]!;
    const at = bitmap & PAGE_MASK;
    for (let i = 0; i < n; i++) page[at + (ords[i]! >>> 3)]! |= 1 << (ords[i]! & 7);
    const s = slot * SLOT_FIELDS;
    const slots = this.slots;
    // The old chain's blocks go to the free lists, for other grams' chains.
    const tailStart = slots[s + TAIL_START]!;
    let old = slots[s + HEAD]!;
    let size = BLOCK_FIRST_BYTES;
    for (;;) {
      const next = this.link(old);
      const k = blockClass(size);
      this.setLink(old, this.freeBlocks[k]!);
      this.freeBlocks[k] = old;
      if (old === tailStart) break;
      old = next;
      size = nextBlockBytes(size);
    }
    const block = this.allocBlock(BLOCK_FIRST_BYTES);
    slots[s + BITMAP] = bitmap;
    slots[s + BASE] = slots[s + LAST]!;
    slots[s + HEAD] = block;
    slots[s + TAIL_START] = block;
    slots[s + TAIL_POS] = block + 4;
    slots[s + TAIL_END] = block + BLOCK_FIRST_BYTES;
    slots[s + BYTES] = 0;
  }

  private writeByte(s: number, byte: number): void {
    const slots = this.slots;
    let pos = slots[s + TAIL_POS]!;
    if (pos === slots[s + TAIL_END]!) {
      const tailStart = slots[s + TAIL_START]!;
      const size = nextBlockBytes(slots[s + TAIL_END]! - tailStart);
      const block = this.allocBlock(size);
      this.setLink(tailStart, block);
      slots[s + TAIL_START] = block;
      slots[s + TAIL_END] = block + size;
      pos = block + 4;
    }
    this.pages[pos >>> PAGE_SHIFT]![pos & PAGE_MASK] = byte;
    slots[s + TAIL_POS] = pos + 1;
    slots[s + BYTES] = slots[s + BYTES]! + 1;
  }

  /** The 4-byte link at the start of the block at arena offset `block`. */
  private link(block: number): number {
    const page = this.pages[block >>> PAGE_SHIFT]!;
    const at = block & PAGE_MASK;
    return (page[at]! | (page[at + 1]! << 8) | (page[at + 2]! << 16) | (page[at + 3]! * 16777216)) >>> 0;
  }

  private setLink(block: number, to: number): void {
    const page = this.pages[block >>> PAGE_SHIFT]!;
    const at = block & PAGE_MASK;
    page[at] = to & 0xff;
    page[at + 1] = (to >>> 8) & 0xff;
    page[at + 2] = (to >>> 16) & 0xff;
    page[at + 3] = to >>> 24;
  }

  /** A chain block of `size` bytes: a freed one of that size, else fresh arena bytes. */
  private allocBlock(size: number): number {
    const k = blockClass(size);
    const free = this.freeBlocks[k]!;
    if (free === 0) return this.alloc(size);
    this.freeBlocks[k] = this.link(free);
    return free;
  }

  /** Reserves `size` (<= PAGE_BYTES) zeroed arena bytes within one page; returns their offset. */
  private alloc(size: number): number {
    let at = this.arenaUsed;
    if ((at & PAGE_MASK) + size > PAGE_BYTES) at = (at + PAGE_MASK) & ~PAGE_MASK & 0xffffffff;
    at >>>= 0;
    const page = at >>> PAGE_SHIFT;
    if (page >= 4096) throw new RangeError('LiveShard: arena passed 4 GiB');
    while (this.pages.length <= page) this.pages.push(new Uint8Array(PAGE_BYTES));
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
    const block = this.allocBlock(BLOCK_FIRST_BYTES);
    const s = slot * SLOT_FIELDS;
    const slots = this.slots;
    slots[s + HEAD] = block;
    slots[s + TAIL_START] = block;
    slots[s + TAIL_POS] = block + 4;
    slots[s + TAIL_END] = block + BLOCK_FIRST_BYTES;
    slots[s + LAST] = 0;
    slots[s + COUNT] = 0;
    slots[s + BYTES] = 0;
    slots[s + BITMAP] = 0;
    slots[s + BASE] = 0;
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
 * ascending ordinals in `into`, the first delta counted from `base` (an ordinal + 1, 0 for a
 * whole list); returns how many. Returns -1 when the bytes are not a well-formed
 * list that fits `into` (damage).
 */
export function decodeDeltas(bytes: Uint8Array, start: number, end: number, into: Uint32Array, base = 0): number {
  let n = 0;
  let prev = base;
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
