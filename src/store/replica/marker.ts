/**
 * The split-brain guard (issue 50 High item 5; docs/operate/replication.md#split-brain-guard-a-replicated-folder-starts-only-with-replica-settings): a data
 * folder that has replicated remembers the bucket in `DATA/replication.json`, and a server start
 * without FORUM_REPLICA_URL or FORUM_FOLLOW on it is refused — one forgotten environment line on
 * an old leader's folder would otherwise serve and take writes beside the new leader.
 *
 *     {"format":"agent-forum-replication-v1","originId":…,"url":"s3://bucket/prefix",
 *      "role":"leader"|"follower","since":ISO,"epoch"?:N,"detached"?:ISO}
 *
 * Written (temp file → fsync → rename → fsync directory) when this folder takes a writer epoch
 * (the moment its log gets a `replication.epoch` record) and when it starts as a follower. A
 * `restore --from` copy is not marked: it has not replicated yet (a restore drill may serve it on
 * its own), and the runbook's next step starts it with FORUM_REPLICA_URL, which marks it.
 * `replication detach --yes` (offline, on a stopped folder)
 * adds `detached`, after which a start without replica settings is allowed, and a later start
 * with them writes the marker afresh. The marker binds to the log's originId: a folder given a
 * new lineage (`restore DIR`, `repair --new-lineage`, a point-in-time restore) is another archive,
 * whose records no other server shares, and its old marker no longer applies.
 *
 * Why a file next to meta.json and not a log record: the check runs before the log is replayed
 * and must cost nothing on a large log; a record in the log would be found only by a replay
 * (or a new field in the state snapshot). The detachment is an operator's decision about this
 * folder, not part of the forum's history that followers replicate.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPLICATION_MARKER_FILE } from '../../constants.js';
import { StoreStateError } from '../errors.js';
import { writeFileAtomicSync } from '../fsutil.js';
import { readMeta } from '../meta.js';

/** Format tag of the marker file. */
export const MARKER_FORMAT = 'agent-forum-replication-v1';

/** How the folder replicated: it led the bucket or followed it. */
export type MarkerRole = 'leader' | 'follower';

/** The contents of `DATA/replication.json`. */
export interface ReplicationMarker {
  format: typeof MARKER_FORMAT;
  /** The log's originId when the marker was written. */
  originId: string;
  /** The bucket and prefix, as configured (never holds credentials: parseReplicaUrl refuses "@"). */
  url: string;
  role: MarkerRole;
  /** When the marker was written (ISO). */
  since: string;
  /**
   * The writer epoch this folder last led at (role leader, once its fence record is appended):
   * a start that finds the bucket still at that epoch was the last writer (issue 50, positions).
   */
  epoch?: number;
  /** When `replication detach --yes` detached the folder (ISO); absent while it replicates. */
  detached?: string;
}

const markerPath = (dataDir: string): string => join(dataDir, REPLICATION_MARKER_FILE);

/** The folder's marker, or null when there is none. Throws StoreStateError when it is unreadable (naming the file and the remedy). */
export function readMarker(dataDir: string): ReplicationMarker | null {
  const path = markerPath(dataDir);
  if (!existsSync(path)) return null;
  let m: ReplicationMarker;
  try {
    m = JSON.parse(readFileSync(path, 'utf8')) as ReplicationMarker;
  } catch (err) {
    throw new StoreStateError(`${path} is not valid JSON (${(err as Error).message}): start the server with the replica settings it was written for, which rewrites it`);
  }
  if (m?.format !== MARKER_FORMAT || typeof m.originId !== 'string' || typeof m.url !== 'string') throw new StoreStateError(`${path} is not an ${MARKER_FORMAT} file`);
  return m;
}

/**
 * Records that the folder (log `originId`) replicates with `url` in `role`, unless the marker
 * already says exactly that (no write on an ordinary restart). Durable before it returns.
 */
export function markReplicated(dataDir: string, originId: string, url: string, role: MarkerRole, nowIso: string, epoch?: number): void {
  const old = readMarkerQuietly(dataDir);
  if (old !== null && old.originId === originId && old.url === url && old.role === role && old.detached === undefined && old.epoch === epoch) return;
  const m: ReplicationMarker = { format: MARKER_FORMAT, originId, url, role, since: nowIso, ...(epoch === undefined ? {} : { epoch }) };
  writeFileAtomicSync(markerPath(dataDir), `${JSON.stringify(m, null, 1)}\n`);
}

/**
 * Whether the folder (log `originId`) last led `url` at writer epoch `epoch` (issue 50): its
 * marker says so. A copy of the folder carries the marker too; see docs/operate/replication.md#positions.
 */
export function ledAtEpoch(dataDir: string, originId: string, url: string, epoch: number): boolean {
  const m = readMarkerQuietly(dataDir);
  return m !== null && m.originId === originId && m.url === url && m.role === 'leader' && m.detached === undefined && m.epoch === epoch;
}

/** readMarker, where an unreadable marker reads as none (it is about to be rewritten). */
function readMarkerQuietly(dataDir: string): ReplicationMarker | null {
  try {
    return readMarker(dataDir);
  } catch {
    return null;
  }
}

/**
 * `replication detach --yes`: marks the stopped folder's replication as ended by the operator.
 * Output: `{detached: true, url, role, originId, time}`, or `{detached: false, reason}` when the
 * folder never replicated (nothing to detach). Throws StoreStateError for an unreadable marker.
 */
export function detachMarker(dataDir: string, nowIso: string): { detached: boolean; url?: string; role?: MarkerRole; originId?: string; time?: string; reason?: string } {
  const m = readMarker(dataDir);
  const meta = readMeta(dataDir);
  if (m === null || meta === null || m.originId !== meta.originId) return { detached: false, reason: 'this data folder has no replication to detach (it never led or followed a bucket with its current lineage)' };
  if (m.detached !== undefined) return { detached: true, url: m.url, role: m.role, originId: m.originId, time: m.detached };
  writeFileAtomicSync(markerPath(dataDir), `${JSON.stringify({ ...m, detached: nowIso }, null, 1)}\n`);
  return { detached: true, url: m.url, role: m.role, originId: m.originId, time: nowIso };
}

/**
 * Before a server opens its folder without FORUM_REPLICA_URL and FORUM_FOLLOW: throws
 * StoreStateError (the server exits 1) when the folder has replicated with its current lineage
 * and was not detached, naming the bucket and the remedies. A new folder, one that never
 * replicated, a new lineage and a detached folder pass.
 */
export function assertMayStartAlone(dataDir: string): void {
  const m = readMarker(dataDir);
  if (m === null || m.detached !== undefined) return;
  const meta = readMeta(dataDir);
  if (meta === null || meta.originId !== m.originId) return;
  const as = m.role === 'leader' ? 'led' : 'followed';
  throw new StoreStateError(
    `this data folder ${as} the replica bucket ${m.url} (since ${m.since}); started without FORUM_REPLICA_URL or FORUM_FOLLOW it would take writes ` +
      `that bucket and its servers never see (a split brain). Start it with FORUM_REPLICA_URL=${m.url} to lead (it checks the bucket first) or ` +
      `FORUM_FOLLOW=${m.url} to follow; or, to serve this folder on its own from now on, run (server stopped): ` +
      `node dist/cli.js --data-dir ${dataDir} replication detach --yes`,
  );
}
