/**
 * Whole-archive operations for the operator (issue 8; docs/operate/backup-and-restore.md):
 * consistent backup, restore with a new lineage, and operator-approved repair. Everything here
 * moves data aside instead of deleting it.
 */
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { basename, join } from 'node:path';
import { LogCorruptError, StoreStateError } from './errors.js';
import { fsyncDirSync, writeFileAtomicSync } from './fsutil.js';
import { LOG_DIR, assertReachesCheckpoint, replaySegments, segmentDataBytes } from './log.js';
import { listSegments, segmentName, type SegmentInfo } from './segment.js';
import { HASH_SUFFIX_LENGTH, tombstoneLine } from './record-format.js';
import { META_FILE, readMeta, writeMeta, writeNewMeta, type LogMeta } from './meta.js';
import { CHECKPOINT_KEY_FILE } from '../constants.js';

/**
 * Copies the checkpoint signing key (issue 53, `<folder>/checkpoint-key.pem`) from `fromDir` to
 * `toDir` (mode 0600, fsync'd), when `fromDir` has one and `toDir` has none: a backup carries the
 * key with the folder, and a restore into a folder without a key keeps signing with it (a folder
 * that has its own key keeps it). Output: whether it was copied.
 */
function copyCheckpointKey(fromDir: string, toDir: string): boolean {
  const from = join(fromDir, CHECKPOINT_KEY_FILE);
  const to = join(toDir, CHECKPOINT_KEY_FILE);
  if (!existsSync(from) || existsSync(to)) return false;
  writeFileAtomicSync(to, readFileSync(from));
  return true;
}

/** Present while a restore is being installed; startup refuses to run while it exists. */
export const RESTORE_MARKER = 'RESTORE-IN-PROGRESS';
const COPY_CHUNK_BYTES = 1024 * 1024;

/** Throws StoreStateError when an interrupted restore left the folder half-installed. */
export function assertNoRestoreInProgress(dataDir: string): void {
  if (existsSync(join(dataDir, RESTORE_MARKER))) {
    throw new StoreStateError(
      `a restore into ${dataDir} was interrupted (${RESTORE_MARKER} exists); run node dist/cli.js restore DIR again ` +
        '(the previous log was kept in a log.replaced-* folder)',
    );
  }
}

/** Copies bytes [start, end) of `from` to a new file `to`, then fsyncs it. */
function copyRange(from: string, to: string, start: number, end: number): void {
  const src = openSync(from, 'r');
  const dst = openSync(to, 'wx', 0o600);
  try {
    const buf = Buffer.allocUnsafe(COPY_CHUNK_BYTES);
    for (let pos = start; pos < end; ) {
      const n = readSync(src, buf, 0, Math.min(buf.length, end - pos), pos);
      if (n === 0) throw new Error(`${from} is shorter than ${end} bytes`);
      let w = 0;
      while (w < n) w += writeSync(dst, buf, w, n - w);
      pos += n;
    }
    fsyncSync(dst);
  } finally {
    closeSync(src);
    closeSync(dst);
  }
}

function isEmptyOrMissing(dir: string): boolean {
  return !existsSync(dir) || readdirSync(dir).length === 0;
}

export interface BackupResult {
  dir: string;
  originId: string;
  segments: number;
  bytes: number;
  /** The last record copied. */
  lastSeq: number;
  /** Records erased in the copy whose erasure had not reached the live segment yet (see completeErasures). */
  erasedInCopy?: number;
}

/**
 * Copies the archive to `targetDir` (must be missing or empty): meta.json, the checkpoint key
 * (issue 53) and, for each segment,
 * exactly `sizeBytes` bytes — the durable prefix reported by the running server, so the copy is
 * a consistent cut even while writes continue. `lastSeq` is the last record of that cut.
 * The copy's meta.json is marked as a backup (`backup: {created, lastSeq}`): the server refuses
 * to serve it as it is, because it shares the live originId; `restore` installs it with a new
 * one. Output: what was copied. Throws StoreStateError when the target is not empty.
 */
export function backupArchive(
  dataDir: string,
  targetDir: string,
  segments: SegmentInfo[],
  meta: LogMeta,
  lastSeq: number,
  nowIso: string,
): BackupResult {
  if (!isEmptyOrMissing(targetDir)) throw new StoreStateError(`backup target ${targetDir} is not empty`);
  mkdirSync(join(targetDir, LOG_DIR), { recursive: true });
  let bytes = 0;
  for (const seg of segments) {
    copyRange(join(dataDir, LOG_DIR, seg.name), join(targetDir, LOG_DIR, seg.name), 0, seg.sizeBytes);
    bytes += seg.sizeBytes;
  }
  fsyncDirSync(join(targetDir, LOG_DIR));
  const erasedInCopy = completeErasures(join(targetDir, LOG_DIR));
  copyCheckpointKey(dataDir, targetDir);
  writeMeta(targetDir, { ...meta, backup: { created: nowIso, lastSeq } });
  return { dir: targetDir, originId: meta.originId, segments: segments.length, bytes, lastSeq, ...(erasedInCopy > 0 ? { erasedInCopy } : {}) };
}

/**
 * Erases, in a copied log, every record that an erase record in the copy names but whose line is
 * still the original (erasure contract): a copy taken while the server ran can hold an erase
 * record whose rewrite had not reached the segment yet, and a backup must never carry erased
 * bytes. Reads the copy twice (erase targets, then their lines); rewrites each affected segment in
 * place through writeFileAtomicSync. Output: how many records were erased.
 * Throws LogCorruptError for a damaged copy.
 */
function completeErasures(logDir: string): number {
  const vouched = replaySegments(logDir, () => undefined).vouched;
  if (vouched.size === 0) return 0;
  const pending = new Map<number, Array<{ seq: number; offset: number; end: number }>>();
  replaySegments(logDir, (record, _json, segmentFirstSeq, offset, length) => {
    if (record.erased || !vouched.has(record.seq)) return;
    const list = pending.get(segmentFirstSeq) ?? [];
    list.push({ seq: record.seq, offset, end: offset + length + HASH_SUFFIX_LENGTH + 1 });
    pending.set(segmentFirstSeq, list);
  });
  let erased = 0;
  for (const [first, lines] of pending) {
    const path = join(logDir, segmentName(first));
    const buf = readFileSync(path);
    for (const l of lines) tombstoneLine(buf.subarray(l.offset, l.end), l.seq).copy(buf, l.offset);
    writeFileAtomicSync(path, buf);
    erased += lines.length;
  }
  return erased;
}

export interface RestoreResult {
  records: number;
  originId: string;
  restoredFrom: string;
  replacedLog: string | null;
}

/**
 * Installs the backup in `backupDir` into the stopped data folder `dataDir` with a new lineage
 * (new originId; part 6 rule 8: every client cursor then gets 409 and rereads).
 * The backup (made by `backup`, or a copy of a data folder) is verified first: every record
 * (strict; throws LogCorruptError) and its checkpoint (throws StoreStateError); their advice
 * names the backup as the damaged folder, since nothing in the data folder is wrong. The current log,
 * if any, is moved to `log.replaced-<time>`, never deleted. A marker file makes an interrupted
 * restore refuse to start instead of serving a half-installed archive.
 */
export function restoreArchive(dataDir: string, backupDir: string, nowIso: string): RestoreResult {
  const backupMeta = readMeta(backupDir);
  if (!backupMeta) throw new StoreStateError(`${backupDir} has no ${META_FILE}; is it a backup made by "backup" or a copy of data/?`);
  // Damage found here is in the backup, not in the data folder: the server's advice (restore a
  // backup, repair --truncate the data folder) would not fit, so say what does.
  const advice =
    `Nothing was changed: ${dataDir} was not touched. The damaged folder is the backup ${backupDir}, so it cannot be ` +
    'installed: restore another backup (node dist/cli.js restore OTHER_DIR), or make a new one with node dist/cli.js ' +
    'backup DIR from a server whose data folder is intact.';
  let verified;
  try {
    verified = replaySegments(join(backupDir, LOG_DIR), () => undefined, { strict: true, hashAtSeq: backupMeta.checkpoint?.seq });
  } catch (err) {
    if (err instanceof LogCorruptError) throw new LogCorruptError(err.file, err.offset, err.reason, advice);
    throw err;
  }
  assertReachesCheckpoint(backupDir, backupMeta, verified, advice);
  mkdirSync(dataDir, { recursive: true });
  const marker = join(dataDir, RESTORE_MARKER);
  writeFileSync(marker, `restore of ${backupDir} started ${nowIso}\n`);
  fsyncDirSync(dataDir);
  const staging = join(dataDir, 'log.restoring');
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging);
  // A torn final line in the backup is left out: it was never acknowledged. A whole final record
  // that only lacks its newline is kept; the server writes the newline when it starts.
  const backupLogDir = join(backupDir, LOG_DIR);
  for (const seg of listSegments(backupLogDir)) {
    copyRange(join(backupLogDir, seg.name), join(staging, seg.name), 0, segmentDataBytes(verified, backupLogDir, seg));
  }
  fsyncDirSync(staging);
  const replacedLog = installStagedLog(dataDir, staging, nowIso);
  const checkpoint = verified.lastSeq > 0 ? { seq: verified.lastSeq, hash: verified.lastHash } : undefined;
  const meta = writeNewMeta(dataDir, nowIso, { restoredFrom: backupMeta.originId, checkpoint });
  copyCheckpointKey(backupDir, dataDir);
  rmSync(marker);
  fsyncDirSync(dataDir);
  return { records: verified.records, originId: meta.originId, restoredFrom: backupMeta.originId, replacedLog };
}

/**
 * Puts the verified log in `staging` (a folder inside `dataDir`) in place of the data folder's
 * log: the current log, with its meta.json, is moved to `log.replaced-<time>` (never deleted),
 * then `staging` is renamed to `log` and the folder fsync'd. The caller holds the restore marker
 * and writes the new meta.json after. Output: where the replaced log went, or null.
 */
export function installStagedLog(dataDir: string, staging: string, nowIso: string): string | null {
  let replacedLog: string | null = null;
  const live = join(dataDir, LOG_DIR);
  if (existsSync(live)) {
    replacedLog = join(dataDir, `log.replaced-${nowIso.replace(/[:.]/g, '-')}`);
    renameSync(live, replacedLog);
    const oldMeta = join(dataDir, META_FILE);
    if (existsSync(oldMeta)) renameSync(oldMeta, join(replacedLog, META_FILE));
  }
  renameSync(staging, live);
  fsyncDirSync(dataDir);
  return replacedLog;
}

export interface RepairResult {
  action: 'truncate' | 'new-lineage' | 'nothing to repair';
  keptRecords?: number;
  quarantined?: string[];
  originId?: string;
  repairedFrom?: string;
}

/**
 * Operator-approved repair of a stopped data folder.
 * - `truncate`: for a log that startup refuses. Finds the first damaged record, moves everything
 *   from it on (the rest of that segment and every later segment) to `quarantine/<time>/`, and
 *   cuts the log there; a log that is intact but ends before its checkpoint (segments lost) or
 *   was replaced is kept as it is. Either way the log gets a new lineage (new originId,
 *   `repairedFrom` the old one), because record positions after the cut will be reused and every
 *   client cursor must get 409 and reread (part 6 rule 8).
 * - `new-lineage`: writes a new meta.json (new originId) when it is missing.
 * Output: what was done. Throws StoreStateError when the requested repair does not apply.
 */
export function repairArchive(dataDir: string, mode: 'truncate' | 'new-lineage', nowIso: string): RepairResult {
  const logDir = join(dataDir, LOG_DIR);
  const meta = readMeta(dataDir);
  if (mode === 'new-lineage') {
    if (meta) throw new StoreStateError(`${join(dataDir, META_FILE)} exists; new-lineage is only for a missing metadata file`);
    const replay = replaySegments(logDir, () => undefined);
    const checkpoint = replay.lastSeq > 0 ? { seq: replay.lastSeq, hash: replay.lastHash } : undefined;
    const created = writeNewMeta(dataDir, nowIso, { checkpoint });
    return { action: 'new-lineage', originId: created.originId };
  }
  if (!meta) throw new StoreStateError(`${join(dataDir, META_FILE)} is missing; run repair --new-lineage first`);
  let damage: LogCorruptError | null = null;
  let kept = 0;
  let behindCheckpoint = false;
  try {
    const r = replaySegments(logDir, () => kept++, { hashAtSeq: meta.checkpoint?.seq });
    if (r.torn && !r.torn.complete) damage = new LogCorruptError(r.torn.file, r.torn.offset, 'incomplete final line');
    try {
      assertReachesCheckpoint(dataDir, meta, r);
    } catch (err) {
      if (!(err instanceof StoreStateError)) throw err;
      behindCheckpoint = true;
    }
    if (!damage && !behindCheckpoint) return { action: 'nothing to repair', keptRecords: kept };
  } catch (err) {
    if (!(err instanceof LogCorruptError)) throw err;
    damage = err;
  }
  const moved: string[] = [];
  // Cut at the damage; what is left must replay whole. It may not at once: a tombstone (erased
  // record) before the cut whose vouching erase record was after it is no longer vouched for, so
  // the log is cut again there — each pass shortens it, and everything cut is kept aside.
  let left: ReturnType<typeof replaySegments> | null = null;
  while (left === null) {
    if (damage) {
      const quarantine = join(dataDir, 'quarantine', nowIso.replace(/[:.]/g, '-'));
      mkdirSync(quarantine, { recursive: true });
      const damagedName = basename(damage.file);
      // Keep the damaged segment's bytes after the offset as a separate file, then cut it there.
      const tailName = `${damagedName}.from-${damage.offset}`;
      const size = listSegments(logDir).find((s) => s.name === damagedName)?.sizeBytes ?? 0;
      copyRange(damage.file, join(quarantine, tailName), damage.offset, size);
      moved.push(join(quarantine, tailName));
      truncateSync(damage.file, damage.offset);
      for (const seg of listSegments(logDir)) {
        if (seg.name > damagedName) {
          renameSync(join(logDir, seg.name), join(quarantine, seg.name));
          moved.push(join(quarantine, seg.name));
        }
      }
      fsyncDirSync(logDir);
      fsyncDirSync(quarantine);
    }
    try {
      left = replaySegments(logDir, () => undefined);
    } catch (err) {
      if (!(err instanceof LogCorruptError)) throw err;
      damage = err;
    }
  }
  // What is left is whole: record its head as the new lineage's checkpoint.
  const checkpoint = left.lastSeq > 0 ? { seq: left.lastSeq, hash: left.lastHash } : undefined;
  const created = writeNewMeta(dataDir, nowIso, { repairedFrom: meta.originId, checkpoint });
  return { action: 'truncate', keptRecords: left.records, quarantined: moved, originId: created.originId, repairedFrom: meta.originId };
}
