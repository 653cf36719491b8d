/**
 * The write-path timeline for the benchmark (issue 56, `scripts/bench/timeline.mjs`): when the
 * environment names a file in FORUM_TIMELINE_FILE at start, each request records when it reached
 * each stage — head parsed (the listener runs), body parsed and validated, decided (the log's
 * append begins), appended (the line is encoded, chained and queued), sync issued (fdatasync
 * handed to the thread pool), sync done (its completion runs on the main thread), the answer's
 * writing begins (`sendReply`), answer written (`res.end` returned) — in µs from its arrival, and the process writes every completed timeline
 * to that file as JSON when it exits.
 *
 * It is meant for one request at a time (one connection): a request that begins while another is
 * recorded replaces it. Off (the variable unset, read once at load), `TIMELINE_ON` is a constant
 * false and each call site is one never-taken branch: nothing is allocated or timed.
 */
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

/** The stages in order; a timeline is one time per stage (µs after `arrived`, -1 when not reached). */
export const TIMELINE_STAGES = ['arrived', 'parsed', 'decided', 'appended', 'syncIssued', 'syncDone', 'sending', 'answered'] as const;
type Stage = (typeof TIMELINE_STAGES)[number];

const FILE = process.env['FORUM_TIMELINE_FILE'] ?? '';

/** Whether the timeline is recorded (FORUM_TIMELINE_FILE set at start). */
export const TIMELINE_ON = FILE !== '';

/** Most timelines kept (the rest are counted, not kept). */
const TIMELINES_MAX = 200_000;

const index = new Map<Stage, number>(TIMELINE_STAGES.map((s, i) => [s, i]));
let current: number[] | null = null;
let startedMs = 0;
const done: number[][] = [];

/** Starts the timeline of a request that just arrived (its head parsed). */
export function timelineBegin(): void {
  startedMs = performance.now();
  current = TIMELINE_STAGES.map(() => -1);
  current[0] = 0;
}

/** Records that the current request reached `stage` (the first time only). */
export function timelineMark(stage: Stage): void {
  if (current === null) return;
  const i = index.get(stage)!;
  if (current[i] === -1) current[i] = Math.round((performance.now() - startedMs) * 1000);
}

/** Ends the current request's timeline (its answer was written) and keeps it. */
export function timelineEnd(): void {
  if (current === null) return;
  timelineMark('answered');
  if (done.length < TIMELINES_MAX) done.push(current);
  current = null;
}

if (TIMELINE_ON) {
  process.once('exit', () => {
    writeFileSync(FILE, JSON.stringify({ stages: TIMELINE_STAGES, timelines: done }));
  });
}
