/**
 * CLI commands that work on the archive files themselves (issue 8): verify, backup, restore,
 * repair. They never go through the public API.
 */
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline/promises';
import { LOG_DIR, assertReachesCheckpoint, replaySegments, segmentDataBytes } from '../store/log.js';
import { listSegments, type SegmentInfo } from '../store/segment.js';
import { hasArchive, readMeta, type LogMeta } from '../store/meta.js';
import { LogCorruptError, StoreStateError } from '../store/errors.js';
import { backupArchive, repairArchive, restoreArchive } from '../store/archive.js';
import { isDataDirLocked, lockDataDir } from '../store/lock.js';
import { parseReplicaUrl, quietSdkNodeWarning, type ReplicaLocation } from '../store/replica/format.js';
import { restoreFromBucket, type RestorePoint } from '../store/replica/restore.js';
import { findLost } from '../store/replica/lost.js';
import { detachMarker } from '../store/replica/marker.js';
import type { ObjectStore } from '../store/replica/object-store.js';
import { verifyKey } from '../store/replica/keys.js';
import { replicaKeyEnv } from '../config.js';
import { ConfirmationRequired } from './errors.js';
import { erasureCarriedTo } from '../domain/moderation/restore-erasure.js';
import type { ModerationPayload } from '../domain/moderation/moderation.js';

export type OfflineCommand = (
  dataDir: string,
  words: string[],
  options: Record<string, string | boolean>,
  admin: (name: string, args: Record<string, unknown>) => Promise<unknown>,
) => Promise<unknown>;

/**
 * `verify`: reads every segment, checking framing, canonical form, seq continuity and the hash
 * chain (an erased record's tombstone must be vouched for by a later erase record), and that the
 * log reaches meta.json's checkpoint. Output: `{ok, records, erasedRecords, lastSeq, originId,
 * backup?}` (`backup` for a folder made by `backup`). Throws LogCorruptError naming the first bad
 * record's file and offset (exit 1). Safe while the server runs: bytes after the last newline are
 * then its write in progress, reported as `writeInProgressBytes`; on a stopped folder they are
 * an incomplete final line (exit 1; the server truncates it at its next start).
 */
async function verify(dataDir: string): Promise<unknown> {
  const meta = readMeta(dataDir);
  if (!meta) throw new StoreStateError(`${join(dataDir, 'meta.json')} is missing`);
  let erasedRecords = 0;
  const result = replaySegments(join(dataDir, LOG_DIR), (r) => void (r.erased === true && erasedRecords++), { strict: true, hashAtSeq: meta.checkpoint?.seq });
  assertReachesCheckpoint(dataDir, meta, result);
  if (result.torn && !result.torn.complete && (await isDataDirLocked(dataDir))) {
    // A server runs on the folder: bytes after the last newline are its write in progress.
    return { ok: true, records: result.records, erasedRecords, lastSeq: result.lastSeq, originId: meta.originId, writeInProgressBytes: result.torn.bytes };
  }
  if (result.torn && !result.torn.complete) {
    throw new LogCorruptError(
      result.torn.file,
      result.torn.offset,
      `incomplete final line (${result.torn.bytes} bytes) after record ${result.lastSeq}: a crash mid-write (the server truncates it at its next start) or a write in progress`,
    );
  }
  return { ok: true, records: result.records, erasedRecords, lastSeq: result.lastSeq, originId: meta.originId, ...(meta.backup ? { backup: meta.backup } : {}) };
}

/** Runs `fn` holding the folder's lock; refuses when a server is running on it. */
async function whileStopped<T>(dataDir: string, what: string, fn: () => T): Promise<T> {
  if (await isDataDirLocked(dataDir)) throw new StoreStateError(`stop the server on ${dataDir} before "${what}"`);
  const release = await lockDataDir(dataDir);
  try {
    return fn();
  } finally {
    await release();
  }
}

/**
 * `backup DIR`: a consistent copy of the archive into the empty or missing folder DIR. With the
 * server running, it asks the server (admin channel) for the durable size of every segment and
 * copies exactly those bytes; with it stopped, it takes the lock and copies every segment.
 */
async function backup(dataDir: string, words: string[], _o: Record<string, string | boolean>, admin: (n: string, a: Record<string, unknown>) => Promise<unknown>): Promise<unknown> {
  const target = words[0];
  if (!target) throw new StoreStateError('usage: backup DIR');
  const now = new Date().toISOString();
  if (await isDataDirLocked(dataDir)) {
    const pos = (await admin('archive.position', {})) as { segments: SegmentInfo[]; meta: LogMeta; lastSeq: number };
    return backupArchive(dataDir, resolve(target), pos.segments, pos.meta, pos.lastSeq, now);
  }
  return whileStopped(dataDir, 'backup', () => {
    const meta = readMeta(dataDir);
    if (!meta) throw new StoreStateError(`${dataDir} holds no Agent Forum archive`);
    // Verified like startup would (framing, chain, checkpoint), so a backup never copies a log
    // the server would refuse; a torn tail is left out, a whole unterminated record kept.
    const logDir = join(dataDir, LOG_DIR);
    const replay = replaySegments(logDir, () => undefined, { hashAtSeq: meta.checkpoint?.seq });
    assertReachesCheckpoint(dataDir, meta, replay);
    const segments = listSegments(logDir).map((s) => ({ ...s, sizeBytes: segmentDataBytes(replay, logDir, s) }));
    return backupArchive(dataDir, resolve(target), segments, meta, replay.lastSeq, now);
  });
}

/**
 * What `restore` would replace in `dataDir`, in one sentence, or null when the folder holds no
 * archive (a new or empty folder: nothing to lose, no question asked).
 */
function liveArchiveSummary(dataDir: string): string | null {
  const segments = listSegments(join(dataDir, LOG_DIR));
  if (!hasArchive(dataDir) && segments.length === 0) return null;
  let meta: LogMeta | null = null;
  try {
    meta = readMeta(dataDir);
  } catch {
    // An unreadable meta.json is still live data; the summary just cannot name its lineage.
  }
  const sizeBytes = segments.reduce((n, seg) => n + seg.sizeBytes, 0);
  const facts = [
    meta ? `originId ${meta.originId}` : 'no readable meta.json',
    meta?.checkpoint ? `records up to seq ${meta.checkpoint.seq} at the last checkpoint` : null,
    `${segments.length} segment file(s), ${sizeBytes} bytes`,
  ].filter(Boolean);
  return `the archive in ${dataDir} (${facts.join(', ')})`;
}

/**
 * Asks before `restore` replaces live data: passes with --yes, or when "yes" is typed at a
 * terminal (stdin and stderr both a TTY). Throws ConfirmationRequired (exit 2, nothing changed)
 * otherwise, saying what would be replaced and how to confirm.
 */
async function confirmRestore(dataDir: string, source: string, yes: boolean, newLineage = true): Promise<void> {
  const live = liveArchiveSummary(dataDir);
  if (live === null || yes) return;
  const fromBucket = source.startsWith('s3://');
  const what =
    `restore would replace ${live} with ${fromBucket ? 'the replica in' : 'the backup in'} ${source}; the replaced log would be kept in ` +
    `${join(dataDir, 'log.replaced-<time>')}/${newLineage ? ' and every client cursor would get 409 (new lineage)' : ''}.`;
  if (process.stdin.isTTY && process.stderr.isTTY) {
    const rl = createInterface({ input: process.stdin, output: process.stderr });
    try {
      const answer = await rl.question(`${what}\nType "yes" to replace it: `);
      if (answer.trim().toLowerCase() === 'yes') return;
    } finally {
      rl.close();
    }
    throw new ConfirmationRequired('restore not confirmed; nothing was changed');
  }
  throw new ConfirmationRequired(
    `${what} Nothing was changed. To confirm, run it again with --yes: ` +
      `node dist/cli.js --data-dir ${dataDir} restore ${fromBucket ? `--from ${source}` : source} --yes`,
  );
}

/**
 * `restore DIR [--yes]`: installs a backup into the stopped data folder with a new lineage. When
 * the folder already holds an archive it asks first (confirmRestore): exit 2 without --yes and
 * without a terminal.
 */
async function restore(dataDir: string, words: string[], options: Record<string, string | boolean>): Promise<unknown> {
  if (typeof options.from === 'string') return restoreFromReplica(dataDir, options);
  if (options['to-seq'] !== undefined || options['to-time'] !== undefined) throw new StoreStateError('--to-seq and --to-time go with --from s3://BUCKET/PREFIX (a backup folder is restored whole)');
  const source = words[0];
  if (!source) throw new StoreStateError('usage: restore DIR');
  if (await isDataDirLocked(dataDir)) throw new StoreStateError(`stop the server on ${dataDir} before "restore"`);
  await confirmRestore(dataDir, resolve(source), options.yes === true);
  return whileStopped(dataDir, 'restore', () => restoreArchive(dataDir, resolve(source), new Date().toISOString()));
}

/**
 * `restore --from s3://BUCKET/PREFIX [--to-seq N | --to-time T] [--yes]` (issue 35): rebuilds the
 * stopped data folder from a replica bucket (store/replica/restore.ts), asking first like
 * `restore DIR` when the folder holds an archive. The AWS SDK is loaded only here.
 */
async function restoreFromReplica(dataDir: string, options: Record<string, string | boolean>): Promise<unknown> {
  const url = options.from as string;
  const location = fromLocation(url);
  // A point before the bucket's end carries the later erasures of what it keeps (issue 50).
  const point: RestorePoint = { carryErasure: (payload, cutSeq, eraseSeq) => erasureCarriedTo(payload as ModerationPayload, cutSeq, eraseSeq) };
  if (options['to-seq'] !== undefined && options['to-time'] !== undefined) throw new StoreStateError('give --to-seq or --to-time, not both');
  if (options['to-seq'] !== undefined) {
    const n = String(options['to-seq']);
    if (!/^[1-9]\d{0,15}$/.test(n)) throw new StoreStateError(`--to-seq must be a record seq (a positive integer), got ${JSON.stringify(n)}`);
    point.toSeq = Number(n);
  }
  if (options['to-time'] !== undefined) {
    const t = String(options['to-time']);
    const ms = Date.parse(t);
    if (!/^\d{4}-\d{2}-\d{2}T/.test(t) || Number.isNaN(ms)) throw new StoreStateError(`--to-time must be an ISO 8601 time such as 2026-11-27T18:00:00Z, got ${JSON.stringify(t)}`);
    point.toTimeMs = ms;
  }
  const key = replicaVerifyKey(dataDir, options, 'restore --from');
  if (await isDataDirLocked(dataDir)) throw new StoreStateError(`stop the server on ${dataDir} before "restore"`);
  await confirmRestore(dataDir, url, options.yes === true, point.toSeq !== undefined || point.toTimeMs !== undefined);
  const store = await storeAt(location);
  try {
    return await whileStoppedAsync(dataDir, 'restore', () => restoreFromBucket(dataDir, store, key, point, new Date().toISOString()));
  } finally {
    store.close();
  }
}

/** The object store at a replica location (`fromLocation`); the SDK is imported only here, when a command reaches the bucket. */
async function storeAt(location: ReplicaLocation): Promise<ObjectStore> {
  quietSdkNodeWarning();
  const { S3ObjectStore } = await import('../store/replica/object-store.js');
  return new S3ObjectStore(location);
}

/** `--from`'s bucket and prefix. Throws StoreStateError naming the option and the rule (never echoing credentials: parseReplicaUrl). */
function fromLocation(url: string): ReplicaLocation {
  try {
    return parseReplicaUrl(url);
  } catch (err) {
    throw new StoreStateError(`--from: ${(err as Error).message}`);
  }
}

/**
 * `replication detach --yes` (issue 50; store/replica/marker.ts): on a stopped folder that led,
 * followed or was restored from a bucket, records that the operator ended its replication, so a
 * start without FORUM_REPLICA_URL/FORUM_FOLLOW is allowed. Output: `{detached, url, role, …}`.
 * Throws ConfirmationRequired (exit 2) without --yes, StoreStateError when a server runs on it or
 * it holds no archive.
 */
async function replicationDetach(dataDir: string, _w: string[], options: Record<string, string | boolean>): Promise<unknown> {
  if (!hasArchive(dataDir)) throw new StoreStateError(`${dataDir} holds no Agent Forum archive (no meta.json): check --data-dir`);
  if (options.yes !== true) {
    throw new ConfirmationRequired(
      'detach lets this folder start and take writes on its own, apart from the bucket it replicated to; the bucket and its servers never see those writes. ' +
        `Nothing was changed. To confirm, run it again with --yes: node dist/cli.js --data-dir ${dataDir} replication detach --yes`,
    );
  }
  return whileStopped(dataDir, 'replication detach', () => detachMarker(dataDir, new Date().toISOString()));
}

/**
 * `replication lost --from s3://BUCKET/PREFIX [--out FILE]` (issue 50; store/replica/lost.ts): on
 * the old leader's stopped folder after an async failover, the records acknowledged here that the
 * bucket lacks, and (--out) a JSON Lines file a client can replay. Reads only.
 */
async function replicationLost(dataDir: string, _w: string[], options: Record<string, string | boolean>): Promise<unknown> {
  if (typeof options.from !== 'string') throw new StoreStateError('usage: replication lost --from s3://BUCKET/PREFIX [--out FILE] [--public-key KEY]');
  const store = await storeAt(fromLocation(options.from));
  try {
    const key = replicaVerifyKey(dataDir, options, 'replication lost');
    return await whileStoppedAsync(dataDir, 'replication lost', () => findLost(dataDir, store, key, typeof options.out === 'string' ? resolve(options.out) : null));
  } finally {
    store.close();
  }
}

/**
 * The key a command that reads the bucket verifies with (issue 50): `--public-key`, else
 * FORUM_REPLICA_PUBLIC_KEY, else the public half of the signing key in the folder. Throws
 * StoreStateError saying what to give when there is none.
 */
function replicaVerifyKey(dataDir: string, options: Record<string, string | boolean>, what: string) {
  try {
    const publicKey = typeof options['public-key'] === 'string' ? options['public-key'] : undefined;
    const env = publicKey === undefined ? process.env : { ...process.env, FORUM_REPLICA_PUBLIC_KEY: publicKey };
    return verifyKey(replicaKeyEnv(env, dataDir), what);
  } catch (err) {
    throw new StoreStateError(publicKeyOptionMessage((err as Error).message, options['public-key'] !== undefined));
  }
}

/** A key refusal of a command that reads the bucket (`restore --from`, `replication lost`), naming --public-key when the key came from it. */
function publicKeyOptionMessage(message: string, fromOption: boolean): string {
  const named = fromOption ? message.replace(/^FORUM_REPLICA_PUBLIC_KEY/, '--public-key') : message;
  return named.replace('set FORUM_REPLICA_PUBLIC_KEY=', 'give --public-key (or set FORUM_REPLICA_PUBLIC_KEY=)');
}

/** whileStopped for an asynchronous `fn`. */
async function whileStoppedAsync<T>(dataDir: string, what: string, fn: () => Promise<T>): Promise<T> {
  if (await isDataDirLocked(dataDir)) throw new StoreStateError(`stop the server on ${dataDir} before "${what}"`);
  const release = await lockDataDir(dataDir);
  try {
    return await fn();
  } finally {
    await release();
  }
}

/** `repair --truncate | --new-lineage`: operator-approved recovery of a stopped data folder. */
async function repair(dataDir: string, _w: string[], options: Record<string, string | boolean>): Promise<unknown> {
  const mode = options.truncate ? 'truncate' : options['new-lineage'] ? 'new-lineage' : null;
  if (!mode) throw new StoreStateError('usage: repair --truncate | repair --new-lineage');
  return whileStopped(dataDir, 'repair', () => repairArchive(dataDir, mode, new Date().toISOString()));
}

/** Archive commands by their words: a whole group (`restore`) or a two-word command (`replication detach`). */
export const offlineCommands: Record<string, OfflineCommand> = { verify, backup, restore, repair, 'replication detach': replicationDetach, 'replication lost': replicationLost };
