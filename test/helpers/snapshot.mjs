/**
 * The state snapshot in tests: where it lies, and the rule "what a start derives is the same from
 * the snapshot and from a whole replay of the log" (docs/internals/storage.md: the snapshot is
 * used only when it provably matches the log).
 */
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/** The state snapshot file of the data folder `dir`. */
export const snapshotPath = (dir) => join(dir, 'index', 'state.snapshot');

/**
 * With the server `s` stopped by the caller (a clean stop writes the snapshot): asserts the
 * snapshot is there, starts `s` and asserts the start loaded it, runs `check('from the snapshot')`;
 * then stops `s`, removes the snapshot, starts it again (a whole replay) and runs
 * `check('from a whole replay of the log')`. `check` asserts what must be the same both times
 * (its argument is the assertion message). Leaves `s` running.
 */
export async function fromSnapshotThenReplay(s, check) {
  assert.ok(existsSync(snapshotPath(s.dataDir)), 'the clean stop wrote a state snapshot');
  await s.start();
  assert.doesNotMatch(s.stderr, /snapshot_not_used/, 'this start loaded the snapshot');
  await check('from the snapshot');
  await s.stop();
  rmSync(snapshotPath(s.dataDir));
  await s.start();
  await check('from a whole replay of the log');
}
