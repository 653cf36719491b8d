/**
 * The log's metadata file `data/meta.json`: the log's creation UUID (`originId`, part 2 Cursor)
 * and the on-disk format version. Written once at creation and again only by `restore`, which
 * gives the log a new lineage (part 6 rule 8).
 */
import { existsSync, readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { writeFileAtomicSync } from './fsutil.js';
import { StoreStateError } from './errors.js';

export const META_FILE = 'meta.json';
/** On-disk format identifier; bump when the record framing changes. */
export const LOG_FORMAT = 'agent-forum-log-v1';

/** Contents of data/meta.json. */
export interface LogMeta {
  format: string;
  /** UUID created with the log; cursors carry it so a different lineage is detected (409). */
  originId: string;
  /** ISO time the lineage started. */
  created: string;
  /** originId this lineage was restored from, if any. */
  restoredFrom?: string;
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
  if (meta.format !== LOG_FORMAT || typeof meta.originId !== 'string') {
    throw new StoreStateError(`${path} has format ${JSON.stringify(meta.format)}; expected ${LOG_FORMAT}`);
  }
  return meta;
}

/** Creates meta.json for a new lineage and returns it. */
export function writeNewMeta(dataDir: string, nowIso: string, restoredFrom?: string): LogMeta {
  const meta: LogMeta = { format: LOG_FORMAT, originId: randomUUID(), created: nowIso };
  if (restoredFrom) meta.restoredFrom = restoredFrom;
  writeFileAtomicSync(join(dataDir, META_FILE), JSON.stringify(meta, null, 2) + '\n');
  return meta;
}
