/**
 * Tampering with a stopped archive as silent disk corruption would: bytes changed in place, the
 * file's size and modification time (to the nanosecond) kept, so the state snapshot, which checks
 * segment sizes and times, still covers the segment.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

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
