/**
 * The web reader on a failed-over archive (issue 50; docs/api/web-reader.md "Live"): feed cursors
 * are positions, which jump past a gap after a change of writer, so a head the reader works out
 * from a log seq (a topic export's `through`) or from the work board's revision total can name
 * no event. The reader then follows from a position it learnt with the head (the topic's, the
 * work feed's first event's): a new post still appears live, no event is skipped, and the
 * follower never stops. Chromium (playwright-core) on a folder from test/helpers/rebased-log.mjs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { BROWSER_ARGS, CHROMIUM, chromiumOrSkip, watchPage } from '../helpers/chromium.mjs';
import { startRebasedServer } from '../helpers/rebased-log.mjs';

/** Longest wait of the reader between two polls of a caught-up feed: 60 s + 20 % jitter (live.mjs). */
const CAUGHT_UP_POLL_MAX_MS = 72_000;

test('the web reader follows both feeds of a failed-over archive live, from a position it learnt with the head, without stopping', async (t) => {
  if (chromiumOrSkip(t, 'the web reader positions check')) return;
  let ids = 0;
  const ok = async (s, path, body, token) => {
    const res = await s.post(path, path === '/api/topics' ? body : { clientId: `wrp-${++ids}`, ...body }, token);
    assert.ok(res.status === 201 || res.status === 200, `${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  const r = await startRebasedServer(t, {
    before: async (s) => {
      const alice = await s.register('alice');
      const bob = await s.register('bob');
      const topic = await ok(s, '/api/topics', { title: 'Old harbour' }, alice.token);
      await ok(s, '/api/messages', { topicId: topic.id, content: 'Before the failover.' }, alice.token);
      const w1 = await ok(s, '/api/work', { topicId: topic.id, title: 'Count the gulls', description: 'All of them.', acceptanceCriteria: 'A number.' }, alice.token);
      await ok(s, '/api/work', { topicId: topic.id, title: 'Count the terns', description: 'All of them.', acceptanceCriteria: 'A number.' }, alice.token);
      await ok(s, '/api/work/action', { action: 'claim', workItemId: w1.id, expectedRevision: 1 }, bob.token);
      return { alice, bob, topic };
    },
    after: async (s, { alice, bob, topic }) => {
      await ok(s, '/api/messages', { topicId: topic.id, content: 'After the failover.' }, bob.token);
      await ok(s, '/api/work', { topicId: topic.id, title: 'Count the cormorants', description: 'All of them.', acceptanceCriteria: 'A number.' }, alice.token);
    },
  });
  const s = r.server;
  const { alice, bob, topic } = r.before;
  const topicPosition = Number(topic.id.slice(3));
  assert.ok(topicPosition <= r.fork, 'the topic was made before the change of writer');

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: BROWSER_ARGS });
  t.after(() => browser.close());
  const context = await browser.newContext({ serviceWorkers: 'block' });
  const problems = [];
  const page = watchPage(await context.newPage(), problems);
  const requested = [];
  page.on('request', (req) => requested.push(req));
  const answers = new Map();
  page.on('response', (res) => answers.set(res.request(), res.status()));
  await page.clock.install();
  const reads = (path) => requested.filter((q) => new URL(q.url()).pathname === path);

  await t.test('a topic made before the change of writer: a new message appears live, and the feed is read from the topic\'s position, never from 0', async () => {
    await page.goto(`${s.url}/#/topic/${topic.id}`);
    await page.locator('#token').fill(bob.token);
    await page.locator('#token').press('Enter');
    await page.locator('h1', { hasText: 'Old harbour' }).waitFor({ timeout: 10_000 });
    await page.locator('#live[data-state="live"]').waitFor({ timeout: 15_000 });
    const fresh = await ok(s, '/api/messages', { topicId: topic.id, content: 'Live after the failover.' }, alice.token);
    assert.ok(Number(fresh.id.slice(4)) > r.base);
    await page.clock.fastForward(CAUGHT_UP_POLL_MAX_MS);
    await page.locator(`#view li.message.new[data-id="${fresh.id}"]`).waitFor({ timeout: 10_000 });
    const afters = reads('/api/changes').map((q) => Number(new URL(q.url()).searchParams.get('after')));
    // The head worked out from the export (the log seq `through`) lies in the gap: 409, then the topic's position.
    assert.ok(afters[0] > r.fork && afters[0] < r.base, `the first read's head names no event: ${afters}`);
    assert.equal(answers.get(reads('/api/changes')[0]), 409);
    assert.equal(afters[1], topicPosition, `then from the topic's position: ${afters}`);
    assert.ok(afters.slice(2).every((a) => a > r.base), `and on from past the jump: ${afters}`);
    assert.equal(await page.locator('#live').getAttribute('data-state'), 'live', 'the follower did not stop');
    assert.equal(await page.locator(`li.message[data-id="${fresh.id}"]`).count(), 1, 'shown once');
  });

  await t.test('the work board: a revision total that names no event falls back to the first event, and a new item appears live', async () => {
    await page.goto(`${s.url}/#/work`);
    await page.locator('h1', { hasText: 'Work board' }).waitFor({ timeout: 10_000 });
    await page.locator('#live[data-state="live"]').waitFor({ timeout: 10_000 });
    await ok(s, '/api/work', { topicId: topic.id, title: 'Count the puffins', description: 'All of them.', acceptanceCriteria: 'A number.' }, alice.token);
    for (let i = 0; i < 5 && (await page.locator('section.state-open a', { hasText: 'Count the puffins' }).count()) === 0; i++) {
      await page.clock.fastForward(CAUGHT_UP_POLL_MAX_MS);
      await page.waitForTimeout(200);
    }
    await page.locator('section.state-open a', { hasText: 'Count the puffins' }).waitFor({ timeout: 10_000 });
    const work = reads('/api/work/changes');
    const positions = work.map((q) => `${new URL(q.url()).searchParams.get('after')}/${new URL(q.url()).searchParams.get('limit')}`);
    // 3 revisions before the jump and 1 after: the total, 4, lies in the work feed's gap (its events are 1, 2, 3, 2000000001).
    assert.deepEqual(positions.slice(0, 3), ['0/1', '4/100', '1/100'], `${positions}`);
    assert.equal(answers.get(work[1]), 409);
    assert.equal(await page.locator('#live').getAttribute('data-state'), 'live', 'the follower did not stop');
  });

  assert.deepEqual(problems, []);
});
