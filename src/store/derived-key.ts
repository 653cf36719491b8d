/**
 * The key that authenticates derived files (issue 28 "Derived files are authenticated and
 * checked whole"): the state snapshot (store/snapshot.ts) and the search index's shard files
 * (store/search/shard.ts) each carry an HMAC-SHA-256 under it, so a derived file edited by
 * anything that does not hold the key — a stray tool, a disk that returns other bytes, a person
 * who can write `data/index/` but not read the key — is detected and rebuilt from the log.
 *
 * File `<dataDir>/index/derived.key`: 64 lower-case hex digits (32 random bytes) and a newline,
 * mode 0600, written crash-safely (temp file → fsync → rename → fsync directory). It lives beside
 * the files it authenticates: removing `data/index/` removes the key with them, and a new one is
 * made at the next start. `backup` copies neither (a backup holds the log and meta.json only; a
 * restored folder rebuilds its derived files and gets a key of its own).
 *
 * What it does NOT defend against: anyone who can read the key (the data folder's owner, root)
 * can forge derived files. That is acceptable because they are derived: the log, protected by its
 * hash chain, is the source of truth, and the chain itself is not keyed (anyone who can rewrite
 * the whole log from an edited record on can also recompute the chain; only a copy elsewhere —
 * a backup, a mirror's exchange — shows that).
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DERIVED_KEY_BYTES } from '../constants.js';
import { writeFileAtomicSync } from './fsutil.js';

/** File name of the key inside the index folder (store/snapshot.ts INDEX_DIR). */
export const DERIVED_KEY_FILE = 'derived.key';

/**
 * The key of the derived files in `indexDir` (`<dataDir>/index`), creating the folder and the
 * key when absent. A key file that is not 64 hex digits is replaced by a new key (every derived
 * file then fails its check and is rebuilt); `onNote` is told (a warning line). A key file
 * readable by others is made 0600 again. Only the holder of the data folder's lock may call it.
 * Output: 32 bytes. Throws the file system's error when the key can be neither read nor written
 * (the caller then runs without derived files).
 */
export function loadDerivedKey(indexDir: string, onNote: (line: string) => void = () => {}): Buffer {
  const path = join(indexDir, DERIVED_KEY_FILE);
  if (existsSync(path)) {
    const text = readFileSync(path, 'latin1').trim();
    if (/^[0-9a-f]{64}$/.test(text)) {
      if ((statSync(path).mode & 0o077) !== 0) {
        chmodSync(path, 0o600);
        onNote(`${path} was readable by others; made it 0600`);
      }
      return Buffer.from(text, 'hex');
    }
    onNote(`${path} is not a key (64 hex digits); made a new one, so the derived files are rebuilt from the log`);
  }
  mkdirSync(indexDir, { recursive: true });
  const key = randomBytes(DERIVED_KEY_BYTES);
  writeFileAtomicSync(path, `${key.toString('hex')}\n`);
  return key;
}
