/**
 * Runs of whole log lines (issue 35): a group commit's written batch as replication is handed it,
 * and a run read back from one segment file (`readLineRun`, behind Log#readLines), what the
 * leader ships and a restore proves.
 */
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { GENESIS_HASH, HASH_SUFFIX_LENGTH, storedHashOfTail } from './record-format.js';
import type { SegmentRecords } from './records.js';
import { segmentName } from './segment.js';

/**
 * One group commit's batch, written (its fdatasync under way) but not yet marked durable: what
 * `Log#replicate` is handed (issue 35). `data` is exactly the bytes written, starting at byte
 * `offset` of the segment whose first record is `segmentFirstSeq`.
 */
export interface WrittenBatch {
  firstSeq: number;
  lastSeq: number;
  /** Chained hash of record lastSeq, and of record firstSeq - 1. */
  lastHash: string;
  prevHash: string;
  segmentFirstSeq: number;
  offset: number;
  data: Buffer;
}

/** A run of whole log lines read back from one segment file (`Log#readLines`). */
export interface LineRun {
  firstSeq: number;
  lastSeq: number;
  /** Chained hash of record firstSeq - 1 and of record lastSeq. */
  prevHash: string;
  lastHash: string;
  segmentFirstSeq: number;
  /** Byte offset of the first line in its segment. */
  offset: number;
  bytes: Buffer;
}

/**
 * Reads back the lines of records `fromSeq`..`last` (all durable) that lie in the segment of
 * `fromSeq`, at most about `maxBytes` (always at least one line), from the segment files under
 * `logDir`, located by `records`. Output: the run, or null when `fromSeq` is past `last` or not
 * located. Throws Error when a segment file cannot be read or a line does not end where located.
 */
export async function readLineRun(logDir: string, records: SegmentRecords, last: number, fromSeq: number, maxBytes: number): Promise<LineRun | null> {
  const locations = records.locations;
  const first = locations.locate(fromSeq);
  if (first === undefined || fromSeq > last) return null;
  let end = fromSeq;
  let endLoc = first;
  for (let s = fromSeq + 1; s <= last; s++) {
    const loc = locations.locate(s)!;
    if (loc.segmentFirstSeq !== first.segmentFirstSeq || loc.offset + loc.length + HASH_SUFFIX_LENGTH + 1 - first.offset > maxBytes) break;
    end = s;
    endLoc = loc;
  }
  const size = endLoc.offset + endLoc.length + HASH_SUFFIX_LENGTH + 1 - first.offset;
  const bytes = Buffer.allocUnsafe(size);
  const h = await fsp.open(join(logDir, segmentName(first.segmentFirstSeq)), 'r');
  try {
    let got = 0;
    while (got < size) {
      const { bytesRead } = await h.read(bytes, got, size - got, first.offset + got);
      if (bytesRead === 0) throw new Error(`${segmentName(first.segmentFirstSeq)} ends before record ${end}`);
      got += bytesRead;
    }
  } finally {
    await h.close();
  }
  const prevHash = fromSeq === 1 ? GENESIS_HASH : records.storedHashOf(fromSeq - 1)!;
  const lastHash = storedHashOfTail(bytes, size - 1);
  if (lastHash === null) throw new Error(`record ${end} does not end where it was located`);
  return { firstSeq: fromSeq, lastSeq: end, prevHash, lastHash, segmentFirstSeq: first.segmentFirstSeq, offset: first.offset, bytes };
}
