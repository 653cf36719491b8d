/**
 * Files on disk for the tests that prove bytes are gone (erasure, backups): every file under a
 * folder, and those whose bytes contain a text.
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
