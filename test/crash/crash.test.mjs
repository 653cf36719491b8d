import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ACTIONS, Violation, runCrashTest } from '../../scripts/crash-test.mjs';

test('random SIGKILLs under concurrent writes of every kind, whole work lifecycles and erasures lose no acknowledged write and leave no erased byte (short form)', async (t) => {
  const lines = [];
  const result = await runCrashTest({ iterations: 3, writers: 6, log: (l) => lines.push(l) });
  t.diagnostic(
    `${result.iterations} kills, ${result.acknowledged} acknowledged writes, ${result.checked} checks (seed ${result.seed}); ` +
      `actions ${JSON.stringify(result.actions)}; in-doubt actions ${JSON.stringify(result.inDoubtRetries)}; erasures ${JSON.stringify(result.erasures)}`,
  );
  assert.equal(result.iterations, 3);
  assert.equal(lines.length, 3, 'one line per kill');
  assert.ok(result.acknowledged > 20, `writes were acknowledged between kills (${result.acknowledged})`);
  assert.ok(result.checked >= result.acknowledged, 'every acknowledged write was checked');
  for (const action of ACTIONS) assert.ok(result.actions[action] > 0, `${action} was acknowledged under load (seed ${result.seed})`);
  // Under heavy load a short run may see every erasure cut by a kill: in doubt counts as sent.
  assert.ok(result.erasures.acked + result.erasures.inDoubt > 0, `erasures were sent under load (seed ${result.seed})`);
  const { applied, stale } = result.inDoubtRetries;
  assert.ok(applied + stale > 0, `some work action was in doubt at a kill and was retried (seed ${result.seed})`);
});

test('the crash checker flags an acknowledged work revision whose content changed', async () => {
  await assert.rejects(
    runCrashTest({ iterations: 1, writers: 4, log: () => {}, inject: 'changed-ack' }),
    (err) => err instanceof Violation && /acknowledged work revision .* is missing or changed/.test(err.message),
  );
});

test('the crash checker flags an in-doubt action whose retry is 409 and unknown although a revision carries it', async () => {
  await assert.rejects(
    runCrashTest({ iterations: 1, writers: 4, log: () => {}, inject: 'forgotten-clientId' }),
    (err) => err instanceof Violation && /got 409 with an unknown receipt, yet revision \d+ carries it/.test(err.message),
  );
});

test('the crash checker flags an acknowledged message whose event the discussion feed did not deliver', async () => {
  await assert.rejects(
    runCrashTest({ iterations: 1, writers: 4, log: () => {}, inject: 'lost-feed-event' }),
    (err) => err instanceof Violation && /acknowledged message \S+ is missing from the discussion feed read from the saved cursor/.test(err.message),
  );
});

test('the crash checker flags an acknowledged erasure that is not in effect', async () => {
  await assert.rejects(
    runCrashTest({ iterations: 1, writers: 4, log: () => {}, inject: 'phantom-erasure' }),
    (err) => err instanceof Violation && /acknowledged erasure of message \S+ is not in effect/.test(err.message),
  );
});
