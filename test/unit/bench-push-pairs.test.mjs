// scripts/bench/push-bench.mjs: a cell's throughput is compared with the no-waiter cell of the same round.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pairedRatios } from '../../scripts/bench/push-bench.mjs';

const cell = (...rps) => ({ rounds: rps.map((r) => ({ rps: r })) });

test('each round is divided by the no-waiter cell of that same round, and the median is taken', () => {
  // Round 2 ran on a slow disk for both cells: paired, it is a ratio of 1 like the others.
  const none = cell(1000, 500, 1000);
  const waiters = cell(900, 450, 950);
  assert.deepEqual(pairedRatios(waiters, none), { median: 0.9, min: 0.9, max: 0.95 });
  // The ratio of the medians would have blamed the slow round on the cell: 900 / 1000.
});

test('an even number of rounds takes the mean of the middle two ratios', () => {
  const r = pairedRatios(cell(800, 900, 1000, 1100), cell(1000, 1000, 1000, 1000));
  assert.ok(Math.abs(r.median - 0.95) < 1e-12);
  assert.equal(r.min, 0.8);
  assert.equal(r.max, 1.1);
});

test('no rounds give NaN, not a made-up ratio', () => {
  assert.ok(Number.isNaN(pairedRatios(cell(), cell()).median));
});
