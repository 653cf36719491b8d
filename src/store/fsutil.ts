/**
 * Crash-safe file-system primitives. Only src/store touches the file system for data.
 */
import { promises as fsp, openSync, fsyncSync, closeSync, writeFileSync, renameSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Suffix of the temporary file an atomic write renames into place: `<name>.tmp-<pid>`. */
export const TEMP_FILE_PATTERN = /\.tmp-\d+$/;

/** The temporary file an atomic write of `path` goes through. */
const tempPathOf = (path: string): string => `${path}.tmp-${process.pid}`;

/** True for the errors of a full disk or an exhausted quota (ENOSPC, EDQUOT). */
export function isNoSpaceError(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT';
}

/**
 * Removes the temporary files of atomic writes (`*.tmp-<pid>`) left in `dir` by a process that
 * died or hit a full disk mid-write (issue 21 case 4). Only the holder of the folder's lock may
 * call it: then no other process is writing them. Output: the names removed. Never throws for a
 * missing folder.
 */
export function removeStaleTempFiles(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const stale = names.filter((n) => TEMP_FILE_PATTERN.test(n));
  for (const n of stale) rmSync(join(dir, n), { force: true });
  return stale;
}

/** fsyncs a directory so a created, renamed or deleted entry in it survives a crash. */
export async function fsyncDir(dir: string): Promise<void> {
  const handle = await fsp.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Synchronous fsyncDir, for CLI paths that run without an event loop to spare. */
export function fsyncDirSync(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** What an atomic write stores: text (UTF-8), bytes, or several byte parts written in order. */
export type AtomicContent = string | Uint8Array | readonly Uint8Array[];

/** Options of writeFileAtomic. */
export interface AtomicWriteOptions {
  /**
   * Asked after the temp file is fsynced, before the rename: true abandons the write (the temp
   * file is removed, the target is left as it was, and the call answers false). For a writer
   * whose result can become obsolete while it is written (a search shard of a cancelled seal).
   */
  abandon?: () => boolean;
  /**
   * Called right after the rename, before the folder is fsynced: for a caller whose readers must
   * turn to the new file at once (erasure drops cached descriptors and records of the old one).
   */
  onRenamed?: () => void;
}

const partsOf = (content: AtomicContent): readonly Uint8Array[] => (typeof content === 'string' ? [Buffer.from(content, 'utf8')] : content instanceof Uint8Array ? [content] : content);

/**
 * The one crash-safe write of a whole file (STYLE.md "Durability habits"; issue 21, issue 29):
 * `content` goes to `<path>.tmp-<pid>` in the same folder (mode 0600), which is fsynced, renamed
 * over `path`, and the folder fsynced. A crash at any instant leaves either the old or the new
 * content, never a mix or an empty file; the temp file a crash leaves matches TEMP_FILE_PATTERN
 * and is removed at the next start (`removeStaleTempFiles`, NgramIndex.open). A failed write (a
 * full disk: ENOSPC) removes its temp file and rethrows. Runs without blocking the event loop.
 * Output: true when written, false when `opts.abandon` abandoned it.
 */
export async function writeFileAtomic(path: string, content: AtomicContent, opts: AtomicWriteOptions = {}): Promise<boolean> {
  const tmp = tempPathOf(path);
  const handle = await fsp.open(tmp, 'w', 0o600);
  try {
    for (const part of partsOf(content)) await handle.writeFile(part);
    await handle.sync();
  } catch (err) {
    // A full disk must not also keep the half-written temporary file.
    await handle.close().catch(() => undefined);
    await fsp.rm(tmp, { force: true });
    throw err;
  }
  await handle.close();
  if (opts.abandon?.() === true) {
    await fsp.rm(tmp, { force: true });
    return false;
  }
  await fsp.rename(tmp, path);
  opts.onRenamed?.();
  await fsyncDir(dirname(path));
  return true;
}

/**
 * writeFileAtomic for callers that run without an event loop to spare (startup, snapshots, CLI
 * commands): the same steps, temp-file name and guarantees, synchronously. Throws what the file
 * system throws (ENOSPC after removing the temp file).
 */
export function writeFileAtomicSync(path: string, content: AtomicContent): void {
  const tmp = tempPathOf(path);
  const fd = openSync(tmp, 'w', 0o600);
  try {
    for (const part of partsOf(content)) writeFileSync(fd, part);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw err;
  }
  closeSync(fd);
  renameSync(tmp, path);
  fsyncDirSync(dirname(path));
}
