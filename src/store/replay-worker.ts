/**
 * Parallel whole replay (issue 30): segments are independent files, and the hash chain only
 * needs each segment's first previous-hash, which the previous segment's last record gives. So a
 * worker thread reads a whole segment, frames every line and checks the chain inside it — from
 * the stored hash of its first line, whose own check (the link to the segment before) the main
 * thread does — and the seq of every line. It hands back the segment's bytes (transferred, not
 * copied) and per line a few byte offsets (a Uint32Array, transferred): the main thread builds
 * the records from them, in log order, and applies them (log.ts `replaySegmentsInWorkers`).
 *
 * This file is both sides: `SegmentChecker` (main thread) starts the workers and hands out
 * checked segments in order, at most `ahead` segments beyond the one being applied (bounded
 * memory: about `ahead` × SEGMENT_BYTES_MAX); loaded as a worker (workerData `{role:
 * 'replay-worker'}`) it checks the segments it is sent, one at a time, in the order sent.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { LogCorruptError } from './errors.js';
import { checkLine, scanLine, storedHashAt } from './record-format.js';

/** Numbers per checked line in `CheckedSegment.fields`: pos, erased, cut, payload, time, type bounds. */
export const CHECKED_FIELDS = 9;

/** One segment as a worker checked it. */
export interface CheckedSegment {
  /** The segment's bytes, whole. */
  bytes: Buffer;
  /**
   * Lines checked, in order: framing and seq for each, the chain from the first line's stored hash
   * for the lines after it. The first line's link to the previous segment is not checked.
   */
  count: number;
  /**
   * Per line, CHECKED_FIELDS numbers: its byte offset, 1 for a tombstone (else 0), the end of its
   * record text (`cut`), then payload, time and type bounds (record-format.ts LineFields).
   */
  fields: Uint32Array;
  /** The damage that stopped the check (the line after the checked ones), or null when the whole segment was checked. */
  damage: { offset: number; reason: string } | null;
}

/** A segment to check: its path and the seq its first record must carry (its name). */
interface Task {
  file: string;
  firstSeq: number;
}

/** What a worker sends back per task, in the order of the tasks it was sent. */
type Reply = { checked: Omit<CheckedSegment, 'bytes'> & { bytes: Uint8Array } } | { error: unknown };

const ROLE = 'replay-worker';

/**
 * The main thread's side: checks the segments `tasks` (in log order) on `workers` worker threads,
 * task i on worker i mod workers, keeping at most `ahead` tasks sent and not yet taken.
 * `take(i)` must be called for i = 0, 1, 2, … in order; `close()` stops the workers (always call
 * it, also after an error).
 */
export class SegmentChecker {
  private readonly workers: Worker[] = [];
  /** Replies per task index, settled as they arrive. */
  private readonly replies = new Map<number, { promise: Promise<CheckedSegment>; resolve: (c: CheckedSegment) => void; reject: (e: unknown) => void }>();
  /** Per worker, the task indexes sent to it and not yet answered, oldest first. */
  private readonly sent: number[][] = [];
  private nextTask = 0;
  private closed = false;

  constructor(
    private readonly tasks: Task[],
    workerCount: number,
    private readonly ahead: number,
  ) {
    const count = Math.max(1, Math.min(workerCount, tasks.length));
    for (let w = 0; w < count && tasks.length > 0; w++) {
      const worker = new Worker(new URL('./replay-worker.js', import.meta.url), { workerData: { role: ROLE } });
      this.sent.push([]);
      worker.on('message', (m: Reply) => this.onReply(w, m));
      worker.on('error', (err) => this.failAll(w, err));
      worker.on('exit', (code) => {
        if (!this.closed) this.failAll(w, new Error(`a replay worker exited (code ${code})`));
      });
      this.workers.push(worker);
    }
    this.fill(0);
  }

  /** Worker threads started. */
  get workerCount(): number {
    return this.workers.length;
  }

  /** The checked segment of task `i`; rejects with what the worker threw (a file-system error). */
  take(i: number): Promise<CheckedSegment> {
    this.fill(i);
    return this.entry(i).promise;
  }

  /** Stops the workers. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.workers.map((w) => w.terminate()));
  }

  private entry(i: number) {
    let e = this.replies.get(i);
    if (e === undefined) {
      let resolve!: (c: CheckedSegment) => void;
      let reject!: (e: unknown) => void;
      const promise = new Promise<CheckedSegment>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      // A reply nobody takes (an earlier segment failed) must not surface as an unhandled rejection.
      promise.catch(() => undefined);
      e = { promise, resolve, reject };
      this.replies.set(i, e);
    }
    return e;
  }

  /** Sends tasks up to `ahead` beyond `taking` (the task the main thread takes now). */
  private fill(taking: number): void {
    if (taking > 0) this.replies.delete(taking - 1);
    while (this.nextTask < this.tasks.length && this.nextTask < taking + this.ahead) {
      const i = this.nextTask++;
      const w = i % this.workers.length;
      this.entry(i);
      this.sent[w]!.push(i);
      this.workers[w]!.postMessage(this.tasks[i]);
    }
  }

  private onReply(w: number, m: Reply): void {
    const i = this.sent[w]!.shift();
    if (i === undefined) return;
    const e = this.entry(i);
    if ('error' in m) e.reject(m.error);
    else {
      const c = m.checked;
      e.resolve({ ...c, bytes: Buffer.from(c.bytes.buffer, c.bytes.byteOffset, c.bytes.byteLength) });
    }
  }

  private failAll(w: number, err: unknown): void {
    for (const i of this.sent[w]!.splice(0)) this.entry(i).reject(err);
  }
}

/**
 * Reads `file` into a buffer of its own (not Node's shared pool, so that its memory can be
 * transferred to the main thread).
 */
function readWhole(file: string): Buffer {
  const fd = openSync(file, 'r');
  try {
    const size = fstatSync(fd).size;
    const buf = Buffer.allocUnsafeSlow(size);
    let read = 0;
    while (read < size) {
      const n = readSync(fd, buf, read, size - read, read);
      if (n === 0) break;
      read += n;
    }
    return read === size ? buf : buf.subarray(0, read);
  } finally {
    closeSync(fd);
  }
}

/**
 * Checks segment `task` (see CheckedSegment): every line framed, with the expected seq, and
 * chained to the line before it (the first line from its own stored hash). Stops at the first
 * damage, as replay would (the same reason and offset).
 */
function checkSegment(task: Task): CheckedSegment {
  const buf = readWhole(task.file);
  let fields = new Uint32Array(CHECKED_FIELDS * 4096);
  let count = 0;
  let damage: CheckedSegment['damage'] = null;
  let prevHash = '';
  let seq = task.firstSeq;
  let pos = 0;
  while (pos < buf.length) {
    const nl = buf.indexOf(10, pos);
    if (nl === -1) {
      damage = { offset: pos, reason: 'incomplete line in a segment that is not the last one' };
      break;
    }
    let f;
    if (count === 0) {
      // The link to the previous segment is the main thread's to check; the chain goes on from
      // this line's stored hash.
      f = scanLine(buf, pos, nl);
      if (f === null) {
        damage = { offset: pos, reason: `record ${seq} is not framed` };
        break;
      }
      prevHash = storedHashAt(buf, f.cut);
    } else {
      try {
        const c = checkLine(buf, pos, nl, prevHash, seq, task.file);
        f = c.fields;
        prevHash = c.hash;
      } catch (err) {
        if (!(err instanceof LogCorruptError)) throw err;
        damage = { offset: err.offset, reason: err.reason };
        break;
      }
    }
    if ((count + 1) * CHECKED_FIELDS > fields.length) {
      const grown = new Uint32Array(fields.length * 2);
      grown.set(fields);
      fields = grown;
    }
    const at = count * CHECKED_FIELDS;
    fields[at] = pos;
    fields[at + 1] = f.erased ? 1 : 0;
    fields[at + 2] = f.cut;
    fields[at + 3] = f.payloadStart;
    fields[at + 4] = f.payloadEnd;
    fields[at + 5] = f.timeStart;
    fields[at + 6] = f.timeEnd;
    fields[at + 7] = f.typeStart;
    fields[at + 8] = f.typeEnd;
    count++;
    seq++;
    pos = nl + 1;
  }
  return { bytes: buf, count, fields, damage };
}

if (!isMainThread && (workerData as { role?: string } | null)?.role === ROLE) {
  const port = parentPort!;
  port.on('message', (task: Task) => {
    let checked: CheckedSegment;
    try {
      checked = checkSegment(task);
    } catch (error) {
      port.postMessage({ error } satisfies Reply);
      return;
    }
    const transfer: ArrayBuffer[] = [checked.fields.buffer as ArrayBuffer];
    if (checked.bytes.byteLength > 0) transfer.push(checked.bytes.buffer as ArrayBuffer);
    port.postMessage({ checked } satisfies Reply, transfer);
  });
}
