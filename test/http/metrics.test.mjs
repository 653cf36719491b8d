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
