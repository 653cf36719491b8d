/**
 * Erasure, store side (issue 25; the erasure contract in docs/internals/storage.md#erasure-store-side-issue-25): replaces the lines
 * of erased records in their segments by tombstone lines of the same byte length
 * (record-format.ts `tombstoneLine`), so every record location stays valid and every later
 * chained hash is unchanged.
 *
 * Precondition: the `moderation.erase` record naming the targets is durable, and the log has
 * vouched for them (Log.append/replay fed `records.vouch`). Per segment holding a target:
 *   1. the segment is sealed (the log rolls over first when it is the active one, and no write
 *      to it is in progress), so the writer never appends to a file being rewritten; a log that
 *      follows a replica bucket, or one still opening, does not roll over (its segments must stay
 *      the leader's; issue 50): it closes the append handle and holds the next write until the
 *      rewrite is renamed in place (Log#sealSegment);
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
import { promises as fsp, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from './fsutil.js';
import { ERASE_RECORD_TYPE, HASH_PREFIX, HASH_SUFFIX_LENGTH, isTombstoneAt, tombstoneLine, type EraseTarget } from './record-format.js';
import { SEGMENT_NAME, segmentName } from './segment.js';
import type { SegmentRecords } from './records.js';

/** What erasure needs from the log (Log implements it). */
export interface EraseHost {
  readonly logDir: string;
  readonly records: SegmentRecords;
  /** Highest durable seq: a target must be at or below it. */
  readonly durableSeq: number;
  /** Resolves once the segment starting at `segmentFirstSeq` takes no more writes until the erasure ends (rolls over if active, or holds writes; Log#sealSegment). */
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
    const read = await fsp.readFile(path);
    // The active segment, sealed for this erasure, may still end in the zeros written ahead of its
    // appends (segment.ts ActiveSegment; cut off only when the log rolls over): never rewritten.
    let end = read.length;
    while (end > 0 && read[end - 1] === 0) end--;
    const buf = end < read.length ? read.subarray(0, end) : read;
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

/**
 * The bytes that end the record text of every `moderation.erase` line and of nothing else:
 * `type` is a line's last field before its hash (record-format.ts), inside a payload canonical
 * JSON sorts `hash` before `type`, and quotes inside strings are escaped.
 */
const ERASE_LINE_MARK = Buffer.from(`,"type":"${ERASE_RECORD_TYPE}"${HASH_PREFIX}`, 'utf8');

/**
 * The payloads of the `moderation.erase` lines in the segments of `logDir`, in log order, found
 * by a byte search for their fixed ending and parsing only those lines (issue 25): what a whole
 * replay that meets a tombstone before its erasure record needs first, for one read of the log
 * instead of parsing and hashing every record. Not proven: the chain is not checked here and a
 * line that does not parse (a torn tail) is skipped, so the caller must confirm every payload it
 * used against the records the chained replay applies (App.open does). Synchronous: startup only.
 */
export function scanEraseRecordPayloads(logDir: string): unknown[] {
  const out: unknown[] = [];
  const names = readdirSync(logDir).filter((n) => SEGMENT_NAME.test(n)).sort();
  for (const name of names) {
    const buf = readFileSync(join(logDir, name));
    for (let i = buf.indexOf(ERASE_LINE_MARK); i !== -1; i = buf.indexOf(ERASE_LINE_MARK, i + 1)) {
      const start = buf.lastIndexOf(0x0a, i) + 1;
      const end = buf.indexOf(0x0a, i);
      if (end === -1) break; // an unfinished last line is never a durable record
      try {
        const line = JSON.parse(buf.toString('utf8', start, end)) as { payload?: unknown };
        if (typeof line === 'object' && line !== null && line.payload !== undefined) out.push(line.payload);
      } catch {
        // Damage: the chained replay reports it (or never reaches it).
      }
    }
  }
  return out;
}
