/**
 * Crash-safe file-system primitives. Only src/store touches the file system for data.
 */
import { promises as fsp, openSync, fsyncSync, closeSync, writeFileSync, renameSync } from 'node:fs';
import { dirname } from 'node:path';

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
 * fsync directory, as writeFileAtomicSync.
 */
export async function writeFileAtomic(path: string, content: string): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}`;
  const handle = await fsp.open(tmp, 'w', 0o600);
  try {
    await handle.writeFile(content);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await fsp.rename(tmp, path);
  await fsyncDir(dirname(path));
}

/**
 * Writes a small file atomically: temp file → fsync → rename → fsync directory. A crash at any
 * instant leaves either the old or the new content, never a mix or an empty file.
 */
export function writeFileAtomicSync(path: string, content: string): void {
  const tmp = `${path}.tmp-${process.pid}`;
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeFileSync(fd, content);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  fsyncDirSync(dirname(path));
}
