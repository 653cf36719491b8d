/**
 * A shard built by sorting postings instead of growing a posting list per gram (issue 39 "the
 * index catches up fast"; docs/internals/search-index.md). Used by the build
 * workers (build-worker.ts), which fill a shard from start to seal with nothing to answer meanwhile;
 * the live shard of a running index (live.ts) stays as it is, since it must answer queries.
 *
 * While documents are added, each distinct gram gets a dense id (unigrams by a direct table over
 * the 65536 code units, bigrams of two code units below 256 by a direct table too, other bigrams
 * and trigrams by an open-addressing table over two int32 halves of the gram: no double arithmetic
 * or hashing of a double per occurrence), and each (gram, document) pair is appended once, as the
 * gram's id, to one Int32Array in document order: no per-gram chain of blocks or varint is touched
 * per posting. A gram once in more documents than a bitmap of plannedDocs bits has bytes is a
 * bitmap in the file for certain (each varint takes at least a byte): from then on its documents
 * set bits in its row of a column-major bitmap table instead of appending. At the seal, one
 * counting sort by id (the counts are kept while adding) lays every other gram's ordinals out
 * ascending (the pairs appended before a gram got its row are set in the row), and the file is
 * encoded with the same layout and choices as shard.ts encodes a live shard: a list is a bitmap
 * exactly when its delta varints would take more than ceil(docs / 8) bytes. The file is therefore
 * byte for byte the one shard.ts makes for the same documents (test/unit/sorted-shard.test.mjs).
 *
 * Memory: 4 bytes per (gram, document) pair appended (a doubling array, reused by the next
 * builder) and a bitmap row of ceil(plannedDocs / 8) bytes per frequent gram, plus 2 (shards of
 * at most 65536 documents) or 4 bytes per appended pair during the seal. Measured at 32768
 * documents: 10 MiB for the gen-archive text, 36 MiB with 8 random hex tokens per document
 * (a LiveShard: about 10 MiB).
 */
import { createHmac } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { NGRAM_DICT_BLOCK_ENTRIES } from '../../constants.js';
import { bloomAdd, bloomWords } from './bloom.js';
import { assertKey, sampleAndBloom, SHARD_ENTRY_BYTES, SHARD_HEADER_BYTES, SHARD_MAC_BYTES, SHARD_SAMPLE_BYTES, shardHeader, writeEntry } from './shard.js';

const P16 = 65536;
const P32 = 4294967296;
const P48 = 281474976710656;
/** Fields per gram id in `meta`: the last document posted + 1, documents posted, bitmap row. */
const META = 3;
const LAST = 0;
const COUNT = 1;
const ROW = 2;
/** Bitmap rows first made room for. */
const ROWS_MIN = 64;
/** Bigram and trigram table: initial slots (a power of two), grown at half full. */
const TABLE_SLOTS_MIN = 1 << 14;

/** Postings arrays of spent builders, reused by the next (a worker fills shards one after another). */
const spare: Int32Array<ArrayBuffer>[] = [];
/** Spare arrays kept (one per kind of document a worker builds at once). */
const SPARE_MAX = 2;

/** One shard being built: documents with ordinals 0..docs-1, their seqs and their postings. */
export class SortedShardBuilder {
  /** Documents held. */
  docs = 0;
  /** Distinct grams held. */
  grams = 0;
  private seqs = new Float64Array(1024);
  /** Postings appended so far, per document: docEnds[ord] = end of document ord's postings. */
  private docEnds = new Int32Array(1024);
  private postings: Int32Array<ArrayBuffer> = spare.pop() ?? new Int32Array(1 << 16);
  private used = 0;
  /** Unigram id by code unit, -1: none yet. */
  private readonly uni = new Int32Array(P16).fill(-1);
  /** Bigram id by (c0 << 8) | c1 for two code units below 256 (most text), -1: none yet. */
  private readonly bi = new Int32Array(P16).fill(-1);
  /** Other bigrams and all trigrams: high half ((length << 16) | c0, never 0: 0 marks a free slot), low half ((c1 << 16) | c2), id. */
  private tHi = new Int32Array(TABLE_SLOTS_MIN);
  private tLo = new Int32Array(TABLE_SLOTS_MIN);
  private tId = new Int32Array(TABLE_SLOTS_MIN);
  private tMask = TABLE_SLOTS_MIN - 1;
  private tUsed = 0;
  /** Per gram id: its key (ngram.ts packing). */
  private keys = new Float64Array(4096);
  /**
   * Per gram id, META fields: the last document posted + 1, the documents posted, and its bitmap
   * row in `rows` (-1: none; its postings are appended instead).
   */
  private meta = new Int32Array(META * 4096);
  /**
   * Bitmaps of the grams in more documents than a bitmap of plannedDocs bits has bytes (a list
   * that is certainly a bitmap in the file: each varint takes at least a byte): once a gram
   * passes that count, its later documents set bits here instead of appending postings.
   */
  private rows: Uint8Array<ArrayBuffer> = new Uint8Array(0);
  private rowCount = 0;
  /** Rows `rows` has room for. It is laid out by column: the byte for documents 8b..8b+7 of row r is at b · rowCap + r, so one document's bits lie together. */
  private rowCap = 0;
  /** Bytes of one row: ceil(plannedDocs / 8). */
  private readonly rowBytes: number;

  /**
   * `firstSeq`: the first log seq the shard covers (the previous shard's lastSeq + 1).
   * `plannedDocs`: the most documents it will hold (add() refuses more); the file's bitmaps are
   * sized by the documents it holds when encoded.
   */
  constructor(
    readonly firstSeq: number,
    readonly plannedDocs: number,
  ) {
    if (!Number.isInteger(plannedDocs) || plannedDocs < 1) throw new RangeError('SortedShardBuilder: plannedDocs must be a positive integer');
    this.rowBytes = Math.ceil(plannedDocs / 8);
  }

  /** Seq of the newest document, or firstSeq - 1 when empty. */
  get lastDocSeq(): number {
    return this.docs === 0 ? this.firstSeq - 1 : this.seqs[this.docs - 1]!;
  }

  /**
   * Adds document `seq` (greater than every seq held; not checked: the build worker reads the log
   * in order) with its lower-cased texts; each gram of 1–3 code units of a text is posted once per
   * document; grams never span two texts.
   */
  add(seq: number, lcTexts: readonly string[]): void {
    const ord = this.docs;
    if (ord >= this.plannedDocs) throw new RangeError(`SortedShardBuilder.add: the shard holds its ${this.plannedDocs} planned documents`);
    if (ord === this.seqs.length) {
      this.seqs = grownF64(this.seqs, ord * 2);
      this.docEnds = grownI32(this.docEnds, ord * 2);
    }
    this.seqs[ord] = seq;
    const tag = ord + 1;
    const uni = this.uni;
    const bi = this.bi;
    const byte = ord >>> 3;
    const bit = 1 << (ord & 7);
    const promoteAt = this.rowBytes;
    for (const text of lcTexts) {
      const len = text.length;
      // Room for every occurrence of this text: the appends below need no bounds check.
      if (this.used + 3 * len > this.postings.length) this.postings = grownI32(this.postings, Math.max(this.postings.length * 2, this.used + 3 * len));
      const postings = this.postings;
      let meta = this.meta;
      let rows = this.rows;
      let rowAt = byte * this.rowCap;
      let used = this.used;
      let p2 = 0;
      let p1 = 0;
      for (let i = 0; i < len; i++) {
        const c = text.charCodeAt(i);
        let id = uni[c]!;
        if (id < 0) {
          id = uni[c] = this.newGram(P48 + c * P32);
          meta = this.meta;
        }
        let m: number;
        m = META * id;
        if (meta[m + LAST] !== tag) {
          meta[m + LAST] = tag;
          const count = ++meta[m + COUNT]!;
          const row = meta[m + ROW]!;
          if (row >= 0) rows[rowAt + row]! |= bit;
          else if (count > promoteAt) {
            rows = this.rowFor(id);
            rowAt = byte * this.rowCap;
            rows[rowAt + meta[m + ROW]!]! |= bit;
          } else postings[used++] = id;
        }
        if (i >= 1) {
          if ((p1 | c) < 256) {
            id = bi[(p1 << 8) | c]!;
            if (id < 0) {
              id = bi[(p1 << 8) | c] = this.newGram(2 * P48 + p1 * P32 + c * P16);
              meta = this.meta;
            }
          } else {
            id = this.find(0x20000 | p1, c << 16);
            meta = this.meta;
          }
          m = META * id;
          if (meta[m + LAST] !== tag) {
            meta[m + LAST] = tag;
            const count = ++meta[m + COUNT]!;
            const row = meta[m + ROW]!;
            if (row >= 0) rows[rowAt + row]! |= bit;
            else if (count > promoteAt) {
              rows = this.rowFor(id);
              rowAt = byte * this.rowCap;
              rows[rowAt + meta[m + ROW]!]! |= bit;
            } else postings[used++] = id;
          }
          if (i >= 2) {
            id = this.find(0x30000 | p2, (p1 << 16) | c);
            meta = this.meta;
            m = META * id;
            if (meta[m + LAST] !== tag) {
              meta[m + LAST] = tag;
              const count = ++meta[m + COUNT]!;
              const row = meta[m + ROW]!;
              if (row >= 0) rows[rowAt + row]! |= bit;
              else if (count > promoteAt) {
                rows = this.rowFor(id);
                rowAt = byte * this.rowCap;
                rows[rowAt + meta[m + ROW]!]! |= bit;
              } else postings[used++] = id;
            }
          }
        }
        p2 = p1;
        p1 = c;
      }
      this.used = used;
    }
    this.docEnds[ord] = this.used;
    this.docs = ord + 1;
  }

  /** Gives gram `id` a zeroed bitmap row; returns `rows` (maybe grown, and rowCap with it). */
  private rowFor(id: number): Uint8Array<ArrayBuffer> {
    const r = this.rowCount++;
    if (r === this.rowCap) {
      const cap = Math.max(ROWS_MIN, this.rowCap * 2);
      const grown = new Uint8Array(cap * this.rowBytes);
      for (let b = 0; b < this.rowBytes; b++) grown.set(this.rows.subarray(b * this.rowCap, (b + 1) * this.rowCap), b * cap);
      this.rows = grown;
      this.rowCap = cap;
    }
    this.meta[META * id + ROW] = r;
    return this.rows;
  }

  /**
   * The bytes of the shard file covering firstSeq..lastSeq (lastHash: the chained hash of lastSeq,
   * 64 lower-case hex digits), MAC'd under `key`: the format and bytes of shard.ts's encoder for a
   * live shard of the same documents. Throws a RangeError for a bad key or hash, a seq more than
   * 2^32 after firstSeq or a file that would pass 4 GiB (programmer errors). The builder is spent.
   */
  encode(lastSeq: number, lastHash: string, key: Buffer): Buffer {
    assertKey(key);
    if (!/^[0-9a-f]{64}$/.test(lastHash)) throw new RangeError('SortedShardBuilder.encode: lastHash is not 64 lower-case hex digits');
    const docs = this.docs;
    const grams = this.grams;
    const meta = this.meta;
    const bitmapBytes = Math.ceil(docs / 8);
    // Gram ids in key order.
    const sortedKeys = this.keys.slice(0, grams).sort();
    const order = new Int32Array(grams);
    for (let g = 0; g < grams; g++) order[g] = this.idOf(sortedKeys[g]!);
    // A gram in more documents than a bitmap has bytes is a bitmap (a varint takes at least a
    // byte): its bits are in its row of `rows` (given while adding, or here), its postings
    // appended before it had one are set there too. Every other gram's ordinals are
    // counting-sorted by id into `ords`, from start[id], ascending.
    const start = new Int32Array(grams);
    let listed = 0;
    for (let g = 0; g < grams; g++) {
      const id = order[g]!;
      const count = meta[META * id + COUNT]!;
      if (meta[META * id + ROW]! >= 0) continue;
      if (count > bitmapBytes) this.rowFor(id);
      else {
        start[id] = listed;
        listed += count;
      }
    }
    const rows = this.rows;
    const cap = this.rowCap;
    const fill = start.slice();
    const ords = docs <= P16 ? new Uint16Array(listed) : new Uint32Array(listed);
    const postings = this.postings;
    for (let ord = 0, j = 0; ord < docs; ord++) {
      const end = this.docEnds[ord]!;
      const byte = ord >>> 3;
      const bit = 1 << (ord & 7);
      for (; j < end; j++) {
        const id = postings[j]!;
        const r = meta[META * id + ROW]!;
        if (r >= 0) rows[byte * cap + r]! |= bit;
        else ords[fill[id]!++] = ord;
      }
    }
    this.release();
    // Per gram (in key order) its list's varint bytes; a bitmap of ceil(docs / 8) bytes when smaller.
    const vbytes = new Int32Array(grams);
    let postingsBytes = 0;
    for (let g = 0; g < grams; g++) {
      const id = order[g]!;
      if (meta[META * id + ROW]! >= 0) {
        vbytes[g] = bitmapBytes + 1;
        postingsBytes += bitmapBytes;
        continue;
      }
      const from = start[id]!;
      const to = from + meta[META * id + COUNT]!;
      let bytes = 0;
      let prev = 0;
      for (let i = from; i < to; i++) {
        const d = ords[i]! + 1 - prev;
        prev = ords[i]! + 1;
        bytes += d < 0x80 ? 1 : d < 0x4000 ? 2 : d < 0x200000 ? 3 : d < 0x10000000 ? 4 : 5;
      }
      vbytes[g] = bytes;
      postingsBytes += Math.min(bytes, bitmapBytes);
    }
    const seqTableOff = SHARD_HEADER_BYTES;
    const postingsOff = seqTableOff + docs * 4;
    const dictOff = postingsOff + postingsBytes;
    const sampleOff = dictOff + grams * SHARD_ENTRY_BYTES;
    const bloomWordCount = bloomWords(grams);
    const tailBytes = Math.ceil(grams / NGRAM_DICT_BLOCK_ENTRIES) * SHARD_SAMPLE_BYTES + bloomWordCount * 4;
    const fileBytes = sampleOff + tailBytes + SHARD_MAC_BYTES;
    if (fileBytes > 0xffffffff) throw new RangeError('SortedShardBuilder.encode: shard file would pass 4 GiB');
    const buf = Buffer.alloc(fileBytes);
    for (let ord = 0; ord < docs; ord++) {
      const delta = this.seqs[ord]! - this.firstSeq;
      if (delta < 0 || delta > 0xffffffff) throw new RangeError('SortedShardBuilder.encode: seq outside firstSeq..firstSeq+2^32');
      buf.writeUInt32LE(delta, seqTableOff + ord * 4);
    }
    const dict = buf.subarray(dictOff, sampleOff);
    let pos = postingsOff;
    for (let g = 0; g < grams; g++) {
      const id = order[g]!;
      const count = meta[META * id + COUNT]!;
      const row = meta[META * id + ROW]!;
      const at = pos;
      const bitmap = vbytes[g]! > bitmapBytes;
      if (row >= 0) {
        for (let b = 0; b < bitmapBytes; b++) buf[at + b] = rows[b * cap + row]!;
        pos += bitmapBytes;
      } else if (bitmap) {
        const to = start[id]! + count;
        for (let i = start[id]!; i < to; i++) buf[at + (ords[i]! >>> 3)]! |= 1 << (ords[i]! & 7);
        pos += bitmapBytes;
      } else {
        const to = start[id]! + count;
        let prev = 0;
        for (let i = start[id]!; i < to; i++) {
          let d = ords[i]! + 1 - prev;
          prev = ords[i]! + 1;
          while (d >= 0x80) {
            buf[pos++] = (d & 0x7f) | 0x80;
            d >>>= 7;
          }
          buf[pos++] = d;
        }
      }
      writeEntry(dict, g, sortedKeys[g]!, at - postingsOff, pos - at, count, bitmap, crc32(buf.subarray(at, pos)));
    }
    const bloom = new Uint32Array(bloomWordCount);
    for (let g = 0; g < grams; g++) bloomAdd(bloom, sortedKeys[g]!);
    const tail = sampleAndBloom(dict, grams, (g) => sortedKeys[g]!, bloom);
    tail.copy(buf, sampleOff);
    const metaCrc = crc32(tail, crc32(buf.subarray(seqTableOff, postingsOff)));
    shardHeader({ docs, firstSeq: this.firstSeq, lastSeq, lastHash, grams, postingsOff, dictOff, bloomWords: bloomWordCount, fileBytes, metaCrc }).copy(buf, 0);
    const macEnd = fileBytes - SHARD_MAC_BYTES;
    createHmac('sha256', key).update(buf.subarray(0, macEnd)).digest().copy(buf, macEnd);
    return buf;
  }

  /** Hands the postings array to the next builder (this one is spent). */
  private release(): void {
    this.rows = new Uint8Array(0);
    if (spare.length < SPARE_MAX && this.postings.length > 0) spare.push(this.postings);
    this.postings = new Int32Array(0);
  }

  /** The id of a bigram or trigram (hi, lo) not in `bi`, a new one when absent. */
  private find(hi: number, lo: number): number {
    const tHi = this.tHi;
    const mask = this.tMask;
    let i = slotHash(hi, lo) & mask;
    for (;;) {
      const h = tHi[i]!;
      if (h === hi && this.tLo[i] === lo) return this.tId[i]!;
      if (h === 0) break;
      i = (i + 1) & mask;
    }
    const id = this.newGram((hi >>> 16) * P48 + (hi & 0xffff) * P32 + (lo >>> 16) * P16 + (lo & 0xffff));
    tHi[i] = hi;
    this.tLo[i] = lo;
    this.tId[i] = id;
    if (++this.tUsed * 2 > mask) this.growTable();
    return id;
  }

  /** The id of gram key `key` (one held). */
  private idOf(key: number): number {
    const len = Math.floor(key / P48);
    const rest = key - len * P48;
    const c0 = Math.floor(rest / P32);
    const low = rest - c0 * P32;
    if (len === 1) return this.uni[c0]!;
    const c1 = Math.floor(low / P16);
    if (len === 2 && (c0 | c1) < 256) return this.bi[(c0 << 8) | c1]!;
    const hi = (len << 16) | c0;
    const lo = low | 0;
    let i = slotHash(hi, lo) & this.tMask;
    while (this.tHi[i] !== hi || this.tLo[i] !== lo) i = (i + 1) & this.tMask;
    return this.tId[i]!;
  }

  private newGram(key: number): number {
    const id = this.grams++;
    if (id === this.keys.length) {
      this.keys = grownF64(this.keys, id * 2);
      this.meta = grownI32(this.meta, META * id * 2);
    }
    this.keys[id] = key;
    this.meta[META * id + ROW] = -1;
    return id;
  }

  private growTable(): void {
    const [oldHi, oldLo, oldId] = [this.tHi, this.tLo, this.tId];
    const cap = oldHi.length * 2;
    const mask = cap - 1;
    this.tHi = new Int32Array(cap);
    this.tLo = new Int32Array(cap);
    this.tId = new Int32Array(cap);
    for (let j = 0; j < oldHi.length; j++) {
      const hi = oldHi[j]!;
      if (hi === 0) continue;
      let i = slotHash(hi, oldLo[j]!) & mask;
      while (this.tHi[i] !== 0) i = (i + 1) & mask;
      this.tHi[i] = hi;
      this.tLo[i] = oldLo[j]!;
      this.tId[i] = oldId[j]!;
    }
    this.tMask = mask;
  }
}

/** 32-bit hash of a gram's two int32 halves, for the open-addressing table. */
function slotHash(hi: number, lo: number): number {
  let h = Math.imul(hi, 0x9e3779b1) ^ lo;
  h = Math.imul(h ^ (h >>> 15), 0x85ebca6b);
  return h ^ (h >>> 13);
}

function grownF64(a: Float64Array, length: number): Float64Array<ArrayBuffer> {
  const out = new Float64Array(length);
  out.set(a);
  return out;
}

function grownI32(a: Int32Array, length: number): Int32Array<ArrayBuffer> {
  const out = new Int32Array(length);
  out.set(a);
  return out;
}
