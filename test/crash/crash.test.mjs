import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ACTIONS, Violation, runCrashTest } from '../../scripts/dev/crash-test.mjs';

/** Short runs at most, until every kind of event the test needs was seen under load. */
const SHORT_RUNS_MAX = 3;

test('random SIGKILLs under concurrent writes of every kind, whole work lifecycles and erasures lose no acknowledged write and leave no erased byte (short form)', async (t) => {
  // Each run checks every acknowledged write on its own (a Violation rejects). What a three-kill
  // run gets to exercise depends on its random seed and the timing: about one in fifty gets no
  // release acknowledged. So another short run (another seed) is added while something is
  // missing, and the runs together must have covered every work action, erasures, and an in-doubt
  // work action that was retried.
  const seen = { ...Object.fromEntries(ACTIONS.map((a) => [a, 0])), erasures: 0, inDoubtRetries: 0 };
  const missing = () => Object.keys(seen).filter((k) => seen[k] === 0);
  const seeds = [];
  for (let run = 0; run < SHORT_RUNS_MAX && (run === 0 || missing().length > 0); run++) {
    const lines = [];
    const result = await runCrashTest({ iterations: 3, writers: 6, log: (l) => lines.push(l) });
    seeds.push(result.seed);
    t.diagnostic(
      `${result.iterations} kills, ${result.acknowledged} acknowledged writes, ${result.checked} checks (seed ${result.seed}); ` +
        `actions ${JSON.stringify(result.actions)}; in-doubt actions ${JSON.stringify(result.inDoubtRetries)}; erasures ${JSON.stringify(result.erasures)}`,
    );
    assert.equal(result.iterations, 3);
    assert.equal(lines.length, 3, 'one line per kill');
    // How many depends on the machine's speed (7 on a 2-core box at load 20); what matters is checked per write.
    assert.ok(result.acknowledged > 0, `writes were acknowledged between kills (${result.acknowledged})`);
    assert.ok(result.checked >= result.acknowledged, 'every acknowledged write was checked');
    for (const a of ACTIONS) seen[a] += result.actions[a];
    // Under heavy load a short run may see every erasure cut by a kill: in doubt counts as sent.
    seen.erasures += result.erasures.acked + result.erasures.inDoubt;
    seen.inDoubtRetries += result.inDoubtRetries.applied + result.inDoubtRetries.stale;
  }
  for (const action of ACTIONS) assert.ok(seen[action] > 0, `${action} was acknowledged under load (seeds ${seeds.join(', ')})`);
  assert.ok(seen.erasures > 0, `erasures were sent under load (seeds ${seeds.join(', ')})`);
  assert.ok(seen.inDoubtRetries > 0, `some work action was in doubt at a kill and was retried (seeds ${seeds.join(', ')})`);
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
