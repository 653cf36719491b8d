/**
 * CLI commands that work on the archive files themselves (issue 8): verify, backup, restore,
 * repair. They never go through the public API.
 */
import { join } from 'node:path';
import { LOG_DIR, replaySegments } from '../store/log.js';
import { readMeta } from '../store/meta.js';
import { LogCorruptError, StoreStateError } from '../store/errors.js';

export type OfflineCommand = (dataDir: string, words: string[], options: Record<string, string | boolean>) => Promise<unknown>;

/**
 * `verify`: reads every segment, checking framing, canonical form, seq continuity and the hash
 * chain. Output: `{ok, records, lastSeq, originId}`. Throws LogCorruptError naming the first bad
 * record's file and offset (exit 1). Safe while the server runs (a write in progress at the very
 * end is reported as an incomplete final line).
 */
async function verify(dataDir: string): Promise<unknown> {
  const meta = readMeta(dataDir);
  if (!meta) throw new StoreStateError(`${join(dataDir, 'meta.json')} is missing`);
  const result = replaySegments(join(dataDir, LOG_DIR), () => undefined, { strict: true });
  if (result.torn) {
    throw new LogCorruptError(
      result.torn.file,
      result.torn.offset,
      `incomplete final line (${result.torn.bytes} bytes) after record ${result.lastSeq}: a crash mid-write (the server truncates it at its next start) or a write in progress`,
    );
  }
  return { ok: true, records: result.records, lastSeq: result.lastSeq, originId: meta.originId };
}

export const offlineCommands: Record<string, OfflineCommand> = {
  verify,
};
