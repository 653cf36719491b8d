/**
 * The async leader's shipping queue (issue 35; README "Replication"): the bytes of each group
 * commit's batch, handed over by the log as it writes them (Log#replicate), kept in memory until
 * they are shipped, so the ship loop does not read back from the segment files the lines the
 * group commit just had in memory.
 *
 * `take` cuts exactly the run `Log#readLines` would read from disk (same first seq, the same
 * lines, the same segment and offset, the same bytes: a chunk built from it is byte-identical),
 * or answers null when the queue cannot (it does not start at the asked seq: the backlog before
 * it was dropped, or the leader started on records written before it), and the caller reads from
 * disk. The bytes are the ones written; a record erased since it was written has other
 * bytes on disk (its tombstone), so the caller must not take a run that holds an erase target
 * (ReplicaLeader checks the log's vouched map first).
 *
 * Bounded: past `maxBytes` (REPLICA_SHIP_QUEUE_BYTES_MAX: the store is down or slower than the
 * writes) the queue is dropped and starts again from the newest batch; the records in between are
 * read back from disk when their turn comes.
 */
import type { LineRun, WrittenBatch } from '../log.js';
import { storedHashOfTail } from '../record-format.js';

/** What the queue has done (tests, benchmarks, `replication status` does not show it). */
export interface ShipQueueStats {
  /** Runs cut from memory, and times the queue was dropped for its byte bound. */
  taken: number;
  dropped: number;
}

/** A run of whole lines kept for shipping: a written batch, or what is left of one after a cut. */
type Entry = LineRun;

export class ShipQueue {
  private entries: Entry[] = [];
  /** Index of the first live entry in `entries` (cheap removal from the front). */
  private head = 0;
  private bytes = 0;
  readonly stats: ShipQueueStats = { taken: 0, dropped: 0 };

  /** `maxBytes`: the bound on the bytes held (REPLICA_SHIP_QUEUE_BYTES_MAX). */
  constructor(private readonly maxBytes: number) {}

  /** Bytes held now. */
  get size(): number {
    return this.bytes;
  }

  /** The first seq held, or null when the queue is empty. */
  get firstSeq(): number | null {
    return this.entries[this.head]?.firstSeq ?? null;
  }

  /**
   * Keeps a batch just written (Log#replicate; its fdatasync may still be under way: `take` is
   * only asked for durable seqs). A batch that does not follow the last one kept, or that would
   * pass the byte bound, drops what is held first.
   */
  push(batch: WrittenBatch): void {
    const last = this.entries.length > this.head ? this.entries[this.entries.length - 1]! : undefined;
    if (last !== undefined && batch.firstSeq !== last.lastSeq + 1) this.clear();
    if (this.bytes + batch.data.length > this.maxBytes) {
      if (this.bytes > 0) this.stats.dropped++;
      this.clear();
    }
    this.entries.push({
      firstSeq: batch.firstSeq,
      lastSeq: batch.lastSeq,
      prevHash: batch.prevHash,
      lastHash: batch.lastHash,
      segmentFirstSeq: batch.segmentFirstSeq,
      offset: batch.offset,
      bytes: batch.data,
    });
    this.bytes += batch.data.length;
  }

  /** Drops everything held. */
  clear(): void {
    this.entries = [];
    this.head = 0;
    this.bytes = 0;
  }

  /**
   * Forgets every line up to `seq` (shipped, from memory or from disk); a batch shipped in part
   * keeps its later lines.
   */
  shipped(seq: number): void {
    while (this.head < this.entries.length && this.entries[this.head]!.lastSeq <= seq) {
      this.bytes -= this.entries[this.head]!.bytes.length;
      this.entries[this.head] = undefined as unknown as Entry;
      this.head++;
    }
    if (this.head === this.entries.length) this.clear();
    else if (this.head > 1024) {
      this.entries = this.entries.slice(this.head);
      this.head = 0;
    }
    const first = this.entries[this.head];
    if (first !== undefined && first.firstSeq <= seq) {
      const cut = cutLines(first, seq - first.firstSeq + 1, Number.MAX_SAFE_INTEGER, false);
      this.entries[this.head] = rest(first, cut);
      this.bytes -= cut.end;
    }
  }

  /**
   * The run `Log#readLines(fromSeq, toSeq, maxBytes)` would read, from memory: the lines from
   * `fromSeq` through at most `toSeq` that lie in `fromSeq`'s segment, as many as fit in
   * `maxBytes` (always at least one). Null when the queue does not hold `fromSeq` at its front
   * (read from disk instead). `toSeq` must be durable. Nothing is removed (see `shipped`).
   */
  take(fromSeq: number, toSeq: number, maxBytes: number): LineRun | null {
    const first = this.entries[this.head];
    if (first === undefined || first.firstSeq !== fromSeq || toSeq < fromSeq) return null;
    const parts: Buffer[] = [];
    let size = 0;
    let lastSeq = fromSeq - 1;
    let lastHash = first.prevHash;
    for (let i = this.head; i < this.entries.length; i++) {
      const e = this.entries[i]!;
      if (e.firstSeq !== lastSeq + 1 || e.segmentFirstSeq !== first.segmentFirstSeq || e.offset !== first.offset + size || e.firstSeq > toSeq) break;
      if (e.lastSeq <= toSeq && size + e.bytes.length <= maxBytes) {
        parts.push(e.bytes);
        size += e.bytes.length;
        lastSeq = e.lastSeq;
        lastHash = e.lastHash;
        continue;
      }
      // The run ends inside this batch: its lines up to toSeq that fit (at least one in all).
      const cut = cutLines(e, toSeq - e.firstSeq + 1, maxBytes - size, size === 0);
      if (cut.lines > 0) {
        parts.push(e.bytes.subarray(0, cut.end));
        size += cut.end;
        lastSeq = e.firstSeq + cut.lines - 1;
        lastHash = cut.hash;
      }
      break;
    }
    if (size === 0) return null;
    this.stats.taken++;
    return {
      firstSeq: fromSeq,
      lastSeq,
      prevHash: first.prevHash,
      lastHash,
      segmentFirstSeq: first.segmentFirstSeq,
      offset: first.offset,
      bytes: parts.length === 1 ? parts[0]! : Buffer.concat(parts, size),
    };
  }
}

/**
 * The first lines of `e`: at most `maxLines`, as many as fit in `maxBytes` (the first one even
 * when it does not, if `atLeastOne`). Output: how many, the byte length, and the chained hash of
 * the last one (the stored hash at its line's end).
 */
function cutLines(e: Entry, maxLines: number, maxBytes: number, atLeastOne: boolean): { lines: number; end: number; hash: string } {
  let lines = 0;
  let end = 0;
  while (lines < maxLines && end < e.bytes.length) {
    const nl = e.bytes.indexOf(10, end);
    if (nl === -1) break;
    if (nl + 1 > maxBytes && !(atLeastOne && lines === 0)) break;
    end = nl + 1;
    lines++;
  }
  const hash = lines === 0 ? '' : storedHashOfTail(e.bytes, end - 1);
  if (hash === null) throw new Error(`replication: record ${e.firstSeq + lines - 1} in the shipping queue does not end with its hash`);
  return { lines, end, hash };
}

/** What is left of `e` after its first `cut.lines` lines. */
function rest(e: Entry, cut: { lines: number; end: number; hash: string }): Entry {
  return { ...e, firstSeq: e.firstSeq + cut.lines, prevHash: cut.hash, offset: e.offset + cut.end, bytes: e.bytes.subarray(cut.end) };
}
