/**
 * The web reader (issues 18 and 27) in a real headless Chromium (playwright-core, the system's
 * /usr/bin/chromium): sign-up and sign-in, remember-me across tabs and sign-out, deep links,
 * latest activity → rooms → topics → paged threads with permalinks and capped nesting, the
 * markdown subset with untrusted text staying inert under the page's CSP, live updates from the
 * change feed's head, the request count of a cold visit, knowledge, work summary and history,
 * search opening messages in place, the catalog, not-found states, dark mode, offline operation,
 * HTML validity (html-validate on every rendered view) and accessibility (axe-core in the page).
 * One server and one browser for the whole file; screenshots of every view at 1366×900 and
 * 390×844 are written to test-results/web-reader/ (git-ignored).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { BROWSER_ARGS, CHROMIUM, chromiumOrSkip } from '../helpers/chromium.mjs';
import { HtmlValidate } from 'html-validate';
import { prefixProxy } from '../helpers/prefix-proxy.mjs';
import { ROOT, startServer } from '../helpers/server.mjs';

const SHOTS = join(ROOT, 'test-results', 'web-reader');
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
/** Longest wait of the reader between two polls of a caught-up feed: 60 s + 20 % jitter (live.mjs). */
const CAUGHT_UP_POLL_MAX_MS = 72_000;
const XSS_IMG = '<img src=x onerror="window.__pwned = 1; alert(1)">';
const XSS_SCRIPT = '<script>window.__pwned = 2; alert(2)</script>';
/** Messages in the long thread (3 API pages of 100). */
const LONG_THREAD = 300;
/** Replies in the deep chain (beyond views.mjs NESTING_CAP = 4). */
const CHAIN = 7;
const WIDTHS = [{ width: 1366, height: 900 }, { width: 390, height: 844 }];
const MARKDOWN = [
  'A **bold** claim, an _aside_ and `inline code`.',
  '',
  '```',
  'const tide = height(moon, sun);',
  '```',
  '',
  '- first point',
  '- second point',
  '',
  '> a quoted line',
  '',
  'Links: https://example.org/tides, [the office](https://example.org/office), [trap](javascript:window.__pwned=3) and <b onclick="window.__pwned=4">raw html</b>.',
].join('\n');

/**
 * Creates the archive the pages show: a topic with a message, a reply, a hostile and a markdown
 * message; knowledge with two revisions attached to it; a completed work item (with its own
 * discussion topic); a 300-message thread with a chain of replies deeper than the nesting cap.
 */
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
  const markdown = ok(await s.post('/api/messages', { topicId: topic.id, content: MARKDOWN, clientId: 'md1' }, alice.token));
  const k1 = ok(await s.post('/api/knowledge', { title: 'Tides are lunar', content: 'Mostly the moon.', category: 'evidence', sources: ['https://example.org/tides'], topicId: topic.id }, alice.token));
  const k2 = ok(await s.post('/api/knowledge', { title: 'Tides are lunar and solar', content: 'The moon and the sun.', category: 'evidence', sources: ['https://example.org/tides', 'https://example.org/sun'], previousId: k1.id, expectedRevision: 1 }, alice.token));
  const w1 = ok(await s.post('/api/work', { clientId: 'w1', title: 'Tabulate June tides', description: 'One row per day.', acceptanceCriteria: 'Thirty rows.', tags: ['tides'] }, bob.token));
  const w2 = ok(await s.post('/api/work/action', { action: 'claim', workItemId: w1.id, expectedRevision: 1, clientId: 'a1' }, alice.token), 200);
  const w3 = ok(await s.post('/api/work/action', { action: 'submit', workItemId: w1.id, expectedRevision: w2.revision, clientId: 'a2', content: 'Thirty rows attached.', sources: ['https://example.org/june'] }, alice.token), 200);
  ok(await s.post('/api/work/action', { action: 'review', workItemId: w1.id, expectedRevision: w3.revision, clientId: 'a3', decision: 'accept', feedback: 'Complete.' }, bob.token), 200);
  const claimed = ok(await s.post('/api/work', { clientId: 'w2', title: 'Chart July tides', description: 'A chart.', acceptanceCriteria: 'One chart.' }, bob.token));
  ok(await s.post('/api/work/action', { action: 'claim', workItemId: claimed.id, expectedRevision: 1, clientId: 'a4', leaseMinutes: 45 }, alice.token), 200);

  const long = ok(await s.post('/api/topics', { title: 'The long thread' }, alice.token));
  const longMessages = [];
  let parent = null;
  for (let i = 1; i <= LONG_THREAD; i++) {
    const inChain = i > LONG_THREAD - CHAIN;
    const m = ok(await s.post('/api/messages', { topicId: long.id, content: `Post number ${i}.`, clientId: `long${i}`, ...(inChain && parent ? { replyTo: parent.id } : {}) }, i % 2 ? alice.token : bob.token));
    longMessages.push(m);
    if (i === LONG_THREAD - CHAIN) parent = m;
    else if (inChain) parent = m;
  }
  return { alice, bob, topic, first, reply, hostile, markdown, knowledge: k2, work: w1, claimed, workTopicId: w1.topicId, long, longMessages };
}

/** Runs axe-core in the page (evaluated through the DevTools protocol, so the page's CSP still forbids inline script) and returns serious/critical violations. */
async function seriousViolations(page) {
  if (!(await page.evaluate(() => typeof window.axe !== 'undefined'))) await page.evaluate(AXE_SOURCE);
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}

const validator = new HtmlValidate({ extends: ['html-validate:recommended'] });
/**
 * For the live DOM, serialized by the browser: the same rules, less the ones about how the
 * serializer writes attributes and whitespace (`hidden=""`, `required=""`), which the page does not choose.
 */
const domValidator = new HtmlValidate({
  extends: ['html-validate:recommended'],
  // aria-label on an element that may be named (a section, a textarea) is the reader's choice; one that
  // cannot be named is still an error. html-validate 10 reports the first by default, 11 does not.
  rules: { 'attribute-empty-style': 'off', 'attribute-boolean-style': 'off', 'no-trailing-whitespace': 'off', 'aria-label-misuse': ['error', { allowAnyNamable: true }] },
});
/** html-validate messages of the page as rendered now (its live DOM, serialized; run before axe, which adds its own nodes). */
async function htmlProblems(page, name) {
  // Playwright's screenshots leave an empty style="" on inputs (hiding the caret); that is not the page's.
  const report = await domValidator.validateString((await page.content()).replaceAll(' style=""', ''));
  return report.results.flatMap((r) => r.messages.map((m) => `${name}:${m.line}:${m.column} ${m.ruleId} ${m.message}`));
}

/** The API requests among recorded ones (the page, its modules and /api/client/ are static files). */
const apiRequests = (requests) => requests.filter((r) => {
  const path = new URL(r.url()).pathname;
  return path.startsWith('/api/') && !path.startsWith('/api/client/');
});

test('the web reader in Chromium', async (t) => {
  if (chromiumOrSkip(t, 'the web reader browser check')) return;
  rmSync(SHOTS, { recursive: true, force: true });
  mkdirSync(SHOTS, { recursive: true });
  const s = await startServer(t);
  const origin = new URL(s.url).origin;
  const data = await seed(s);

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
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  // Offline: a request to any other origin is recorded and aborted.
  const foreign = [];
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(`${origin}/`)) return route.continue();
    foreign.push(url);
    return route.abort();
  });
  const problems = [];
  const dialogs = [];
  const requested = [];
  /** Watches a page of this context for script errors, dialogs and requests. */
  const watch = (p) => {
    p.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    p.on('console', (msg) => {
      if (msg.type() === 'error' && !/\b(401|404|422)\b/.test(msg.text())) problems.push(`console error: ${msg.text()}`);
    });
    p.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    p.on('request', (req) => requested.push(req));
    return p;
  };
  const page = watch(await context.newPage());
  // Timers of the page run on a controllable clock, so "within the poll interval" is checked without waiting 60 s.
  await page.clock.install();
  const shot = (name, p = page) => p.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  const signIn = async (token, { remember = false } = {}) => {
    await page.locator('#token').fill(token);
    if (remember) await page.locator('#remember').check();
    await page.locator('#token').press('Enter');
  };
  const go = async (hash, h1) => {
    await page.goto(`${s.url}/${hash}`);
    await page.locator('h1', { hasText: h1 }).first().waitFor({ timeout: 10_000 });
  };
  /** Every view: screenshots at both widths, no horizontal overflow on the phone, axe at both widths, html-validate once. */
  const checked = [];
  const checkView = async (name, hash, h1) => {
    for (const size of WIDTHS) {
      await page.setViewportSize(size);
      await go(hash, h1);
      await page.evaluate(() => document.fonts.ready);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.ok(overflow <= 0, `${name} at ${size.width}px: no horizontal overflow (${overflow}px)`);
      await shot(`${name}-${size.width}`);
      if (size === WIDTHS[0]) assert.deepEqual(await htmlProblems(page, name), [], `${name} is valid HTML`);
      assert.deepEqual(await seriousViolations(page), [], `${name} at ${size.width}px: axe-core finds no serious or critical violation`);
    }
    await page.setViewportSize(WIDTHS[0]);
    checked.push(name);
  };

  await t.test('GET / (signed out) says what the service is, shows its status and links to sign-up, the guides, docs and catalog', async () => {
    const res = await page.goto(`${s.url}/`, { waitUntil: 'load' });
    assert.equal(res.status(), 200);
    const csp = res.headers()['content-security-policy'];
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:\/\/(?!127\.0\.0\.1)/);
    await page.locator('#status-text', { hasText: '0.4.9' }).waitFor({ timeout: 10_000 });
    assert.match(await page.locator('#status-text').innerText(), /2 registered/);
    for (const href of ['api/start.md', 'api/exchange.md', 'api/retry-budget.md', 'api/docs', 'api/opportunities', '#/catalog', '#/join']) {
      assert.equal(await page.locator(`a[href="${href}"]`).count(), 1, `links to ${href}`);
    }
    assert.ok(await page.locator('#token').isVisible(), 'the sign-in box is shown');
    assert.equal(await page.locator('#remember').isChecked(), false, '"remember me" is off by default');
    assert.deepEqual(await seriousViolations(page), [], 'axe-core finds no serious or critical violation on GET /');
  });

  await t.test('views anyone can open, signed out: home, sign-up, catalog, a deep link asking to sign in, a broken link', async () => {
    await checkView('out-home', '#/', 'Agent Forum');
    await checkView('out-join', '#/join', 'Join Agent Forum');
    await checkView('out-catalog', '#/catalog', 'Starter catalog');
    await checkView('out-deep-link', `#/topic/${data.topic.id}`, 'Agent Forum');
    assert.match(await page.locator('#sign-in-note').innerText(), /Sign in to open this link/);
    await checkView('out-broken-link', '#/topic/%E0%A4%A', 'Broken link');
  });

  await t.test('the catalog is rendered as cards, not JSON', async () => {
    await go('#/catalog', 'Starter catalog');
    const view = await page.locator('#view').innerText();
    assert.doesNotMatch(view, /forum-opportunities-v1|[{}]"/, 'no raw JSON');
    assert.match(view, /Registration is open/);
  });

  await t.test('a bad token shows a clear sign-in error and stores nothing', async () => {
    await page.goto(`${s.url}/#/`);
    await signIn('not-a-real-token');
    await page.locator('#sign-in-error', { hasText: 'HTTP 401' }).waitFor({ timeout: 10_000 });
    assert.match(await page.locator('#sign-in-error').innerText(), /not accepted/);
    // Nothing but the thread order this test file chose (the init script above).
    assert.deepEqual(await page.evaluate(() => [...Object.keys(sessionStorage), ...Object.keys(localStorage)]), ['agent-forum.thread-order']);
    assert.ok(await page.locator('#nav').isHidden());
    await shot('out-sign-in-error');
  });

  await t.test('sign up → the token is shown once with a copy button → signed in', async () => {
    await go('#/join', 'Join Agent Forum');
    await page.locator('#join-name').fill('Carol');
    await page.locator('#join-provider').fill('independent');
    await page.locator('#join-description').fill('A person reading along.');
    await page.locator('button', { hasText: 'Create my account' }).click();
    await page.locator('#join-error', { hasText: 'Both boxes' }).waitFor();
    await page.locator('#join-archive').check();
    await page.locator('#join-authorized').check();
    await page.locator('button', { hasText: 'Create my account' }).click();
    await page.locator('#new-token').waitFor({ timeout: 10_000 });
    const token = await page.locator('#new-token').inputValue();
    assert.ok(token.length > 20, 'a token is shown');
    assert.match(await page.locator('#join-result').innerText(), /shown only this once/);
    const res = await s.get('/api/agents', token);
    assert.equal(res.status, 200, 'the shown token works');
    assert.ok(res.body.some((a) => a.name === 'Carol' && a.provider === 'independent'));
    await page.locator('#copy-token').click();
    await page.locator('#join-result [role="status"]', { hasText: /Copied|Selected/ }).waitFor();
    assert.ok(await page.locator('#nav').isVisible(), 'signed in: the navigation is shown');
    assert.equal(await page.evaluate(() => sessionStorage.getItem('agent-forum.token')), token);
    assert.equal(await page.evaluate(() => localStorage.getItem('agent-forum.token')), null, 'not remembered unless asked');
    assert.deepEqual(await htmlProblems(page, 'join-done'), []);
    assert.deepEqual(await seriousViolations(page), []);
    await shot('in-join-done');
    // The "save your token" step (issue 55): Continue once the person says the token is saved.
    await page.locator('#token-saved').check();
    await page.locator('#token-continue').click();
    await page.locator('h1', { hasText: 'Latest activity' }).waitFor();
    await page.locator('#account-button').click(); // "Sign out" is in the account menu (issue 55)
    await page.locator('#sign-out').click();
    await page.locator('#token').waitFor();
  });

  await t.test('without "remember", a deep link in a new tab asks to sign in and then opens; the token stays in the tab', async () => {
    const tab = watch(await context.newPage());
    await tab.goto(`${s.url}/#/topic/${data.topic.id}`);
    await tab.locator('#sign-in-note', { hasText: 'Sign in to open this link' }).waitFor({ timeout: 10_000 });
    await tab.locator('#token').fill(data.bob.token);
    await tab.locator('#token').press('Enter');
    await tab.locator('h1', { hasText: 'Tide tables' }).waitFor({ timeout: 10_000 });
    assert.equal(await tab.evaluate(() => localStorage.getItem('agent-forum.token')), null);
    await tab.close();
  });

  await t.test('signing in with "remember" keeps the token on this device: a new tab opens a deep link signed in; sign-out forgets it and signs out the other tab', async () => {
    await page.goto(`${s.url}/#/`);
    await signIn(data.alice.token, { remember: true });
    await page.locator('h1', { hasText: 'Latest activity' }).waitFor({ timeout: 10_000 });
    assert.equal(await page.evaluate(() => document.activeElement?.tagName), 'H1', 'focus moves to the new view\'s heading');
    assert.equal(await page.evaluate(() => localStorage.getItem('agent-forum.token')), data.alice.token);
    assert.deepEqual(JSON.parse(await page.evaluate(() => localStorage.getItem('agent-forum.me'))), { id: data.alice.id, operator: false }, 'whose token it is (GET /api/me) is remembered beside it');
    assert.deepEqual((await context.cookies()).length, 0, 'no cookie');
    const withToken = requested.filter((r) => r.headers().authorization === `Bearer ${data.alice.token}`);
    assert.ok(withToken.length > 0, 'API calls carry the Bearer header');
    for (const r of requested) assert.ok(!r.url().includes(data.alice.token), `the token is never in a URL (${r.url()})`);
    const tab = watch(await context.newPage());
    await tab.goto(`${s.url}/#/knowledge/${data.knowledge.id}`);
    await tab.locator('h1', { hasText: 'Tides are lunar and solar' }).waitFor({ timeout: 10_000 });
    await tab.locator('#account-button').click(); // "Sign out" is in the account menu (issue 55)
    await tab.locator('#sign-out').click();
    await tab.locator('#token').waitFor();
    assert.equal(await tab.evaluate(() => localStorage.getItem('agent-forum.token')), null, 'sign-out forgets the remembered token');
    assert.equal(await tab.evaluate(() => localStorage.getItem('agent-forum.me')), null, 'and whose it was');
    const again = watch(await context.newPage());
    await again.goto(`${s.url}/#/knowledge/${data.knowledge.id}`);
    await again.locator('#sign-in-note', { hasText: 'Sign in to open this link' }).waitFor({ timeout: 10_000 });
    await again.close();
    await tab.close();
    // Signing out in one tab signed out this one too (issue 34); sign in again here, for this tab only.
    await page.locator('#sign-in-error', { hasText: 'You were signed out in another tab.' }).waitFor({ timeout: 10_000 });
    assert.equal(await page.evaluate(() => sessionStorage.getItem('agent-forum.token')), null, 'this tab forgot its token too');
    await signIn(data.alice.token);
    await page.locator('h1', { hasText: 'Latest activity' }).waitFor({ timeout: 10_000 });
  });

  await t.test('the home shows latest activity across rooms; topic lists show message counts and last activity; work discussions are set apart', async () => {
    const home = await page.locator('#view').innerText();
    assert.match(home, /The long thread/);
    assert.match(home, /Post number 300\./);
    await page.locator('#nav a', { hasText: 'Rooms' }).click();
    await page.locator('h1', { hasText: 'Rooms' }).waitFor();
    await page.locator('#view a', { hasText: 'Commons' }).click();
    await page.locator('h1', { hasText: 'Commons' }).waitFor();
    // The latest 100 messages are all in the long thread, yet the counts are exact: they come from
    // GET /api/topics?counts=true (issue 38), not from that window.
    const tide = page.locator('ul.topics > li', { hasText: 'Tide tables' }).first();
    assert.match(await tide.innerText(), /\b4 messages · last activity /);
    assert.match(await page.locator('ul.topics > li', { hasText: 'The long thread' }).first().innerText(), new RegExp(`\\b${LONG_THREAD} messages · last activity`));
    const listed = await page.locator('#view > section > ul.topics > li a.title').allInnerTexts();
    assert.ok(!listed.includes('Tabulate June tides'), 'a work item\'s discussion topic is not among the room\'s topics');
    assert.match(await page.locator('details.work-topics summary').innerText(), /Work item discussions \(2\)/);
  });

  await t.test('a topic shows its knowledge and work item, nested replies, markdown, and keeps hostile text inert', async () => {
    await go(`#/topic/${data.topic.id}`, 'Tide tables');
    const nested = page.locator(`li.message[data-id="${data.first.id}"] > ol.replies > li.message[data-id="${data.reply.id}"]`);
    assert.equal(await nested.count(), 1, 'the reply is nested under its parent');
    assert.match(await nested.locator('.author').innerText(), /^bob \(test-lab\)$/);
    assert.equal(await page.locator('aside.linked a', { hasText: 'Tides are lunar and solar' }).count(), 1, 'the topic shows its knowledge');
    const md = page.locator(`li.message[data-id="${data.markdown.id}"] .content`);
    assert.equal(await md.locator('strong').innerText(), 'bold');
    assert.equal(await md.locator('em').innerText(), 'aside');
    assert.equal(await md.locator('p code').innerText(), 'inline code');
    assert.equal(await md.locator('pre > code').innerText(), 'const tide = height(moon, sun);');
    assert.match(await md.locator('pre').evaluate((e) => getComputedStyle(e).fontFamily), /mono|Menlo|Consolas/i, 'code blocks are monospace');
    assert.deepEqual(await md.locator('ul > li').allInnerTexts(), ['first point', 'second point']);
    assert.equal(await md.locator('blockquote').innerText(), 'a quoted line');
    const links = await md.locator('a').evaluateAll((as) => as.map((a) => [a.getAttribute('href'), a.getAttribute('rel'), a.textContent]));
    assert.deepEqual(links, [
      ['https://example.org/tides', 'nofollow ugc noopener noreferrer', 'https://example.org/tides'],
      ['https://example.org/office', 'nofollow ugc noopener noreferrer', 'the office'],
    ], 'only the http(s) links are links');
    const mdText = await md.innerText();
    assert.match(mdText, /the office, trap and <b onclick="window.__pwned=4">raw html<\/b>\./, 'the javascript: link and raw HTML stay text');
    const item = page.locator(`li.message[data-id="${data.hostile.id}"] .content`);
    assert.equal(await item.innerText(), `${XSS_IMG} and ${XSS_SCRIPT}`);
    assert.equal(await page.locator('#view img, #view script, #view [onclick], #view [onerror], #view a[href^="javascript"]').count(), 0, 'no element was made from the text');
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    assert.deepEqual(dialogs, []);
    assert.ok(!requested.some((r) => new URL(r.url()).pathname.endsWith('/x')), 'the image was never requested');
    const t1 = page.locator(`li.message[data-id="${data.first.id}"] time`).first();
    assert.match(await t1.getAttribute('datetime'), /^\d{4}-\d\d-\d\dT/);
    assert.match(await t1.getAttribute('title'), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/, 'the absolute UTC time is the tooltip');
    assert.match(await t1.innerText(), /just now|ago/);
    await go(`#/topic/${data.workTopicId}`, 'Tabulate June tides');
    await page.locator('aside.linked a', { hasText: 'Tabulate June tides' }).click();
    await page.locator('dl.summary').waitFor();
    assert.equal(await page.locator('dl.summary a', { hasText: 'the topic of this work item' }).getAttribute('href'), `#/topic/${data.workTopicId}`, 'the work item links its topic');
  });

  await t.test('a message posted through the API appears, marked new, within a held read or two, reading the feed from its head (never after=0)', async () => {
    await go(`#/topic/${data.topic.id}`, 'Tide tables');
    await page.locator('#live[data-state="live"]').waitFor({ timeout: 15_000 });
    const feedReads = () => requested.filter((r) => new URL(r.url()).pathname === '/api/changes');
    const before = feedReads().length;
    const navigations = [];
    page.on('framenavigated', (f) => f === page.mainFrame() && navigations.push(f.url()));
    const post = async (body) => {
      const res = await s.post('/api/messages', body, data.bob.token);
      assert.equal(res.status, 201);
      return res.body;
    };
    const fresh = await post({ topicId: data.topic.id, content: 'Live: the **June** tables are in.', clientId: 'live1' });
    const reply = await post({ topicId: data.topic.id, content: 'Live reply to the first question.', clientId: 'live2', replyTo: data.first.id });
    await page.clock.fastForward(CAUGHT_UP_POLL_MAX_MS);
    const shown = page.locator(`#view li.message.new[data-id="${fresh.id}"]`, { hasText: 'Live: the June tables are in.' });
    await shown.waitFor({ timeout: 10_000 });
    assert.equal(await shown.locator('.badge').innerText(), 'New', 'marked new');
    await page.locator(`li.message[data-id="${data.first.id}"] > ol.replies > li.message.new[data-id="${reply.id}"]`).waitFor({ timeout: 10_000 });
    assert.deepEqual(navigations, [], 'the page was not reloaded');
    assert.equal(await page.locator(`li.message[data-id="${fresh.id}"]`).count(), 1, 'shown once');
    const reads = feedReads();
    // The read held when the posts came, the one each post's event answered, and the next held one.
    assert.ok(reads.length - before <= 3, `a held read per new event: ${reads.length - before} feed reads`);
    for (const r of reads) assert.notEqual(new URL(r.url()).searchParams.get('after'), '0', `never from 0: ${r.url()}`);
  });

  await t.test('a cold visit to a long topic costs at most 6 API requests, and does not read the feed', async (st) => {
    const cold = await browser.newContext({ serviceWorkers: 'block', viewport: WIDTHS[0] });
    t.after(() => cold.close());
    // Signed in once with "remember" in one tab; the cold visit is a new tab of the same browser.
    const first = await cold.newPage();
    await first.goto(`${s.url}/`);
    await first.locator('#token').fill(data.bob.token);
    await first.locator('#remember').check();
    await first.locator('#token').press('Enter');
    await first.locator('h1', { hasText: 'Latest activity' }).waitFor({ timeout: 10_000 });
    await first.close();
    const tab = await cold.newPage();
    await tab.clock.install();
    const reqs = [];
    tab.on('request', (r) => reqs.push(r));
    await tab.goto(`${s.url}/#/topic/${data.long.id}`);
    await tab.locator('h1', { hasText: 'The long thread' }).waitFor({ timeout: 10_000 });
    await tab.waitForLoadState('networkidle');
    const api = apiRequests(reqs).map((r) => `${r.method()} ${new URL(r.url()).pathname}${new URL(r.url()).search}`);
    st.diagnostic(`cold visit: ${api.length} API requests: ${api.join(', ')}`);
    assert.ok(api.length <= 6, `at most 6 API requests: ${api.join(', ')}`);
    assert.ok(!api.some((u) => u.startsWith('GET /api/changes')), 'the feed is not read on arrival (its head was just learnt)');
    assert.equal(await tab.locator('li.message').count(), 100, 'one page of 100 messages');

    // The work board follows /api/work/changes from the position it shows, not from 0.
    await tab.goto(`${s.url}/#/work`);
    await tab.locator('h1', { hasText: 'Work board' }).waitFor({ timeout: 10_000 });
    await tab.locator('#live[data-state="live"]').waitFor({ timeout: 10_000 });
    const created = await s.post('/api/work', { clientId: 'w-live', title: 'Count the gulls', description: 'All of them.', acceptanceCriteria: 'A number.' }, data.alice.token);
    assert.equal(created.status, 201);
    await tab.clock.fastForward(CAUGHT_UP_POLL_MAX_MS);
    await tab.locator('section.state-open a', { hasText: 'Count the gulls' }).waitFor({ timeout: 10_000 });
    const workReads = reqs.filter((r) => new URL(r.url()).pathname === '/api/work/changes').map((r) => new URL(r.url()).searchParams);
    const positions = workReads.map((q) => `${q.get('after')}/${q.get('limit')}`);
    assert.deepEqual(positions.slice(0, 2), ['0/1', '6/100'], 'the originId from one event, then reads from the board\'s position (6 revisions)');
    assert.ok(positions.slice(2).every((p) => Number(p.split('/')[0]) > 6), `later (held) reads go on from there: ${positions}`);
  });

  await t.test('a 300-message thread: pages, jump to first and latest, post numbers, permalinks that land on the message, nesting capped', async () => {
    const msgs = data.longMessages;
    await go(`#/topic/${data.long.id}`, 'The long thread');
    assert.equal(await page.locator('li.message').count(), 100);
    await page.locator('nav.pager').first().locator('a', { hasText: 'Older' }).click();
    await page.locator(`li.message[data-id="${msgs[150].id}"]`).waitFor({ timeout: 10_000 });
    assert.match(page.url(), /\/page\/2$/);
    await page.locator('nav.pager').first().locator('a', { hasText: 'First post' }).click();
    await page.locator(`li.message[data-id="${msgs[0].id}"]`).waitFor({ timeout: 10_000 });
    assert.equal(await page.locator(`li.message[data-id="${msgs[0].id}"] .number`).innerText(), '#1', 'post numbers once the whole thread is loaded');
    assert.match(await page.locator('nav.pager .where').first().innerText(), /Page 1 of 3 · 30\d messages/);
    await shot('in-long-thread-first');
    await page.locator('nav.pager').first().locator('a', { hasText: 'Latest' }).click();
    await page.locator(`li.message[data-id="${msgs[LONG_THREAD - 1].id}"]`).waitFor({ timeout: 10_000 });
    // The deep chain: replies nest up to the cap, deeper ones sit beside their parent with an "in reply to" link.
    const depths = await page.locator('li.message').evaluateAll((els) => els.map((e) => Number(e.dataset.depth)));
    assert.equal(Math.max(...depths), 4, 'nesting is capped at 4');
    const deepest = page.locator(`li.message[data-id="${msgs[LONG_THREAD - 1].id}"]`);
    assert.equal(await deepest.locator('.in-reply-to').getAttribute('href'), `#/topic/${data.long.id}/m-${msgs[LONG_THREAD - 2].id}`);
    // A permalink lands on its message, on its page, highlighted and in view.
    const target = msgs[149];
    await page.goto(`${s.url}/#/topic/${data.long.id}/m-${target.id}`);
    const li = page.locator(`#m-${target.id}`);
    await li.waitFor({ timeout: 10_000 });
    assert.match(await li.getAttribute('class'), /\btarget\b/, 'highlighted');
    assert.equal(await li.locator('.number').innerText(), '#150');
    assert.ok(await li.locator('article').evaluate((a) => {
      const r = a.getBoundingClientRect();
      return r.top > -2 && r.top < window.innerHeight / 2;
    }), 'scrolled into view');
    assert.equal(await page.evaluate(() => document.activeElement?.closest('li.message')?.id), `m-${target.id}`, 'focus is on the message');
    assert.equal(await li.locator('a.permalink').getAttribute('href'), `#/topic/${data.long.id}/m-${target.id}`);
    await shot('in-permalink');
  });

  await t.test('search results open the message in place', async () => {
    await page.locator('#search-q').fill('harbour');
    await page.locator('#search-q').press('Enter');
    await page.locator('h1', { hasText: 'Search' }).waitFor();
    assert.match(await page.locator('#view').innerText(), /Messages \(1\)/);
    await page.locator('#view a.open-message').first().click();
    await page.locator(`#m-${data.reply.id}.target`).waitFor({ timeout: 10_000 });
  });

  await t.test('work: the board fits 1366 px in one row, cards show when a lease ends; a work item has a summary and a history of changes only', async () => {
    await go('#/work', 'Work board');
    const tops = await page.locator('.board > section').evaluateAll((els) => els.map((e) => e.getBoundingClientRect().top));
    assert.equal(new Set(tops).size, 1, `five columns in one row at 1366 px (${tops})`);
    assert.match(await page.locator('section.state-claimed li', { hasText: 'Chart July tides' }).innerText(), /lease ends in \d+ minutes/);
    await page.locator('section.state-completed a', { hasText: 'Tabulate June tides' }).click();
    await page.locator('h1', { hasText: 'Tabulate June tides' }).waitFor();
    const summary = await page.locator('dl.summary').innerText();
    assert.match(summary, /State\s+completed/);
    assert.match(summary, /Review\s+accept by bob/);
    const history = page.locator('ol.history > li.revision');
    assert.deepEqual(await history.locator('h3').allInnerTexts(), ['Revision 1: open', 'Revision 2: claimed', 'Revision 3: submitted', 'Revision 4: completed']);
    assert.equal(await history.nth(2).locator('.result').count(), 1, 'the result shows where it was submitted');
    assert.equal(await history.nth(3).locator('.result').count(), 0, 'and is not repeated under later revisions');
    assert.equal(await history.nth(3).locator('.review').count(), 1);
    assert.match(await history.nth(1).innerText(), /State: open → claimed/);
  });

  await t.test('not-found states: unknown topic, unknown route, malformed escapes in the link', async () => {
    await go('#/topic/tp_does_not_exist', 'Topic not found');
    assert.doesNotMatch(await page.locator('#view').innerText(), /No messages yet/);
    await go('#/no/such/page', 'Page not found');
    await go('#/topic/%E0%A4%A', 'Broken link');
    await go('#/knowledge/kn_nothing', 'Knowledge item not found');
    await go('#/work/wk_nothing', 'Work item not found');
    await go(`#/topic/${data.topic.id}/m-ms_nothing`, 'Tide tables');
    await page.locator('#view [role="alert"]', { hasText: 'not in this topic' }).waitFor();
  });

  await t.test('dark mode follows prefers-color-scheme', async () => {
    await page.emulateMedia({ colorScheme: 'dark' });
    await go(`#/topic/${data.topic.id}`, 'Tide tables');
    const [bg, fg] = await page.evaluate(() => [getComputedStyle(document.documentElement).backgroundColor, getComputedStyle(document.documentElement).color]);
    const luminance = (rgb) => rgb.match(/\d+/g).slice(0, 3).reduce((a, b) => a + Number(b), 0) / 3;
    assert.ok(luminance(bg) < 60, `dark background (${bg})`);
    assert.ok(luminance(fg) > 180, `light text (${fg})`);
    assert.deepEqual(await seriousViolations(page), [], 'contrast holds in dark mode');
    await shot('in-topic-dark');
    await page.emulateMedia({ colorScheme: 'light' });
    const light = await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
    assert.ok(luminance(light) > 200, `light background (${light})`);
  });

  await t.test('every signed-in view: screenshots at 1366 and 390 px, axe and html-validate', async () => {
    await checkView('in-home', '#/', 'Latest activity');
    await checkView('in-rooms', '#/rooms', 'Rooms');
    await checkView('in-room', '#/room/commons', 'Commons');
    await checkView('in-topic', `#/topic/${data.topic.id}`, 'Tide tables');
    await checkView('in-long-thread', `#/topic/${data.long.id}`, 'The long thread');
    await checkView('in-knowledge', '#/knowledge', 'Knowledge');
    await checkView('in-knowledge-item', `#/knowledge/${data.knowledge.id}`, 'Tides are lunar and solar');
    await checkView('in-work-board', '#/work', 'Work board');
    await checkView('in-work-item', `#/work/${data.work.id}`, 'Tabulate June tides');
    await checkView('in-search', '#/search/harbour', 'Search');
    await checkView('in-catalog', '#/catalog', 'Starter catalog');
    await checkView('in-not-found', '#/topic/tp_missing', 'Topic not found');
    await checkView('in-unknown-route', '#/nowhere', 'Page not found');
    await checkView('in-broken-link', '#/topic/%E0%A4%A', 'Broken link');
  });

  await t.test('signing out forgets the token', async () => {
    await page.locator('#account-button').click(); // "Sign out" is in the account menu (issue 55)
    await page.locator('#sign-out').click();
    await page.locator('#token').waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('agent-forum.token') ?? localStorage.getItem('agent-forum.token')), null);
  });

  await t.test('an operator token (agent-forum operator create) signs in too', async () => {
    const created = await s.cli('operator', 'create', '--name', 'night-operator');
    assert.equal(created.code, 0, created.stderr);
    await signIn(created.json.token);
    await page.locator('h1', { hasText: 'Latest activity' }).waitFor({ timeout: 10_000 });
    await page.locator('#account-button').click(); // "Sign out" is in the account menu (issue 55)
    await page.locator('#sign-out').click();
    await page.locator('#token').waitFor();
  });

  // Moderation (issue 27): an operator's buttons, an agent's flag, the flags queue.
  const operator = { token: '' };
  /** A message as an agent reads it through the API. */
  const agentSees = async (messageId) => {
    const res = await s.get(`/api/messages?messageId=${messageId}`, data.alice.token);
    assert.equal(res.status, 200);
    return res.body.messages[0];
  };
  /** Opens a moderation form in a message, fills the reason and sends it. */
  const act = async (li, kind, reason) => {
    await li.locator(`button.mod-${kind}`).click();
    await li.locator('.mod-reason').fill(reason);
    await li.locator('.mod-submit').click();
  };

  await t.test('an operator hides a message with its button: an agent then gets the placeholder; hidden content is marked for the operator; unhide brings it back, live in an open thread of the agent', async () => {
    const created = await s.cli('operator', 'create', '--name', 'day-operator');
    assert.equal(created.code, 0, created.stderr);
    operator.token = created.json.token;
    await page.goto(`${s.url}/#/topic/${data.topic.id}`);
    await signIn(operator.token);
    await page.locator('h1', { hasText: 'Tide tables' }).waitFor({ timeout: 10_000 });
    assert.ok(await page.locator('#nav-flags').isVisible(), 'operators see the Flags queue in the navigation');
    assert.equal(await page.locator('.mod-bar button.mod-flag').count(), 0, 'operators act rather than flag');
    const li = page.locator(`#m-${data.reply.id}`);
    assert.ok(await li.locator('> article button.mod-hide').isVisible(), 'a Hide button on the message');

    await act(li, 'hide', 'test: off-topic');
    // The message is read again and shown in its new state, with the result in its bar.
    await li.locator('> article.hidden .mod-status', { hasText: 'only operators see it now' }).waitFor({ timeout: 10_000 });
    assert.equal(await page.evaluate(() => document.activeElement?.classList.contains('mod-status')), true, 'focus moves to the result');
    assert.match(await li.locator('> article .placeholder').innerText(), /Hidden by the operator: only operators see this message/);
    assert.match(await li.locator('> article .content').innerText(), /From the harbour office/, 'the operator still reads it');
    assert.ok(await li.locator('> article button.mod-unhide').isVisible(), 'Unhide replaces Hide');
    const hidden = await agentSees(data.reply.id);
    assert.equal(hidden.content, '', 'an agent no longer gets the text');
    assert.equal(hidden.hidden, true, 'but a placeholder');
    await checkView('op-topic-hidden', `#/topic/${data.topic.id}`, 'Tide tables');

    // The agent's own reader shows the placeholder in plain words, and offers "Flag" on other people's messages only.
    const agentContext = await browser.newContext({ serviceWorkers: 'block', viewport: WIDTHS[1] });
    t.after(() => agentContext.close());
    const agent = watch(await agentContext.newPage());
    await agent.clock.install();
    await agent.goto(`${s.url}/#/topic/${data.topic.id}`);
    await agent.locator('#token').fill(data.bob.token);
    await agent.locator('#token').press('Enter');
    await agent.locator('h1', { hasText: 'Tide tables' }).waitFor({ timeout: 10_000 });
    assert.equal(await agent.locator(`#m-${data.reply.id} > article .placeholder`).innerText(), 'This message was hidden by the operator.');
    assert.doesNotMatch(await agent.locator('#view').innerText(), /harbour office/);
    assert.equal(await agent.locator('.mod-hide, .mod-erase, .mod-unhide').count(), 0, 'no operator buttons for an agent');
    assert.ok(await agent.locator('#nav-flags').isHidden());
    assert.equal(await agent.locator(`#m-${data.first.id} > article button.mod-flag`).count(), 1, 'Flag on someone else\'s message');
    assert.equal(await agent.locator(`#m-${data.hostile.id} > article button.mod-flag`).count(), 0, 'not on one\'s own');
    await agent.screenshot({ path: join(SHOTS, 'agent-topic-hidden-390.png'), fullPage: true });

    // The agent flags alice's first message through the form.
    const first = agent.locator(`#m-${data.first.id}`);
    await first.locator('button.mod-flag').click();
    assert.equal(await agent.evaluate(() => document.activeElement?.className), 'flag-reason', 'the form takes the focus');
    await first.locator('.mod-form button', { hasText: 'Cancel' }).click();
    assert.equal(await first.locator('.mod-form').count(), 0, 'Cancel closes the form');
    assert.equal(await agent.evaluate(() => document.activeElement?.className), 'mod-flag', 'and gives the focus back to its button');
    await first.locator('button.mod-flag').press('Enter');
    assert.equal(await first.locator('button.mod-flag').getAttribute('aria-expanded'), 'true', 'the keyboard opens it too');
    await first.locator('.mod-submit').click();
    await first.locator('.error', { hasText: 'choose a reason' }).waitFor();
    await first.locator('select.flag-reason').selectOption('spam');
    await first.locator('textarea.flag-note').fill(`Posted everywhere ${XSS_IMG}`);
    assert.deepEqual(await htmlProblems(agent, 'agent-flag-form'), [], 'the flag form is valid HTML');
    assert.deepEqual(await seriousViolations(agent), [], 'axe-core: the flag form');
    await agent.screenshot({ path: join(SHOTS, 'agent-flag-form-390.png'), fullPage: true });
    await first.locator('.mod-submit').click();
    await first.locator('.mod-status', { hasText: 'Flagged for the operator' }).waitFor({ timeout: 10_000 });

    // The operator unhides the message; the agent's open thread shows it again within one poll interval.
    await go(`#/topic/${data.topic.id}`, 'Tide tables');
    await act(page.locator(`#m-${data.reply.id}`), 'unhide', 'test: restored');
    await page.locator(`#m-${data.reply.id} > article:not(.hidden) .mod-status`, { hasText: 'visible to everyone again' }).waitFor({ timeout: 10_000 });
    assert.equal(await page.locator(`#m-${data.reply.id} > article .placeholder`).count(), 0);
    // The operator's own live feed brings the unhide too, before or after the re-read: once the page has
    // read past it, the result is still in the message's bar (a live re-render once dropped it).
    let head = 0;
    let origin = '';
    for (;;) {
      const res = await s.get(`/api/changes?after=${head}&limit=100${origin ? `&originId=${origin}` : ''}`, data.alice.token);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      ({ after: head, originId: origin } = res.body.cursor);
      if (!res.body.hasMore) break;
    }
    const readPast = async () => (JSON.parse(await page.evaluate(() => sessionStorage.getItem('agent-forum.cursor.changes') ?? 'null'))?.after ?? 0) >= head;
    for (let i = 0; i < 200 && !(await readPast()); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.ok(await readPast(), 'the operator\'s page read its live feed past the unhide');
    assert.match(await page.locator(`#m-${data.reply.id} > article .mod-status`).innerText(), /visible to everyone again/);
    const back = await agentSees(data.reply.id);
    assert.equal(back.content, 'From the harbour office.');
    assert.equal(back.hidden, undefined);
    await agent.clock.fastForward(CAUGHT_UP_POLL_MAX_MS);
    await agent.locator(`#m-${data.reply.id} > article .content`, { hasText: 'From the harbour office.' }).waitFor({ timeout: 10_000 });
    assert.equal(await agent.locator(`#m-${data.reply.id} > article .placeholder`).count(), 0, 'the placeholder is gone from the open thread');

    await agent.goto(`${s.url}/#/flags`);
    await agent.locator('#view p', { hasText: 'for operators' }).waitFor({ timeout: 10_000 });
    await agent.close();
  });

  await t.test('the operator sees the agent\'s flag in the queue (its note as text) and resolves it by hiding the message', async () => {
    await page.locator('#nav-flags a').click();
    await page.locator('h1', { hasText: 'Flags' }).waitFor({ timeout: 10_000 });
    const card = page.locator(`li.flag[data-target="${data.first.id}"]`);
    await card.waitFor({ timeout: 10_000 });
    assert.match(await card.innerText(), /Spam or advertising/);
    assert.match(await card.innerText(), /Flagged by bob/);
    assert.match(await card.locator('.flag-note').innerText(), /<img src=x onerror=/, 'the note is shown as the text it is');
    assert.equal(await page.locator('.flag-note img').count(), 0);
    assert.equal(await card.locator('a.flag-target').getAttribute('href'), `#/message/${data.first.id}`);
    // The flagged text is read only when asked for.
    const reads = requested.length;
    await card.locator('details.flag-preview summary').click();
    await card.locator('details.flag-preview .content', { hasText: 'Where do the tide tables come from?' }).waitFor({ timeout: 10_000 });
    assert.equal(requested.slice(reads).filter((r) => new URL(r.url()).pathname === '/api/messages').length, 1, 'one request, on opening');
    await checkView('op-flags', '#/flags', 'Flags');
    // Erasing from the queue asks for the confirmation box first.
    await card.locator('button.resolve-erase').click();
    await card.locator('.error', { hasText: 'cannot be undone' }).waitFor();
    assert.equal((await s.get('/api/flags?state=open', operator.token)).body.flags.length, 1, 'nothing resolved without the confirmation');
    await card.locator('.resolve-note').fill('spam wave');
    await card.locator('button.resolve-hide').click();
    await card.locator('.flag-status', { hasText: 'Resolved: the message was hidden' }).waitFor({ timeout: 10_000 });
    const open = await s.get('/api/flags?state=open', operator.token);
    assert.deepEqual(open.body.flags, [], 'no open flag left');
    const hidden = await agentSees(data.first.id);
    assert.equal(hidden.hidden, true);
    assert.equal(hidden.content, '');
    await checkView('op-flags-resolved', '#/flags/resolved', 'Flags');
    assert.match(await page.locator(`li.flag[data-target="${data.first.id}"] .resolution`).innerText(), /Resolved: hide by day-operator/);
    // The target link opens the message in its thread.
    await page.locator(`li.flag[data-target="${data.first.id}"] a.flag-target`).click();
    await page.locator(`#m-${data.first.id}.target`).waitFor({ timeout: 10_000 });
    assert.match(page.url(), new RegExp(`#/topic/${data.topic.id}/m-${data.first.id}$`));
    await go('#/flags', 'Flags');
    await page.locator('#view .empty', { hasText: 'No open flags' }).waitFor();
  });

  await t.test('erasing a message asks for confirmation; afterwards everyone, the operator included, sees "erased"', async () => {
    await go(`#/topic/${data.topic.id}`, 'Tide tables');
    const li = page.locator(`#m-${data.hostile.id}`);
    await li.locator('button.mod-erase').click();
    assert.match(await li.locator('.warning').innerText(), /permanent/);
    await li.locator('.mod-reason').fill('test: hostile markup');
    await li.locator('.mod-submit').click();
    await li.locator('.error', { hasText: 'cannot be undone' }).waitFor();
    assert.equal((await agentSees(data.hostile.id)).erased, undefined, 'not erased without the confirmation');
    assert.deepEqual(await htmlProblems(page, 'op-erase-form'), [], 'the erase form is valid HTML');
    assert.deepEqual(await seriousViolations(page), [], 'axe-core: the erase form');
    await shot('op-erase-form-1366');
    await li.locator('.mod-confirm').check();
    await li.locator('.mod-submit').click();
    await li.locator('> article .placeholder', { hasText: 'This message was erased by the operator.' }).waitFor({ timeout: 10_000 });
    assert.equal(await li.locator('> article button').count(), 0, 'nothing more to do on an erased message');
    const erased = await agentSees(data.hostile.id);
    assert.equal(erased.erased, true);
    assert.equal(erased.content, '');
  });

  await t.test('operators get Hide and Erase on a topic, a knowledge item and a work item too', async () => {
    await go(`#/knowledge/${data.knowledge.id}`, 'Tides are lunar and solar');
    const bar = page.locator('section > .mod-bar').first();
    await bar.locator('button.mod-hide').click();
    await bar.locator('.mod-reason').fill('test: knowledge');
    await bar.locator('.mod-submit').click();
    await page.locator('h1 .mod-badge', { hasText: 'hidden' }).waitFor({ timeout: 10_000 });
    const k = await s.get(`/api/knowledge?id=${data.knowledge.id}`, data.alice.token);
    assert.equal(k.body.knowledge[0].hidden, true);
    assert.equal(k.body.knowledge[0].title, '');
    await checkView('op-knowledge-hidden', `#/knowledge/${data.knowledge.id}`, 'Tides are lunar and solar');
    await page.locator('section > .mod-bar button.mod-unhide').first().click();
    await page.locator('section > .mod-bar .mod-reason').fill('test: restored');
    await page.locator('section > .mod-bar .mod-submit').click();
    await page.locator('h1', { hasText: 'Tides are lunar and solar' }).waitFor();
    await page.waitForFunction(() => !document.querySelector('h1 .mod-badge'), null, { timeout: 10_000 });
    await go(`#/work/${data.claimed.id}`, 'Chart July tides');
    assert.ok(await page.locator('section > .mod-bar button.mod-hide').isVisible());
    assert.ok(await page.locator('section > .mod-bar button.mod-erase').isVisible());
    await checkView('op-work-item', `#/work/${data.claimed.id}`, 'Chart July tides');
    await go(`#/topic/${data.long.id}`, 'The long thread');
    const topicBar = page.locator('section.topic > .mod-bar');
    await topicBar.locator('button.mod-hide').click();
    await topicBar.locator('.mod-reason').fill('test: topic');
    await topicBar.locator('.mod-submit').click();
    await page.locator('h1 .mod-badge', { hasText: 'hidden' }).waitFor({ timeout: 10_000 });
    assert.match(await page.locator('section.topic > p.placeholder').innerText(), /only operators see this topic\. Its messages are hidden with it\./);
    const last = page.locator(`#m-${data.longMessages[LONG_THREAD - 1].id} > article`);
    assert.deepEqual(await last.locator('.mod-bar button').allInnerTexts(), ['Erase'], 'a message hidden with its topic offers Erase only (the topic is unhidden)');
    const listed = (await s.get('/api/topics', data.alice.token)).body.find((x) => x.id === data.long.id);
    assert.deepEqual([listed.title, listed.hidden], ['', true], 'agents get the placeholder topic');
    await page.locator('section.topic > .mod-bar button.mod-unhide').click();
    await page.locator('section.topic > .mod-bar .mod-reason').fill('test: restored');
    await page.locator('section.topic > .mod-bar .mod-submit').click();
    await page.waitForFunction(() => !document.querySelector('h1 .mod-badge'), null, { timeout: 10_000 });
    assert.deepEqual(await last.locator('.mod-bar button').allInnerTexts(), ['Hide', 'Erase']);
    await page.locator('#account-button').click(); // "Sign out" is in the account menu (issue 55)
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

  await t.test('no request left the server, and no script error, dialog or CSP violation occurred', () => {
    assert.deepEqual(foreign, []);
    assert.deepEqual(problems, []);
    assert.deepEqual(dialogs, []);
  });

  await t.test('a screenshot of every view at both widths was written', () => {
    assert.ok(checked.length >= 19, `views checked: ${checked.join(', ')}`);
    for (const name of checked) {
      for (const { width } of WIDTHS) {
        const file = join(SHOTS, `${name}-${width}.png`);
        assert.ok(existsSync(file), `${file} exists`);
        assert.ok(statSync(file).size > 1000, `${file} is not empty`);
      }
    }
    assert.ok(readdirSync(SHOTS).length >= checked.length * 2);
  });
});

test('GET / and the guides\' HTML pass html-validate; markdown stays the default without an HTML Accept; the markdown module is served from our origin', async (t) => {
  const s = await startServer(t);
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
  const marked = await s.get('/web/marked.esm.js');
  assert.equal(marked.status, 200);
  assert.match(marked.headers['content-type'], /^text\/javascript/);
  assert.match(String(marked.body), /marked v18\.2\.1[\s\S]*MIT License/);
  assert.equal((await s.get('/web/package.json')).status, 404, 'only allow-listed files are served');
});

test('behind a path-prefixed FORUM_PUBLIC_URL the reader signs in and every request stays under the prefix', async (t) => {
  if (chromiumOrSkip(t, 'the web reader browser check')) return;
  const proxy = await prefixProxy(t);
  const publicUrl = proxy.url;
  const s = await startServer(t, { env: { FORUM_PUBLIC_URL: `${publicUrl}/` } });
  proxy.setTarget(s.url);
  const reader = await s.register('prefixed-reader');
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: BROWSER_ARGS });
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
  await page.locator('h1', { hasText: 'Latest activity' }).waitFor({ timeout: 10_000 });
  await page.locator('#nav a', { hasText: 'Rooms' }).click();
  await page.locator('a', { hasText: 'Commons' }).waitFor();
  for (const url of requested) assert.ok(url.startsWith(`${publicUrl}/`), `${url} stays under the prefix`);
  assert.ok(requested.includes(`${publicUrl}/api/client/forum-client.mjs`));
  assert.ok(requested.includes(`${publicUrl}/web/marked.esm.js`));
  assert.deepEqual(failed, []);
});
