/**
 * Operator settings kept in the log so they survive restarts (issues 2, 7): write stop and
 * whether registration is open. Records: `settings.writes {stopped}`, `settings.registration {open}`.
 */
import type { LogRecord } from '../../store/log.js';

/** Operator settings, as of the latest `settings.*` records. */
export interface SettingsState {
  /** Every public POST answers 423 while true (part 7). */
  writeStop: boolean;
  /** POST /api/register answers 403 while false (part 5 item 7). */
  registrationOpen: boolean;
}

/** Settings of a new log: writes allowed, registration open. */
export function createSettingsState(): SettingsState {
  return { writeStop: false, registrationOpen: true };
}

/** Applies `settings.*` records; returns false for other types. */
export function applySettings(s: SettingsState, record: LogRecord): boolean {
  switch (record.type) {
    case 'settings.writes':
      s.writeStop = (record.payload as { stopped: boolean }).stopped;
      return true;
    case 'settings.registration':
      s.registrationOpen = (record.payload as { open: boolean }).open;
      return true;
    default:
      return false;
  }
}

/** The settings as a state snapshot keeps them (a copy). */
export function packSettings(s: SettingsState): SettingsState {
  return { writeStop: s.writeStop, registrationOpen: s.registrationOpen };
}

/** Sets `s` from packed settings. */
export function unpackSettings(s: SettingsState, p: SettingsState): void {
  s.writeStop = p.writeStop;
  s.registrationOpen = p.registrationOpen;
}
