/**
 * Merging neighbouring shard files into one (issue 30 "Search segments that merge";
 * docs/internals/search-index.md). Synchronous file I/O: it runs on a worker thread (merge-worker.ts), never on
 * the event loop.
 *
 * The inputs cover contiguous seq ranges, oldest first; the merged file covers their union. Its
 * ordinal → seq table is the inputs' tables concatenated, so input k's ordinal o becomes
 * (documents of inputs 0..k−1) + o. The dictionaries are merged k-way by key (each read block by
 * block, each block checked against its crc); a gram's lists are decoded, renumbered,
 * concatenated and written as delta varints or a bitmap, whichever is smaller. Postings stream to
 * the file as they are made (format 3 puts them before the dictionary), so memory holds only the
 * merged dictionary (24 bytes a gram) and its Bloom filter. The header is written last, then the
 * MAC over the file as read back from it, then the file is fsynced: the caller renames it into
 * place.
 */
import { createHmac } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readSync, writeSync } from 'node:fs';
import { crc32 } from 'node:zlib';
import { NGRAM_DICT_BLOCK_ENTRIES, NGRAM_MERGE_WRITE_BYTES, SHARD_MAC_READ_BYTES } from '../../constants.js';
import { bloomAdd, bloomWords } from './bloom.js';
import { assertKey, entryOf, keyOfEntry, sampleAndBloom, SHARD_ENTRY_BYTES, SHARD_HEADER_BYTES, SHARD_MAC_BYTES, shardHeader, ShardReader, writeEntry, type PostingEntry } from './shard.js';

/** One input of a merge: a shard file and the seqs its name says it covers. */
export interface MergeInput {
  path: string;
  firstSeq: number;
  lastSeq: number;
}

/** What a merge wrote. */
export interface MergeResult {
  /** Bytes of the merged file. */
  bytes: number;
  docs: number;
  grams: number;
}

/** A dictionary read block by block. */
class DictCursor {
  private block: Buffer | null = null;
  private blockIndex = -1;
  /** Index of the current entry in the dictionary; grams when exhausted. */
  g = 0;
  constructor(readonly reader: ShardReader) {
    this.load();
  }

  private load(): void {
    if (this.g >= this.reader.grams) return;
    const b = Math.floor(this.g / NGRAM_DICT_BLOCK_ENTRIES);
    if (b !== this.blockIndex) {
      this.block = this.reader.readBlock(b);
      this.blockIndex = b;
    }
  }

  get done(): boolean {
    return this.g >= this.reader.grams;
  }

  get key(): number {
    return keyOfEntry(this.block!, this.g % NGRAM_DICT_BLOCK_ENTRIES);
  }

  entry(): ReturnType<typeof entryOf> {
    return entryOf(this.block!, this.g % NGRAM_DICT_BLOCK_ENTRIES);
  }

  next(): void {
    this.g++;
    this.load();
  }
}

/** Appends bytes to a file through a buffer of NGRAM_MERGE_WRITE_BYTES. */
class Appender {
  private buf = Buffer.alloc(NGRAM_MERGE_WRITE_BYTES);
  private used = 0;
  /** File position of the next byte appended. */
  pos: number;
  constructor(
    private readonly fd: number,
    start: number,
  ) {
    this.pos = start;
  }

  /** Room for `bytes` more bytes; returns the buffer and the offset to write them at (then call advance). */
  reserve(bytes: number): { buf: Buffer; at: number } {
    if (this.used + bytes > this.buf.length) {
      this.flush();
      if (bytes > this.buf.length) this.buf = Buffer.alloc(bytes);
    }
    return { buf: this.buf, at: this.used };
  }

  advance(bytes: number): void {
    this.used += bytes;
    this.pos += bytes;
  }

  write(bytes: Buffer): void {
    this.flush();
    writeAll(this.fd, bytes, this.pos);
    this.pos += bytes.length;
  }

  flush(): void {
    if (this.used === 0) return;
    writeAll(this.fd, this.buf.subarray(0, this.used), this.pos - this.used);
    this.used = 0;
  }
}

function writeAll(fd: number, bytes: Buffer, at: number): void {
  for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done, at + done);
}

/** Writes `n` ascending ordinals as delta varints into `out` at `at`; returns the end offset. */
function writeDeltas(ords: Uint32Array, n: number, out: Buffer, at: number): number {
  let prev = 0;
  for (let i = 0; i < n; i++) {
    let delta = ords[i]! + 1 - prev;
    prev = ords[i]! + 1;
    while (delta >= 0x80) {
      out[at++] = (delta & 0x7f) | 0x80;
      delta >>>= 7;
    }
    out[at++] = delta;
  }
  return at;
}

function varintBytes(ords: Uint32Array, n: number): number {
  let bytes = 0;
  let prev = 0;
  for (let i = 0; i < n; i++) {
    const delta = ords[i]! + 1 - prev;
    prev = ords[i]! + 1;
    bytes += delta < 0x80 ? 1 : delta < 0x4000 ? 2 : delta < 0x200000 ? 3 : 4;
  }
  return bytes;
}

/**
 * Merges `inputs` (contiguous, oldest first, at least one) into a new format 3 file at `outPath`
 * (created or truncated; fsynced, not renamed) covering inputs[0].firstSeq..last.lastSeq with the
 * last input's lastHash, its MAC under `key`. Each input's MAC is checked first (a file edited
 * since it was opened is not laundered into a fresh MAC), and the written file is opened and
 * checked whole (MAC included) as any shard file is at open. Throws ShardDamage when an input fails a
 * check, a RangeError when the inputs are not contiguous or the merged file would pass the
 * format's 4 GiB or 2^28 documents, and file-system errors as they come.
 */
export function mergeShardFiles(inputs: readonly MergeInput[], outPath: string, key: Buffer): MergeResult {
  assertKey(key);
  if (inputs.length === 0) throw new RangeError('mergeShardFiles: no inputs');
  for (let i = 1; i < inputs.length; i++) {
    if (inputs[i]!.firstSeq !== inputs[i - 1]!.lastSeq + 1) throw new RangeError('mergeShardFiles: inputs are not contiguous');
  }
  const readers: ShardReader[] = [];
  try {
    for (const input of inputs) readers.push(ShardReader.open(input.path, input, key));
    const result = mergeReaders(readers, outPath, key);
    ShardReader.open(outPath, { firstSeq: inputs[0]!.firstSeq, lastSeq: inputs[inputs.length - 1]!.lastSeq }, key).close();
    return result;
  } finally {
    for (const r of readers) r.close();
  }
}

function mergeReaders(readers: ShardReader[], outPath: string, key: Buffer): MergeResult {
  const firstSeq = readers[0]!.meta.firstSeq;
  const last = readers[readers.length - 1]!.meta;
  const bases: number[] = [];
  let docs = 0;
  let maxInputDocs = 0;
  for (const r of readers) {
    bases.push(docs);
    docs += r.meta.docs;
    maxInputDocs = Math.max(maxInputDocs, r.meta.docs);
  }
  if (docs >= 2 ** 28) throw new RangeError('mergeShardFiles: too many documents for one file');
  if (last.lastSeq - firstSeq > 0xffffffff) throw new RangeError('mergeShardFiles: seqs span more than 2^32');
  const bitmapBytes = Math.ceil(docs / 8);
  const fd = openSync(outPath, 'w+', 0o600);
  try {
    const out = new Appender(fd, SHARD_HEADER_BYTES);
    // The ordinal → seq table: the inputs' tables, shifted to the merged firstSeq.
    const table = Buffer.alloc(docs * 4);
    for (let k = 0; k < readers.length; k++) {
      const r = readers[k]!;
      const shift = r.meta.firstSeq - firstSeq;
      const t = r.seqTable;
      for (let o = 0; o < t.length; o++) table.writeUInt32LE(t[o]! + shift, (bases[k]! + o) * 4);
    }
    const tableCrc = crc32(table);
    out.write(table);
    const postingsOff = out.pos;

    const cursors = readers.map((r) => new DictCursor(r));
    const all = new Uint32Array(docs);
    const tmp = new Uint32Array(maxInputDocs);
    const hitEntries: PostingEntry[] = [];
    const hitInputs: number[] = [];
    let dict = Buffer.alloc(SHARD_ENTRY_BYTES * 1024);
    let keys = new Float64Array(1024);
    let grams = 0;
    for (;;) {
      let min = Infinity;
      for (const c of cursors) if (!c.done && c.key < min) min = c.key;
      if (min === Infinity) break;
      // The inputs holding `min`, and how many documents hold it in all.
      let hits = 0;
      let n = 0;
      for (let k = 0; k < cursors.length; k++) {
        const c = cursors[k]!;
        if (c.done || c.key !== min) continue;
        hitEntries[hits] = c.entry();
        hitInputs[hits++] = k;
        n += hitEntries[hits - 1]!.count;
        c.next();
      }
      let bitmap: boolean;
      let bytes: number;
      let buf: Buffer;
      let at: number;
      if (n > bitmapBytes) {
        // Certainly a bitmap (a varint takes at least a byte): the inputs' lists are ORed in,
        // bitmaps on a byte boundary without decoding (issue 39).
        bitmap = true;
        bytes = bitmapBytes;
        ({ buf, at } = out.reserve(bytes));
        buf.fill(0, at, at + bytes);
        for (let h = 0; h < hits; h++) readers[hitInputs[h]!]!.orBitsInto(hitEntries[h]!, buf, at, bases[hitInputs[h]!]!, tmp);
      } else {
        n = 0;
        for (let h = 0; h < hits; h++) {
          const k = hitInputs[h]!;
          const m = readers[k]!.decode(hitEntries[h]!, tmp);
          const base = bases[k]!;
          for (let i = 0; i < m; i++) all[n++] = base + tmp[i]!;
        }
        const vBytes = varintBytes(all, n);
        bitmap = vBytes > bitmapBytes;
        bytes = bitmap ? bitmapBytes : vBytes;
        ({ buf, at } = out.reserve(bytes));
        if (bitmap) {
          buf.fill(0, at, at + bytes);
          for (let i = 0; i < n; i++) buf[at + (all[i]! >>> 3)]! |= 1 << (all[i]! & 7);
        } else writeDeltas(all, n, buf, at);
      }
      const offset = out.pos - postingsOff;
      if (offset + bytes > 0xffffffff) throw new RangeError('mergeShardFiles: postings would pass 4 GiB');
      if ((grams + 1) * SHARD_ENTRY_BYTES > dict.length) {
        const grown = Buffer.alloc(dict.length * 2);
        dict.copy(grown);
        dict = grown;
        const grownKeys = new Float64Array(keys.length * 2);
        grownKeys.set(keys);
        keys = grownKeys;
      }
      writeEntry(dict, grams, min, offset, bytes, n, bitmap, crc32(buf.subarray(at, at + bytes)));
      keys[grams] = min;
      grams++;
      out.advance(bytes);
    }
    out.flush();
    const dictOff = out.pos;
    const dictBytes = dict.subarray(0, grams * SHARD_ENTRY_BYTES);
    const bloom = new Uint32Array(bloomWords(grams));
    for (let g = 0; g < grams; g++) bloomAdd(bloom, keys[g]!);
    const tail = sampleAndBloom(dictBytes, grams, (g) => keys[g]!, bloom);
    const fileBytes = dictOff + dictBytes.length + tail.length + SHARD_MAC_BYTES;
    if (fileBytes > 0xffffffff) throw new RangeError('mergeShardFiles: merged file would pass 4 GiB');
    out.write(dictBytes);
    out.write(tail);
    const header = shardHeader({ docs, firstSeq, lastSeq: last.lastSeq, lastHash: last.lastHash, grams, postingsOff, dictOff, bloomWords: bloom.length, fileBytes, metaCrc: crc32(tail, tableCrc) });
    writeAll(fd, header, 0);
    writeAll(fd, macOfFile(fd, fileBytes - SHARD_MAC_BYTES, key), fileBytes - SHARD_MAC_BYTES);
    fsyncSync(fd);
    return { bytes: fileBytes, docs, grams };
  } finally {
    closeSync(fd);
  }
}

/** HMAC-SHA-256 under `key` of the first `end` bytes of `fd`, as read back from the file. */
function macOfFile(fd: number, end: number, key: Buffer): Buffer {
  const mac = createHmac('sha256', key);
  const buf = Buffer.alloc(SHARD_MAC_READ_BYTES);
  for (let at = 0; at < end; ) {
    const n = readSync(fd, buf, 0, Math.min(buf.length, end - at), at);
    if (n === 0) throw new Error('mergeShardFiles: short read of the merged file');
    mac.update(buf.subarray(0, n));
    at += n;
  }
  return mac.digest();
}
