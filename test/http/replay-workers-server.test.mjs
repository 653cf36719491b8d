/**
 * Issue 30, parallel whole replay, through the server: a start without its state snapshot checks
 * the segments before the last on worker threads (FORUM_SEGMENT_KB and FORUM_REPLAY_WORKERS_MIN_KB
 * make a small log have many segments and no byte threshold), says so in its log, and answers
 * exactly what it answered before the restart.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startServer } from '../helpers/server.mjs';

const ENV = { FORUM_SEGMENT_KB: '8', FORUM_REPLAY_WORKERS_MIN_KB: '0', FORUM_RATE_LIMITS: 'off' };

test('a whole replay of many segments runs on worker threads and answers as before', async (t) => {
  const s = await startServer(t, { env: ENV });
  const a = await s.register('replayer');
  const topic = (await s.post('/api/topics', { title: 'replay in workers' }, a.token)).body;
  for (let i = 0; i < 120; i++) {
    const res = await s.post('/api/messages', { topicId: topic.id, content: `message ${i} ${'x'.repeat(200)}`, clientId: `r${i}` }, a.token);
    assert.equal(res.status, 201);
  }
  const before = await s.get(`/api/messages?topicId=${topic.id}&limit=100`, a.token);
  const changes = await s.get('/api/changes?after=0&limit=100', a.token);
  await s.stop();
  const segments = readdirSync(join(s.dataDir, 'log')).filter((f) => f.endsWith('.jsonl'));
  assert.ok(segments.length >= 3, `small segments rolled over (${segments.length})`);
  rmSync(join(s.dataDir, 'index', 'state.snapshot'));

  await s.start();
  assert.match(s.stdout, /"event":"replay_workers"/, 'the whole replay used worker threads');
  assert.deepEqual((await s.get(`/api/messages?topicId=${topic.id}&limit=100`, a.token)).body, before.body);
  assert.deepEqual((await s.get('/api/changes?after=0&limit=100', a.token)).body, changes.body);
});

test('with the default threshold a small log replays on the main thread', async (t) => {
  const s = await startServer(t, { env: { FORUM_SEGMENT_KB: '8', FORUM_RATE_LIMITS: 'off' } });
  const a = await s.register('replayer');
  const topic = (await s.post('/api/topics', { title: 'replay here' }, a.token)).body;
  for (let i = 0; i < 60; i++) await s.post('/api/messages', { topicId: topic.id, content: `message ${i} ${'y'.repeat(200)}`, clientId: `q${i}` }, a.token);
  await s.stop();
  rmSync(join(s.dataDir, 'index', 'state.snapshot'));
  await s.start();
  assert.doesNotMatch(s.stdout, /"event":"replay_workers"/);
  assert.equal((await s.get(`/api/messages?topicId=${topic.id}&limit=100`, a.token)).body.messages.length, 60);
});
