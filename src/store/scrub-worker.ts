/**
 * The background scrub's worker thread (store/scrub.ts): re-reads every sealed segment, one at a
 * time and at a bounded pace, through the store's own replay (log.ts `replaySegments`: framing,
 * seq continuity, hash chain), so it accepts exactly what a start accepts. Runs off the event
 * loop; it only reads. Paces itself by sleeping on `Atomics.wait` (which blocks this thread only).
 *
 * workerData: `{logDir, bytesPerMs, passIntervalMs, control}`; `control` is an Int32Array over a
 * SharedArrayBuffer whose element 0 the owner sets to 1 (and notifies) to stop.
 * Messages to the owner:
 *   `{type:'progress', bytes}` — bytes verified since the last progress message;
 *   `{type:'damage', file, offset, seq, reason}` — a sealed segment failed a check;
 *   `{type:'pass', segments, bytes, ms}` — a pass over every sealed segment ended.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { closeSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { replaySegments } from './log.js';
import { listSegments } from './segment.js';
import { LogCorruptError } from './errors.js';
import { SCRUB_SLEEP_MS_MIN } from '../constants.js';

interface Options {
  logDir: string;
  bytesPerMs: number;
  passIntervalMs: number;
  control: Int32Array;
}

const opts = workerData as Options;
const port = parentPort!;
const GENESIS_HASH = '0'.repeat(64);
/** `,"hash":"` + 64 hex + `"}` + newline: what follows a record's text on its line (log.ts). */
const LINE_SUFFIX_BYTES = 9 + 64 + 2 + 1;
/** Bytes between two progress messages. */
const PROGRESS_BYTES = 1024 * 1024;

/** Thrown from the replay's visitor to stop at the end of the segment being scrubbed. */
class SegmentDone extends Error {}

const stopping = (): boolean => Atomics.load(opts.control, 0) !== 0;

/** Sleeps `ms` (or until stopped). */
function sleep(ms: number): void {
  if (ms > 0 && !stopping()) Atomics.wait(opts.control, 0, 0, ms);
}

/**
 * The chained hash stored on the last line of a segment (`size` bytes), or null when its last
 * bytes are not a hash field. Used to link the next segment after one that failed its check.
 */
function storedLastHash(file: string, size: number): string | null {
  if (size < LINE_SUFFIX_BYTES) return null;
  const buf = Buffer.alloc(LINE_SUFFIX_BYTES);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, buf, 0, LINE_SUFFIX_BYTES, size - LINE_SUFFIX_BYTES);
  } finally {
    closeSync(fd);
  }
  const text = buf.toString('latin1');
  return /^,"hash":"[0-9a-f]{64}"\}\n$/.test(text) ? text.slice(9, 73) : null;
}

/** Pace state of the current pass: bytes verified and when the pass started. */
let passBytes = 0;
let passStart = 0;
let unreported = 0;

/** Counts `bytes` as verified and sleeps while the pass is ahead of its pace. */
function account(bytes: number): void {
  passBytes += bytes;
  unreported += bytes;
  if (unreported >= PROGRESS_BYTES) {
    port.postMessage({ type: 'progress', bytes: unreported });
    unreported = 0;
  }
  const ahead = passBytes / opts.bytesPerMs - (performance.now() - passStart);
  if (ahead >= SCRUB_SLEEP_MS_MIN) sleep(ahead);
}

/**
 * Scrubs one sealed segment: replays it from its first record with the chain linked to
 * `prevHash`, and stops after its last record. Output: the stored hash of its last record for the
 * next segment (null when unknown), or throws what the replay throws for damage.
 */
function scrubSegment(seg: { name: string; firstSeq: number; sizeBytes: number }, prevHash: string): { lastHash: string | null; lastSeq: number } {
  const file = join(opts.logDir, seg.name);
  let lastSeq = seg.firstSeq - 1;
  let done = 0;
  try {
    replaySegments(
      opts.logDir,
      (record, _payloadJson, segmentFirstSeq, offset, length) => {
        if (segmentFirstSeq !== seg.firstSeq) throw new SegmentDone();
        lastSeq = record.seq;
        const end = offset + length + LINE_SUFFIX_BYTES;
        account(end - done);
        done = end;
        if (end >= seg.sizeBytes || stopping()) throw new SegmentDone();
      },
      { start: { seq: seg.firstSeq, segmentFirstSeq: seg.firstSeq, offset: 0, prevHash } },
    );
  } catch (err) {
    if (!(err instanceof SegmentDone)) throw Object.assign(err as Error, { lastSeq });
  }
  return { lastHash: stopping() ? null : storedLastHash(file, seg.sizeBytes), lastSeq };
}

/** One pass over the segments sealed when it starts (every one but the last). */
function pass(): void {
  passBytes = 0;
  passStart = performance.now();
  const segments = listSegments(opts.logDir);
  const sealed = segments.slice(0, -1).filter((s) => s.sizeBytes > 0);
  // The link into the first sealed segment: genesis for a log that starts at seq 1.
  let prevHash: string | null = GENESIS_HASH;
  let checked = 0;
  for (const seg of sealed) {
    if (stopping()) return;
    const file = join(opts.logDir, seg.name);
    if (prevHash === null) {
      // The segment before this one ended in bytes that are not a hash field (already reported):
      // this one cannot be linked, so only its end is taken to link the next.
      prevHash = storedLastHash(file, seg.sizeBytes);
      continue;
    }
    try {
      prevHash = scrubSegment(seg, prevHash).lastHash;
      checked++;
    } catch (err) {
      const e = err as Error;
      const lastSeq = (err as { lastSeq?: number }).lastSeq ?? seg.firstSeq - 1;
      if (e instanceof LogCorruptError) port.postMessage({ type: 'damage', file: e.file, offset: e.offset, seq: lastSeq + 1, reason: e.reason });
      else port.postMessage({ type: 'damage', file, offset: 0, seq: null, reason: `cannot be read (${e.message})` });
      try {
        prevHash = storedLastHash(file, seg.sizeBytes);
      } catch {
        prevHash = null;
      }
    }
  }
  if (unreported > 0) port.postMessage({ type: 'progress', bytes: unreported });
  unreported = 0;
  port.postMessage({ type: 'pass', segments: checked, bytes: passBytes, ms: Math.round(performance.now() - passStart) });
}

while (!stopping()) {
  pass();
  sleep(opts.passIntervalMs);
}
