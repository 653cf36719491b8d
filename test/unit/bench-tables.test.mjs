import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderCompare, renderTable, rssTargetMiB } from '../../scripts/bench/lib/measure.mjs';

const result = (name, p50, rssKiB) => ({
  name,
  readyS: 2,
  afterStart: { rss: rssKiB },
  q: { 'frequent /api/search': { p50, p99: p50 * 2, hits: 20 } },
  status: { p50: 0.5, p99: 3, rps: 2000 },
  afterLoad: { rss: rssKiB, hwm: rssKiB },
});

test('the scale comparison divides each q p50 at the larger size by the smaller and judges it against 1.5×', () => {
  const small = { records: 10_000_000, results: [result('a', 2, 800 * 1024)] };
  const met = renderCompare(small, { records: 30_000_000, results: [result('b', 2.9, 2000 * 1024)] }).join('\n');
  assert.match(met, /\| q frequent \/api\/search p50 ms \| 2\.00 \| 2\.90 \| 1\.45× \| ≤ 1\.5× \| met \|/);
  const missed = renderCompare(small, { records: 30_000_000, results: [result('b', 3.2, 2000 * 1024)] }).join('\n');
  assert.match(missed, /1\.60× \| ≤ 1\.5× \| \*\*missed\*\*/);
});

test('RSS at 30M is judged against 2.7 GiB and at 10M against 900 MiB', () => {
  assert.equal(rssTargetMiB(10_000_000), 900);
  assert.equal(rssTargetMiB(30_000_000), 2.7 * 1024);
  const lines = renderCompare({ records: 10_000_000, results: [result('a', 1, 900 * 1024)] }, { records: 30_000_000, results: [result('b', 1, 2800 * 1024)] });
  assert.match(lines.at(-1), /\*\*missed\*\*/);
});

test('a tree that cannot start says why once and shows no figures', () => {
  const lines = renderTable([{ name: 'before', failed: 'exited (134)' }, result('ours', 1, 500 * 1024)], { frequent: 'x' }, { records: 1000 });
  const text = lines.join('\n');
  assert.equal(text.match(/cannot start: exited \(134\)/g).length, 1);
  assert.match(text, /\| q frequent \(`x`\) \/api\/search p50 \/ p99 ms \(hits\) \| n\/a \| 1\.00 \/ 2\.00 \(20\) \| ≤ 3 \/ ≤ 15 \| met \|/);
});
