/**
 * A person's first visit (issue 55), in a real headless Chromium (playwright-core, the system's
 * /usr/bin/chromium) against the built server, at 1366 and 390 px: the signed-out page shows the
 * rooms with their descriptions and the open work, with Join and Sign in in the header; a person
 * joins with a name and posts within 60 s of opening the page, and their profile says "person"
 * (kind human); the "save your token" step cannot be skipped by accident (Continue waits for a
 * copy, a download or a matching saved copy) and checks the saved file; a second browser is added
 * with a one-time code typed there, the code refused the second time, and no token is ever in a
 * URL. Screenshots go to test-results/web-reader-join/ (git-ignored).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { BROWSER_ARGS, CHROMIUM, chromiumOrSkip, watchPage } from '../helpers/chromium.mjs';
import { ROOT, startServer, tempDir } from '../helpers/server.mjs';

const SHOTS = join(ROOT, 'test-results', 'web-reader-join');
const WIDTHS = [{ width: 1366, height: 900 }, { width: 390, height: 844 }];
/** The bar: from opening the page to a first post. */
const FIRST_POST_MS = 60_000;

const ok = (res, status = 201) => {
  assert.equal(res.status, status, JSON.stringify(res.body));
  return res.body;
};

const noSidewaysScroll = (page) => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);

test('a person\'s first visit: what is inside, join as a person and post within 60 s, save the token, add a second browser by code', async (t) => {
  if (chromiumOrSkip(t, 'the web reader join browser check')) return;
  rmSync(SHOTS, { recursive: true, force: true });
  mkdirSync(SHOTS, { recursive: true });
  const s = await startServer(t);
  assert.equal((await s.cli('rooms', 'create', '--id', 'tides', '--name', 'Tides', '--description', 'Tide tables, <b>moons</b> and harbours')).code, 0);
  const bob = await s.register('bob');
  const work = ok(await s.post('/api/work', { clientId: 'w1', title: 'Map the harbour lights', description: 'd', acceptanceCriteria: 'a' }, bob.token));
  const briefs = join(tempDir(t, 'briefs-'), 'briefs.json');
  writeFileSync(briefs, JSON.stringify([{ workItemId: work.id, title: 'Map the harbour lights', summary: 'List every light with its colour.', requiredCapabilities: ['reading'], acceptanceCriteria: ['one page'], deliverable: 'A table.' }]));
  assert.equal((await s.cli('opportunities', 'set', '--file', briefs)).code, 0);

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: BROWSER_ARGS });
  t.after(() => browser.close());
  const problems = [];
  /** Every URL any page of the test requested (no token may be in one). */
  const urls = [];
  const newPage = async (context) => {
    const page = watchPage(await context.newPage(), problems);
    page.on('request', (r) => urls.push(r.url()));
    return page;
  };

  for (const size of WIDTHS) {
    await t.test(`signed out, the page shows the rooms with descriptions and the open work, with Join and Sign in in the header (${size.width} px)`, async () => {
      const context = await browser.newContext({ serviceWorkers: 'block', viewport: size });
      const page = await newPage(context);
      await page.goto(`${s.url}/`);
      const rooms = page.locator('#landing-rooms > li');
      await rooms.first().waitFor({ timeout: 10_000 });
      assert.deepEqual(await rooms.locator('.title').allInnerTexts(), ['Commons', 'Tides'].map((n) => n), 'every room, oldest first');
      assert.equal(await page.locator('#landing-rooms > li[data-id="tides"] .excerpt').innerText(), 'Tide tables, <b>moons</b> and harbours', 'a description is text, not markup');
      const item = page.locator(`#landing-work > li[data-id="${work.id}"]`);
      assert.match(await item.innerText(), /Map the harbour lights open\s+List every light with its colour\./);
      assert.match(await page.locator('.purpose').innerText(), /Join with just a name/);
      for (const id of ['#header-join', '#header-sign-in']) assert.ok(await page.locator(id).isVisible(), `${id} in the header`);
      assert.equal(await page.locator('#nav').isVisible(), false, 'no member navigation while signed out');
      const header = await page.locator('#bar').boundingBox();
      assert.ok(header.height <= 64, `the header is one row (${header.height} px)`);
      assert.ok(await noSidewaysScroll(page), 'no sideways scrolling');
      await page.screenshot({ path: join(SHOTS, `landing-${size.width}.png`), fullPage: true });
      await page.locator('#header-sign-in').click();
      await page.locator('#token').waitFor();
      assert.equal(await page.locator('#intro').isVisible(), false, 'Sign in shows the sign-in box alone');
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'token', 'focus is in the token box');
      await context.close();
    });
  }

  let nora;
  let noraContext;
  let noraPage;
  await t.test('a person joins from the header with a name, saves the token in a step that cannot be skipped by accident, and posts within 60 s of opening the page; the profile says person', async () => {
    noraContext = await browser.newContext({ serviceWorkers: 'block', viewport: WIDTHS[1], acceptDownloads: true });
    const page = (noraPage = await newPage(noraContext));
    const opened = Date.now();
    await page.goto(`${s.url}/`);
    await page.locator('#header-join').click();
    await page.locator('h1', { hasText: 'Join Agent Forum' }).waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('#join-provider').inputValue(), 'independent', 'the provider starts with the documented default');
    assert.equal(await page.locator('#join-as-human').isChecked(), true, 'joining as a person is the default');
    await page.locator('#join-name').fill('Nora');
    await page.locator('#join-description').fill('I keep the lighthouse log.');
    await page.locator('#join-archive').check();
    await page.locator('#join-authorized').check();
    await page.screenshot({ path: join(SHOTS, 'join-form-390.png'), fullPage: true });
    await page.locator('button', { hasText: 'Create my account' }).click();
    await page.locator('#new-token').waitFor({ timeout: 10_000 });
    const token = await page.locator('#new-token').inputValue();
    assert.equal(await page.locator('#token-saved').isDisabled(), true, '"I have saved my token" waits for a copy, a download or a check');
    assert.equal(await page.locator('#token-continue').isDisabled(), true, 'Continue waits');
    await page.locator('.token-check summary').click();
    await page.locator('#token-check').fill('af_not-my-token');
    await page.locator('#token-check-result', { hasText: 'This is not the token above' }).waitFor();
    assert.equal(await page.locator('#token-continue').isDisabled(), true, 'a wrong copy does not count');
    const [download] = await Promise.all([page.waitForEvent('download'), page.locator('#download-token').click()]);
    const saved = await download.path();
    assert.match(readFileSync(saved, 'utf8'), new RegExp(`^Token: ${token}$`, 'm'));
    await page.locator('#token-file').setInputFiles(saved);
    await page.locator('#token-check-result', { hasText: 'Your saved copy matches this token' }).waitFor();
    assert.equal(await page.locator('#token-saved').isChecked(), true, 'a matching saved copy ticks "I have saved my token"');
    await page.screenshot({ path: join(SHOTS, 'save-token-390.png'), fullPage: true });
    await page.locator('#token-continue').click();
    await page.locator('h1', { hasText: 'Latest activity' }).waitFor({ timeout: 10_000 });
    await page.goto(`${s.url}/#/new-topic`);
    await page.locator('#new-topic-title').fill('Hello from the lighthouse');
    await page.locator('#new-topic-text').fill('First time here: I keep the north light.');
    await page.locator('#new-topic-form button.post').click();
    await page.locator('h1', { hasText: 'Hello from the lighthouse' }).waitFor({ timeout: 10_000 });
    await page.locator('li.message', { hasText: 'I keep the north light.' }).waitFor({ timeout: 10_000 });
    const elapsed = Date.now() - opened;
    assert.ok(elapsed < FIRST_POST_MS, `joined and posted in ${elapsed} ms, within ${FIRST_POST_MS} ms of opening the page`);

    nora = ok(await s.get('/api/me', token), 200);
    assert.deepEqual([nora.name, nora.kind, nora.provider, nora.description], ['Nora', 'human', 'independent', 'I keep the lighthouse log.']);
    nora.token = token;
    await page.goto(`${s.url}/#/agent/${nora.id}`);
    await page.locator('h1', { hasText: 'Nora' }).waitFor({ timeout: 10_000 });
    assert.match(await page.locator('dl.summary').innerText(), /Kind\s+person/, 'the profile says person');
    await page.screenshot({ path: join(SHOTS, 'profile-person-390.png'), fullPage: true });
  });

  await t.test('joining as an AI agent leaves the kind agent', async () => {
    const context = await browser.newContext({ serviceWorkers: 'block', viewport: WIDTHS[0] });
    const page = await newPage(context);
    await page.goto(`${s.url}/#/join`);
    await page.locator('#join-name').fill('scout-9');
    await page.locator('#join-as-agent').check();
    await page.locator('#join-provider').fill('example-lab');
    await page.locator('#join-archive').check();
    await page.locator('#join-authorized').check();
    await page.locator('button', { hasText: 'Create my account' }).click();
    await page.locator('#new-token').waitFor({ timeout: 10_000 });
    const me = ok(await s.get('/api/me', await page.locator('#new-token').inputValue()), 200);
    assert.deepEqual([me.kind, me.provider], ['agent', 'example-lab']);
    await context.close();
  });

  for (const size of WIDTHS) {
    await t.test(`a second browser is added with a one-time code typed there; the code is refused a second time (${size.width} px)`, async () => {
      const page = noraPage;
      await page.setViewportSize(size);
      await page.goto(`${s.url}/#/`);
      await page.locator('h1', { hasText: 'Latest activity' }).waitFor({ timeout: 10_000 });
      await page.locator('#account-button').click();
      await page.locator('#add-device').click();
      await page.locator('h1', { hasText: 'Add a device' }).waitFor({ timeout: 10_000 });
      await page.locator('#device-name').fill(`browser ${size.width}`);
      await page.locator('#device-code-form button[type="submit"]').click();
      const shown = await page.locator('#device-code').innerText({ timeout: 10_000 });
      assert.match(shown, /^[2-9A-HJKMNP-Z]{4}-[2-9A-HJKMNP-Z]{4}$/, 'shown as two groups of four');
      assert.match(await page.locator('#device-code-expiry').innerText(), /works once, until/);
      assert.ok(await noSidewaysScroll(page), 'no sideways scrolling');
      await page.screenshot({ path: join(SHOTS, `add-device-${size.width}.png`), fullPage: true });

      const other = await browser.newContext({ serviceWorkers: 'block', viewport: size });
      const tab = await newPage(other);
      await tab.goto(`${s.url}/`);
      await tab.locator('#header-sign-in').click();
      await tab.locator('#use-code-link').click();
      await tab.locator('h1', { hasText: 'Sign in with a code' }).waitFor({ timeout: 10_000 });
      await tab.locator('#use-code').fill(shown.toLowerCase());
      await tab.screenshot({ path: join(SHOTS, `use-code-${size.width}.png`), fullPage: true });
      await tab.locator('#use-code-form button[type="submit"]').click();
      await tab.locator('h1', { hasText: 'Latest activity' }).waitFor({ timeout: 10_000 });
      assert.equal((await tab.locator('#account-button').textContent()).trim(), 'Signed in as Nora', 'the second browser is Nora');
      const second = await tab.evaluate(() => localStorage.getItem('agent-forum.token'));
      assert.ok(second && second !== nora.token, 'a token of its own, kept on that device (the box is ticked by default)');
      assert.equal(ok(await s.get('/api/me', second), 200).id, nora.id);
      const mine = ok(await s.get('/api/me/tokens', nora.token), 200).tokens.map((x) => x.name);
      assert.ok(mine.includes(`browser ${size.width}`), 'listed under the name given');

      const third = await browser.newContext({ serviceWorkers: 'block', viewport: size });
      const again = await newPage(third);
      await again.goto(`${s.url}/#/use-code`);
      await again.locator('#use-code').fill(shown);
      await again.locator('#use-code-form button[type="submit"]').click();
      await again.locator('#use-code-error', { hasText: 'used already or has expired' }).waitFor({ timeout: 10_000 });
      assert.equal(await again.locator('#nav').isVisible(), false, 'not signed in');
      await again.screenshot({ path: join(SHOTS, `use-code-refused-${size.width}.png`), fullPage: true });
      await third.close();
      await other.close();
    });
  }

  await t.test('no token was in any URL, and no script error or dialog occurred', async () => {
    const tokens = ok(await s.get('/api/me/tokens', nora.token), 200).tokens;
    assert.ok(tokens.length >= 3);
    for (const u of urls) assert.ok(!/af_[A-Za-z0-9_-]{20,}/.test(u), `no token in ${u}`);
    assert.ok(!urls.some((u) => /[?&](token|code)=/i.test(u)), 'no token or code parameter');
    await noraContext.close();
    assert.deepEqual(problems, []);
  });
});
