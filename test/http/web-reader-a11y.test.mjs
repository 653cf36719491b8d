/**
 * WCAG 2.2 AA in the web reader (issue 55), in a real headless Chromium (playwright-core, the
 * system's /usr/bin/chromium) against the built server:
 * - axe-core with the wcag2a, wcag2aa, wcag21a, wcag21aa and wcag22aa rules (target size
 *   included) finds no violation, of any impact, on every page of the reader — signed out (the
 *   landing page, sign-in for a deep link, join, the catalog), signed in (latest activity, rooms,
 *   a room, a thread, search, inbox, a profile, knowledge and an item, the work board and an item,
 *   new topic, tokens) and an operator's (console, flags) — at 1366 and 390 px, in light and, at
 *   1366 px, dark colours;
 * - every Tab stop of each page shows a focus indicator (an outline of 2 px or more, or a
 *   box-shadow) while on screen;
 * - keyboard only (Tab, Shift+Tab, Enter and Space through the DevTools protocol; letters only to
 *   type text): join → start a topic → reply → search, each step checked, focus visible at every stop.
 * Screenshots of the walk go to test-results/web-reader-a11y/ (git-ignored).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { BROWSER_ARGS, CHROMIUM, chromiumOrSkip, watchPage } from '../helpers/chromium.mjs';
import { axeViolations, describeFocus, focusState, smallTargets } from '../helpers/axe.mjs';
import { ROOT, startServer } from '../helpers/server.mjs';

const SHOTS = join(ROOT, 'test-results', 'web-reader-a11y');
const WIDTHS = [{ width: 1366, height: 900 }, { width: 390, height: 844 }];
/** Tab stops checked per page for a visible focus indicator, from the page's heading on (round to the header on short pages). */
const TAB_STOPS = 60;

const ok = (res, status = 201) => {
  assert.equal(res.status, status, JSON.stringify(res.body));
  return res.body;
};

/** The records every page shows something of: a thread with a reply, knowledge, work, an inbox entry, a flag, a named token. */
async function seed(s) {
  const bob = await s.register('bob');
  const carol = await s.register('carol');
  const op = (await s.cli('operator', 'create', '--name', 'Ada Op')).json;
  const topic = ok(await s.post('/api/topics', { title: 'Lantern keepers' }, bob.token));
  const first = ok(await s.post('/api/messages', { topicId: topic.id, content: 'Who keeps the **north** lantern? See `lamp.md`.\n\n> an old note\n\n- oil\n- wick', clientId: 'a1' }, bob.token));
  ok(await s.post('/api/messages', { topicId: topic.id, content: 'I do, since May.', clientId: 'a2', replyTo: first.id }, carol.token));
  const knowledge = ok(await s.post('/api/knowledge', { title: 'Lantern oil', content: 'Use **clean** oil.', category: 'opinion', topicId: topic.id }, bob.token));
  const work = ok(await s.post('/api/work', { clientId: 'w1', title: 'Refill the north lantern', description: 'Before the storm.', acceptanceCriteria: 'It burns all night.' }, bob.token));
  ok(await s.post('/api/flags', { target: { type: 'message', id: first.id }, reason: 'spam', clientId: 'f1' }, carol.token));
  ok(await s.post('/api/me/tokens', { name: 'nightly report', scopes: ['read'] }, bob.token));
  const rooms = ok(await s.get('/api/rooms', bob.token), 200);
  return { bob, carol, op, topic, knowledge, work, room: (rooms.rooms ?? rooms)[0] };
}

/**
 * Presses Tab up to `max` times from where focus is after navigation (the page's heading) and
 * returns every stop whose focus is not visibly marked (or is off screen), as lines; stops when
 * focus comes back round to a stop it met.
 * @param {import('playwright-core').Page} page @param {number} max
 */
async function tabStopsWithoutFocusMark(page, max) {
  const bad = [];
  const seen = new Set();
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    const f = await focusState(page);
    if (f.tag === 'BODY') break;
    const key = `${describeFocus(f)}@${i}`;
    if (seen.has(describeFocus(f))) break; // wrapped round to the start
    seen.add(describeFocus(f));
    if (!(f.focusVisible && f.indicated && f.onScreen && (f.ringContrast === null || f.ringContrast >= 3))) bad.push(`${key}: focus-visible ${f.focusVisible}, indicator ${f.indicated}, its contrast ${f.ringContrast}:1, on screen ${f.onScreen}`);
  }
  return bad;
}

test('WCAG 2.2 AA: axe finds no violation and focus is visible on every reader page, at 1366 and 390 px', async (t) => {
  if (chromiumOrSkip(t, 'the web reader accessibility browser check')) return;
  const s = await startServer(t);
  const d = await seed(s);
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: BROWSER_ARGS });
  t.after(() => browser.close());
  const context = await browser.newContext({ serviceWorkers: 'block', viewport: WIDTHS[0] });
  const problems = [];
  const page = watchPage(await context.newPage(), problems);

  const go = async (hash, h1) => {
    await page.goto(`${s.url}/${hash}`);
    await page.locator('h1', { hasText: h1 }).first().waitFor({ timeout: 10_000 });
    await page.evaluate(() => document.fonts.ready);
  };
  const failures = [];
  /** axe at both widths (and dark colours at 1366 px), then the Tab stops at 1366 px. */
  const check = async (name, hash, h1) => {
    for (const size of WIDTHS) {
      for (const scheme of size === WIDTHS[0] ? ['light', 'dark'] : ['light']) {
        await page.setViewportSize(size);
        await page.emulateMedia({ colorScheme: scheme });
        await go(hash, h1);
        for (const v of await axeViolations(page)) failures.push(`${name} at ${size.width} px (${scheme}): ${v}`);
        if (scheme === 'light') for (const v of await smallTargets(page)) failures.push(`${name} at ${size.width} px: a target under 24×24 px: ${v}`);
      }
    }
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize(WIDTHS[0]);
    await go(hash, h1);
    for (const f of await tabStopsWithoutFocusMark(page, TAB_STOPS)) failures.push(`${name}: Tab stop ${f}`);
  };
  const signIn = async (token) => {
    await page.goto(`${s.url}/`);
    // The module is running once the status line was filled in (Enter before that would submit the bare form).
    await page.waitForFunction(() => document.getElementById('status-text')?.textContent !== 'Loading…');
    await page.locator('#token').fill(token);
    await page.locator('#token').press('Enter');
    await page.locator('h1', { hasText: 'Latest activity' }).waitFor({ timeout: 15_000 });
  };

  await t.test('signed out: the landing page, a deep link\'s sign-in, join and the catalog', async () => {
    failures.length = 0;
    await check('landing', '#/', 'Agent Forum');
    await check('sign-in for a deep link', `#/topic/${d.topic.id}`, 'Agent Forum');
    await check('join', '#/join', 'Join Agent Forum');
    await check('catalog (signed out)', '#/catalog', 'Starter catalog');
    assert.deepEqual(failures, []);
  });

  await t.test('signed in: every page an agent opens', async () => {
    failures.length = 0;
    await signIn(d.bob.token);
    await check('latest activity', '#/', 'Latest activity');
    await check('rooms', '#/rooms', 'Rooms');
    await check('a room', `#/room/${d.room.id}`, d.room.name);
    await check('a thread', `#/topic/${d.topic.id}`, 'Lantern keepers');
    await check('search', '#/search?q=lantern', 'Search');
    await check('inbox', '#/inbox', 'Inbox');
    await check('a profile', `#/agent/${d.carol.id}`, 'carol');
    await check('knowledge', '#/knowledge', 'Knowledge');
    await check('a knowledge item', `#/knowledge/${d.knowledge.id}`, 'Lantern oil');
    await check('work board', '#/work', 'Work board');
    await check('a work item', `#/work/${d.work.id}`, 'Refill the north lantern');
    await check('new topic', '#/new-topic', 'Start a topic');
    await check('tokens', '#/tokens', 'Your tokens');
    await check('catalog (signed in)', '#/catalog', 'Starter catalog');
    await check('not found', '#/no-such-page', 'Page not found');
    assert.deepEqual(failures, []);
  });

  await t.test('an operator\'s pages: console and flags', async () => {
    failures.length = 0;
    await page.locator('#account-button').click();
    await page.locator('#sign-out').click();
    await page.locator('#token').waitFor();
    await signIn(d.op.token);
    await check('console', '#/console', 'Operator console');
    await check('flags', '#/flags', 'Flags');
    await check('a thread with moderation buttons', `#/topic/${d.topic.id}`, 'Lantern keepers');
    assert.deepEqual(failures, []);
  });

  assert.deepEqual(problems, [], 'no script error, console error or dialog');
});

/**
 * Presses Tab (Shift+Tab when `back`) until the focused element matches `selector`, asserting at
 * every stop that focus is visibly marked and on screen. Fails after `max` presses.
 * @param {import('playwright-core').Page} page @param {string} selector @param {{back?: boolean, max?: number}} [opts]
 */
async function tabTo(page, selector, { back = false, max = 80 } = {}) {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press(back ? 'Shift+Tab' : 'Tab');
    const f = await focusState(page);
    if (f.tag === 'BODY') continue; // past the page's last stop: the browser's own UI
    assert.ok(f.focusVisible && f.indicated && f.onScreen && (f.ringContrast === null || f.ringContrast >= 3),
      `${describeFocus(f)} is focused visibly (focus-visible ${f.focusVisible}, indicator ${f.indicated}, its contrast ${f.ringContrast}:1 of 3:1, on screen ${f.onScreen})`);
    if (await page.evaluate((sel) => document.activeElement?.matches(sel) ?? false, selector)) return;
  }
  assert.fail(`${selector} is not reached with ${max} presses of ${back ? 'Shift+Tab' : 'Tab'}`);
}

/** Types text into the focused field (letters only: every move and every action is Tab, Shift+Tab, Enter or Space). */
const type = (page, text) => page.keyboard.type(text);

for (const size of WIDTHS) {
  test(`keyboard only at ${size.width} px: join, start a topic, reply and search with Tab, Shift+Tab, Enter and Space, focus visible at every stop`, async (t) => {
    if (chromiumOrSkip(t, 'the web reader keyboard walk')) return;
    rmSync(join(SHOTS, `walk-${size.width}`), { recursive: true, force: true });
    mkdirSync(join(SHOTS, `walk-${size.width}`), { recursive: true });
    const shot = (name) => page.screenshot({ path: join(SHOTS, `walk-${size.width}`, `${name}.png`), fullPage: true });
    const s = await startServer(t);
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: BROWSER_ARGS });
    t.after(() => browser.close());
    const context = await browser.newContext({ serviceWorkers: 'block', viewport: size });
    const problems = [];
    const page = watchPage(await context.newPage(), problems);
    const phone = size.width < 768;
    /** The header's sections are behind "Menu" on a phone: open it first. */
    const toSection = async (selector) => {
      if (phone) {
        await tabTo(page, '#menu-button', { back: true });
        await page.keyboard.press('Enter');
        assert.equal(await page.locator('#menu-button').getAttribute('aria-expanded'), 'true', 'Enter opens the menu');
        await tabTo(page, selector);
      } else await tabTo(page, selector, { back: true });
    };

    await page.goto(`${s.url}/`);
    await page.waitForFunction(() => document.getElementById('status-text')?.textContent !== 'Loading…');

    // Join: the skip link first, then "Create an account".
    await tabTo(page, 'a.skip', { max: 1 });
    await tabTo(page, 'a[href="#/join"]');
    await page.keyboard.press('Enter');
    await page.locator('h1', { hasText: 'Join Agent Forum' }).waitFor({ timeout: 10_000 });
    const name = `Kim ${size.width}`;
    await tabTo(page, '#join-name');
    await type(page, name);
    await tabTo(page, '#join-provider');
    await type(page, 'independent');
    await tabTo(page, '#join-archive');
    await page.keyboard.press('Space');
    await tabTo(page, '#join-authorized');
    await page.keyboard.press('Space');
    assert.ok(await page.locator('#join-archive').isChecked() && await page.locator('#join-authorized').isChecked(), 'Space ticks the boxes');
    await tabTo(page, '#join-form button[type="submit"]');
    await page.keyboard.press('Enter');
    await page.locator('#token-saved').waitFor({ timeout: 15_000 });
    // "I have saved my token" opens only after Copy or Download: download it from the keyboard.
    await tabTo(page, '#download-token');
    await page.keyboard.press('Enter');
    await page.locator('#token-saved:not([disabled])').waitFor({ timeout: 10_000 });
    await tabTo(page, '#token-saved');
    await page.keyboard.press('Space');
    await tabTo(page, '#token-continue');
    await shot('1-joined');
    await page.keyboard.press('Enter');
    await page.locator('h1', { hasText: 'Latest activity' }).waitFor({ timeout: 10_000 });
    assert.equal((await page.locator('#me-name').textContent()).trim(), name, 'signed in as the new account');

    // Start a topic.
    await toSection('a[href="#/new-topic"]');
    await page.keyboard.press('Enter');
    await page.locator('h1', { hasText: 'Start a topic' }).waitFor({ timeout: 10_000 });
    await tabTo(page, '#new-topic-title');
    await type(page, `Tide tables for ${size.width}`);
    await tabTo(page, 'form textarea');
    await type(page, 'Where are the spring tide tables kept?');
    await tabTo(page, 'form button.post');
    await shot('2-new-topic');
    await page.keyboard.press('Enter');
    await page.locator('h1', { hasText: `Tide tables for ${size.width}` }).waitFor({ timeout: 15_000 });
    const first = page.locator('li.message', { hasText: 'Where are the spring tide tables kept?' });
    await first.waitFor({ timeout: 10_000 });

    // Reply to it: Space on its Reply button moves focus to the reply box.
    await tabTo(page, 'li.message button.reply');
    await page.keyboard.press('Space');
    assert.ok(await page.evaluate(() => document.activeElement?.tagName === 'TEXTAREA'), 'Reply puts focus in the reply box');
    await type(page, 'In the harbour office, second shelf.');
    await tabTo(page, 'form.composer button.post');
    await page.keyboard.press('Enter');
    const reply = page.locator('li.message', { hasText: 'In the harbour office, second shelf.' });
    await reply.waitFor({ timeout: 10_000 });
    assert.equal(await reply.locator('.in-reply-to').innerText(), 'in reply to #1', 'posted as a reply to the first message');
    await shot('3-replied');

    // Search for the topic from the header, then open it from the results.
    await toSection('#search-q');
    await type(page, 'tide tables');
    await page.keyboard.press('Enter');
    await page.locator('h1', { hasText: 'Search' }).waitFor({ timeout: 10_000 });
    const hit = page.locator('ul.hits li', { hasText: 'Where are the spring tide tables kept?' });
    await hit.first().waitFor({ timeout: 10_000 });
    await shot('4-searched');
    await tabTo(page, 'ul.topic-hits a.title');
    await page.keyboard.press('Enter');
    await page.locator('h1', { hasText: `Tide tables for ${size.width}` }).waitFor({ timeout: 10_000 });
    assert.deepEqual(problems, [], 'no script error, console error or dialog');
  });
}
