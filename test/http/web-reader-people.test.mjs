/**
 * A person's visit to the web reader (issue 55), in a real headless Chromium (playwright-core, the
 * system's /usr/bin/chromium) against the built server, at 1366 and 390 px: search finds topics by
 * their title and lists them first; a live thread keeps its message count and post numbers right,
 * oldest first by default or threaded, numbered in posting order in both, with a jump to #n; the
 * header says who is signed in (a menu with the profile and sign-out; at most 64 px on a phone);
 * author names lead to profile pages; one action row per post; previews as plain text; the
 * live-status line under the page's title; after joining, a "save your token" step (download as a
 * file, then "I have saved my token" before Continue). Screenshots go to test-results/web-reader-people/ (git-ignored).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { BROWSER_ARGS, CHROMIUM, chromiumOrSkip, watchPage } from '../helpers/chromium.mjs';
import { ROOT, startServer } from '../helpers/server.mjs';

const SHOTS = join(ROOT, 'test-results', 'web-reader-people');
const WIDTHS = [{ width: 1366, height: 900 }, { width: 390, height: 844 }];

const ok = (res, status = 201) => {
  assert.equal(res.status, status, JSON.stringify(res.body));
  return res.body;
};

const watch = (page, problems) => watchPage(page, problems);

test('a person\'s visit: topics found by title, a thread that stays right, who is signed in, profiles and polish', async (t) => {
  if (chromiumOrSkip(t, 'the web reader people browser check')) return;
  rmSync(SHOTS, { recursive: true, force: true });
  mkdirSync(SHOTS, { recursive: true });
  const s = await startServer(t);
  const bob = await s.register('bob');
  const carol = await s.register('carol');
  const question = ok(await s.post('/api/topics', { title: 'Which language should a person start with?' }, bob.token));
  ok(await s.post('/api/messages', { topicId: question.id, content: 'Python, **usually**.', clientId: 'q1' }, bob.token));
  const other = ok(await s.post('/api/topics', { title: 'Harbour lights' }, bob.token));
  ok(await s.post('/api/messages', { topicId: other.id, content: 'Ask the person at the pier.', clientId: 'o1' }, bob.token));

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: BROWSER_ARGS });
  t.after(() => browser.close());
  const context = await browser.newContext({ serviceWorkers: 'block', viewport: WIDTHS[0] });
  const problems = [];
  const page = watch(await context.newPage(), problems);
  await page.goto(`${s.url}/`);
  await page.locator('#token').fill(carol.token);
  await page.locator('#token').press('Enter');
  await page.locator('h1', { hasText: 'Latest activity' }).waitFor({ timeout: 15_000 });

  for (const size of WIDTHS) {
    await t.test(`search finds the topic titled "…should a person start with?" by "person" and lists topics first (${size.width} px)`, async () => {
      await page.setViewportSize(size);
      await page.goto(`${s.url}/#/search?q=person`);
      const hit = page.locator('ul.topic-hits > li');
      await hit.first().waitFor({ timeout: 10_000 });
      assert.deepEqual(await page.locator('#view h2').allInnerTexts(), ['Topics (1)', 'Messages (1)', 'Knowledge (0)']);
      assert.equal(await hit.count(), 1);
      assert.equal(await hit.getAttribute('data-id'), question.id);
      assert.equal(await hit.locator('a.title').innerText(), 'Which language should a person start with?');
      assert.equal(await hit.locator('a.title mark').innerText(), 'person', 'the match is highlighted');
      assert.equal(await hit.locator('a.title').getAttribute('href'), `#/topic/${question.id}`);
      const [topicsTop, messagesTop] = await page.locator('#view h2').evaluateAll((els) => els.slice(0, 2).map((e) => e.getBoundingClientRect().top));
      assert.ok(topicsTop < messagesTop, 'topics above messages on screen');
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'no sideways scrolling');
      await page.screenshot({ path: join(SHOTS, `search-topics-${size.width}.png`), fullPage: true });
      await hit.locator('a.title').click();
      await page.locator('h1', { hasText: 'Which language should a person start with?' }).waitFor({ timeout: 10_000 });
    });
  }

  /** The post numbers of the thread's messages, in the order they are on the page. */
  const numbersShown = () => page.locator('li.message > article .number').allInnerTexts();
  const lantern = ok(await s.post('/api/topics', { title: 'Lantern keepers' }, bob.token));
  const first = ok(await s.post('/api/messages', { topicId: lantern.id, content: 'Who keeps the north lantern?', clientId: 'k1' }, bob.token));

  await t.test('a live thread stays right: the message count and #n numbers follow new posts, oldest first by default, numbered in posting order', async () => {
    await page.setViewportSize(WIDTHS[0]);
    await page.goto(`${s.url}/#/topic/${lantern.id}`);
    await page.locator('h1', { hasText: 'Lantern keepers' }).waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('#thread-order').inputValue(), 'chronological', 'oldest first is the default');
    assert.match(await page.locator('nav.pager .where').first().innerText(), /^1 message$/);
    await page.locator('#live[data-state="live"]').waitFor({ timeout: 15_000 });
    const second = ok(await s.post('/api/messages', { topicId: lantern.id, content: 'Not me, I keep the south one.', clientId: 'k2' }, bob.token));
    const third = ok(await s.post('/api/messages', { topicId: lantern.id, content: 'I do, since May.', clientId: 'k3', replyTo: first.id }, bob.token));
    await page.locator(`li.message.new[data-id="${third.id}"]`).waitFor({ timeout: 10_000 });
    await page.waitForFunction(() => document.querySelector('nav.pager .where')?.textContent === '3 messages', null, { timeout: 10_000 });
    assert.deepEqual(await numbersShown(), ['#1', '#2', '#3'], 'new posts get their numbers live, in posting order');
    assert.equal(await page.locator(`li.message[data-id="${second.id}"] .number`).innerText(), '#2');
    assert.equal(await page.locator(`li.message[data-id="${third.id}"] .in-reply-to`).innerText(), 'in reply to #1');
    await page.locator('form.composer textarea').fill('Then I will bring the oil.');
    await page.locator('form.composer button.post').click();
    await page.locator('li.message', { hasText: 'Then I will bring the oil.' }).waitFor({ timeout: 10_000 });
    await page.waitForFunction(() => document.querySelector('nav.pager .where')?.textContent === '4 messages', null, { timeout: 10_000 });
    assert.deepEqual(await numbersShown(), ['#1', '#2', '#3', '#4']);
    await page.reload();
    await page.locator('h1', { hasText: 'Lantern keepers' }).waitFor({ timeout: 10_000 });
    assert.deepEqual(await numbersShown(), ['#1', '#2', '#3', '#4'], 'after a reload too');
    await page.screenshot({ path: join(SHOTS, 'thread-chronological-1366.png'), fullPage: true });
  });

  for (const size of WIDTHS) {
    await t.test(`the threaded order nests replies and keeps the posting numbers; jump to #n lands on the post; the choice is kept (${size.width} px)`, async () => {
      await page.setViewportSize(size);
      await page.goto(`${s.url}/#/topic/${lantern.id}`);
      await page.locator('h1', { hasText: 'Lantern keepers' }).waitFor({ timeout: 10_000 });
      if (await page.locator('#thread-order').inputValue() !== 'threaded') await page.locator('#thread-order').selectOption('threaded');
      await page.locator(`li.message[data-id="${first.id}"] > ol.replies > li.message`).waitFor({ timeout: 5000 });
      assert.deepEqual(await numbersShown(), ['#1', '#3', '#2', '#4'], 'threaded: #3 under #1, numbers still in posting order');
      await page.locator('#jump-number').fill('2');
      await page.locator('form.jump-to button').click();
      await page.waitForFunction(() => document.activeElement?.closest('li.message')?.querySelector(':scope > article .number')?.textContent === '#2', null, { timeout: 5000 });
      assert.equal(await page.locator('li.message.target').count(), 1);
      await page.locator('#jump-number').fill('9');
      await page.locator('form.jump-to button').click();
      assert.match(await page.locator('#jump-note').innerText(), /There is no post #9 \(this topic has 4 posts\)/);
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'no sideways scrolling');
      await page.screenshot({ path: join(SHOTS, `thread-threaded-${size.width}.png`), fullPage: true });
      await page.reload();
      await page.locator('h1', { hasText: 'Lantern keepers' }).waitFor({ timeout: 10_000 });
      assert.equal(await page.locator('#thread-order').inputValue(), 'threaded', 'the choice is kept in this browser');
      await page.locator('#thread-order').selectOption('chronological');
      assert.deepEqual(await numbersShown(), ['#1', '#2', '#3', '#4']);
    });
  }

  const danaAgent = ok(await s.post('/api/register', { name: 'Dana', provider: 'Harbour Lab', description: 'Keeps the tide tables.\nAsk me about <b>tides</b>.', acceptsPublicArchive: true, operatorAuthorized: true }));
  const tideKnowledge = ok(await s.post('/api/knowledge', { title: 'Spring tides in the harbour', content: 'Highest at **new moon**.', category: 'opinion' }, danaAgent.token));
  const tideWork = ok(await s.post('/api/work', { clientId: 'w1', title: 'Chart the spring tides', description: 'd', acceptanceCriteria: 'c' }, danaAgent.token));
  const danaMessage = ok(await s.post('/api/messages', { topicId: question.id, content: 'Start with _one_ thing: **tides**.', clientId: 'd1' }, danaAgent.token));

  for (const size of WIDTHS) {
    await t.test(`the header says who is signed in (at most 64 px high on a phone); its menu leads to your profile (${size.width} px)`, async () => {
      await page.setViewportSize(size);
      await page.goto(`${s.url}/#/`);
      await page.locator('h1', { hasText: 'Latest activity' }).waitFor({ timeout: 10_000 });
      const button = page.locator('#account-button');
      assert.equal(await button.getAttribute('aria-expanded'), 'false');
      assert.equal((await button.textContent()).trim(), 'Signed in as carol', 'the name, with "Signed in as" (visually hidden on a phone, still read out)');
      const header = await page.locator('header.bar').boundingBox();
      if (size.width <= 390) {
        assert.ok(header.height <= 64, `the phone header is ${header.height} px high`);
        assert.equal(await page.locator('#nav').isVisible(), false, 'the sections sit behind "Menu"');
        await page.locator('#menu-button').click();
        assert.equal(await page.locator('#menu-button').getAttribute('aria-expanded'), 'true');
        await page.locator('#nav a', { hasText: 'Rooms' }).click();
        await page.locator('h1', { hasText: 'Rooms' }).waitFor({ timeout: 10_000 });
        assert.equal(await page.locator('#nav').isVisible(), false, 'the menu closes once a section is chosen');
      } else {
        assert.ok(await page.locator('#nav a', { hasText: 'Rooms' }).isVisible(), 'the sections are in the header');
      }
      await button.click();
      assert.equal(await button.getAttribute('aria-expanded'), 'true');
      assert.ok(await page.locator('#sign-out').isVisible());
      await page.keyboard.press('Escape');
      assert.equal(await page.locator('#account-menu').isVisible(), false, 'Escape closes the menu');
      await button.click();
      await page.locator('#my-profile').click();
      await page.locator('h1', { hasText: 'carol' }).waitFor({ timeout: 10_000 });
      assert.match(await page.locator('#view h1').innerText(), /^carol You$/);
      assert.match(page.url(), new RegExp(`#/agent/${carol.id}$`));
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'no sideways scrolling');
      await page.screenshot({ path: join(SHOTS, `header-profile-${size.width}.png`) });
    });

    await t.test(`author names lead to profile pages: name, kind, provider, description, joined, recent messages, knowledge and work (${size.width} px)`, async () => {
      await page.setViewportSize(size);
      await page.goto(`${s.url}/#/topic/${question.id}`);
      await page.locator(`li.message[data-id="${danaMessage.id}"]`).waitFor({ timeout: 10_000 });
      await page.locator(`li.message[data-id="${danaMessage.id}"] .author a`).click();
      await page.locator('h1', { hasText: 'Dana' }).waitFor({ timeout: 10_000 });
      assert.match(page.url(), new RegExp(`#/agent/${danaAgent.id}$`));
      const summary = await page.locator('dl.summary').innerText();
      assert.match(summary, /Kind\s+AI agent/);
      assert.match(summary, /Provider\s+Harbour Lab/);
      assert.match(summary, /About\s+Keeps the tide tables\.\nAsk me about <b>tides<\/b>\./, 'the description as text');
      assert.match(summary, /Joined\s+\S/);
      assert.equal(await page.locator('.profile b').count(), 0, 'no HTML made from the description');
      assert.equal(await page.locator('ul.profile-messages > li').getAttribute('data-id'), danaMessage.id);
      assert.equal(await page.locator('ul.profile-messages .excerpt').innerText(), 'Start with one thing: tides.', 'the preview is plain text');
      assert.equal(await page.locator('ul.profile-knowledge a.title').innerText(), tideKnowledge.title);
      assert.equal(await page.locator('ul.profile-work a.title').innerText(), tideWork.title);
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'no sideways scrolling');
      await page.screenshot({ path: join(SHOTS, `profile-${size.width}.png`), fullPage: true });
    });

    await t.test(`polish: one action row per post, previews as plain text, the live-status line under the title (${size.width} px)`, async () => {
      await page.setViewportSize(size);
      await page.goto(`${s.url}/#/topic/${question.id}`);
      const post = page.locator(`li.message[data-id="${danaMessage.id}"] > article`);
      await post.waitFor({ timeout: 10_000 });
      const tops = await post.locator('.post-actions button').evaluateAll((els) => els.map((e) => [e.textContent, Math.round(e.getBoundingClientRect().top)]));
      assert.deepEqual(tops.map(([name]) => name), ['Reply', 'Quote', 'Flag']);
      assert.equal(new Set(tops.map(([, top]) => top)).size, 1, `Reply, Quote and Flag on one row: ${JSON.stringify(tops)}`);
      await page.locator('#live[data-state]').waitFor({ timeout: 15_000 });
      const [titleBottom, liveTop] = await page.evaluate(() => [document.querySelector('#view h1').getBoundingClientRect().bottom, document.getElementById('live').getBoundingClientRect().top]);
      assert.ok(liveTop >= titleBottom, `the live-status line is under the title (${liveTop} ≥ ${titleBottom})`);
      await page.goto(`${s.url}/#/search?q=tides`);
      const hit = page.locator(`ul.hits > li[data-id="${danaMessage.id}"] .excerpt`);
      await hit.waitFor({ timeout: 10_000 });
      assert.equal(await hit.innerText(), 'Start with one thing: tides.', 'a search preview is plain text, the match highlighted');
      await page.screenshot({ path: join(SHOTS, `search-plain-${size.width}.png`), fullPage: true });
    });
  }

  await t.test('an inbox preview is plain text; "Sign out" in the account menu signs out', async () => {
    await page.setViewportSize(WIDTHS[0]);
    const mine = ok(await s.post('/api/messages', { topicId: question.id, content: 'Thanks, I will try.', clientId: 'c9' }, carol.token));
    ok(await s.post('/api/messages', { topicId: question.id, content: '> quoted\n\nA **bold** answer with `code`.', clientId: 'd2', replyTo: mine.id }, danaAgent.token));
    await page.goto(`${s.url}/#/inbox`);
    const entry = page.locator('ul.inbox > li.entry[data-reason="reply"] a.open-message').first();
    await entry.waitFor({ timeout: 10_000 });
    assert.equal(await entry.innerText(), 'quoted A bold answer with code.');
    await page.locator('#account-button').click();
    await page.locator('#sign-out').click();
    await page.locator('#sign-in').waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('#account').isVisible(), false);
  });

  await t.test('after joining, the token is saved in a step that cannot be skipped by accident: download as a file, then "I have saved my token" (1366 and 390 px)', async () => {
    const joining = await browser.newContext({ serviceWorkers: 'block', viewport: WIDTHS[0], acceptDownloads: true });
    const tab = watch(await joining.newPage(), problems);
    await tab.goto(`${s.url}/#/join`);
    await tab.locator('h1', { hasText: 'Join Agent Forum' }).waitFor({ timeout: 10_000 });
    await tab.locator('#join-name').fill('Erin');
    await tab.locator('#join-provider').fill('independent');
    await tab.locator('#join-archive').check();
    await tab.locator('#join-authorized').check();
    await tab.locator('button', { hasText: 'Create my account' }).click();
    await tab.locator('#new-token').waitFor({ timeout: 10_000 });
    const token = await tab.locator('#new-token').inputValue();
    assert.equal((await tab.locator('#account-button').textContent()).trim(), 'Signed in as Erin', 'the header says who joined');
    const next = tab.locator('#token-continue');
    assert.equal(await next.isDisabled(), true, 'Continue waits until the token is saved');
    const [download] = await Promise.all([tab.waitForEvent('download'), tab.locator('#download-token').click()]);
    assert.equal(download.suggestedFilename(), 'agent-forum-token.txt');
    const file = readFileSync(await download.path(), 'utf8');
    assert.match(file, new RegExp(`^Token: ${token}$`, 'm'), 'the file holds the token');
    assert.match(file, new RegExp(`^Server: ${s.url}/$`, 'm'));
    await tab.locator('#token-download-status', { hasText: 'agent-forum-token.txt' }).waitFor();
    await tab.screenshot({ path: join(SHOTS, 'save-token-1366.png'), fullPage: true });
    await tab.setViewportSize(WIDTHS[1]);
    assert.ok(await tab.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'no sideways scrolling at 390 px');
    await tab.screenshot({ path: join(SHOTS, 'save-token-390.png'), fullPage: true });
    await tab.locator('#token-saved').check();
    assert.equal(await next.isDisabled(), false);
    await next.click();
    await tab.locator('h1', { hasText: 'Latest activity' }).waitFor({ timeout: 10_000 });
    assert.equal((await tab.locator('#account-button').textContent()).trim(), 'Signed in as Erin');
    await joining.close();
  });

  await t.test('no script error or dialog occurred', () => {
    assert.deepEqual(problems, []);
  });
});
