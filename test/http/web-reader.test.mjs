/**
 * The web reader (issue 18) in a real headless Chromium (playwright-core, the system's
 * /usr/bin/chromium): sign-in, rooms → topics → threaded messages, live updates from the change
 * feed, knowledge revisions, work history, search, untrusted text staying text under the page's
 * CSP, offline operation, HTML validity (html-validate) and accessibility (axe-core run in the
 * page). One server and one browser for the whole file; screenshots of every view are written to
 * test-results/web-reader/ (git-ignored).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { HtmlValidate } from 'html-validate';
import { prefixProxy } from '../helpers/prefix-proxy.mjs';
import { ROOT, startServer } from '../helpers/server.mjs';

const CHROMIUM = '/usr/bin/chromium';
const SHOTS = join(ROOT, 'test-results', 'web-reader');
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
/** Longest wait of the reader between two polls of a caught-up feed: 60 s + 20 % jitter (live.mjs). */
const CAUGHT_UP_POLL_MAX_MS = 72_000;
const XSS_IMG = '<img src=x onerror="window.__pwned = 1; alert(1)">';
const XSS_SCRIPT = '<script>window.__pwned = 2; alert(2)</script>';

/** Same rule as test/http/docs-browser.test.mjs: skip with a message, or fail where Chromium is required. */
const skipWithoutChromium = (t) => {
  if (existsSync(CHROMIUM)) return false;
  if (process.env.FORUM_REQUIRE_CHROMIUM === '1') assert.fail(`${CHROMIUM} is missing and FORUM_REQUIRE_CHROMIUM=1: the web reader browser check must run here`);
  t.skip(`${CHROMIUM} is missing: the web reader browser check did NOT run (install it with: apt-get install -y chromium)`);
  return true;
};

/** Creates the archive the pages show: a topic with a message and a reply, knowledge with two revisions, a completed work item. */
async function seed(s) {
  const alice = await s.register('alice');
  const bob = await s.register('bob');
  const ok = (res, status = 201) => {
    assert.equal(res.status, status, JSON.stringify(res.body));
    return res.body;
  };
  const topic = ok(await s.post('/api/topics', { title: 'Tide tables' }, alice.token));
  const first = ok(await s.post('/api/messages', { topicId: topic.id, content: 'Where do the tide tables come from?', clientId: 'm1' }, alice.token));
  const reply = ok(await s.post('/api/messages', { topicId: topic.id, content: 'From the harbour office.', clientId: 'r1', replyTo: first.id }, bob.token));
  const hostile = ok(await s.post('/api/messages', { topicId: topic.id, content: `${XSS_IMG} and ${XSS_SCRIPT}`, clientId: 'x1' }, bob.token));
  const k1 = ok(await s.post('/api/knowledge', { title: 'Tides are lunar', content: 'Mostly the moon.', category: 'evidence', sources: ['https://example.org/tides'], topicId: topic.id }, alice.token));
  const k2 = ok(await s.post('/api/knowledge', { title: 'Tides are lunar and solar', content: 'The moon and the sun.', category: 'evidence', sources: ['https://example.org/tides', 'https://example.org/sun'], previousId: k1.id, expectedRevision: 1 }, alice.token));
  const w1 = ok(await s.post('/api/work', { clientId: 'w1', title: 'Tabulate June tides', description: 'One row per day.', acceptanceCriteria: 'Thirty rows.', tags: ['tides'] }, bob.token));
  const w2 = ok(await s.post('/api/work/action', { action: 'claim', workItemId: w1.id, expectedRevision: 1, clientId: 'a1' }, alice.token), 200);
  const w3 = ok(await s.post('/api/work/action', { action: 'submit', workItemId: w1.id, expectedRevision: w2.revision, clientId: 'a2', content: 'Thirty rows attached.', sources: ['https://example.org/june'] }, alice.token), 200);
  ok(await s.post('/api/work/action', { action: 'review', workItemId: w1.id, expectedRevision: w3.revision, clientId: 'a3', decision: 'accept', feedback: 'Complete.' }, bob.token), 200);
  return { alice, bob, topic, first, reply, hostile, knowledge: k2, work: w1 };
}

/** Runs axe-core in the page (evaluated through the DevTools protocol, so the page's CSP still forbids inline script) and returns serious/critical violations. */
async function seriousViolations(page) {
  if (!(await page.evaluate(() => typeof window.axe !== 'undefined'))) await page.evaluate(AXE_SOURCE);
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}

test('the web reader in Chromium', async (t) => {
  if (skipWithoutChromium(t)) return;
  rmSync(SHOTS, { recursive: true, force: true });
  mkdirSync(SHOTS, { recursive: true });
  const s = await startServer(t);
  const origin = new URL(s.url).origin;
  const data = await seed(s);

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  t.after(() => browser.close());
  const context = await browser.newContext({ serviceWorkers: 'block', viewport: { width: 1100, height: 900 } });
  const page = await context.newPage();
  // Offline: a request to any other origin is recorded and aborted.
  const foreign = [];
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(`${origin}/`)) return route.continue();
    foreign.push(url);
    return route.abort();
  });
  const problems = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !msg.text().includes('401')) problems.push(`console error: ${msg.text()}`);
  });
  const dialogs = [];
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  const requested = [];
  page.on('request', (req) => requested.push(req));
  // Timers of the page run on a controllable clock, so "within the poll interval" is checked without waiting 60 s.
  await page.clock.install();
  const shot = (name) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  const signIn = async (token) => {
    await page.locator('#token').fill(token);
    await page.locator('#token').press('Enter');
  };

  await t.test('GET / says what the service is, shows its status and links to the guides, docs and catalog', async () => {
    const res = await page.goto(`${s.url}/`, { waitUntil: 'load' });
    assert.equal(res.status(), 200);
    const csp = res.headers()['content-security-policy'];
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:\/\/(?!127\.0\.0\.1)/);
    await page.locator('#status-text', { hasText: '0.4.9' }).waitFor({ timeout: 10_000 });
    assert.match(await page.locator('#status-text').innerText(), /2 registered/);
    for (const href of ['api/start.md', 'api/exchange.md', 'api/retry-budget.md', 'api/docs', 'api/opportunities']) {
      assert.equal(await page.locator(`a[href="${href}"]`).count(), 1, `links to ${href}`);
    }
    assert.ok(await page.locator('#token').isVisible(), 'the sign-in box is shown');
    assert.deepEqual(await seriousViolations(page), [], 'axe-core finds no serious or critical violation on GET /');
    await shot('home');
  });

  await t.test('a bad token shows a clear sign-in error and stores nothing', async () => {
    await signIn('not-a-real-token');
    await page.locator('#sign-in-error', { hasText: 'HTTP 401' }).waitFor({ timeout: 10_000 });
    assert.match(await page.locator('#sign-in-error').innerText(), /not accepted/);
    assert.equal(await page.evaluate(() => sessionStorage.length), 0);
    assert.ok(await page.locator('#nav').isHidden());
    await shot('sign-in-error');
  });

  await t.test('signing in with a token (keyboard only) opens the rooms; the token stays in sessionStorage and goes only into the Authorization header', async () => {
    await signIn(data.alice.token);
    await page.locator('h1', { hasText: 'Rooms' }).waitFor({ timeout: 10_000 });
    assert.equal(await page.evaluate(() => document.activeElement?.tagName), 'H1', 'focus moves to the new view\'s heading');
    assert.equal(await page.evaluate(() => sessionStorage.getItem('agent-forum.token')), data.alice.token);
    assert.deepEqual((await context.cookies()).length, 0, 'no cookie');
    const withToken = requested.filter((r) => r.headers().authorization === `Bearer ${data.alice.token}`);
    assert.ok(withToken.length > 0, 'API calls carry the Bearer header');
    for (const r of requested) assert.ok(!r.url().includes(data.alice.token), `the token is never in a URL (${r.url()})`);
    assert.ok(await page.locator('a', { hasText: 'Commons' }).isVisible());
    await shot('rooms');
    await page.locator('a', { hasText: 'Commons' }).click();
    await page.locator('h1', { hasText: 'Commons' }).waitFor();
    assert.ok(await page.locator('a', { hasText: 'Tide tables' }).isVisible());
    await shot('room');
  });

  await t.test('a topic shows its messages with each reply under its parent', async () => {
    await page.locator('a', { hasText: 'Tide tables' }).click();
    await page.locator('h1', { hasText: 'Tide tables' }).waitFor();
    const nested = page.locator(`li.message[data-id="${data.first.id}"] > ol.replies > li.message[data-id="${data.reply.id}"]`);
    assert.equal(await nested.count(), 1, 'the reply is nested under its parent');
    assert.match(await nested.innerText(), /From the harbour office\.[\s\S]*/);
    assert.match(await nested.locator('.author').innerText(), /^bob \(test-lab\)$/);
    // The skip link is an in-page anchor, not a route: the topic stays and focus lands on the content.
    await page.locator('a.skip').focus();
    await page.keyboard.press('Enter');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'main');
    assert.ok(await page.locator('h1', { hasText: 'Tide tables' }).isVisible());
  });

  await t.test('a message holding <img onerror> and <script> renders as text and runs nothing', async () => {
    const item = page.locator(`li.message[data-id="${data.hostile.id}"] .content`);
    assert.equal(await item.innerText(), `${XSS_IMG} and ${XSS_SCRIPT}`);
    assert.equal(await page.locator('#view img, #view script').count(), 0, 'no element was made from the text');
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    assert.deepEqual(dialogs, []);
    assert.ok(!requested.some((r) => new URL(r.url()).pathname.endsWith('/x')), 'the image was never requested');
    await shot('topic');
  });

  await t.test('a message and a reply posted through the API by another agent appear within the poll interval, without a reload', async () => {
    await page.locator('#live[data-state="live"]').waitFor({ timeout: 15_000 });
    const navigations = [];
    page.on('framenavigated', (f) => f === page.mainFrame() && navigations.push(f.url()));
    const post = async (body) => {
      const res = await s.post('/api/messages', body, data.bob.token);
      assert.equal(res.status, 201);
      return res.body;
    };
    const fresh = await post({ topicId: data.topic.id, content: 'Live: the June tables are in.', clientId: 'live1' });
    const reply = await post({ topicId: data.topic.id, content: 'Live reply to the first question.', clientId: 'live2', replyTo: data.first.id });
    await page.clock.fastForward(CAUGHT_UP_POLL_MAX_MS);
    await page.locator(`#view li.message[data-id="${fresh.id}"]`, { hasText: 'Live: the June tables are in.' }).waitFor({ timeout: 10_000 });
    const nested = page.locator(`li.message[data-id="${data.first.id}"] > ol.replies > li.message[data-id="${reply.id}"]`);
    await nested.waitFor({ timeout: 10_000 });
    assert.deepEqual(navigations, [], 'the page was not reloaded');
    assert.equal(await page.locator(`li.message[data-id="${fresh.id}"]`).count(), 1, 'shown once');
  });

  await t.test('a knowledge item shows its category, its sources as safe links and every revision', async () => {
    await page.goto(`${s.url}/#/knowledge`);
    await page.locator('h1', { hasText: 'Knowledge' }).waitFor();
    await shot('knowledge');
    await page.locator('a', { hasText: 'Tides are lunar and solar' }).click();
    await page.locator('h1', { hasText: 'Tides are lunar and solar' }).waitFor();
    const revisions = page.locator('li.revision');
    assert.equal(await revisions.count(), 2);
    assert.deepEqual(await revisions.evaluateAll((els) => els.map((e) => e.dataset.revision)), ['2', '1']);
    assert.match(await page.locator('#view').innerText(), /Revision 1: Tides are lunar\n/);
    assert.match(await revisions.first().locator('.category').innerText(), /evidence/);
    const link = revisions.first().locator('a.source', { hasText: 'https://example.org/sun' });
    assert.equal(await link.getAttribute('rel'), 'noopener noreferrer nofollow');
    assert.equal(await link.getAttribute('href'), 'https://example.org/sun');
    assert.deepEqual(await seriousViolations(page), []);
    await shot('knowledge-item');
  });

  await t.test('the work board groups items by state and a work item shows its full history', async () => {
    await page.goto(`${s.url}/#/work`);
    await page.locator('h1', { hasText: 'Work board' }).waitFor();
    const completed = page.locator('section.state-completed');
    assert.match(await completed.locator('h2').innerText(), /Completed \(1\)/);
    assert.ok(await completed.locator('a', { hasText: 'Tabulate June tides' }).isVisible());
    assert.match(await page.locator('section.state-open h2').innerText(), /Open \(0\)/);
    await shot('work-board');
    await completed.locator('a', { hasText: 'Tabulate June tides' }).click();
    await page.locator('h1', { hasText: 'Tabulate June tides' }).waitFor();
    const history = page.locator('ol.history > li.revision');
    assert.equal(await history.count(), 4);
    assert.deepEqual(await history.locator('h3').allInnerTexts(), ['Revision 1: open', 'Revision 2: claimed', 'Revision 3: submitted', 'Revision 4: completed']);
    const text = await page.locator('#view').innerText();
    assert.match(text, /Thirty rows attached\./);
    assert.match(text, /Review: accept by bob \(test-lab\)/);
    assert.deepEqual(await seriousViolations(page), []);
    await shot('work-item');
  });

  await t.test('search shows the messages and knowledge the API\'s q matches', async () => {
    await page.locator('#search-q').fill('harbour');
    await page.locator('#search-q').press('Enter');
    await page.locator('h1', { hasText: 'Search' }).waitFor();
    const view = page.locator('#view');
    await view.locator('text=From the harbour office.').waitFor();
    assert.match(await view.innerText(), /Messages \(1\)/);
    await shot('search');
  });

  await t.test('on a phone-width screen the topic fits without horizontal scrolling and has no serious accessibility violation', async () => {
    await page.setViewportSize({ width: 360, height: 740 });
    await page.goto(`${s.url}/#/topic/${data.topic.id}`);
    await page.locator('h1', { hasText: 'Tide tables' }).waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 0, `no horizontal overflow (${overflow}px)`);
    assert.deepEqual(await seriousViolations(page), []);
    await shot('topic-phone');
    await page.setViewportSize({ width: 1100, height: 900 });
  });

  await t.test('signing out forgets the token', async () => {
    await page.locator('#sign-out').click();
    await page.locator('#token').waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('agent-forum.token')), null);
  });

  await t.test('an operator token (agent-forum operator create) signs in too', async () => {
    const created = await s.cli('operator', 'create', '--name', 'night-operator');
    assert.equal(created.code, 0, created.stderr);
    await signIn(created.json.token);
    await page.locator('h1', { hasText: 'Rooms' }).waitFor({ timeout: 10_000 });
    await page.locator('#sign-out').click();
    await page.locator('#token').waitFor();
  });

  await t.test('the guides render as HTML for a browser, pass axe-core, and stay markdown for everyone else', async () => {
    for (const name of ['start.md', 'exchange.md', 'retry-budget.md']) {
      const res = await page.goto(`${s.url}/api/${name}`);
      assert.equal(res.status(), 200);
      assert.match(res.headers()['content-type'], /^text\/html/);
      assert.equal(res.headers().vary, 'Accept');
      assert.match(res.headers()['content-security-policy'], /default-src 'none'/);
      assert.ok(await page.locator('main.guide h1').isVisible());
      assert.deepEqual(await seriousViolations(page), [], `axe-core on ${name}`);
      await shot(`guide-${name.replace('.md', '')}`);
      const plain = await s.get(`/api/${name}`);
      assert.match(plain.headers['content-type'], /^text\/markdown/);
      assert.equal(plain.headers.vary, 'Accept');
      assert.match(plain.body, /^# Agent Forum/);
    }
  });

  await t.test('no request left the server, none failed besides the bad sign-in, and no script error or CSP violation occurred', () => {
    assert.deepEqual(foreign, []);
    assert.deepEqual(problems, []);
    assert.deepEqual(dialogs, []);
  });

  await t.test('a screenshot of every view was written', () => {
    for (const name of ['home', 'sign-in-error', 'rooms', 'room', 'topic', 'knowledge', 'knowledge-item', 'work-board', 'work-item', 'search', 'topic-phone', 'guide-start', 'guide-exchange', 'guide-retry-budget']) {
      const file = join(SHOTS, `${name}.png`);
      assert.ok(existsSync(file), `${file} exists`);
      assert.ok(statSync(file).size > 1000, `${file} is not empty`);
    }
  });
});

test('GET / and the guides\' HTML pass html-validate; markdown stays the default without an HTML Accept', async (t) => {
  const s = await startServer(t);
  const validator = new HtmlValidate({ extends: ['html-validate:recommended'] });
  const pages = [['/', undefined], ...['start.md', 'exchange.md', 'retry-budget.md'].map((n) => [`/api/${n}`, 'text/html,application/xhtml+xml,*/*;q=0.8'])];
  for (const [path, accept] of pages) {
    const res = await s.get(path, undefined, accept ? { accept } : {});
    assert.equal(res.status, 200);
    assert.match(res.headers['content-type'], /^text\/html/);
    const report = await validator.validateString(res.body);
    const messages = report.results.flatMap((r) => r.messages.map((m) => `${path}:${m.line}:${m.column} ${m.ruleId} ${m.message}`));
    assert.deepEqual(messages, [], `${path} is valid HTML`);
  }
  for (const accept of [undefined, '*/*', 'text/markdown', 'text/markdown,text/html;q=0.5', 'application/json']) {
    const res = await s.get('/api/start.md', undefined, accept ? { accept } : {});
    assert.match(res.headers['content-type'], /^text\/markdown/, `Accept ${accept} gets markdown`);
  }
});

test('behind a path-prefixed FORUM_PUBLIC_URL the reader signs in and every request stays under the prefix', async (t) => {
  if (skipWithoutChromium(t)) return;
  const proxy = await prefixProxy(t);
  const publicUrl = proxy.url;
  const s = await startServer(t, { env: { FORUM_PUBLIC_URL: `${publicUrl}/` } });
  proxy.setTarget(s.url);
  const reader = await s.register('prefixed-reader');
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });
  t.after(() => browser.close());
  const page = await browser.newPage();
  const requested = [];
  const failed = [];
  page.on('request', (req) => requested.push(req.url()));
  page.on('response', (res) => res.status() >= 400 && failed.push(`${res.status()} ${res.url()}`));
  await page.goto(`${publicUrl}/`);
  await page.locator('#status-text', { hasText: '0.4.9' }).waitFor({ timeout: 10_000 });
  await page.locator('#token').fill(reader.token);
  await page.locator('#token').press('Enter');
  await page.locator('h1', { hasText: 'Rooms' }).waitFor({ timeout: 10_000 });
  await page.locator('a', { hasText: 'Commons' }).waitFor();
  for (const url of requested) assert.ok(url.startsWith(`${publicUrl}/`), `${url} stays under the prefix`);
  assert.ok(requested.includes(`${publicUrl}/api/client/forum-client.mjs`));
  assert.deepEqual(failed, []);
});
