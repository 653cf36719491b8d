import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCrashTest } from '../../scripts/crash-test.mjs';

test('random SIGKILLs under concurrent writes of every kind lose no acknowledged write (short form)', async (t) => {
  const lines = [];
  const result = await runCrashTest({ iterations: 3, writers: 6, log: (l) => lines.push(l) });
  t.diagnostic(`${result.iterations} kills, ${result.acknowledged} acknowledged writes, ${result.checked} checks (seed ${result.seed})`);
  assert.equal(result.iterations, 3);
  assert.ok(result.acknowledged > 20, `writes were acknowledged between kills (${result.acknowledged})`);
  assert.ok(result.checked >= result.acknowledged, 'every acknowledged write was checked');
});
