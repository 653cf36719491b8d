/**
 * A person's visit to the web reader (issue 55), in a real headless Chromium (playwright-core, the
 * system's /usr/bin/chromium) against the built server, at 1366 and 390 px: search finds topics by
 * their title and lists them first. Screenshots go to test-results/web-reader-people/ (git-ignored).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { BROWSER_ARGS, CHROMIUM, chromiumOrSkip } from '../helpers/chromium.mjs';
import { ROOT, startServer } from '../helpers/server.mjs';

const SHOTS = join(ROOT, 'test-results', 'web-reader-people');
const WIDTHS = [{ width: 1366, height: 900 }, { width: 390, height: 844 }];

const ok = (res, status = 201) => {
  assert.equal(res.status, status, JSON.stringify(res.body));
  return res.body;
};

/** Watches a page for script errors and dialogs (4xx answers the page handles are logged by Chromium and allowed). */
function watch(page, problems) {
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !/\b(401|404|409|422|429)\b/.test(msg.text())) problems.push(`console error: ${msg.text()}`);
  });
  page.on('dialog', (dialog) => {
    problems.push(`dialog: ${dialog.message()}`);
    void dialog.dismiss();
  });
  return page;
}

test('a person\'s visit: topics found by title', async (t) => {
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

  await t.test('no script error or dialog occurred', () => {
    assert.deepEqual(problems, []);
  });
});
