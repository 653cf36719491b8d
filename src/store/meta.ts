/**
 * The log's metadata file `data/meta.json`: the log's creation UUID (`originId`, part 2 Cursor),
 * the on-disk format version, and a checkpoint of how far the log is known to reach.
 *
 * `originId` changes only when the log gets a new lineage (`restore`, `repair`), so that every
 * client cursor gets 409 and rereads instead of silently skipping reused `seq`s (part 6 rule 8).
 *
 * The checkpoint `{seq, hash}` says "this log reached record `seq`, whose chained hash is
 * `hash`". It is written only for durable records: at startup after replay, when a segment is
 * closed at roll-over, and at graceful shutdown. Startup refuses a log that ends before it
 * (segment files removed, or the log emptied) or whose record `seq` has another hash (the log
 * was replaced by another archive's), because serving either would reuse `seq`s under the same
 * originId. Every write goes temp file → fsync → rename → fsync directory.
 */
import { existsSync, readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { writeFileAtomic, writeFileAtomicSync } from './fsutil.js';
import { StoreStateError } from './errors.js';

export const META_FILE = 'meta.json';
/** On-disk format identifier; bump when the record framing changes. */
export const LOG_FORMAT = 'agent-forum-log-v1';

/** A durable record the log is known to have reached: its seq and chained hash (64 hex). */
export interface Checkpoint {
  seq: number;
  hash: string;
}

/** Contents of data/meta.json. */
export interface LogMeta {
  format: string;
  /** UUID created with the lineage; cursors carry it so a different lineage is detected (409). */
  originId: string;
  /** ISO time the lineage started. */
  created: string;
  /** originId this lineage was restored from, if any. */
  restoredFrom?: string;
  /** originId this lineage was repaired from (`repair`: records were dropped or the log changed). */
  repairedFrom?: string;
  /** How far the log is known to reach; absent until the first record is durable. */
  checkpoint?: Checkpoint;
  /**
   * Set in a copy made by `backup`: such a folder is installed with `restore` (new lineage), and
   * the server refuses to serve it as it is.
   */
  backup?: { created: string; lastSeq: number };
}

const HASH_HEX = /^[0-9a-f]{64}$/;

/** True when `dataDir` holds an archive (its meta.json exists); false for a missing or new folder. */
export function hasArchive(dataDir: string): boolean {
  return existsSync(join(dataDir, META_FILE));
}

/** Reads meta.json; null when absent. Throws StoreStateError when unreadable or foreign. */
export function readMeta(dataDir: string): LogMeta | null {
  const path = join(dataDir, META_FILE);
  if (!existsSync(path)) return null;
  let meta: LogMeta;
  try {
    meta = JSON.parse(readFileSync(path, 'utf8')) as LogMeta;
  } catch (err) {
    throw new StoreStateError(`${path} is not valid JSON (${(err as Error).message}); restore it from a backup`);
  }
  if (meta === null || typeof meta !== 'object' || meta.format !== LOG_FORMAT || typeof meta.originId !== 'string') {
    throw new StoreStateError(`${path} has format ${JSON.stringify(meta?.format)}; expected ${LOG_FORMAT}`);
  }
  const cp = meta.checkpoint;
  if (cp !== undefined && !(cp !== null && Number.isSafeInteger(cp.seq) && cp.seq >= 1 && typeof cp.hash === 'string' && HASH_HEX.test(cp.hash))) {
    throw new StoreStateError(`${path} has a malformed checkpoint ${JSON.stringify(cp)}; restore it from a backup of this folder`);
  }
  return meta;
}

/** Writes `meta` to `dataDir/meta.json` atomically (temp file, fsync, rename, fsync directory). */
export function writeMeta(dataDir: string, meta: LogMeta): void {
  writeFileAtomicSync(join(dataDir, META_FILE), JSON.stringify(meta, null, 2) + '\n');
}

/** writeMeta without blocking the event loop (the running log's checkpoints). */
export async function writeMetaAsync(dataDir: string, meta: LogMeta): Promise<void> {
  await writeFileAtomic(join(dataDir, META_FILE), JSON.stringify(meta, null, 2) + '\n');
}

/**
 * Creates meta.json for a new lineage (a new random originId) and returns it.
 * `from` records where the lineage came from and, when known, the checkpoint of the log it
 * starts with.
 */
export function writeNewMeta(
  dataDir: string,
  nowIso: string,
  from: { restoredFrom?: string; repairedFrom?: string; checkpoint?: Checkpoint } = {},
): LogMeta {
  const meta: LogMeta = { format: LOG_FORMAT, originId: randomUUID(), created: nowIso };
  if (from.restoredFrom) meta.restoredFrom = from.restoredFrom;
  if (from.repairedFrom) meta.repairedFrom = from.repairedFrom;
  if (from.checkpoint) meta.checkpoint = from.checkpoint;
  writeMeta(dataDir, meta);
  return meta;
}
