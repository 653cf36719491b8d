/**
 * Taking part from the web reader (issues 37 and 38) in a real headless Chromium (playwright-core,
 * the system's /usr/bin/chromium) against the built server: a person signs up, replies (also
 * with a quote), starts a topic, never double-posts after a network error, sees another agent's
 * reply marked unread (topic list, thread landing, live), sees the inbox count rise when someone
 * replies to them, sees the same unread marks in a second tab, searches with the query kept in
 * the address and pages past 50 hits, revises their knowledge and takes work actions; a 429 on
 * posting reads as a sentence with the wait. Screenshots go to test-results/web-composer/
 * (git-ignored); the new views pass axe-core and html-validate at phone and desktop widths.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { BROWSER_ARGS, CHROMIUM, chromiumOrSkip, watchPage } from '../helpers/chromium.mjs';
import { HtmlValidate } from 'html-validate';
import { ROOT, startServer } from '../helpers/server.mjs';

const SHOTS = join(ROOT, 'test-results', 'web-composer');
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const WIDTHS = [{ width: 1366, height: 900 }, { width: 390, height: 844 }];
/** Messages matching the search word: more than one page of 50 hits (views.mjs SEARCH_PAGE_SIZE). */
const LANTERN_MESSAGES = 60;
const XSS = '<img src=x onerror="window.__pwned = 1">';

const domValidator = new HtmlValidate({
  extends: ['html-validate:recommended'],
  // aria-label on an element that may be named (a section, a textarea) is the reader's choice; one that
  // cannot be named is still an error. html-validate 10 reports the first by default, 11 does not.
  rules: { 'attribute-empty-style': 'off', 'attribute-boolean-style': 'off', 'no-trailing-whitespace': 'off', 'aria-label-misuse': ['error', { allowAnyNamable: true }] },
});

/** Serious or critical axe-core violations of the page as it is now. */
async function seriousViolations(page) {
  if (!(await page.evaluate(() => typeof window.axe !== 'undefined'))) await page.evaluate(AXE_SOURCE);
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}

/** html-validate messages of the live DOM. */
async function htmlProblems(page, name) {
  const report = await domValidator.validateString((await page.content()).replaceAll(' style=""', ''));
  return report.results.flatMap((r) => r.messages.map((m) => `${name}:${m.line}:${m.column} ${m.ruleId} ${m.message}`));
}

const ok = (res, status = 201) => {
  assert.equal(res.status, status, JSON.stringify(res.body));
  return res.body;
};

const watch = (page, problems) => watchPage(page, problems, { resets: true });

test('a person takes part from the reader: composer, unread marks, inbox count and search', async (t) => {
  if (chromiumOrSkip(t, 'the web composer browser check')) return;
  rmSync(SHOTS, { recursive: true, force: true });
  mkdirSync(SHOTS, { recursive: true });
  const s = await startServer(t);
  const bob = await s.register('bob');
  const harbour = ok(await s.post('/api/topics', { title: 'Harbour lights' }, bob.token));
  const north = ok(await s.post('/api/messages', { topicId: harbour.id, content: 'The **north** light is out.', clientId: 'h1' }, bob.token));
  const log = ok(await s.post('/api/topics', { title: 'Lantern log' }, bob.token));
  const lanterns = [];
  for (let i = 1; i <= LANTERN_MESSAGES; i++) {
    const content = i === 7 ? `Lantern ${i}: ${XSS} was seen` : `Lantern ${i} lit at dusk.`;
    lanterns.push(ok(await s.post('/api/messages', { topicId: log.id, content, clientId: `l${i}` }, bob.token)));
  }
  const messagesIn = async (topicId, token) => ok(await s.get(`/api/messages?topicId=${topicId}&limit=100`, token), 200).messages;

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: BROWSER_ARGS });
  t.after(() => browser.close());
  const context = await browser.newContext({ serviceWorkers: 'block', viewport: WIDTHS[0] });
  // These checks read replies nested under their message: the threaded order (issue 55 made the
  // oldest-first order the default; web-reader-people.test.mjs checks both orders).
  await context.addInitScript(() => {
    try {
      localStorage.setItem('agent-forum.thread-order', 'threaded');
    } catch {
      // no storage on this document (about:blank)
    }
  });
  const problems = [];
  const page = watch(await context.newPage(), problems);
  const shot = (name) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  const go = async (hash, h1) => {
    await page.goto(`${s.url}/${hash}`);
    await page.locator('h1', { hasText: h1 }).first().waitFor({ timeout: 10_000 });
  };
  let carol;

  await t.test('a person signs up and is signed in', async () => {
    await go('#/join', 'Join Agent Forum');
    await page.locator('#join-name').fill('Carol');
    await page.locator('#join-provider').fill('independent');
    await page.locator('#join-archive').check();
    await page.locator('#join-authorized').check();
    await page.locator('button', { hasText: 'Create my account' }).click();
    await page.locator('#new-token').waitFor({ timeout: 10_000 });
    const token = await page.locator('#new-token').inputValue();
    carol = { token, ...ok(await s.get('/api/me', token), 200) };
    assert.equal(carol.name, 'Carol');
    assert.ok(await page.locator('#nav').isVisible());
  });

  let carolReply;
  await t.test('opening a topic and replying with the composer: the preview renders markdown and keeps raw HTML as text; the reply appears in the thread', async () => {
    await go(`#/topic/${harbour.id}`, 'Harbour lights');
    const box = page.locator('form.composer textarea');
    await box.fill(`I will **check** it tonight. ${XSS}`);
    assert.match(await page.locator('form.composer .counter').innerText(), /^\d+ \/ 8000 characters$/, 'the limit is shown');
    await page.locator('form.composer button', { hasText: 'Preview' }).click();
    const preview = page.locator('form.composer .preview');
    await preview.locator('strong', { hasText: 'check' }).waitFor();
    assert.equal(await preview.locator('img').count(), 0, 'raw HTML is not made into an element');
    assert.match(await preview.innerText(), /<img src=x onerror=/);
    await page.locator('form.composer button.post').click();
    const mine = page.locator('li.message', { hasText: 'I will check it tonight.' });
    await mine.waitFor({ timeout: 10_000 });
    assert.equal(await box.inputValue(), '', 'the box is emptied once posted');
    const stored = (await messagesIn(harbour.id, bob.token)).filter((m) => m.authorId === carol.id);
    assert.equal(stored.length, 1, 'posted once');
    carolReply = stored[0];
    assert.equal(await mine.getAttribute('data-id'), carolReply.id);
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    await shot('topic-replied');
  });

  await t.test('Quote on a message starts the reply with a quote of it, and the reply is nested under it', async () => {
    await page.locator(`li.message[data-id="${north.id}"] > article button.quote`).click();
    const box = page.locator('form.composer textarea');
    assert.match(await box.inputValue(), /^> The \*\*north\*\* light is out\.\n\n$/);
    assert.match(await page.locator('form.composer .replying').innerText(), /Replying to bob/);
    await box.press('End');
    await box.pressSequentially('Seen from the pier too.');
    await page.locator('form.composer button.post').click();
    const nested = page.locator(`li.message[data-id="${north.id}"] > ol.replies > li.message`, { hasText: 'Seen from the pier too.' });
    await nested.waitFor({ timeout: 10_000 });
    assert.equal(await nested.locator('blockquote').innerText(), 'The north light is out.');
  });

  await t.test('a network error while posting keeps the draft and its clientId: posting again never makes a second message', async () => {
    const text = 'Posted through a flaky network.';
    // The first POST reaches the server (and is stored), but its answer is lost; the receipt cannot be read either.
    let dropped = 0;
    await page.route('**/api/messages', async (route) => {
      if (route.request().method() !== 'POST' || dropped > 0) return route.fallback();
      dropped++;
      await route.fetch();
      await route.abort('connectionreset');
    });
    await page.route('**/api/receipts*', (route) => route.abort('connectionreset'));
    await page.locator('form.composer textarea').fill(text);
    await page.locator('form.composer button.post').click();
    await page.locator('form.composer .compose-error', { hasText: /may or may not have arrived|could not be reached/ }).waitFor({ timeout: 15_000 });
    assert.equal(dropped, 1);
    assert.equal(await page.locator('form.composer textarea').inputValue(), text, 'the draft is kept');
    const clientId = await page.evaluate((id) => JSON.parse(sessionStorage.getItem(`agent-forum.draft.reply.${id}`)).clientId, harbour.id);
    assert.match(clientId, /^web-[0-9a-f]{24}$/);
    await page.unroute('**/api/messages');
    await page.unroute('**/api/receipts*');
    await page.locator('form.composer button.post').click();
    await page.locator('li.message', { hasText: text }).waitFor({ timeout: 10_000 });
    const copies = (await messagesIn(harbour.id, bob.token)).filter((m) => m.content === text);
    assert.equal(copies.length, 1, 'the retry sent the same clientId: one message');
    const receipt = ok(await s.get(`/api/receipts?kind=message&clientId=${clientId}`, carol.token), 200);
    assert.equal(receipt.outcome, 'recorded');
  });

  let started;
  await t.test('starting a topic: room, title and first message, with the limits shown; it opens the new topic', async () => {
    await page.locator('#nav a', { hasText: 'New topic' }).click();
    await page.locator('h1', { hasText: 'Start a topic' }).waitFor();
    assert.match(await page.locator('#view .note').first().innerText(), /160 characters.*8000/);
    await page.locator('#new-topic-room').selectOption('commons');
    await page.locator('#new-topic-title').fill('Fog signals');
    assert.match(await page.locator('#new-topic-title-help .counter').innerText(), /^11 \/ 160 characters$/);
    await page.locator('#new-topic-text').fill('Which horn is _which_?');
    await page.locator('#new-topic-form button', { hasText: 'Preview' }).click();
    await page.locator('#new-topic-text-preview em', { hasText: 'which' }).waitFor();
    await shot('new-topic');
    await page.locator('#new-topic-form button.post').click();
    await page.locator('h1', { hasText: 'Fog signals' }).waitFor({ timeout: 10_000 });
    await page.locator('li.message', { hasText: 'Which horn is which?' }).waitFor();
    const topics = ok(await s.get('/api/topics', bob.token), 200).filter((x) => x.title === 'Fog signals');
    assert.equal(topics.length, 1);
    started = topics[0];
    assert.equal(started.authorId, carol.id);
    assert.equal(started.roomId, 'commons');
    assert.match(page.url(), new RegExp(`#/topic/${started.id}$`));
  });

  await t.test('another agent\'s reply: the topic list marks new activity, the thread opens at the first unread message, and a reply arriving live is marked unread', async () => {
    await go('#/room/commons', 'Commons');
    await page.locator('#live[data-state="live"]').waitFor({ timeout: 15_000 });
    const card = page.locator('ul.topics > li', { hasText: 'Harbour lights' });
    assert.equal(await card.locator('[data-unread]').count(), 0, 'nothing new in a topic read to its end');
    const fresh = ok(await s.post('/api/messages', { topicId: harbour.id, content: 'The light is back on.', clientId: 'h2' }, bob.token));
    await card.locator('[data-unread="activity"]', { hasText: 'New activity' }).waitFor({ timeout: 10_000 });
    await shot('room-new-activity');
    await card.locator('a.title').click();
    const first = page.locator(`li.message.unread[data-id="${fresh.id}"]`);
    await first.waitFor({ timeout: 10_000 });
    assert.equal(await first.locator('.badge').innerText(), 'Unread');
    await page.waitForFunction((id) => document.activeElement?.closest('li.message')?.getAttribute('data-id') === id, fresh.id, { timeout: 5000 });
    assert.equal(await page.locator('li.message.unread').count(), 1, 'only the other agent\'s new message is unread');
    await page.locator('#live[data-state="live"]').waitFor({ timeout: 15_000 });
    const live = ok(await s.post('/api/messages', { topicId: harbour.id, content: 'And the south one flickers.', clientId: 'h3' }, bob.token));
    const arrived = page.locator(`li.message.new.unread[data-id="${live.id}"]`);
    await arrived.waitFor({ timeout: 10_000 });
    assert.equal(await arrived.locator('.badge').innerText(), 'New');
    await page.locator('button.jump-end', { hasText: 'Jump to newest' }).first().click();
    await page.waitForFunction((id) => document.activeElement?.closest('li.message')?.getAttribute('data-id') === id, live.id, { timeout: 5000 });
    // Both were on screen: the room no longer marks the topic.
    await go('#/room/commons', 'Commons');
    assert.equal(await page.locator('ul.topics > li', { hasText: 'Harbour lights' }).locator('[data-unread]').count(), 0);
  });

  await t.test('in another tab of the same browser the topic list knows what was read, and marks a new reply there too', async () => {
    const tab = watch(await context.newPage(), problems);
    await tab.goto(`${s.url}/`);
    await tab.locator('#token').fill(carol.token);
    await tab.locator('#token').press('Enter');
    await tab.locator('h1', { hasText: 'Latest activity' }).waitFor({ timeout: 10_000 });
    await tab.goto(`${s.url}/#/room/commons`);
    await tab.locator('h1', { hasText: 'Commons' }).waitFor({ timeout: 10_000 });
    await tab.locator('#live[data-state="live"]').waitFor({ timeout: 15_000 });
    const card = tab.locator('ul.topics > li', { hasText: 'Harbour lights' });
    assert.equal(await card.locator('[data-unread]').count(), 0, 'read in the first tab, so read here');
    const other = ok(await s.post('/api/messages', { topicId: harbour.id, content: 'Seen from the second tab.', clientId: 'h5' }, bob.token));
    await card.locator('[data-unread="activity"]').waitFor({ timeout: 10_000 });
    await card.locator('a.title').click();
    await tab.locator(`li.message.unread[data-id="${other.id}"]`).waitFor({ timeout: 10_000 });
    await tab.close();
  });

  await t.test('the inbox count in the header rises when another agent replies to the person, and the inbox lists the reply', async () => {
    const inbox = page.locator('#nav-inbox');
    await page.waitForFunction(() => document.getElementById('nav-inbox')?.dataset.count !== undefined);
    const before = Number(await inbox.getAttribute('data-count'));
    const answer = ok(await s.post('/api/messages', { topicId: harbour.id, content: 'Thanks for checking, Carol.', clientId: 'h4', replyTo: carolReply.id }, bob.token));
    await page.waitForFunction((n) => Number(document.getElementById('nav-inbox')?.dataset.count) > n, before, { timeout: 15_000 });
    assert.match(await inbox.innerText(), /Inbox \d+/);
    await shot('inbox-count');
    await inbox.click();
    await page.locator('h1', { hasText: 'Inbox' }).waitFor();
    const entry = page.locator('ul.inbox > li.entry.new[data-reason="reply"]', { hasText: 'Thanks for checking, Carol.' });
    await entry.waitFor({ timeout: 10_000 });
    assert.match(await entry.innerText(), /bob \(test-lab\) replied to you in Harbour lights/);
    assert.equal(await entry.locator('a.open-message').getAttribute('href'), `#/topic/${harbour.id}/m-${answer.id}`);
    await page.waitForFunction(() => document.getElementById('nav-inbox')?.dataset.count === '0');
    assert.equal(await inbox.innerText(), 'Inbox', 'seen once the inbox was opened');
  });

  await t.test('search keeps the query in the address, names each hit\'s topic, highlights matches as text and pages past 50', async () => {
    await page.locator('#search-q').fill('lantern');
    await page.locator('#search-q').press('Enter');
    await page.locator('h1', { hasText: 'Search' }).waitFor();
    await page.locator('ul.hits > li').first().waitFor({ timeout: 10_000 });
    assert.match(page.url(), /#\/search\?q=lantern$/);
    assert.deepEqual(await page.locator('#view h2').allInnerTexts(), ['Topics (1)', 'Messages (50+)', 'Knowledge (0)'], 'topic titles first (issue 55)');
    assert.equal(await page.locator('ul.topic-hits > li a.title').innerText(), 'Lantern log');
    const firstPage = await page.locator('ul.hits > li').evaluateAll((els) => els.map((e) => e.dataset.id));
    assert.equal(firstPage.length, 50);
    assert.deepEqual(new Set(await page.locator('ul.hits a.hit-topic').allInnerTexts()), new Set(['Lantern log']), 'each hit names its topic');
    const marks = await page.locator('ul.hits mark').allInnerTexts();
    assert.ok(marks.length >= 50 && marks.every((m) => m.toLowerCase() === 'lantern'), 'matches are highlighted');
    assert.equal(await page.locator('#view img').count(), 0, 'a hit\'s raw HTML stays text');
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    await shot('search-page-1');
    await page.locator('nav.search-pager a.older-results').first().click();
    await page.waitForURL(/page=2/);
    await page.locator('ul.hits > li').first().waitFor();
    await page.waitForFunction((id) => !document.querySelector(`ul.hits > li[data-id="${id}"]`), firstPage[0]);
    const secondPage = await page.locator('ul.hits > li').evaluateAll((els) => els.map((e) => e.dataset.id));
    assert.equal(secondPage.length, LANTERN_MESSAGES - 50);
    const all = new Set([...firstPage, ...secondPage]);
    assert.equal(all.size, LANTERN_MESSAGES, 'the two pages hold every hit once');
    for (const m of lanterns) assert.ok(all.has(m.id));
    // The address keeps the query: a reload shows the same page.
    await page.reload();
    await page.locator('ul.hits > li').first().waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('#search-page-q').inputValue(), 'lantern');
    assert.equal(await page.locator('ul.hits > li').count(), LANTERN_MESSAGES - 50);
    // Filters: knowledge only, and a room.
    await page.locator('#search-kind').selectOption('knowledge');
    await page.locator('form.search-filters button').click();
    await page.waitForURL(/kind=knowledge/);
    await page.locator('h2', { hasText: 'Knowledge (0)' }).waitFor();
    assert.equal(await page.locator('ul.hits').count(), 0);
  });

  let revised;
  await t.test('a person revises their own knowledge item and takes the work actions the rules allow them, from the page', async () => {
    const mine = ok(await s.post('/api/knowledge', { title: 'Fog horn pitches', content: 'Low.', category: 'opinion' }, carol.token));
    const theirs = ok(await s.post('/api/knowledge', { title: 'Buoy colours', content: 'Red and green.', category: 'opinion' }, bob.token));
    await go(`#/knowledge/${theirs.id}`, 'Buoy colours');
    assert.equal(await page.locator('button.revise').count(), 0, 'no Revise on someone else\'s item');
    await go(`#/knowledge/${mine.id}`, 'Fog horn pitches');
    await page.locator('button.revise').click();
    await page.locator('form.revise-form input[type="text"]').fill('Fog horn pitches, measured');
    await page.locator('form.revise-form textarea').first().fill('Low, about 150 Hz.');
    await page.locator('form.revise-form button.post').click();
    await page.locator('h1', { hasText: 'Fog horn pitches, measured' }).waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('ol.revisions > li').count(), 2);
    revised = ok(await s.get(`/api/knowledge?id=${mine.id}`, bob.token), 200).knowledge[0];
    assert.equal(revised.revision, 2);
    assert.equal(revised.content, 'Low, about 150 Hz.');

    // Someone else's open item: claim it, then submit a result.
    const paint = ok(await s.post('/api/work', { clientId: 'paint', title: 'Paint the buoy', description: 'Red.', acceptanceCriteria: 'A red buoy.' }, bob.token));
    await go(`#/work/${paint.id}`, 'Paint the buoy');
    assert.equal(await page.locator('.work-actions button.cancel-work').count(), 0, 'only the creator may cancel');
    await page.locator('.work-actions button.claim').click();
    await page.locator('dl.summary .state', { hasText: 'claimed' }).waitFor({ timeout: 10_000 });
    await page.locator('.work-actions button.submit-result').click();
    await page.locator('.work-actions form.work-form textarea').first().fill('Painted, two coats.');
    await page.locator('.work-actions form.work-form button.post').click();
    await page.locator('dl.summary .state', { hasText: 'submitted' }).waitFor({ timeout: 10_000 });
    assert.equal(ok(await s.get(`/api/work?id=${paint.id}`, bob.token), 200).items[0].result.content, 'Painted, two coats.');

    // Their own item with a submitted result: review it.
    const chart = ok(await s.post('/api/work', { clientId: 'chart', title: 'Chart the rocks', description: 'All of them.', acceptanceCriteria: 'A chart.' }, carol.token));
    const claimed = ok(await s.post('/api/work/action', { action: 'claim', workItemId: chart.id, expectedRevision: 1, clientId: 'c1' }, bob.token), 200);
    ok(await s.post('/api/work/action', { action: 'submit', workItemId: chart.id, expectedRevision: claimed.revision, clientId: 'c2', content: 'Chart attached.' }, bob.token), 200);
    await go(`#/work/${chart.id}`, 'Chart the rocks');
    assert.equal(await page.locator('.work-actions button.claim').count(), 0, 'a creator cannot claim their own work');
    await page.locator('.work-actions button.review').click();
    await page.locator('.work-actions select').selectOption('accept');
    await page.locator('.work-actions form.work-form:visible textarea').fill('Thorough, thank you.');
    await page.locator('.work-actions form.work-form:visible button.post').click();
    await page.locator('dl.summary .state', { hasText: 'completed' }).waitFor({ timeout: 10_000 });
    await shot('work-reviewed');
  });

  await t.test('the composer, new topic, search and inbox views pass axe-core and html-validate at phone and desktop widths', async () => {
    for (const [name, hash, h1] of [['topic-composer', `#/topic/${harbour.id}`, 'Harbour lights'], ['new-topic-form', '#/new-topic', 'Start a topic'], ['search', '#/search?q=lantern', 'Search'], ['inbox', '#/inbox', 'Inbox'], ['knowledge-revisable', `#/knowledge/${revised.id}`, 'Fog horn pitches, measured']]) {
      for (const size of WIDTHS) {
        await page.setViewportSize(size);
        await go(hash, h1);
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
        assert.ok(overflow <= 0, `${name} at ${size.width}px: no horizontal overflow (${overflow}px)`);
        await shot(`${name}-${size.width}`);
        if (size === WIDTHS[0]) assert.deepEqual(await htmlProblems(page, name), [], `${name} is valid HTML`);
        assert.deepEqual(await seriousViolations(page), [], `${name} at ${size.width}px: no serious or critical axe violation`);
      }
    }
    await page.setViewportSize(WIDTHS[0]);
  });

  await t.test('no script error or dialog occurred', () => {
    assert.deepEqual(problems, []);
  });
});

test('a 429 on posting is shown as a sentence with the wait, never as JSON, and the draft is kept', async (t) => {
  if (chromiumOrSkip(t, 'the web composer browser check')) return;
  const s = await startServer(t, { env: { FORUM_RATE_LIMITS: 'on' } });
  const dave = await s.register('dave');
  const topic = ok(await s.post('/api/topics', { title: 'Busy topic' }, dave.token));
  // Spend dave's writes (spec part 8: 30 per token per minute) over HTTP.
  let refused = null;
  for (let i = 0; i < 40 && !refused; i++) {
    const res = await s.post('/api/messages', { topicId: topic.id, content: `Filler ${i}.`, clientId: `f${i}` }, dave.token);
    if (res.status === 429) refused = res;
    else assert.equal(res.status, 201, JSON.stringify(res.body));
  }
  assert.ok(refused, 'the write limit was reached');
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: BROWSER_ARGS });
  t.after(() => browser.close());
  const problems = [];
  const page = watch(await browser.newPage(), problems);
  await page.goto(`${s.url}/`);
  await page.locator('#token').fill(dave.token);
  await page.locator('#token').press('Enter');
  await page.locator('h1', { hasText: 'Latest activity' }).waitFor({ timeout: 10_000 });
  await page.goto(`${s.url}/#/topic/${topic.id}`);
  await page.locator('h1', { hasText: 'Busy topic' }).waitFor({ timeout: 10_000 });
  await page.locator('form.composer textarea').fill('One more thought.');
  await page.locator('form.composer button.post').click();
  const error = page.locator('form.composer .compose-error', { hasText: 'too fast' });
  await error.waitFor({ timeout: 10_000 });
  const text = await error.innerText();
  assert.match(text, /asks to wait \d+ seconds; your draft is kept/);
  assert.doesNotMatch(text, /[{}]|"error"/, 'no JSON');
  assert.equal(await page.locator('form.composer textarea').inputValue(), 'One more thought.');
  await page.screenshot({ path: join(SHOTS, 'composer-429.png'), fullPage: true }).catch(() => {});
  assert.deepEqual(problems, []);
});
