/**
 * Erasure, store side (issue 25; the erasure contract in README "Erasure"): replaces the lines
 * of erased records in their segments by tombstone lines of the same byte length
 * (record-format.ts `tombstoneLine`), so every record location stays valid and every later
 * chained hash is unchanged.
 *
 * Precondition: the `moderation.erase` record naming the targets is durable, and the log has
 * vouched for them (Log.append/replay fed `records.vouch`). Per segment holding a target:
 *   1. the segment is sealed (the log rolls over first when it is the active one, and no write
 *      to it is in progress), so the writer never appends to a file being rewritten;
 *   2. the segment is read, each target line is proven (records.storedHashOf equals the
 *      target's hash) and replaced by its tombstone in memory;
 *   3. the result is written by writeFileAtomic (`<segment>.tmp-<pid>` in the log folder,
 *      fsynced, renamed over the segment, the folder fsynced). A crash at any instant leaves the old file or the new
 *      one, never a mix; a leftover temp file is removed at the next start (Log.open), and a
 *      target whose line is still the original is erased again at that start.
 *   4. right after the rename, the record cache and the segment's read descriptor are dropped
 *      (reads open the new file).
 * Derived indexes holding an erased record (the search index's shards) are dropped by the
 * caller's `beforeRewrite` hook, before step 3, so no crash can leave them behind.
 */
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from './fsutil.js';
import { HASH_SUFFIX_LENGTH, isTombstoneAt, segmentName, tombstoneLine, type EraseTarget } from './record-format.js';
import type { SegmentRecords } from './records.js';

/** What erasure needs from the log (Log implements it). */
export interface EraseHost {
  readonly logDir: string;
  readonly records: SegmentRecords;
  /** Highest durable seq: a target must be at or below it. */
  readonly durableSeq: number;
  /** Resolves once the segment starting at `segmentFirstSeq` takes no more writes (rolls over if active). */
  sealSegment(segmentFirstSeq: number): Promise<void>;
  /** Called with the targets' seqs before any segment is rewritten (drop derived copies). */
  beforeRewrite?: ((seqs: readonly number[]) => void) | null;
}

/**
 * Replaces every target's line by its tombstone (see the module doc). Input: targets `{seq,
 * hash}` with the record's original chained hash. Output: the seqs whose lines were rewritten
 * now (targets already tombstoned are skipped). Throws Error, changing nothing, when a target is
 * not a durable record, not vouched for with that hash, or its line does not carry that hash;
 * rejects on a file-system error (the segment is then the old file or the new one).
 */
export async function eraseRecords(host: EraseHost, targets: ReadonlyArray<EraseTarget>): Promise<number[]> {
  const { records } = host;
  const bySegment = new Map<number, EraseTarget[]>();
  for (const t of targets) {
    const loc = records.locations.locate(t.seq);
    if (loc === undefined || t.seq > host.durableSeq) throw new Error(`erase: record ${t.seq} is not a durable record of the log`);
    if (records.locations.vouched.get(t.seq) !== t.hash) {
      throw new Error(`erase: record ${t.seq} is not named with hash ${t.hash} by a moderation.erase record (append it and sync first)`);
    }
    // A proven read: the line on disk is the record (or its tombstone) carrying that hash.
    if (records.storedHashOf(t.seq) !== t.hash) throw new Error(`erase: record ${t.seq} does not carry hash ${t.hash}`);
    const list = bySegment.get(loc.segmentFirstSeq) ?? [];
    list.push(t);
    bySegment.set(loc.segmentFirstSeq, list);
  }
  host.beforeRewrite?.(targets.map((t) => t.seq));
  const rewritten: number[] = [];
  for (const [segmentFirstSeq, list] of bySegment) {
    await host.sealSegment(segmentFirstSeq);
    const path = join(host.logDir, segmentName(segmentFirstSeq));
    const buf = await fsp.readFile(path);
    const changed: number[] = [];
    for (const t of list) {
      const loc = records.locations.locate(t.seq)!;
      const end = loc.offset + loc.length + HASH_SUFFIX_LENGTH + 1;
      if (end > buf.length) throw new Error(`erase: ${path} ends before record ${t.seq}`);
      if (isTombstoneAt(buf, loc.offset)) continue;
      tombstoneLine(buf.subarray(loc.offset, end), t.seq).copy(buf, loc.offset);
      changed.push(t.seq);
    }
    if (changed.length === 0) continue;
    // Reads open the new file from the rename on (the old descriptor still shows the old inode).
    await writeFileAtomic(path, buf, { onRenamed: () => records.segmentReplaced(segmentFirstSeq, changed) });
    rewritten.push(...changed);
  }
  return rewritten;
}
