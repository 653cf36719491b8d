/**
 * The fault suite's short form (issue 50; docs/operate/fault-suite.md): a leader and two
 * followers on the real object store, under write load, through a seeded schedule of store
 * faults, stopped, killed and restarted servers, failovers and takeovers — once in sync mode,
 * once in async mode — and the history checker (checker.mjs) finds no violation. The seed is
 * printed; FORUM_FAULT_SEED replays a schedule. The long form is scripts/dev/fault-run.mjs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatReport, runFaults } from './harness.mjs';

/** How long each case injects faults (ms): two cases take about 3 min on 2 idle cores (set-up, the quiet tail and the bucket read come on top); the time limit (10 min more) allows for a loaded machine and for steps that run to their deadlines (a promotion is waited for up to 50 s). */
const CASE_MS = 45_000;
/**
 * The schedules `npm test` runs: fixed, so CI judges the same schedules every run (the long form,
 * scripts/dev/fault-run.mjs, draws a new seed unless given one). FORUM_FAULT_SEED runs another.
 */
const DEFAULT_SEED = 6;
const seed = process.env.FORUM_FAULT_SEED ? Number(process.env.FORUM_FAULT_SEED) : DEFAULT_SEED;

for (const [mode, offset] of [['sync', 0], ['async', 1]]) {
  test(`${mode} mode under a seeded schedule of faults: every acknowledged write kept (async: lost only within the bound), no id names two records, one writer per epoch, writes recover, no crash`, { timeout: CASE_MS + 600_000 }, async (t) => {
    // Recovery is judged against 15 s here, not the documented 6 s, and a promotion against 30 s,
    // not the long form's 10 s: CI machines are shared (a sync take-over of a writing leader took
    // 1-5 s on 2 cores at load 20; docs/operate/fault-suite.md). Every known failure of this kind
    // (the sync wedge, the leaderless take-over, a promote that never answered) is unbounded, so
    // this still catches them.
    const r = await runFaults({ mode, seed: seed + offset, durationMs: CASE_MS, bounds: { recoveryBoundMs: 15_000, promoteBoundMs: 30_000 }, log: (line) => t.diagnostic(line) });
    if (r === null) {
      t.skip('no object store (neither AWS_ENDPOINT_URL_S3 nor moto_server): the fault suite did not run');
      return;
    }
    const report = formatReport(r);
    t.diagnostic(report);
    const injected = Object.values(r.counts.faults).reduce((a, b) => a + b, 0);
    assert.ok(injected >= 3, `the schedule injected faults (${injected})`);
    assert.ok(r.counts.distinctAcked > 0, 'writes were acknowledged');
    assert.equal(r.counts.harnessErrors, 0, `the harness ran every step it started (${report})`);
    assert.deepEqual(r.violations.map((v) => v.rule), [], report);
  });
}
