/**
 * Structured logs (issue 20 "Logs"): one JSON object per line,
 * `{"time": ISO 8601, "level", "event", "msg", ...fields}`. `info` goes to stdout (lifecycle:
 * listening, stopping, progress; the access log), `warn` and `error` to stderr. Lines are written
 * with the streams' synchronous writes (files and pipes are synchronous on Linux), so a line
 * logged right before `process.exit` is not lost.
 *
 * Callers pass only what an operator needs: never a token, a request body or an Authorization
 * header (tokens exist only as hashes past authentication). An Error field is logged as its
 * stack (or message).
 */

/** Severity of a line: `info` on stdout; `warn` (something was repaired or skipped) and `error` on stderr. */
export type LogLevel = 'info' | 'warn' | 'error';

/** Extra fields of a line; `undefined` values are left out. */
export type LogFields = Record<string, unknown>;

/** Where lines go: `(level, line)` with the line's JSON text (tests replace it to capture lines). */
export type LogSink = (level: LogLevel, line: string) => void;

const defaultSink: LogSink = (level, line) => {
  (level === 'info' ? process.stdout : process.stderr).write(`${line}\n`);
};
let sink: LogSink = defaultSink;

/** Replaces where lines go (tests); returns a function that restores the previous sink. */
export function setLogSink(next: LogSink): () => void {
  const previous = sink;
  sink = next;
  return () => {
    sink = previous;
  };
}

/**
 * Writes one line. Input: level, a stable event name (`listening`, `request`, `internal_error`,
 * `recovered`, …), a human sentence, and fields. Never throws (a broken stream loses the line).
 */
export function logEvent(level: LogLevel, event: string, msg: string, fields: LogFields = {}): void {
  const out: Record<string, unknown> = { time: new Date().toISOString(), level, event, msg };
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined) continue;
    out[k] = v instanceof Error ? (v.stack ?? v.message) : v;
  }
  try {
    sink(level, JSON.stringify(out));
  } catch {
    // Nothing sensible is left to report to.
  }
}

/** `logEvent` by level. */
export const logger = {
  info: (event: string, msg: string, fields?: LogFields) => logEvent('info', event, msg, fields),
  warn: (event: string, msg: string, fields?: LogFields) => logEvent('warn', event, msg, fields),
  error: (event: string, msg: string, fields?: LogFields) => logEvent('error', event, msg, fields),
};
