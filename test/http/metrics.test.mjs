/**
 * Issue 20 "Metrics": Prometheus text on a loopback listener of its own (FORUM_METRICS_PORT),
 * parsed with a Prometheus text-format parser; counters move with traffic.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { startServer } from '../helpers/server.mjs';

/** Scrapes and parses the metrics; returns a lookup of a sample's value by name and labels. */
async function scrape(url) {
  const res = await request(url);
  assert.equal(res.statusCode, 200);
  assert.match(res.headers['content-type'], /^text\/plain; version=0\.0\.4/);
  const families = parsePrometheusTextFormat(await res.body.text());
  const byName = new Map(families.map((f) => [f.name, f]));
  return {
    families: byName,
    value(name, labels = {}) {
      const f = byName.get(name);
      if (!f) return undefined;
      const m = f.metrics.find((x) => Object.entries(labels).every(([k, v]) => x.labels?.[k] === v));
      if (!m) return undefined;
      return Number(m.value ?? m.count);
    },
  };
}

test('metrics are served on their own loopback listener, parse as Prometheus text, and move with traffic', async (t) => {
  const s = await startServer(t, { env: { FORUM_METRICS_PORT: '0', FORUM_RATE_LIMITS: 'on' } });
  const listening = JSON.parse(s.stdout.split('\n').find((l) => l.includes('"listening"')));
  const metricsUrl = listening.metricsUrl;
  assert.match(metricsUrl, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
  assert.notEqual(new URL(metricsUrl).port, new URL(s.url).port, 'not the public port');
  assert.equal((await s.get('/metrics')).status, 404, 'the public listener does not serve metrics');

  const before = await scrape(metricsUrl);
  for (const name of ['forum_http_requests_total', 'forum_http_request_duration_seconds', 'forum_rate_limited_total', 'forum_group_commit_fsync_seconds',
    'forum_group_commit_records', 'forum_log_head_seq', 'forum_log_bytes', 'forum_disk_free_bytes', 'forum_rate_limiter_evictions_total', 'process_resident_memory_bytes']) {
    assert.ok(before.families.has(name), `${name} is exported`);
  }
  const statusBefore = before.value('forum_http_requests_total', { route: '/api/status', status: '200' }) ?? 0;
  const headBefore = before.value('forum_log_head_seq');

  for (let i = 0; i < 5; i++) assert.equal((await s.get('/api/status')).status, 200);
  const a = await s.register('metered');
  const topic = (await s.post('/api/topics', { title: 'metered' }, a.token)).body;
  let limited = 0;
  for (let i = 0; i < 31; i++) {
    const res = await s.post('/api/messages', { topicId: topic.id, content: `m${i}`, clientId: `m-${i}` }, a.token);
    if (res.status === 429) limited++;
  }
  assert.ok(limited >= 1, 'the write limit was hit');

  const after = await scrape(metricsUrl);
  assert.equal(after.value('forum_http_requests_total', { route: '/api/status', status: '200' }), statusBefore + 5);
  assert.equal(after.value('forum_rate_limited_total', { limit: 'write' }), limited);
  assert.ok(after.value('forum_http_requests_total', { route: '/api/messages', method: 'POST', status: '201' }) >= 29);
  assert.ok(after.value('forum_log_head_seq') >= headBefore + 30, 'the head moved with the writes');
  assert.ok(after.value('forum_group_commit_records') >= 1, 'group commits were observed');
  assert.ok(after.value('forum_log_bytes') > 0);
  assert.ok(after.value('forum_disk_free_bytes') > 0);
});

test('without FORUM_METRICS_PORT there is no metrics listener', async (t) => {
  const s = await startServer(t);
  const listening = JSON.parse(s.stdout.split('\n').find((l) => l.includes('"listening"')));
  assert.equal(listening.metricsUrl, null);
  assert.equal((await s.get('/metrics')).status, 404);
});

test('a lone write (one client writing now and then) syncs on the main thread: forum_group_commit_lone_total counts it', async (t) => {
  // Any fdatasync time qualifies here, so the count does not depend on this disk's speed.
  const s = await startServer(t, { env: { FORUM_METRICS_PORT: '0', FORUM_RATE_LIMITS: 'off', FORUM_LONE_WRITE_SYNC_MAX_US: '60000000' } });
  const metricsUrl = JSON.parse(s.stdout.split('\n').find((l) => l.includes('"listening"'))).metricsUrl;
  const a = await s.register('lone-writer');
  const topic = (await s.post('/api/topics', { title: 'lone writes' }, a.token)).body;
  const before = (await scrape(metricsUrl)).value('forum_group_commit_lone_total');
  assert.equal(typeof before, 'number', 'forum_group_commit_lone_total is exported');
  for (let i = 0; i < 5; i++) {
    await new Promise((r) => setTimeout(r, 20)); // the server has nothing else to do meanwhile
    const res = await s.post('/api/messages', { topicId: topic.id, content: `lone ${i}`, clientId: `lone-${i}` }, a.token);
    assert.equal(res.status, 201);
  }
  const after = await scrape(metricsUrl);
  assert.ok(after.value('forum_group_commit_lone_total') >= before + 5, `each of the 5 writes was lone (${before} -> ${after.value('forum_group_commit_lone_total')})`);
  // Each write was acknowledged after its fdatasync: every one is readable at once.
  const page = await s.get(`/api/messages?topicId=${topic.id}&limit=10`, a.token);
  assert.equal(page.body.messages.length, 5);
});
