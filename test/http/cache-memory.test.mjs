/**
 * Issue 28 item 4: the feed page cache is bounded by bytes (FORUM_FEED_CACHE_MB), not only by a
 * count of pages. The probe: many distinct complete /api/changes pages over knowledge items of
 * ~31 KB each, then /api/work/changes pages; the server's resident memory must stay within the
 * cache bound plus working room, where a count bound alone held ~3 MB per page.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startServer } from '../helpers/server.mjs';

const MIB = 1024 * 1024;
const FEED_CACHE_MB = 8;
/**
 * Room for everything but the cache: rendering garbage V8 has not collected yet and heap growth.
 * The probe without a byte bound grows by ~250 MiB, so the check cannot pass by accident.
 */
const WORKING_ROOM_MIB = 64;

/** Resident set size of process `pid` in bytes (Linux /proc). */
const rssOf = (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;

/** Runs `fn(i)` for i in [0, n), `width` at a time. */
async function pool(n, width, fn) {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < n) await fn(next++);
  }));
}

test('distinct complete feed pages over ~31 KB knowledge items keep the server within FORUM_FEED_CACHE_MB plus working room', { skip: process.platform !== 'linux' && 'reads /proc' }, async (t) => {
  const s = await startServer(t, { env: { FORUM_FEED_CACHE_MB: String(FEED_CACHE_MB), FORUM_RECORD_CACHE_MB: '16' } });
  const a = await s.register('probe');
  // ~31 KB of UTF-8 per item (3 bytes a character), as in the probe.
  const content = '語'.repeat(10_300);
  await pool(170, 8, async (i) => {
    const res = await s.post('/api/knowledge', { title: `item ${i}`, content, category: 'opinion' }, a.token);
    assert.equal(res.status, 201, JSON.stringify(res.body).slice(0, 200));
  });
  const description = '務'.repeat(2900);
  await pool(150, 8, async (i) => {
    const res = await s.post('/api/work', { clientId: `w${i}`, title: `work ${i}`, description, acceptanceCriteria: '準'.repeat(1900) }, a.token);
    assert.equal(res.status, 201, JSON.stringify(res.body).slice(0, 200));
  });
  const first = await s.get('/api/changes?after=0&limit=100', a.token);
  const workFirst = await s.get('/api/work/changes?after=0&limit=80', a.token);
  assert.equal(first.status, 200);
  assert.ok(Buffer.byteLength(JSON.stringify(first.body)) > 2_000_000, 'a discussion page carries ~100 large items');
  const originId = first.body.cursor.originId;
  const workOriginId = workFirst.body.cursor.originId;
  const before = rssOf(s.proc.pid);
  let served = 0;
  for (let after = 1; after <= 64; after++) {
    const res = await s.get(`/api/changes?after=${after}&limit=100&originId=${originId}`, a.token);
    assert.equal(res.status, 200);
    assert.equal(res.body.hasMore, true, 'a complete window (cacheable page)');
    served += Buffer.byteLength(JSON.stringify(res.body));
  }
  for (let after = 1; after <= 64; after++) {
    const res = await s.get(`/api/work/changes?after=${after}&limit=80&originId=${workOriginId}`, a.token);
    assert.equal(res.status, 200);
    assert.equal(res.body.hasMore, true, 'a complete window (cacheable page)');
    served += Buffer.byteLength(JSON.stringify(res.body));
  }
  const grown = (rssOf(s.proc.pid) - before) / MIB;
  assert.ok(served > 200 * MIB, `the probe served ${Math.round(served / MIB)} MiB of pages`);
  assert.ok(grown < FEED_CACHE_MB + WORKING_ROOM_MIB, `RSS grew by ${grown.toFixed(0)} MiB after serving ${Math.round(served / MIB)} MiB of distinct pages`);
  t.diagnostic(`RSS grew by ${grown.toFixed(1)} MiB after serving ${Math.round(served / MIB)} MiB of distinct pages`);
});
