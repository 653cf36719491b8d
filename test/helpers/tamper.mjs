/**
 * Tampering with a stopped archive as silent disk corruption would: bytes changed in place, the
 * file's size and modification time (to the nanosecond) kept, so the state snapshot, which checks
 * segment sizes and times, still covers the segment.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';

/** Sets `file`'s mtime to `ns` (bigint nanoseconds) exactly; fs.utimesSync's double seconds cannot hold every nanosecond. */
export function setMtimeNs(file, ns) {
  execFileSync('touch', ['-m', '-d', `@${ns / 1000000000n}.${String(ns % 1000000000n).padStart(9, '0')}`, file]);
  assert.equal(statSync(file, { bigint: true }).mtimeNs, ns, 'mtime restored');
}

/** Overwrites `file` with `buf` and restores its modification time. */
export function writeWithMtimeKept(file, buf) {
  const ns = statSync(file, { bigint: true }).mtimeNs;
  writeFileSync(file, buf);
  setMtimeNs(file, ns);
}

/** Copies a stopped data folder, keeping every segment's modification time exactly. */
export function copyArchive(from, to) {
  cpSync(from, to, { recursive: true });
  for (const name of readdirSync(join(from, 'log'))) {
    if (name.endsWith('.jsonl')) setMtimeNs(join(to, 'log', name), statSync(join(from, 'log', name), { bigint: true }).mtimeNs);
  }
}

/**
 * A search shard file's bytes (store/search/shard.ts, format 2 or 3) with every bitmap posting
 * list zeroed and every CRC recomputed (entry, dictionary block, meta, header), so all CRCs pass:
 * an edit made without the derived-file key, which only the shard's MAC can catch. Changes `b` in
 * place and returns it.
 */
export function withPostingsRemoved(b) {
  const version = b.readUInt32LE(8);
  const grams = b.readUInt32LE(64);
  const sampleOff = b.readUInt32LE(76);
  const dictOff = b.readUInt32LE(80);
  const postingsOff = b.readUInt32LE(84);
  const dictEnd = dictOff + grams * 24;
  for (let g = 0; g < grams; g++) {
    const e = dictOff + g * 24;
    const off = postingsOff + b.readUInt32LE(e + 8);
    const bytes = b.readUInt32LE(e + 12);
    if (b.readUInt32LE(e + 16) & 0x80000000) b.fill(0, off, off + bytes); // a bitmap: no documents
    b.writeUInt32LE(crc32(b.subarray(off, off + bytes)), e + 20);
  }
  for (let k = 0; k < Math.ceil(grams / 64); k++) {
    const first = dictOff + k * 64 * 24;
    b.writeUInt32LE(crc32(b.subarray(first, Math.min(dictEnd, first + 64 * 24))), sampleOff + k * 12 + 8);
  }
  if (version === 2) b.writeUInt32LE(crc32(b.subarray(128, dictOff)), 92);
  // Format 3: the seq table, then the sample and the Bloom filter (up to the MAC).
  else b.writeUInt32LE(crc32(b.subarray(sampleOff, b.length - 32), crc32(b.subarray(128, postingsOff))), 92);
  b.writeUInt32LE(crc32(b.subarray(0, 124)), 124);
  return b;
}
