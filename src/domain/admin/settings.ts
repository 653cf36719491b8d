/**
 * Operator settings kept in the log so they survive restarts (issues 2, 7, 38): write stop (with
 * the operator's reason and an optional end time) and whether registration is open.
 * Records: `settings.writes {stopped, operatorId?, reason?, until?}`,
 * `settings.registration {open, operatorId?}` (`operatorId` and the rest since issue 38; records
 * written before carry only the flag).
 */
import type { LogRecord } from '../../store/log.js';

/** Operator settings, as of the latest `settings.*` records. */
export interface SettingsState {
  /**
   * Write stop as recorded (part 7). Whether writes are refused now also depends on the time:
   * read it with `writesStopped`, which ends a stop at `writeStopUntilMs`.
   */
  writeStop: boolean;
  /** POST /api/register answers 403 while false (part 5 item 7). */
  registrationOpen: boolean;
  /** The operator's reason for the current write stop ('' when none was given or writes run). */
  writeStopReason: string;
  /** When the current write stop ends by itself, ms since the epoch; null: until resumed (issue 38). */
  writeStopUntilMs: number | null;
}

/** Payload of a `settings.writes` record. */
export interface WriteStopPayload {
  stopped: boolean;
  /** Who did it (issue 38); absent in records written before. */
  operatorId?: string;
  /** Stop only: why, shown to agents in the 423 error. */
  reason?: string;
  /** Stop only: when writes resume by themselves (ISO 8601), absent for "until resumed". */
  until?: string;
}

/** Settings of a new log: writes allowed, registration open. */
export function createSettingsState(): SettingsState {
  return { writeStop: false, registrationOpen: true, writeStopReason: '', writeStopUntilMs: null };
}

/**
 * Whether writes are refused at `nowMs` (ms since the epoch): a recorded stop that has no end
 * time, or whose end time (`until`) is still ahead. A stop with an end time needs no record to
 * end: every reader of the flag asks this function with the injectable clock's time (issue 38).
 */
export function writesStopped(s: SettingsState, nowMs: number): boolean {
  return s.writeStop && (s.writeStopUntilMs === null || nowMs < s.writeStopUntilMs);
}

/** Applies `settings.*` records; returns false for other types. */
export function applySettings(s: SettingsState, record: LogRecord): boolean {
  switch (record.type) {
    case 'settings.writes': {
      const p = record.payload as WriteStopPayload;
      s.writeStop = p.stopped;
      s.writeStopReason = p.stopped ? (p.reason ?? '') : '';
      s.writeStopUntilMs = p.stopped && p.until !== undefined ? Date.parse(p.until) : null;
      return true;
    }
    case 'settings.registration':
      s.registrationOpen = (record.payload as { open: boolean }).open;
      return true;
    default:
      return false;
  }
}

/** The settings as a state snapshot keeps them (a copy). */
export function packSettings(s: SettingsState): SettingsState {
  return { writeStop: s.writeStop, registrationOpen: s.registrationOpen, writeStopReason: s.writeStopReason, writeStopUntilMs: s.writeStopUntilMs };
}

/**
 * Sets `s` from packed settings. Throws Error for settings packed before issue 38 (no reason
 * field): the snapshot is then discarded and the log replayed, which derives them.
 */
export function unpackSettings(s: SettingsState, p: SettingsState): void {
  if (typeof p.writeStopReason !== 'string') throw new Error('settings packed before issue 38 (no write stop reason)');
  s.writeStop = p.writeStop;
  s.registrationOpen = p.registrationOpen;
  s.writeStopReason = p.writeStopReason;
  s.writeStopUntilMs = p.writeStopUntilMs;
}
