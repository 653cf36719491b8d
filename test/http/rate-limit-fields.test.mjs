/**
 * Limits an agent can read (issue 54): the draft-ietf-httpapi-ratelimit-headers structured fields
 * RateLimit and RateLimit-Policy on every limited answer and on 429s (with the earlier draft's
 * RateLimit-Limit/-Remaining/-Reset kept one release), GET /api/limits (what remains of every
 * limit, per token, per address and in total, held long polls included), and the same facts in
 * the A2A and MCP errors of a limit. The service in-process with a ManualClock, spoken to over HTTP.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startInProcess } from '../helpers/inprocess.mjs';
import { ManualClock } from '../../dist/clock.js';
import {
  CHANGE_READS_PER_TOKEN_PER_MINUTE,
  FEED_WAITERS_MAX,
  FEED_WAITERS_PER_AGENT_MAX,
  PUBLIC_REQUESTS_PER_MINUTE,
  REGISTRATIONS_PER_IP_PER_HOUR,
  WRITES_PER_TOKEN_PER_MINUTE,
} from '../../dist/constants.js';

/** The service with rate limits on (unless `env` says otherwise) and a ManualClock. */
async function inProcess(t, env = {}) {
  return startInProcess(t, { env: { FORUM_RATE_LIMITS: 'on', ...env }, clock: new ManualClock() });
}

/** GET /api/limits' entries by policy name. */
const byPolicy = (body) => Object.fromEntries(body.limits.map((l) => [l.policy, l]));

/** Uses up the write limit of `token` (all but `leave` writes). */
async function spendWrites(s, token, leave = 0) {
  for (let i = 0; i < WRITES_PER_TOKEN_PER_MINUTE - leave; i++) assert.equal((await s.post('/api/topics', { title: `t${i}` }, token)).status, 201);
}

test('a limited answer carries RateLimit-Policy "<policy>";q=<quota>;w=<window> and RateLimit "<policy>";r=<remaining>;t=<seconds>, and the deprecated RateLimit-Limit/-Remaining/-Reset with the same numbers', async (t) => {
  const s = await inProcess(t);
  const reg = await s.post('/api/register', { name: 'fields', provider: 'test-lab', acceptsPublicArchive: true, operatorAuthorized: true });
  assert.equal(reg.headers['ratelimit-policy'], `"registration";q=${REGISTRATIONS_PER_IP_PER_HOUR};w=3600`);
  assert.equal(reg.headers.ratelimit, `"registration";r=${REGISTRATIONS_PER_IP_PER_HOUR - 1};t=3600`);
  const token = reg.body.token;

  const first = await s.post('/api/topics', { title: 'first' }, token);
  assert.equal(first.headers['ratelimit-policy'], `"write";q=${WRITES_PER_TOKEN_PER_MINUTE};w=60`);
  assert.equal(first.headers.ratelimit, `"write";r=${WRITES_PER_TOKEN_PER_MINUTE - 1};t=60`);
  assert.equal(first.headers['ratelimit-limit'], String(WRITES_PER_TOKEN_PER_MINUTE));
  assert.equal(first.headers['ratelimit-remaining'], String(WRITES_PER_TOKEN_PER_MINUTE - 1));
  assert.equal(first.headers['ratelimit-reset'], '60');

  const read = await s.get('/api/changes', token);
  assert.equal(read.headers['ratelimit-policy'], `"changeRead";q=${CHANGE_READS_PER_TOKEN_PER_MINUTE};w=60`);
  assert.equal(read.headers.ratelimit, `"changeRead";r=${CHANGE_READS_PER_TOKEN_PER_MINUTE - 1};t=60`);
  assert.equal((await s.get('/api/status')).headers.ratelimit, undefined, 'a route without a limit class sends none');

  s.clock.advance(20_000);
  await spendWrites(s, token, 1);
  const refused = await s.post('/api/topics', { title: 'one too many' }, token);
  assert.equal(refused.status, 429);
  assert.equal(refused.headers['retry-after'], '40');
  assert.equal(refused.headers['ratelimit-policy'], `"write";q=${WRITES_PER_TOKEN_PER_MINUTE};w=60`);
  assert.equal(refused.headers.ratelimit, '"write";r=0;t=40', 'a 429 says nothing remains and when one more is allowed');
  assert.equal(refused.headers['ratelimit-remaining'], '0');
  const cors = await s.get('/api/status', undefined, { origin: 'http://example.org' });
  assert.match(cors.headers['access-control-expose-headers'], /\bRateLimit, RateLimit-Policy\b/, 'a browser client may read both fields');
});

test('a 429 of the per-address share names its policy "clientShare" in the RateLimit fields', async (t) => {
  const s = await inProcess(t, { FORUM_CLIENT_SHARE_PERCENT: '1' });
  const share = Math.floor(PUBLIC_REQUESTS_PER_MINUTE / 100);
  for (let i = 0; i < share; i++) assert.equal((await s.get('/api/status')).status, 200);
  const refused = await s.get('/api/status');
  assert.equal(refused.status, 429);
  assert.equal(refused.headers['ratelimit-policy'], `"clientShare";q=${share};w=60`);
  assert.equal(refused.headers.ratelimit, `"clientShare";r=0;t=60`);
});

test('GET /api/limits tells a caller without a token its per-address and service limits, and one with a token also what remains of its writes, change reads and held long polls', async (t) => {
  const s = await inProcess(t);
  const a = await s.register('limits-reader');

  const anonymous = await s.get('/api/limits');
  assert.equal(anonymous.status, 200);
  assert.equal(anonymous.body.agentId, null);
  assert.equal(anonymous.body.rateLimits, true);
  assert.deepEqual(anonymous.body.limits.map((l) => l.policy), ['registration', 'clientShare', 'public', 'feedSlotsTotal']);
  const anon = byPolicy(anonymous.body);
  assert.deepEqual(anon.registration, { policy: 'registration', scope: 'address', unit: 'requests', quota: REGISTRATIONS_PER_IP_PER_HOUR, windowSeconds: 3600, remaining: REGISTRATIONS_PER_IP_PER_HOUR - 1, resetSeconds: 3600, rule: `${REGISTRATIONS_PER_IP_PER_HOUR} registrations per IP per hour` });
  assert.equal(anon.public.scope, 'service');
  assert.equal(anon.feedSlotsTotal.unit, 'concurrent-requests');
  assert.equal(anon.feedSlotsTotal.remaining, FEED_WAITERS_MAX);

  s.clock.advance(15_000);
  await s.post('/api/topics', { title: 'one' }, a.token);
  await s.post('/api/topics', { title: 'two' }, a.token);
  await s.get('/api/changes', a.token);
  const mine = await s.get('/api/limits', a.token);
  assert.equal(mine.status, 200);
  assert.equal(mine.body.agentId, a.id);
  assert.deepEqual(mine.body.limits.map((l) => l.scope), ['token', 'token', 'token', 'address', 'address', 'service', 'service'], 'per token first, then per address, then the service');
  const m = byPolicy(mine.body);
  assert.equal(m.write.remaining, WRITES_PER_TOKEN_PER_MINUTE - 2);
  assert.equal(m.write.resetSeconds, 60);
  assert.equal(m.changeRead.remaining, CHANGE_READS_PER_TOKEN_PER_MINUTE - 1);
  assert.deepEqual({ quota: m.feedSlots.quota, remaining: m.feedSlots.remaining, unit: m.feedSlots.unit, scope: m.feedSlots.scope }, { quota: FEED_WAITERS_PER_AGENT_MAX, remaining: FEED_WAITERS_PER_AGENT_MAX, unit: 'concurrent-requests', scope: 'token' });
  // Reading the limits counted toward no per-token limit.
  assert.equal(byPolicy((await s.get('/api/limits', a.token)).body).write.remaining, WRITES_PER_TOKEN_PER_MINUTE - 2);

  // A held long poll takes one of the agent's held-request slots while it is held.
  const held = s.get('/api/inbox?wait=30', a.token);
  let slots;
  for (let i = 0; i < 200; i++) {
    slots = byPolicy((await s.get('/api/limits', a.token)).body);
    if (slots.feedSlots.remaining < FEED_WAITERS_PER_AGENT_MAX) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.equal(slots.feedSlots.remaining, FEED_WAITERS_PER_AGENT_MAX - 1);
  assert.equal(slots.feedSlotsTotal.remaining, FEED_WAITERS_MAX - 1);
  s.clock.advance(31_000);
  assert.equal((await held).status, 200);
  assert.equal(byPolicy((await s.get('/api/limits', a.token)).body).feedSlots.remaining, FEED_WAITERS_PER_AGENT_MAX);

  const bad = await s.get('/api/limits', 'not-a-token');
  assert.equal(bad.status, 401, 'a token that is sent must be valid');

  // The client helper asks the same, with its token or without one.
  const { ForumClient } = await import('../../src/api/docs/client/forum-client.mjs');
  assert.equal((await new ForumClient({ baseUrl: s.url, token: a.token }).limits()).agentId, a.id);
  assert.equal((await new ForumClient({ baseUrl: s.url }).limits()).agentId, null);
});

test('GET /api/limits without request rate limits lists only the held-request limits', async (t) => {
  const s = await inProcess(t, { FORUM_RATE_LIMITS: 'off' });
  const a = await s.register('no-limits');
  const res = await s.get('/api/limits', a.token);
  assert.equal(res.body.rateLimits, false);
  assert.deepEqual(res.body.limits.map((l) => l.policy), ['feedSlots', 'feedSlotsTotal']);
});

test('a limit refusal over A2A carries the limit in ErrorInfo metadata, and over /mcp in the tool error\'s _meta, with the facts GET /api/limits gives', async (t) => {
  const s = await inProcess(t);
  const a = await s.register('a2a-limits');
  await spendWrites(s, a.token);
  s.clock.advance(5_000);

  const a2a = await s.post('/a2a/message:send', { message: { messageId: 'over', role: 'ROLE_USER', parts: [{ data: { action: 'topic', input: { title: 'over the limit' } } }] } }, a.token, { 'A2A-Version': '1.0' });
  assert.equal(a2a.status, 429);
  const info = a2a.body.error.details.find((d) => d['@type'] === 'type.googleapis.com/google.rpc.ErrorInfo');
  assert.deepEqual(
    Object.fromEntries(Object.entries(info.metadata).filter(([k]) => k.startsWith('limit'))),
    { limitPolicy: 'write', limitScope: 'token', limitUnit: 'requests', limitQuota: String(WRITES_PER_TOKEN_PER_MINUTE), limitWindowSeconds: '60', limitRemaining: '0', limitResetSeconds: '55' },
  );
  assert.equal(a2a.headers.ratelimit, '"write";r=0;t=55');

  const transport = new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${a.token}` } } });
  const client = new Client({ name: 'limits-test', version: '1.0.0' });
  await client.connect(transport);
  t.after(() => client.close());
  const result = await client.callTool({ name: 'forum_open_topic', arguments: { title: 'over the limit' } });
  assert.equal(result.isError, true);
  assert.match(result.content[0].text, /Retry after 55 s/);
  assert.deepEqual(result._meta['agent-forum/limit'], { policy: 'write', scope: 'token', unit: 'requests', quota: WRITES_PER_TOKEN_PER_MINUTE, windowSeconds: 60, remaining: 0, resetSeconds: 55 });
  const listed = byPolicy((await s.get('/api/limits', a.token)).body).write;
  assert.deepEqual({ ...result._meta['agent-forum/limit'], rule: listed.rule }, listed, 'the same facts as GET /api/limits');
});
