/**
 * Files on disk for the tests that prove bytes are gone (erasure, backups) or were never written
 * (secrets kept only as hashes): every file under a folder, those whose bytes contain a text, and
 * all of a folder's bytes as one string.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Every file under `dir` (recursively). */
export function filesUnder(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...filesUnder(p));
    else out.push(p);
  }
  return out;
}

/** Files under `dir` whose bytes contain `text`. */
export function filesContaining(dir, text) {
  return filesUnder(dir).filter((f) => readFileSync(f).includes(Buffer.from(text)));
}

/**
 * Every regular file under `dir`, recursively, read as latin1 (one character a byte) and joined
 * into one string, for asserting that a text is or is not stored anywhere in a small data folder.
 */
export function folderText(dir) {
  let out = '';
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const st = statSync(path);
    if (st.isDirectory()) out += folderText(path);
    else if (st.isFile()) out += readFileSync(path, 'latin1');
  }
  return out;
}
