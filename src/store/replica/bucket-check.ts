/**
 * The leader's periodic bucket check (issue 50): one paged LIST of `segments/` and one of
 * `chunks/`; every sealed segment the manifest lists and every chunk up to the shipped head must
 * be there. A missing object is named (`replication status` `bucketCheck`, one error log line, the
 * `forum_replica_bucket_missing_objects` gauge) and put back from the leader's own segment files:
 * a chunk is created again (signed, If-None-Match) from the same records; a segment only when the
 * local file's SHA-256 is the one the manifest lists. The leader (leader.ts) decides when it runs
 * (at most every FORUM_REPLICA_CHECK_MS while leading) and keeps the result.
 */
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { logger } from '../../logger.js';
import { LOG_DIR, type LineRun, type Log } from '../log.js';
import { segmentName } from '../segment.js';
import { CHUNKS_DIR, SEGMENTS_DIR, chunkName, segmentObjectName, sha256Hex, type Manifest } from './format.js';
import { putSegment, type ObjectStore } from './object-store.js';
import type { ChunkRef } from './takeover.js';

/** One bucket check's result: when it ended (ISO), the objects it found missing, and those it put back. */
export interface BucketCheck {
  at: string;
  missing: string[];
  repaired: string[];
}

/** What a check reads: the bucket, the leader's log, manifest, chunks and shipped head, and how it signs a chunk. */
export interface BucketCheckInput {
  store: ObjectStore;
  log: Log;
  manifest: Manifest;
  chunks: readonly ChunkRef[];
  shippedSeq: number;
  /** The signed bytes of the chunk holding `run`, as the leader writes it (leader.ts chunkBody). */
  chunkBody(run: LineRun): Buffer;
  /** Current time, ms (the result's `at`). */
  now(): number;
}

/**
 * Runs one bucket check (module doc). Output: the result, and `problem`: the text the leader keeps
 * as its lastError (also logged as one error line), or null when nothing is missing. Throws the
 * store's error when it cannot be reached (the leader's loop retries).
 */
export async function checkBucket(input: BucketCheckInput): Promise<{ check: BucketCheck; problem: string | null }> {
  const { store, log, manifest } = input;
  const segmentNames = new Set(await store.list(SEGMENTS_DIR));
  const chunkNames = new Set(await store.list(CHUNKS_DIR));
  const missing: string[] = [];
  const repaired: string[] = [];
  for (const seg of manifest.segments) {
    const name = segmentObjectName(seg.firstSeq);
    if (segmentNames.has(name)) continue;
    missing.push(name);
    const bytes = await fsp.readFile(join(log.dataDir, LOG_DIR, segmentName(seg.firstSeq))).catch(() => null);
    if (bytes !== null && sha256Hex(bytes) === seg.sha256) {
      await putSegment(store, seg.firstSeq, bytes);
      repaired.push(name);
    }
  }
  for (const c of input.chunks) {
    const name = chunkName(c.firstSeq);
    if (c.lastSeq > input.shippedSeq || chunkNames.has(name)) continue;
    missing.push(name);
    const run = await log.readLines(c.firstSeq, c.lastSeq, Number.MAX_SAFE_INTEGER);
    if (run === null || run.lastSeq !== c.lastSeq) continue;
    const r = await store.create(name, input.chunkBody(run));
    if (r.outcome === 'created') repaired.push(name);
  }
  const check = { at: new Date(input.now()).toISOString(), missing, repaired };
  if (missing.length === 0) return { check, problem: null };
  const unrepaired = missing.filter((n) => !repaired.includes(n));
  const problem = `the bucket check found ${missing.length} missing object(s): ${missing.join(', ')}; ${repaired.length} put back from this server's log${unrepaired.length > 0 ? `; not put back: ${unrepaired.join(', ')}` : ''}`;
  logger.error('replication_bucket_check', `replication: ${problem}`, { bucket: store.location.url, missing, repaired });
  return { check, problem };
}
