/**
 * Crash-safe file-system primitives. Only src/store touches the file system for data.
 */
import { promises as fsp, openSync, fsyncSync, closeSync, writeFileSync, renameSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Suffix of the temporary file an atomic write renames into place: `<name>.tmp-<pid>`. */
export const TEMP_FILE_PATTERN = /\.tmp-\d+$/;

/** The temporary file an atomic write of `path` goes through. */
export const tempPathOf = (path: string): string => `${path}.tmp-${process.pid}`;

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

/**
 * Writes a small file atomically without blocking the event loop: temp file → fsync → rename →
 * fsync directory, as writeFileAtomicSync. A failed write removes its temporary file.
 */
export async function writeFileAtomic(path: string, content: string): Promise<void> {
  const tmp = tempPathOf(path);
  const handle = await fsp.open(tmp, 'w', 0o600);
  try {
    await handle.writeFile(content);
    await handle.sync();
  } catch (err) {
    // A full disk must not also keep the half-written temporary file.
    await handle.close().catch(() => undefined);
    await fsp.rm(tmp, { force: true });
    throw err;
  }
  await handle.close();
  await fsp.rename(tmp, path);
  await fsyncDir(dirname(path));
}

/**
 * Writes a small file atomically: temp file → fsync → rename → fsync directory. A crash at any
 * instant leaves either the old or the new content, never a mix or an empty file; a failed write
 * (a full disk) removes its temporary file, and a crash's is removed at the next start.
 */
export function writeFileAtomicSync(path: string, content: string): void {
  const tmp = tempPathOf(path);
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeFileSync(fd, content);
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
