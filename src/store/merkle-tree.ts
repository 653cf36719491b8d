/**
 * The Merkle tree over the log's records (issue 53, docs/api/checkpoints.md): leaf i is record
 * i + 1, its entry the record's 32-byte chained hash (record-format.ts), so an erased record — whose
 * tombstone keeps that hash — keeps its leaf, and the tree is derived from the log alone.
 *
 * Memory and disk (≤ 64 bytes per record): the leaf hashes of complete chunks of
 * TREE_CHUNK_LEAVES leaves go to a derived file (`<data>/index/merkle-leaves`, 32 bytes a leaf,
 * rewritten from the log at every start, never trusted from an earlier run); in RAM, the roots of
 * complete chunks and every complete node above them (64 / TREE_CHUNK_LEAVES bytes a record) and
 * the leaves of the last, unfinished chunk. A complete subtree of a chunk or more is one lookup; a
 * smaller one reads its chunk's leaves (one 8 KiB read, the last read kept) and hashes at most
 * TREE_CHUNK_LEAVES - 1 nodes. So a root or a proof costs O(log n) lookups and at most two chunk
 * reads.
 *
 * The tree follows the durable head (`catchUp`) in steps, each after a yield to the event loop, so
 * neither the rebuild at start nor a burst of writes holds the loop for long, and no step runs on
 * a write's answer path (the answers of a group commit go out before the tree takes its records).
 * Live records come from memory: after each group commit the log hands over the chained hashes
 * it computed over the bytes it wrote (Log#onDurableHashes → `feed`), and a step takes up to
 * TREE_LIVE_STEP of them. Whatever memory does not hold — the rebuild at start, records
 * before the first fed batch, a queue dropped past TREE_LIVE_MAX, and every line after one
 * whose check failed — is read back with Log#readLines (asynchronous reads, at most
 * TREE_READ_BYTES a step) and checked line by line as `appendRun` says.
 */
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { HASH_BYTES, leafHash, nodeHash, type SubtreeSource } from '../tlog/merkle.js';
import { GENESIS_HASH, chainHashBytes, scanLine, storedHashOfTail } from './record-format.js';
import { RecordDamagedError } from './errors.js';
import { ServiceError } from '../errors.js';
import { segmentName } from './segment.js';
import { logger } from '../logger.js';
import { SUBTREE_CACHE_MAX, TREE_CHUNK_LEAVES, TREE_LIVE_MAX, TREE_LIVE_STEP, TREE_READ_BYTES } from '../constants.js';
import type { LineRun } from './log.js';

/** The derived leaf file's name under the index folder. */
export const MERKLE_LEAVES_FILE = 'merkle-leaves';

/** What the tree reads from the log. */
export interface TreeLogSource {
  readonly durableSeq: number;
  readLines(fromSeq: number, toSeq: number, maxBytes: number): Promise<LineRun | null>;
}

/** Hash of a complete subtree of `leaves` (a power-of-two count of 32-byte leaf hashes, back to back). */
function subtreeOfLeaves(leaves: Buffer, start: number, size: number): Buffer {
  if (size === 1) return leaves.subarray(start * HASH_BYTES, (start + 1) * HASH_BYTES);
  const half = size / 2;
  return nodeHash(subtreeOfLeaves(leaves, start, half), subtreeOfLeaves(leaves, start + half, half));
}

/** The Merkle tree of the durable records, kept in step with the log (see the module doc). */
export class MerkleTree implements SubtreeSource {
  /** Complete nodes from chunk roots up: levels[0][c] is chunk c's root, levels[i] pairs levels[i - 1]. */
  private readonly levels: Buffer[][] = [[]];
  /** Leaf hashes of the unfinished last chunk. */
  private readonly tail = Buffer.alloc(TREE_CHUNK_LEAVES * HASH_BYTES);
  private tailCount = 0;
  private leaves = 0;
  /** The chained hash of the last record the tree holds (the next line must link to it). */
  private lastHash = GENESIS_HASH;
  /** A record after the last one whose own line failed its check: its stored hash waits for the next line to confirm it. */
  private pending: { seq: number; hash: string; offset: number } | null = null;
  private readonly entry = Buffer.alloc(HASH_BYTES);
  private readonly fd: number;
  private cached: { chunk: number; leaves: Buffer } | null = null;
  /** Hashed nodes of complete subtrees smaller than a chunk (`smallSubtree`), by start and size. */
  private readonly nodes = new Map<number, Buffer>();
  /**
   * Chained hashes of durable records fed from memory (`feed`), contiguous batches in seq order,
   * and how many hashes they hold in all (at most TREE_LIVE_MAX).
   */
  private live: Array<{ first: number; hashes: readonly string[] }> = [];
  private liveCount = 0;
  private pumping: Promise<void> | null = null;
  private again = false;
  private waiters: Array<{ size: number; resolve: () => void }> = [];
  private closed = false;
  /** The error that stopped catching up (the tree then stays at its size), or null. */
  failure: Error | null = null;

  /** Opens (truncates) the leaf file under `indexDir`. Throws what the file system throws. */
  constructor(indexDir: string, private readonly log: TreeLogSource) {
    this.fd = openSync(join(indexDir, MERKLE_LEAVES_FILE), 'w+', 0o600);
  }

  /** Number of leaves (= the durable records the tree holds, records 1..size). */
  get size(): number {
    return this.leaves;
  }

  /** Appends the leaf of one entry (a record's 32-byte chained hash). */
  appendEntry(entry: Uint8Array): void {
    leafHash(entry).copy(this.tail, this.tailCount * HASH_BYTES);
    this.tailCount++;
    this.leaves++;
    if (this.tailCount < TREE_CHUNK_LEAVES) return;
    const chunk = (this.leaves - TREE_CHUNK_LEAVES) / TREE_CHUNK_LEAVES;
    writeSync(this.fd, this.tail, 0, this.tail.length, chunk * this.tail.length);
    let node = subtreeOfLeaves(this.tail, 0, TREE_CHUNK_LEAVES);
    this.tailCount = 0;
    for (let level = 0; ; level++) {
      const row = (this.levels[level] ??= []);
      row.push(Buffer.from(node));
      if (row.length % 2 === 1) break;
      node = nodeHash(row[row.length - 2]!, row[row.length - 1]!);
    }
  }

  /** SubtreeSource: the complete subtree of `size` leaves at `start` (see merkle.ts). */
  aligned(start: number, size: number): Buffer {
    if (start + size > this.leaves) throw new RangeError(`subtree [${start}, ${start + size}) is beyond the tree's ${this.leaves} leaves`);
    if (size >= TREE_CHUNK_LEAVES) {
      const level = Math.log2(size / TREE_CHUNK_LEAVES);
      return this.levels[level]![start / size]!;
    }
    return this.smallSubtree(start, size);
  }

  /**
   * A complete subtree smaller than a chunk: a leaf is read from its chunk; a node is hashed from
   * its two halves once and kept (SUBTREE_CACHE_MAX nodes; a complete subtree never changes), so
   * the proofs of an export page — all against one tree size — hash each node of the chunks they
   * touch at most once instead of up to TREE_CHUNK_LEAVES - 1 nodes a proof.
   */
  private smallSubtree(start: number, size: number): Buffer {
    if (size === 1) {
      const chunk = Math.floor(start / TREE_CHUNK_LEAVES);
      const at = (start - chunk * TREE_CHUNK_LEAVES) * HASH_BYTES;
      return Buffer.from(this.chunkLeaves(chunk).subarray(at, at + HASH_BYTES));
    }
    // Unique while size < 2 * TREE_CHUNK_LEAVES (sizes here are powers of two below it).
    const key = start * 2 * TREE_CHUNK_LEAVES + size;
    let node = this.nodes.get(key);
    if (node === undefined) {
      const half = size / 2;
      node = nodeHash(this.smallSubtree(start, half), this.smallSubtree(start + half, half));
      if (this.nodes.size >= SUBTREE_CACHE_MAX) this.nodes.clear();
      this.nodes.set(key, node);
    }
    return node;
  }

  /** The leaf hashes of chunk `chunk`: the unfinished one from RAM, a complete one from the file. */
  private chunkLeaves(chunk: number): Buffer {
    const completeChunks = Math.floor(this.leaves / TREE_CHUNK_LEAVES);
    if (chunk >= completeChunks) return this.tail;
    if (this.cached?.chunk === chunk) return this.cached.leaves;
    const buf = Buffer.alloc(TREE_CHUNK_LEAVES * HASH_BYTES);
    let got = 0;
    while (got < buf.length) {
      const n = readSync(this.fd, buf, got, buf.length - got, chunk * buf.length + got);
      if (n === 0) throw new Error(`${MERKLE_LEAVES_FILE} ends before chunk ${chunk}`);
      got += n;
    }
    this.cached = { chunk, leaves: buf };
    return buf;
  }

  /**
   * Hands the tree the chained hashes (64 hex) of durable records `firstSeq`.. in seq order, as
   * the log computed them over the bytes it wrote (Log#onDurableHashes), and starts a catch-up,
   * which takes them without reading the log back. A batch that does not follow the last one fed,
   * or one past TREE_LIVE_MAX hashes queued, drops the queue: the catch-up reads those records
   * from the log instead. `hashes` is kept, not copied: the caller must not change it. Never throws.
   */
  feed(firstSeq: number, hashes: readonly string[]): void {
    if (this.closed || this.failure !== null || hashes.length === 0) return;
    const last = this.live[this.live.length - 1];
    if ((last !== undefined && last.first + last.hashes.length !== firstSeq) || this.liveCount + hashes.length > TREE_LIVE_MAX) this.dropLive();
    if (hashes.length <= TREE_LIVE_MAX) {
      this.live.push({ first: firstSeq, hashes });
      this.liveCount += hashes.length;
    }
    void this.catchUp();
  }

  private dropLive(): void {
    this.live = [];
    this.liveCount = 0;
  }

  /**
   * Takes up to TREE_LIVE_STEP fed hashes from record `from` on, across fed batches (each one confirmed: the log
   * computed it over the line it wrote, or the caller of Log#appendProven proved it). Drops the
   * fed hashes of records the tree already holds. Output: false when no fed hash is record
   * `from`'s (the log must be read).
   */
  private takeLive(from: number): boolean {
    let next = from;
    while (next - from < TREE_LIVE_STEP) {
      while (this.live.length > 0 && this.live[0]!.first + this.live[0]!.hashes.length <= next) this.liveCount -= this.live.shift()!.hashes.length;
      const batch = this.live[0];
      if (batch === undefined || batch.first > next) break;
      const end = Math.min(batch.hashes.length, next - batch.first + TREE_LIVE_STEP - (next - from));
      for (let i = next - batch.first; i < end; i++) this.take(batch.hashes[i]!);
      next = batch.first + end;
    }
    return next > from;
  }

  /**
   * Brings the tree up to the log's durable head, in steps of at most TREE_READ_BYTES of log with
   * a yield between them; a call while one runs makes it go round once more. Output: resolves when
   * caught up (or stopped by a failure, kept in `failure` and not thrown).
   */
  catchUp(): Promise<void> {
    if (this.pumping) {
      this.again = true;
      return this.pumping;
    }
    this.pumping = this.pump().finally(() => {
      this.pumping = null;
    });
    return this.pumping;
  }

  private async pump(): Promise<void> {
    do {
      this.again = false;
      // After a run that could not be read back (a damaged line end), lines are read one at a time
      // until the one at fault is found.
      let oneByOne = false;
      while (!this.closed && this.failure === null && this.read() < this.log.durableSeq) {
        // Each step after a yield: a group commit's answers go out before the tree takes its records.
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (this.closed) break;
        const from = this.read() + 1;
        // A record whose own line failed its check (`pending`) is confirmed only by the next line.
        if (this.pending === null && !oneByOne) {
          let took: boolean;
          try {
            took = this.takeLive(from);
          } catch (err) {
            // The leaf file could not be written (a full disk): the tree stops at its size.
            logger.error('merkle_stopped', `the Merkle tree stops before record ${this.leaves + 1}: ${(err as Error).message}; proofs past it answer 503 until a restart`, { seq: this.leaves + 1 });
            this.failure = err as Error;
            break;
          }
          if (took) {
            this.release();
            continue;
          }
        }
        try {
          const run = await this.log.readLines(from, this.log.durableSeq, oneByOne ? 1 : TREE_READ_BYTES);
          if (run === null || this.closed) break;
          this.appendRun(run);
        } catch (err) {
          if (err instanceof ServiceError) this.failure = err;
          else if (!oneByOne) oneByOne = true;
          else {
            try {
              this.damage(from, 'the log', 0, (err as Error).message);
            } catch (damage) {
              this.failure = damage as Error;
            }
          }
        }
        this.release();
      }
    } while (this.again && !this.closed && this.failure === null);
    this.release();
  }

  /**
   * Appends the entries of a run of lines that starts at the record after the last one taken (the
   * tree's size, plus the pending record, if any). A record's entry is its stored chained hash, taken
   * only once the chain confirms it: its own line hashes to it over the previous entry (a tombstone,
   * which is not hashed, only needs a well-formed one), or — when its own bytes are damaged but its
   * hash field is not — the next record's line hashes over it. So no leaf, and no signed checkpoint,
   * rests on a damaged hash field, while damage in a record's text leaves the tree whole (the proven
   * reads answer 500 for that record). A record whose own check fails waits (`pending`) for the
   * next one. Throws RecordDamagedError (500 INTERNAL for the routes) naming the record whose hash
   * field the chain refutes, or whose line gives none.
   */
  private appendRun(run: LineRun): void {
    const next = this.read() + 1;
    if (run.firstSeq !== next) throw new Error(`the tree holds ${this.leaves} records, the run starts at ${run.firstSeq}`);
    const { bytes } = run;
    const file = segmentName(run.segmentFirstSeq);
    let pos = 0;
    for (let seq = run.firstSeq; seq <= run.lastSeq; seq++) {
      const nl = bytes.indexOf(0x0a, pos);
      const stored = nl < 0 ? null : storedHashOfTail(bytes.subarray(pos, nl), nl - pos);
      if (stored === null) this.damage(seq, file, run.offset + pos, 'its line gives no chained hash');
      const prev = this.pending?.hash ?? this.lastHash;
      const f = scanLine(bytes, pos, nl);
      const own = f !== null && f.seq === seq && (f.erased || chainHashBytes(prev, bytes, pos, f.cut) === stored);
      if (this.pending !== null) {
        // The pending record's hash is confirmed when this line links to it.
        if (!own) this.damage(this.pending.seq, file, this.pending.offset, 'its line fails its hash check and the next record does not link to its hash field');
        this.take(this.pending.hash);
        this.pending = null;
      }
      if (own) this.take(stored);
      else this.pending = { seq, hash: stored, offset: run.offset + pos };
      pos = nl + 1;
    }
  }

  /** The last record read: the tree's size, and the pending record when there is one. */
  private read(): number {
    return this.leaves + (this.pending === null ? 0 : 1);
  }

  /** Appends the leaf of a confirmed entry (hex) and makes it the chain's last hash. */
  private take(hash: string): void {
    this.entry.write(hash, 'hex');
    this.appendEntry(this.entry);
    this.lastHash = hash;
  }

  /** Logs and throws the damage of record `seq` the tree stops before (see appendRun). */
  private damage(seq: number, file: string, offset: number, reason: string): never {
    logger.error('merkle_stopped', `the Merkle tree stops before record ${seq} in ${file} at byte offset ${offset}: ${reason}; exports and proofs past it answer 500 until the archive is repaired`, { file, offset, seq });
    throw new RecordDamagedError(file, offset, seq, reason);
  }

  /**
   * Resolves once the tree holds at least `size` records, or rejects with the catch-up failure or
   * after `timeoutMs` (Error "not yet"). Starts a catch-up.
   */
  waitFor(size: number, timeoutMs: number): Promise<void> {
    if (this.leaves >= size) return Promise.resolve();
    if (this.failure) return Promise.reject(this.failure);
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error(`the Merkle tree holds ${this.leaves} of ${size} records after ${timeoutMs} ms`));
      }, timeoutMs);
      timer.unref();
      const waiter = {
        size,
        resolve: () => {
          clearTimeout(timer);
          if (this.leaves >= size) resolve();
          else reject(this.failure ?? new Error(`the Merkle tree stopped at ${this.leaves} of ${size} records`));
        },
      };
      this.waiters.push(waiter);
      void this.catchUp();
    });
  }

  private release(): void {
    if (this.waiters.length === 0) return;
    const done = this.failure !== null || this.closed;
    const still: typeof this.waiters = [];
    for (const w of this.waiters) (this.leaves >= w.size || done ? w.resolve() : still.push(w));
    this.waiters = still;
  }

  /** Stops catching up and closes the leaf file. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.dropLive();
    closeSync(this.fd);
  }
}
