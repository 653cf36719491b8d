/**
 * Immutable n-gram shard files: encoding a sealed live shard, and reading one with positional
 * reads (docs/internals/search-index.md; issues 17 and 30).
 *
 * File `<firstSeq 16 digits>-<lastSeq 16 digits>.ngram`, little-endian, format 3 in this order:
 *   header (128 bytes): magic "AFNGRAM\n", format version, docs, firstSeq, lastSeq (f64), lastHash
 *     (32 bytes), grams, entries per dictionary block, section offsets (seq table 72, sample 76,
 *     dictionary 80, postings 84, Bloom filter 96), file bytes (88), metaCrc (92: crc32 of the
 *     ordinal → seq table continued over the sample and the Bloom filter), Bloom filter words
 *     (100), headerCrc (124: crc32 of header bytes 0..124);
 *   ordinal → seq table: docs × u32 (seq − firstSeq), ascending;
 *   postings: per gram either delta varints of ordinals or, when smaller, a bitmap of docs bits
 *     (before the dictionary, so a merge can stream them);
 *   dictionary: grams × 24-byte entries sorted by key: key (f64), postings offset (u32, from the
 *     postings section), postings bytes (u32), docs (u32; bit 31 set = bitmap), crc32 of the list;
 *   sample: per dictionary block, its first key (f64) and the crc32 of the block (u32);
 *   Bloom filter (bloom.ts): u32 words over the file's gram keys;
 *   mac: HMAC-SHA-256 under the data folder's derived-file key (store/derived-key.ts) of every
 *     byte before it. File bytes (header) count it.
 * Format 2 (still read) has no Bloom filter and the order header, table, sample, dictionary,
 * postings, mac; its metaCrc covers the table and the sample.
 * Every byte after the header is covered by a checksum: the table, sample and filter by metaCrc
 * (checked on open), each dictionary block by its sample crc and each posting list by its entry
 * crc (checked on every read), against accidental damage found after open. The CRCs can be recomputed
 * by anyone, so they do not detect a deliberate edit (postings removed to hide a message from
 * `q`); the MAC does: it is checked over the whole file when the file is opened (about 1 ms per
 * MB, once per start), and a file that fails it is dropped and rebuilt from the log. A version 1
 * file carries no MAC and is rebuilt once.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { endianness } from 'node:os';
import { performance } from 'node:perf_hooks';
import { crc32 } from 'node:zlib';
import { DERIVED_KEY_BYTES, NGRAM_DICT_BLOCK_ENTRIES, NGRAM_FORMAT_VERSION, SHARD_MAC_READ_BYTES } from '../../constants.js';
import { lowerBound, upperBound } from '../../containers/binary-search.js';
import { decodeDeltas, type LiveShard } from './live.js';
import { bloomAdd, bloomMayHave, bloomWords } from './bloom.js';

/** What a shard covers: log records firstSeq..lastSeq (lastHash: the chained hash of lastSeq), holding `docs` documents in `bytes` bytes of file. */
export interface ShardMeta {
  firstSeq: number;
  lastSeq: number;
  lastHash: string;
  docs: number;
  bytes: number;
}

/** A shard file failed a check; `reason` says which. Internal to src/store/search. */
export class ShardDamage extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'ShardDamage';
  }
}

const MAGIC = Buffer.from('AFNGRAM\n', 'latin1');
/** Header bytes. */
export const SHARD_HEADER_BYTES = 128;
const ENTRY_BYTES = 24;
/** Bytes of the MAC that ends the file. */
const MAC_BYTES = 32;
const SAMPLE_BYTES = 12;
const BITMAP_FLAG = 0x80000000;
const FILE_NAME = /^(\d{16})-(\d{16})\.ngram$/;

/** File name of the shard covering firstSeq..lastSeq. */
export function shardFileName(firstSeq: number, lastSeq: number): string {
  return `${String(firstSeq).padStart(16, '0')}-${String(lastSeq).padStart(16, '0')}.ngram`;
}

/** (firstSeq, lastSeq) of a shard file name, or null for any other name. */
export function parseShardFileName(name: string): { firstSeq: number; lastSeq: number } | null {
  const m = FILE_NAME.exec(name);
  return m ? { firstSeq: Number(m[1]), lastSeq: Number(m[2]) } : null;
}

/** Throws a RangeError unless `key` is a derived-file key (DERIVED_KEY_BYTES bytes). */
export function assertKey(key: unknown): asserts key is Buffer {
  if (!Buffer.isBuffer(key) || key.length !== DERIVED_KEY_BYTES) throw new RangeError(`shard key must be a Buffer of ${DERIVED_KEY_BYTES} bytes`);
}

/**
 * Encodes a frozen live shard (lastSeq, lastHash set) as the bytes of its shard file, yielding to
 * the event loop whenever a slice has run `sliceMs` ms (about 0.1 s of CPU for a full shard of
 * 32768 typical documents). Rejects with a RangeError when a section would pass 4 GiB, a seq lies
 * more than 2^32 after firstSeq or lastHash is not 64 hex digits (programmer errors). The file's
 * MAC is made with `key` (32 bytes; a RangeError otherwise).
 */
export async function encodeShardSliced(live: LiveShard, sliceMs: number, key: Buffer): Promise<Buffer> {
  const steps = encodeSteps(live, key);
  let start = performance.now();
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    if (performance.now() - start >= sliceMs) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      start = performance.now();
    }
  }
}

/** Grams encoded between two points where encodeShardSliced may yield (32 times as many seq-table entries). */
const ENCODE_STEP_GRAMS = 64;

/** The work of encodeShardSliced, as steps of ENCODE_STEP_GRAMS grams; returns the file's bytes. */
function* encodeSteps(live: LiveShard, key: Buffer): Generator<void, Buffer, undefined> {
  assertKey(key);
  if (!/^[0-9a-f]{64}$/.test(live.lastHash)) throw new RangeError('encodeShard: lastHash is not 64 lower-case hex digits');
  const docs = live.docs;
  const keys = live.sortedKeys();
  const grams = keys.length;
  const blocks = Math.ceil(grams / NGRAM_DICT_BLOCK_ENTRIES);
  const bitmapBytes = Math.ceil(docs / 8);
  const slots = new Uint32Array(grams);
  let postingsBytes = 0;
  for (let g = 0; g < grams; g++) {
    if (g % ENCODE_STEP_GRAMS === 0) yield;
    const slot = live.lookup(keys[g]!);
    slots[g] = slot;
    postingsBytes += live.isBitmap(slot) ? bitmapBytes : Math.min(live.postingBytes(slot), bitmapBytes);
  }
  const seqTableOff = SHARD_HEADER_BYTES;
  const postingsOff = seqTableOff + docs * 4;
  const dictOff = postingsOff + postingsBytes;
  const sampleOff = dictOff + grams * ENTRY_BYTES;
  const bloomOff = sampleOff + blocks * SAMPLE_BYTES;
  const bloomWordCount = bloomWords(grams);
  const fileBytes = bloomOff + bloomWordCount * 4 + MAC_BYTES;
  if (fileBytes > 0xffffffff) throw new RangeError('encodeShard: shard file would pass 4 GiB');
  const buf = Buffer.alloc(fileBytes);

  for (let ord = 0; ord < docs; ord++) {
    if (ord % (ENCODE_STEP_GRAMS * 32) === 0) yield;
    const delta = live.seqAt(ord) - live.firstSeq;
    if (delta < 0 || delta > 0xffffffff) throw new RangeError('encodeShard: seq outside firstSeq..firstSeq+2^32');
    buf.writeUInt32LE(delta, seqTableOff + ord * 4);
  }
  const ords = new Uint32Array(docs);
  let pos = postingsOff;
  for (let g = 0; g < grams; g++) {
    if (g % ENCODE_STEP_GRAMS === 0) yield;
    const slot = slots[g]!;
    const start = pos;
    const count = live.count(slot);
    const varintBytes = live.postingBytes(slot);
    let flag = 0;
    if (live.isBitmap(slot)) {
      live.writeBitmap(slot, buf, pos);
      pos += bitmapBytes;
      flag = BITMAP_FLAG;
    } else if (varintBytes <= bitmapBytes) {
      pos = live.copyPostings(slot, buf, pos);
    } else {
      const n = live.decode(slot, ords);
      for (let i = 0; i < n; i++) buf[pos + (ords[i]! >>> 3)]! |= 1 << (ords[i]! & 7);
      pos += bitmapBytes;
      flag = BITMAP_FLAG;
    }
    const e = dictOff + g * ENTRY_BYTES;
    buf.writeDoubleLE(keys[g]!, e);
    buf.writeUInt32LE(start - postingsOff, e + 8);
    buf.writeUInt32LE(pos - start, e + 12);
    buf.writeUInt32LE((count | flag) >>> 0, e + 16);
    buf.writeUInt32LE(crc32(buf.subarray(start, pos)), e + 20);
  }
  const bloom = new Uint32Array(bloomWordCount);
  for (let g = 0; g < grams; g++) {
    if (g % (ENCODE_STEP_GRAMS * 32) === 0) yield;
    bloomAdd(bloom, keys[g]!);
  }
  const tail = sampleAndBloom(buf.subarray(dictOff, sampleOff), grams, (g) => keys[g]!, bloom);
  tail.copy(buf, sampleOff);
  const metaCrc = crc32(tail, crc32(buf.subarray(seqTableOff, postingsOff)));
  shardHeader({ docs, firstSeq: live.firstSeq, lastSeq: live.lastSeq, lastHash: live.lastHash, grams, postingsOff, dictOff, bloomWords: bloomWordCount, fileBytes, metaCrc }).copy(buf, 0);
  const macEnd = fileBytes - MAC_BYTES;
  const mac = createHmac('sha256', key);
  for (let at = 0; at < macEnd; at += SHARD_MAC_READ_BYTES) {
    mac.update(buf.subarray(at, Math.min(macEnd, at + SHARD_MAC_READ_BYTES)));
    yield;
  }
  mac.digest().copy(buf, macEnd);
  return buf;
}

/** Where a format 3 file's sections lie and what its header says (see the module comment). */
export interface ShardLayout {
  docs: number;
  firstSeq: number;
  lastSeq: number;
  lastHash: string;
  grams: number;
  postingsOff: number;
  dictOff: number;
  bloomWords: number;
  fileBytes: number;
  /** crc32 of the seq table, continued over the sample and the Bloom filter. */
  metaCrc: number;
}

/** The 128-byte header of a format 3 file; the sample and filter follow the dictionary. */
export function shardHeader(l: ShardLayout): Buffer {
  const header = Buffer.alloc(SHARD_HEADER_BYTES);
  const sampleOff = l.dictOff + l.grams * ENTRY_BYTES;
  MAGIC.copy(header, 0);
  header.writeUInt32LE(NGRAM_FORMAT_VERSION, 8);
  header.writeUInt32LE(l.docs, 12);
  header.writeDoubleLE(l.firstSeq, 16);
  header.writeDoubleLE(l.lastSeq, 24);
  header.write(l.lastHash, 32, 32, 'hex');
  header.writeUInt32LE(l.grams, 64);
  header.writeUInt32LE(NGRAM_DICT_BLOCK_ENTRIES, 68);
  header.writeUInt32LE(SHARD_HEADER_BYTES, 72);
  header.writeUInt32LE(sampleOff, 76);
  header.writeUInt32LE(l.dictOff, 80);
  header.writeUInt32LE(l.postingsOff, 84);
  header.writeUInt32LE(l.fileBytes, 88);
  header.writeUInt32LE(l.metaCrc, 92);
  header.writeUInt32LE(sampleOff + Math.ceil(l.grams / NGRAM_DICT_BLOCK_ENTRIES) * SAMPLE_BYTES, 96);
  header.writeUInt32LE(l.bloomWords, 100);
  header.writeUInt32LE(crc32(header.subarray(0, 124)), 124);
  return header;
}

/**
 * The bytes that follow a format 3 file's dictionary `dict` (grams × 24 bytes, sorted; `keyAt(g)`
 * its g-th key): the sample (per block of NGRAM_DICT_BLOCK_ENTRIES entries, its first key and the
 * crc32 of the block) and then the Bloom filter's words.
 */
export function sampleAndBloom(dict: Buffer, grams: number, keyAt: (g: number) => number, bloom: Uint32Array): Buffer {
  const blocks = Math.ceil(grams / NGRAM_DICT_BLOCK_ENTRIES);
  const out = Buffer.alloc(blocks * SAMPLE_BYTES + bloom.length * 4);
  for (let b = 0; b < blocks; b++) {
    const first = b * NGRAM_DICT_BLOCK_ENTRIES * ENTRY_BYTES;
    const end = Math.min(grams * ENTRY_BYTES, first + NGRAM_DICT_BLOCK_ENTRIES * ENTRY_BYTES);
    out.writeDoubleLE(keyAt(b * NGRAM_DICT_BLOCK_ENTRIES), b * SAMPLE_BYTES);
    out.writeUInt32LE(crc32(dict.subarray(first, end)), b * SAMPLE_BYTES + 8);
  }
  const at = blocks * SAMPLE_BYTES;
  for (let w = 0; w < bloom.length; w++) out.writeUInt32LE(bloom[w]!, at + w * 4);
  return out;
}

/** Writes dictionary entry `g` (key, postings offset and bytes, count with the bitmap flag, list crc) into `dict`. */
export function writeEntry(dict: Buffer, g: number, key: number, offset: number, bytes: number, count: number, bitmap: boolean, crc: number): void {
  const e = g * ENTRY_BYTES;
  dict.writeDoubleLE(key, e);
  dict.writeUInt32LE(offset, e + 8);
  dict.writeUInt32LE(bytes, e + 12);
  dict.writeUInt32LE((count | (bitmap ? BITMAP_FLAG : 0)) >>> 0, e + 16);
  dict.writeUInt32LE(crc, e + 20);
}

/** Bytes of one dictionary entry. */
export const SHARD_ENTRY_BYTES = ENTRY_BYTES;
/** Bytes of the MAC that ends a shard file. */
export const SHARD_MAC_BYTES = MAC_BYTES;
/** Bytes of one sample entry (a dictionary block's first key and crc32). */
export const SHARD_SAMPLE_BYTES = SAMPLE_BYTES;

/**
 * Whether the MAC at the end of the open shard file `fd` (`size` bytes) is the HMAC under `key`
 * of every byte before it. Reads the whole file in SHARD_MAC_READ_BYTES steps. Throws ShardDamage
 * for a short read.
 */
function macMatches(fd: number, size: number, key: Buffer): boolean {
  const macEnd = size - MAC_BYTES;
  const mac = createHmac('sha256', key);
  const buf = scratchOf(Math.min(SHARD_MAC_READ_BYTES, Math.max(macEnd, MAC_BYTES)));
  for (let at = 0; at < macEnd; ) {
    const n = readSync(fd, buf, 0, Math.min(buf.length, macEnd - at), at);
    if (n === 0) throw new ShardDamage('short read');
    mac.update(buf.subarray(0, n));
    at += n;
  }
  const stored = Buffer.alloc(MAC_BYTES);
  if (readSync(fd, stored, 0, MAC_BYTES, macEnd) !== MAC_BYTES) throw new ShardDamage('short read');
  return timingSafeEqual(mac.digest(), stored);
}

/** A dictionary entry: where a gram's posting list lies and how many documents it holds. */
export interface PostingEntry {
  count: number;
  offset: number;
  bytes: number;
  bitmap: boolean;
  crc: number;
}

/** Read buffer shared by every reader: all reads are synchronous and consumed before the next. */
let scratch = Buffer.alloc(64 * 1024);
function scratchOf(bytes: number): Buffer {
  if (scratch.length < bytes) scratch = Buffer.alloc(Math.max(bytes, scratch.length * 2));
  return scratch;
}

/**
 * An open shard file. Holds in memory only the ordinal → seq table (4 bytes per document) and one
 * key and crc per dictionary block (12 bytes per 64 grams); a gram lookup is one positional read
 * of a dictionary block, a posting list one more.
 */
export class ShardReader {
  private fd: number;
  private readonly seqDeltas: Uint32Array;
  private readonly sampleKeys: Float64Array;
  private readonly blockCrcs: Uint32Array;
  /** The Bloom filter over the file's grams (format 3), or null (format 2: every key may be there). */
  private readonly bloom: Uint32Array | null;
  /** Grams in the dictionary. */
  readonly grams: number;
  private readonly dictOff: number;
  private readonly postingsOff: number;
  /** End of the postings section. */
  private readonly postingsEnd: number;
  /** What the file covers. */
  readonly meta: ShardMeta;
  /** The format version the file was written in (2 or 3). */
  readonly version: number;
  /**
   * The merged file that replaced this one (its range covers this file's), set when a merge is
   * adopted: a query that listed this file before the swap reads the merged file, restricted to
   * this file's seqs.
   */
  supersededBy: ShardReader | null = null;

  private constructor(fd: number, meta: ShardMeta, layout: ReaderLayout) {
    this.fd = fd;
    this.meta = meta;
    this.version = layout.version;
    this.grams = layout.grams;
    this.dictOff = layout.dictOff;
    this.postingsOff = layout.postingsOff;
    this.postingsEnd = layout.postingsEnd;
    this.seqDeltas = layout.seqDeltas;
    this.sampleKeys = layout.sampleKeys;
    this.blockCrcs = layout.blockCrcs;
    this.bloom = layout.bloom;
  }

  /**
   * Opens `path` and checks its header (magic, version 2 or 3, header crc, offsets, size, the seqs
   * its name promises), its table, sample and Bloom filter (metaCrc) and its MAC under `key` over
   * the whole file — unless `macChecked` (a file this process wrote and made the MAC of). Throws
   * ShardDamage naming the failed check; file-system errors (ENOENT, EACCES) propagate as they
   * are; a key that is not 32 bytes is a RangeError.
   */
  static open(path: string, expect: { firstSeq: number; lastSeq: number }, key: Buffer, macChecked = false): ShardReader {
    assertKey(key);
    const fd = openSync(path, 'r');
    try {
      const size = fstatSync(fd).size;
      const header = Buffer.alloc(SHARD_HEADER_BYTES);
      if (size < SHARD_HEADER_BYTES || readSync(fd, header, 0, SHARD_HEADER_BYTES, 0) !== SHARD_HEADER_BYTES) {
        throw new ShardDamage('shorter than a shard header');
      }
      if (!header.subarray(0, 8).equals(MAGIC)) throw new ShardDamage('not a shard file (magic)');
      if (crc32(header.subarray(0, 124)) !== header.readUInt32LE(124)) throw new ShardDamage('header checksum mismatch');
      const version = header.readUInt32LE(8);
      if (version !== NGRAM_FORMAT_VERSION && version !== 2) throw new ShardDamage(`format version ${version}, expected 2 or ${NGRAM_FORMAT_VERSION}`);
      const docs = header.readUInt32LE(12);
      const firstSeq = header.readDoubleLE(16);
      const lastSeq = header.readDoubleLE(24);
      if (firstSeq !== expect.firstSeq || lastSeq !== expect.lastSeq) throw new ShardDamage('header seqs differ from the file name');
      const layout = version === 2 ? readLayoutV2(fd, header, size) : readLayoutV3(fd, header, size);
      if (!macChecked && !macMatches(fd, size, key)) throw new ShardDamage('fails its authentication (HMAC: edited, or written without this folder\'s key)');
      const meta: ShardMeta = { firstSeq, lastSeq, lastHash: header.toString('hex', 32, 64), docs, bytes: size };
      return new ShardReader(fd, meta, layout);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
  }

  /** False when no document of this file holds `key` (the Bloom filter says so); true when one may. */
  mayHave(key: number): boolean {
    return this.bloom === null || bloomMayHave(this.bloom, key);
  }

  /** The seq of each ordinal minus firstSeq (ascending; do not modify). */
  get seqTable(): Uint32Array {
    return this.seqDeltas;
  }

  /**
   * Dictionary block `b` (0 ≤ b < ceil(grams / NGRAM_DICT_BLOCK_ENTRIES)) as its entries in a
   * fresh buffer, checked against its crc; read them with entryOf. Throws ShardDamage.
   */
  readBlock(b: number): Buffer {
    const entries = Math.min(NGRAM_DICT_BLOCK_ENTRIES, this.grams - b * NGRAM_DICT_BLOCK_ENTRIES);
    const len = entries * ENTRY_BYTES;
    const buf = Buffer.alloc(len);
    if (readSync(this.fd, buf, 0, len, this.dictOff + b * NGRAM_DICT_BLOCK_ENTRIES * ENTRY_BYTES) !== len) throw new ShardDamage('short read of a dictionary block');
    if (crc32(buf) !== this.blockCrcs[b]) throw new ShardDamage(`dictionary block ${b} checksum mismatch`);
    return buf;
  }

  /** True once close() ran. */
  get closed(): boolean {
    return this.fd < 0;
  }

  /** Log seq of the document with ordinal `ord`. */
  seqAt(ord: number): number {
    return this.meta.firstSeq + this.seqDeltas[ord]!;
  }

  /** Where `key`'s posting list lies, or null when no document of this shard holds it. Throws ShardDamage when its dictionary block fails its checksum. */
  lookup(key: number): PostingEntry | null {
    const sample = this.sampleKeys;
    // The last dictionary block whose first key is at most `key` (none: no block can hold it).
    const lo = upperBound(sample.length, (i) => sample[i]!, key) - 1;
    if (lo < 0) return null;
    const entries = Math.min(NGRAM_DICT_BLOCK_ENTRIES, this.grams - lo * NGRAM_DICT_BLOCK_ENTRIES);
    const len = entries * ENTRY_BYTES;
    const buf = scratchOf(len);
    const at = this.dictOff + lo * NGRAM_DICT_BLOCK_ENTRIES * ENTRY_BYTES;
    if (readSync(this.fd, buf, 0, len, at) !== len) throw new ShardDamage('short read of a dictionary block');
    if (crc32(buf.subarray(0, len)) !== this.blockCrcs[lo]) throw new ShardDamage(`dictionary block ${lo} checksum mismatch`);
    const found = lowerBound(entries, (i) => buf.readDoubleLE(i * ENTRY_BYTES), key);
    if (found === entries || buf.readDoubleLE(found * ENTRY_BYTES) !== key) return null;
    return entryOf(buf, found);
  }

  /** Reads and checks one posting list; returns a buffer valid until the next read. Throws ShardDamage. */
  private readList(entry: PostingEntry): Buffer {
    const buf = scratchOf(entry.bytes);
    const at = this.postingsOff + entry.offset;
    if (at + entry.bytes > this.postingsEnd) throw new ShardDamage('posting list beyond the end of the file');
    if (readSync(this.fd, buf, 0, entry.bytes, at) !== entry.bytes) throw new ShardDamage('short read of a posting list');
    if (crc32(buf.subarray(0, entry.bytes)) !== entry.crc) throw new ShardDamage('posting list checksum mismatch');
    return buf;
  }

  /** Decodes `entry`'s ordinals, ascending, into `into`; returns how many. Throws ShardDamage. */
  decode(entry: PostingEntry, into: Uint32Array): number {
    const buf = this.readList(entry);
    let n: number;
    if (entry.bitmap) {
      n = 0;
      const docs = this.meta.docs;
      for (let byte = 0; byte < entry.bytes; byte++) {
        let bits = buf[byte]!;
        while (bits !== 0) {
          const low = bits & -bits;
          const ord = byte * 8 + (31 - Math.clz32(low));
          if (ord >= docs || n >= into.length) throw new ShardDamage('bitmap bit beyond the last document');
          into[n++] = ord;
          bits ^= low;
        }
      }
    } else {
      n = decodeDeltas(buf, 0, entry.bytes, into);
      if (n < 0 || (n > 0 && into[n - 1]! >= this.meta.docs)) throw new ShardDamage('malformed posting list');
    }
    if (n !== entry.count) throw new ShardDamage('posting list length differs from its entry');
    return n;
  }

  /**
   * ORs `entry`'s ordinals, each plus `bitBase`, as bits into the bitmap that starts at `out[at]`
   * (a merge's output list, issue 39). A bitmap list starting on a byte boundary (bitBase a
   * multiple of 8) is ORed byte by byte, with no decoding; any other is decoded into `tmp` (room
   * for entry.count ordinals) and set bit by bit. Throws ShardDamage (checksum; a decoded list as
   * decode() checks it; a copied bitmap's bits were covered by the file's MAC at open).
   */
  orBitsInto(entry: PostingEntry, out: Uint8Array, at: number, bitBase: number, tmp: Uint32Array): void {
    if (entry.bitmap && bitBase % 8 === 0) {
      const buf = this.readList(entry);
      const o = at + bitBase / 8;
      for (let j = 0; j < entry.bytes; j++) out[o + j]! |= buf[j]!;
      return;
    }
    const n = this.decode(entry, tmp);
    for (let i = 0; i < n; i++) {
      const bit = bitBase + tmp[i]!;
      out[at + (bit >>> 3)]! |= 1 << (bit & 7);
    }
  }

  /**
   * Keeps in `ords[0, n)` (ascending) only the ordinals also in `entry`'s list; returns the new
   * count. A bitmap list is tested bit by bit; a varint list is decoded into `tmp` and merged.
   * Throws ShardDamage.
   */
  filter(entry: PostingEntry, ords: Uint32Array, n: number, tmp: Uint32Array): number {
    if (entry.bitmap) {
      const buf = this.readList(entry);
      let m = 0;
      for (let i = 0; i < n; i++) {
        const ord = ords[i]!;
        if (buf[ord >>> 3]! & (1 << (ord & 7))) ords[m++] = ord;
      }
      return m;
    }
    return intersectInto(ords, n, tmp, this.decode(entry, tmp));
  }

  /** Bytes of memory held for this shard (seq table, sample, Bloom filter). */
  memoryBytes(): number {
    return this.seqDeltas.byteLength + this.sampleKeys.byteLength + this.blockCrcs.byteLength + (this.bloom?.byteLength ?? 0);
  }

  /** Closes the file; later lookups must not be made. */
  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }
}

/** The key of entry `i` of a dictionary block read by readBlock. */
export function keyOfEntry(block: Buffer, i: number): number {
  return block.readDoubleLE(i * ENTRY_BYTES);
}

/** Entry `i` of a dictionary block (a buffer of 24-byte entries). */
export function entryOf(block: Buffer, i: number): PostingEntry {
  const e = i * ENTRY_BYTES;
  const countAndFlag = block.readUInt32LE(e + 16);
  return {
    count: countAndFlag & 0x7fffffff,
    offset: block.readUInt32LE(e + 8),
    bytes: block.readUInt32LE(e + 12),
    bitmap: (countAndFlag & BITMAP_FLAG) !== 0,
    crc: block.readUInt32LE(e + 20),
  };
}

/** What ShardReader keeps of a file, read and checked by readLayoutV2/V3. */
interface ReaderLayout {
  version: number;
  grams: number;
  dictOff: number;
  postingsOff: number;
  postingsEnd: number;
  seqDeltas: Uint32Array;
  sampleKeys: Float64Array;
  blockCrcs: Uint32Array;
  bloom: Uint32Array | null;
}

function readExact(fd: number, at: number, bytes: number): Buffer {
  const buf = Buffer.alloc(bytes);
  if (bytes > 0 && readSync(fd, buf, 0, bytes, at) !== bytes) throw new ShardDamage('short read');
  return buf;
}

const LITTLE_ENDIAN = endianness() === 'LE';

/** `count` little-endian u32s of `buf` from byte `at`, as a fresh array (one copy on a little-endian host). */
function u32sOf(buf: Buffer, at: number, count: number): Uint32Array {
  const out = new Uint32Array(count);
  if (LITTLE_ENDIAN) new Uint8Array(out.buffer).set(buf.subarray(at, at + count * 4));
  else for (let i = 0; i < count; i++) out[i] = buf.readUInt32LE(at + i * 4);
  return out;
}

function seqTableOf(buf: Buffer, docs: number): Uint32Array {
  return u32sOf(buf, 0, docs);
}

function sampleOf(buf: Buffer, blocks: number): { sampleKeys: Float64Array; blockCrcs: Uint32Array } {
  const sampleKeys = new Float64Array(blocks);
  const blockCrcs = new Uint32Array(blocks);
  for (let b = 0; b < blocks; b++) {
    sampleKeys[b] = buf.readDoubleLE(b * SAMPLE_BYTES);
    blockCrcs[b] = buf.readUInt32LE(b * SAMPLE_BYTES + 8);
  }
  return { sampleKeys, blockCrcs };
}

/** The section offsets and counts a header of format 2 or 3 records (each layout checks them). */
function headerSections(header: Buffer) {
  return {
    docs: header.readUInt32LE(12),
    grams: header.readUInt32LE(64),
    seqTableOff: header.readUInt32LE(72),
    sampleOff: header.readUInt32LE(76),
    dictOff: header.readUInt32LE(80),
    postingsOff: header.readUInt32LE(84),
    fileBytes: header.readUInt32LE(88),
  };
}

/** Format 2: header | seq table | sample | dictionary | postings | MAC; metaCrc covers table and sample. */
function readLayoutV2(fd: number, header: Buffer, size: number): ReaderLayout {
  const { docs, grams, seqTableOff, sampleOff, dictOff, postingsOff, fileBytes } = headerSections(header);
  const blocks = Math.ceil(grams / NGRAM_DICT_BLOCK_ENTRIES);
  if (
    header.readUInt32LE(68) !== NGRAM_DICT_BLOCK_ENTRIES ||
    seqTableOff !== SHARD_HEADER_BYTES ||
    sampleOff !== seqTableOff + docs * 4 ||
    dictOff !== sampleOff + blocks * SAMPLE_BYTES ||
    postingsOff !== dictOff + grams * ENTRY_BYTES ||
    fileBytes < postingsOff + MAC_BYTES
  ) {
    throw new ShardDamage('inconsistent section offsets');
  }
  if (size !== fileBytes) throw new ShardDamage(`file is ${size} bytes, header says ${fileBytes}`);
  const body = readExact(fd, SHARD_HEADER_BYTES, dictOff - SHARD_HEADER_BYTES);
  if (crc32(body) !== header.readUInt32LE(92)) throw new ShardDamage('seq table or sample checksum mismatch');
  return { version: 2, grams, dictOff, postingsOff, postingsEnd: fileBytes - MAC_BYTES, seqDeltas: seqTableOf(body, docs), ...sampleOf(body.subarray(sampleOff - SHARD_HEADER_BYTES), blocks), bloom: null };
}

/** Format 3: header | seq table | postings | dictionary | sample | Bloom filter | MAC; metaCrc covers table, sample and filter. */
function readLayoutV3(fd: number, header: Buffer, size: number): ReaderLayout {
  const { docs, grams, seqTableOff, sampleOff, dictOff, postingsOff, fileBytes } = headerSections(header);
  const bloomOff = header.readUInt32LE(96);
  const bloomWordCount = header.readUInt32LE(100);
  const blocks = Math.ceil(grams / NGRAM_DICT_BLOCK_ENTRIES);
  if (
    header.readUInt32LE(68) !== NGRAM_DICT_BLOCK_ENTRIES ||
    seqTableOff !== SHARD_HEADER_BYTES ||
    postingsOff !== seqTableOff + docs * 4 ||
    dictOff < postingsOff ||
    sampleOff !== dictOff + grams * ENTRY_BYTES ||
    bloomOff !== sampleOff + blocks * SAMPLE_BYTES ||
    bloomWordCount < 1 ||
    fileBytes !== bloomOff + bloomWordCount * 4 + MAC_BYTES
  ) {
    throw new ShardDamage('inconsistent section offsets');
  }
  if (size !== fileBytes) throw new ShardDamage(`file is ${size} bytes, header says ${fileBytes}`);
  const table = readExact(fd, seqTableOff, docs * 4);
  const tail = readExact(fd, sampleOff, fileBytes - MAC_BYTES - sampleOff);
  if (crc32(tail, crc32(table)) !== header.readUInt32LE(92)) throw new ShardDamage('seq table or sample checksum mismatch (or of its Bloom filter)');
  const bloom = u32sOf(tail, blocks * SAMPLE_BYTES, bloomWordCount);
  return { version: 3, grams, dictOff, postingsOff, postingsEnd: dictOff, seqDeltas: seqTableOf(table, docs), ...sampleOf(tail, blocks), bloom };
}

/** Intersects ascending `a[0, n)` with ascending `b[0, m)` into `a`; returns the new count. */
export function intersectInto(a: Uint32Array, n: number, b: Uint32Array, m: number): number {
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < n && j < m) {
    const x = a[i]!;
    const y = b[j]!;
    if (x === y) {
      a[k++] = x;
      i++;
      j++;
    } else if (x < y) i++;
    else j++;
  }
  return k;
}
