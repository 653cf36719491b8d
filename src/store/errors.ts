/**
 * Errors raised by the store. They are operator-facing (startup, CLI), never HTTP responses —
 * except RecordDamagedError, which a read raises while serving (500 INTERNAL, no detail).
 */
import { ServiceError } from '../errors.js';

/** What to do about a damaged log in the data folder the server runs on. */
export const DATA_DIR_DAMAGE_ADVICE =
  'Nothing was changed. Restore data/ from a backup (node dist/cli.js restore DIR), ' +
  'or keep the records before this point with node dist/cli.js repair --truncate ' +
  '(the damaged tail is moved to data/quarantine/, never deleted).';

/** The archive is damaged somewhere other than a torn final line; startup must stop. */
export class LogCorruptError extends Error {
  readonly code = 'LOG_CORRUPT';
  constructor(
    readonly file: string,
    readonly offset: number,
    readonly reason: string,
    /** What the operator can do; the default fits a damaged data folder. */
    readonly advice: string = DATA_DIR_DAMAGE_ADVICE,
  ) {
    super(`log damaged in ${file} at byte offset ${offset}: ${reason}. ${advice}`);
    this.name = 'LogCorruptError';
  }
}

/** The data folder is not in a state the store can open (missing metadata, wrong format). */
export class StoreStateError extends Error {
  readonly code = 'STORE_STATE';
  constructor(message: string) {
    super(message);
    this.name = 'StoreStateError';
  }
}

/**
 * A state snapshot does not match the log it would resume (store/snapshot.ts): the caller
 * discards it and replays the whole log. Never shown to clients.
 */
export class SnapshotMismatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SnapshotMismatchError';
  }
}

/** What to do about a record that a read found damaged while the server runs. */
export const RECORD_DAMAGE_ADVICE =
  'The record is not served (requests that need it answer 500). Stop the server and run node dist/cli.js verify ' +
  'to find every damaged record; then restore data/ from a backup (node dist/cli.js restore DIR), or keep the ' +
  'records before the first damage with node dist/cli.js repair --truncate (the rest is moved to data/quarantine/).';

/**
 * A record read back from a segment is not proven by the hash chain (issue 28): it is never
 * served. A ServiceError with code INTERNAL, so the HTTP layer answers 500 without logging it
 * again (records.ts logs it once, with file, offset and seq); the client sees no path.
 */
export class RecordDamagedError extends ServiceError {
  constructor(
    readonly file: string,
    readonly offset: number,
    readonly seq: number,
    readonly reason: string,
    readonly advice: string = RECORD_DAMAGE_ADVICE,
  ) {
    super('INTERNAL', 'internal error: a record of the archive failed its integrity check; the operator was told in the server log');
    this.name = 'RecordDamagedError';
  }
}
