/**
 * The web reader recovers where issue 51 found it stuck or wrong (defects 6, 7 and 8), in a real
 * headless Chromium (playwright-core, the system's /usr/bin/chromium) against the built server:
 * - the header's inbox count keeps counting after a 409 on its read (its saved position is ahead
 *   of the archive, as after a restore from an older backup);
 * - the duplicate-topic check after a lost answer judges "recent" on the server's clock, so a
 *   browser whose clock runs 20 minutes ahead does not create a second topic;
 * - a reply whose answer was lost, then edited and posted again, keeps the edit with a note (the
 *   first version is in the thread) and posts it as a new reply when asked.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { BROWSER_ARGS, CHROMIUM, chromiumOrSkip, watchPage } from '../helpers/chromium.mjs';
import { startServer } from '../helpers/server.mjs';

/** How far ahead of the real time the shifted browser's clock runs, in ms (issue 51 defect 7: 20 minutes). */
const CLOCK_AHEAD_MS = 20 * 60_000;

const ok = (res, status = 201) => {
  assert.equal(res.status, status, JSON.stringify(res.body));
  return res.body;
};

const watch = (page, problems) => watchPage(page, problems, { resets: true });

/** Signs `page` in with `token` from the landing page; `before` runs on the page first (e.g. to plant storage). */
async function signIn(page, url, token, before = async () => {}) {
  await page.goto(`${url}/`);
  await before();
  await page.locator('#token').fill(token);
  await page.locator('#token').press('Enter');
  await page.locator('h1', { hasText: 'Latest activity' }).waitFor({ timeout: 15_000 });
}

/** Makes the next POST to `pattern` reach the server but lose its answer (and the receipt read, so the write stays in doubt). */
async function loseNextAnswer(page, pattern) {
  const state = { dropped: 0 };
  await page.route(pattern, async (route) => {
    if (route.request().method() !== 'POST' || state.dropped > 0) return route.fallback();
    state.dropped++;
    await route.fetch();
    await route.abort('connectionreset');
  });
  await page.route('**/api/receipts*', (route) => route.abort('connectionreset'));
  return state;
}

test('the reader recovers from a 409 on the inbox count, a browser clock 20 minutes ahead and an edited in-doubt reply', async (t) => {
  if (chromiumOrSkip(t, 'the web reader recovery browser check')) return;
  const s = await startServer(t);
  const bob = await s.register('bob');
  const carol = await s.register('carol');
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: BROWSER_ARGS });
  t.after(() => browser.close());
  const problems = [];

  await t.test('after a 409 on the inbox count (saved position ahead of the archive) the header count resets it and keeps counting', async () => {
    const topic = ok(await s.post('/api/topics', { title: 'Restored harbour' }, carol.token));
    const mine = ok(await s.post('/api/messages', { topicId: topic.id, content: 'Is the archive back?', clientId: 'c1' }, carol.token));
    const { cursor } = ok(await s.get('/api/inbox?after=0&limit=1', carol.token), 200);
    const ahead = { originId: cursor.originId, after: 999_999 };
    const refused = await s.get(`/api/inbox?after=${ahead.after}&originId=${ahead.originId}&limit=1`, carol.token);
    assert.equal(refused.status, 409, 'the planted position is ahead of the archive');
    assert.equal(refused.body.code, 'CURSOR_AHEAD');
    const context = await browser.newContext({ serviceWorkers: 'block' });
    const page = watch(await context.newPage(), problems);
    const inboxReads = [];
    page.on('response', (res) => { if (new URL(res.url()).pathname === '/api/inbox') inboxReads.push(res.status()); });
    await signIn(page, s.url, carol.token, () => page.evaluate(([id, seen]) => localStorage.setItem(`agent-forum.inbox-seen.${id}`, JSON.stringify(seen)), [carol.id, ahead]));
    await page.waitForFunction(() => document.getElementById('nav-inbox')?.dataset.count !== undefined);
    await page.waitForFunction(() => JSON.parse(localStorage.getItem(Object.keys(localStorage).find((k) => k.startsWith('agent-forum.inbox-seen.')) ?? 'null')) === null, null, { timeout: 15_000 });
    assert.ok(inboxReads.includes(409), `the count's read was refused with 409 (reads: ${inboxReads.join(', ')})`);
    ok(await s.post('/api/messages', { topicId: topic.id, content: 'It is, carol.', clientId: 'b1', replyTo: mine.id }, bob.token));
    await page.waitForFunction(() => document.getElementById('nav-inbox')?.dataset.count === '1', null, { timeout: 20_000 });
    assert.match(await page.locator('#nav-inbox').innerText(), /^Inbox 1/);
    await context.close();
  });

  await t.test('a topic whose creation answer was lost is found on the server\'s clock: a browser 20 minutes ahead does not create a second topic', async () => {
    const context = await browser.newContext({ serviceWorkers: 'block' });
    await context.addInitScript((ahead) => {
      const RealDate = Date;
      const now = () => RealDate.now() + ahead;
      globalThis.Date = new Proxy(RealDate, {
        construct: (target, args) => (args.length === 0 ? new target(now()) : new target(...args)),
        apply: () => new RealDate(now()).toString(),
        get: (target, key) => (key === 'now' ? now : Reflect.get(target, key)),
      });
    }, CLOCK_AHEAD_MS);
    const page = watch(await context.newPage(), problems);
    await signIn(page, s.url, carol.token);
    const skew = await page.evaluate(() => Date.now());
    assert.ok(skew - Date.now() > CLOCK_AHEAD_MS - 60_000, 'the page\'s clock runs 20 minutes ahead');
    await page.goto(`${s.url}/#/new-topic/commons`);
    await page.locator('h1', { hasText: 'Start a topic' }).waitFor({ timeout: 10_000 });
    const lost = await loseNextAnswer(page, '**/api/topics');
    await page.locator('#new-topic-title').fill('Fog horn schedule');
    await page.locator('#new-topic-text').fill('When does the horn sound?');
    await page.locator('#new-topic-form button.post').click();
    await page.locator('#new-topic-error', { hasText: /may or may not have arrived|could not be reached/ }).waitFor({ timeout: 15_000 });
    assert.equal(lost.dropped, 1);
    const created = ok(await s.get('/api/topics', bob.token), 200).filter((x) => x.title === 'Fog horn schedule');
    assert.equal(created.length, 1, 'the first attempt created the topic');
    await page.unroute('**/api/topics');
    await page.unroute('**/api/receipts*');
    await page.locator('#new-topic-form button.post').click();
    await page.locator('h1', { hasText: 'Fog horn schedule' }).waitFor({ timeout: 10_000 });
    await page.locator('li.message', { hasText: 'When does the horn sound?' }).waitFor({ timeout: 10_000 });
    const topics = ok(await s.get('/api/topics', bob.token), 200).filter((x) => x.title === 'Fog horn schedule');
    assert.equal(topics.length, 1, 'one topic, not a second empty one');
    assert.match(page.url(), new RegExp(`#/topic/${topics[0].id}$`));
    const messages = ok(await s.get(`/api/messages?topicId=${topics[0].id}&limit=10`, bob.token), 200).messages;
    assert.deepEqual(messages.map((m) => m.content), ['When does the horn sound?']);
    await context.close();
  });

  await t.test('a reply whose answer was lost, edited and posted again keeps the edit with a note, and posts it as a new reply when asked', async () => {
    const topic = ok(await s.post('/api/topics', { title: 'Buoy colours' }, bob.token));
    const context = await browser.newContext({ serviceWorkers: 'block' });
    const page = watch(await context.newPage(), problems);
    await signIn(page, s.url, carol.token);
    await page.goto(`${s.url}/#/topic/${topic.id}`);
    await page.locator('h1', { hasText: 'Buoy colours' }).waitFor({ timeout: 10_000 });
    const lost = await loseNextAnswer(page, '**/api/messages');
    const box = page.locator('form.composer textarea');
    await box.fill('Red to port.');
    await page.locator('form.composer button.post').click();
    await page.locator('form.composer .compose-error', { hasText: /may or may not have arrived|could not be reached/ }).waitFor({ timeout: 15_000 });
    assert.equal(lost.dropped, 1);
    await page.unroute('**/api/messages');
    await page.unroute('**/api/receipts*');
    await box.fill('Red to port, green to starboard.');
    await page.locator('form.composer button.post').click();
    await page.locator('li.message', { hasText: 'Red to port.' }).waitFor({ timeout: 10_000 });
    await page.locator('form.composer .compose-error', { hasText: 'Your changes were NOT posted' }).waitFor({ timeout: 10_000 });
    assert.equal(await box.inputValue(), 'Red to port, green to starboard.', 'the edited text is kept in the box');
    const contents = async () => ok(await s.get(`/api/messages?topicId=${topic.id}&limit=10`, bob.token), 200).messages.map((m) => m.content);
    assert.deepEqual(await contents(), ['Red to port.'], 'only the first version was stored so far');
    await page.reload();
    await page.locator('form.composer .compose-error', { hasText: 'Your changes were NOT posted' }).waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('form.composer textarea').inputValue(), 'Red to port, green to starboard.', 'the kept edit and its note survive a reload');
    await page.locator('form.composer button.post').click();
    await page.locator('li.message', { hasText: 'Red to port, green to starboard.' }).waitFor({ timeout: 10_000 });
    // The live feed may show the new message before the post's own answer empties the box: wait for that answer.
    for (let i = 0; i < 100 && (await page.locator('form.composer textarea').inputValue()) !== ''; i++) await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(await page.locator('form.composer textarea').inputValue(), '', 'the box is emptied once the edit is posted');
    assert.equal(await page.locator('form.composer .compose-error').innerText(), '');
    assert.deepEqual((await contents()).sort(), ['Red to port, green to starboard.', 'Red to port.'], 'the edit was posted as a second message');
    await context.close();
  });

  await t.test('no script error or dialog occurred', () => {
    assert.deepEqual(problems, []);
  });
});
