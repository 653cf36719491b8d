/**
 * The reader's tokens page (issue 53 "the reader gains a tokens page"; issue 55 "the self-service
 * token page"), in a real headless Chromium (playwright-core, the system's /usr/bin/chromium)
 * against the built server: reached from the account menu; the list (name, access, created, last
 * used) never shows a secret; a named token is created read-only or read-and-write and its secret
 * shown once with Copy; revoking asks first and the token is refused at once; rotating the token
 * the tab is signed in with keeps the tab (and another tab using the remembered token) signed in
 * with the new secret while the old one gets 401; revoking the tab's own token signs it out; a
 * read-only tab is told it cannot manage tokens; a hostile token name stays text; the page passes
 * axe-core (WCAG 2.2 A/AA) with its confirm box and its secret open, at 1366 and 390 px.
 * Every claim about the server's side is checked over HTTP with the secrets the page showed.
 * Screenshots go to test-results/web-reader-tokens/ (git-ignored).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { BROWSER_ARGS, CHROMIUM, chromiumOrSkip, watchPage } from '../helpers/chromium.mjs';
import { axeViolations } from '../helpers/axe.mjs';
import { ROOT, startServer } from '../helpers/server.mjs';

const SHOTS = join(ROOT, 'test-results', 'web-reader-tokens');
const WIDTHS = [{ width: 1366, height: 900 }, { width: 390, height: 844 }];
const HOSTILE_NAME = '<img src=x onerror="window.__pwned=1">';
const TOKEN_KEY = 'agent-forum.token';

const ok = (res, status = 201) => {
  assert.equal(res.status, status, JSON.stringify(res.body));
  return res.body;
};

test('the tokens page: list without secrets, create (shown once, copy), revoke after asking, rotate the tab\'s own token', async (t) => {
  if (chromiumOrSkip(t, 'the web reader tokens page browser check')) return;
  rmSync(SHOTS, { recursive: true, force: true });
  mkdirSync(SHOTS, { recursive: true });
  const s = await startServer(t);
  const origin = new URL(s.url).origin;
  const bob = await s.register('bob');
  const nightly = ok(await s.post('/api/me/tokens', { name: 'nightly report', scopes: ['read'] }, bob.token));
  ok(await s.get('/api/me', nightly.token), 200); // so that its "last used" is known

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: BROWSER_ARGS });
  t.after(() => browser.close());
  const context = await browser.newContext({ serviceWorkers: 'block', viewport: WIDTHS[0] });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  const problems = [];
  const page = watchPage(await context.newPage(), problems);
  const shot = (name) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  /** Everything a person could read or copy on the page: its text and the values of its fields. */
  const pageText = () => page.evaluate(() => document.body.innerText + [...document.querySelectorAll('input, textarea')].map((i) => /** @type {HTMLInputElement} */ (i).value).join(' '));
  const row = (name) => page.locator('li.token', { has: page.locator('.title', { hasText: name }) });

  await page.goto(`${s.url}/`);
  await page.waitForFunction(() => document.getElementById('status-text')?.textContent !== 'Loading…');
  await page.locator('#token').fill(bob.token);
  await page.locator('#remember').check();
  await page.locator('#token').press('Enter');
  await page.locator('h1', { hasText: 'Latest activity' }).waitFor({ timeout: 15_000 });

  await t.test('the account menu leads to the tokens page, which lists name, access, created and last used, and never a secret', async () => {
    await page.locator('#account-button').click();
    await page.locator('#account-menu a', { hasText: 'Tokens' }).click();
    await page.locator('h1', { hasText: 'Your tokens' }).waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('li.token').count(), 2);
    const primary = page.locator('li.token[data-id="primary"]');
    assert.match(await primary.innerText(), /registration/);
    assert.match(await primary.locator('.badge').innerText(), /this tab/, 'the token this tab uses is marked');
    assert.equal(await primary.locator('button.token-revoke').count(), 0, 'the registration token cannot be revoked, only rotated');
    const n = row('nightly report');
    assert.match(await n.innerText(), /Access: read only · created .+ · last used (?!not since)\S/);
    assert.equal(await n.locator('.badge').count(), 0);
    const text = await pageText();
    assert.ok(!text.includes(bob.token) && !text.includes(nightly.token), 'no secret on the page');
    await shot('list-1366');
  });

  let laptop;
  /** Bob's registration token as it is now (the rotation below changes it). */
  let bobSecret = bob.token;
  await t.test('a named read-and-write token is created; its secret is shown once, with Copy, and works', async () => {
    await page.locator('#token-name').fill('laptop');
    await page.locator('#token-access-write').check();
    await page.locator('#token-create').click();
    const panel = page.locator('section.secret-once');
    await panel.waitFor({ timeout: 10_000 });
    assert.match(await panel.innerText(), /This is shown once\./);
    assert.ok(await page.evaluate(() => document.activeElement?.id === 'token-secret-title'), 'focus moves to the new secret');
    const secret = await page.locator('#token-secret').inputValue();
    await page.locator('#token-copy').click();
    await page.locator('#token-copy-status', { hasText: 'Copied.' }).waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret, 'Copy puts the secret on the clipboard');
    await row('laptop').waitFor();
    assert.match(await row('laptop').innerText(), /Access: read and write/);
    const me = ok(await s.get('/api/me', secret), 200);
    assert.equal(me.id, bob.id, 'the secret shown is a working token of this account');
    const listed = ok(await s.get('/api/me/tokens', bob.token), 200).tokens.find((x) => x.name === 'laptop');
    assert.deepEqual(listed.scopes, ['read', 'write']);
    laptop = { id: listed.id, token: secret };
    await shot('created-1366');
    await page.locator('#token-secret-done').click();
    assert.equal(await panel.count(), 0, 'hidden on request');
    await page.reload();
    await page.locator('h1', { hasText: 'Your tokens' }).waitFor({ timeout: 10_000 });
    assert.ok(!(await pageText()).includes(secret), 'never shown again: not after a reload');
  });

  await t.test('a read-only token made in the page reads and is refused every write', async () => {
    await page.locator('#token-name').fill('dashboard');
    assert.ok(await page.locator('#token-access-read').isChecked(), 'read only is the default');
    await page.locator('#token-create').click();
    await page.locator('section.secret-once', { hasText: '“dashboard”' }).waitFor({ timeout: 10_000 });
    const secret = await page.locator('#token-secret').inputValue();
    assert.match(await row('dashboard').innerText(), /Access: read only/);
    ok(await s.get('/api/rooms', secret), 200);
    const refused = await s.post('/api/topics', { title: 'from a read token' }, secret);
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'TOKEN_SCOPE');
  });

  await t.test('a hostile token name stays text', async () => {
    await page.locator('#token-name').fill(HOSTILE_NAME);
    await page.locator('#token-create').click();
    await row(HOSTILE_NAME).waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('#view img').count(), 0);
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
  });

  await t.test('revoking asks first in the page; Cancel keeps the token; confirming refuses it at once', async () => {
    const n = row('nightly report');
    await n.locator('button.token-revoke').click();
    const confirm = n.locator('.token-confirm');
    await confirm.waitFor();
    assert.match(await confirm.innerText(), /Every program using it is refused at once\. This cannot be undone\./);
    ok(await s.get('/api/me', nightly.token), 200); // nothing happened yet
    await confirm.locator('button.token-cancel').click();
    assert.equal(await confirm.count(), 0);
    assert.ok(await page.evaluate(() => document.activeElement?.classList.contains('token-revoke')), 'Cancel gives focus back to Revoke');
    ok(await s.get('/api/me', nightly.token), 200);
    await n.locator('button.token-revoke').click();
    for (const size of WIDTHS) {
      await page.setViewportSize(size);
      assert.deepEqual(await axeViolations(page), [], `axe with the confirm box open at ${size.width} px`);
      await shot(`confirm-${size.width}`);
    }
    await page.setViewportSize(WIDTHS[0]);
    await n.locator('button.token-yes').click();
    await page.locator('.token-status', { hasText: '“nightly report” is revoked' }).waitFor({ timeout: 10_000 });
    assert.equal(await n.count(), 0, 'gone from the list');
    assert.equal((await s.get('/api/me', nightly.token)).status, 401, 'refused at once');
  });

  await t.test('rotating the tab\'s own token: the old secret gets 401, this tab and another tab using the remembered token go on with the new one', async () => {
    const other = watchPage(await context.newPage(), problems);
    await other.goto(`${s.url}/#/rooms`);
    await other.locator('h1', { hasText: 'Rooms' }).waitFor({ timeout: 15_000 });
    const primary = page.locator('li.token[data-id="primary"]');
    await primary.locator('button.token-rotate').click();
    assert.match(await primary.locator('.token-confirm').innerText(), /This tab switches to the new secret by itself/);
    await primary.locator('button.token-yes').click();
    // The panel of the rotation (it replaces the one a create before it left open).
    const panel = page.locator('section.secret-once', { hasText: 'Copy the new secret of “registration” now' });
    await panel.waitFor({ timeout: 10_000 });
    assert.match(await panel.innerText(), /This browser already uses the new secret \(also remembered on this device\)/);
    const secret = await page.locator('#token-secret').inputValue();
    for (const size of WIDTHS) {
      await page.setViewportSize(size);
      assert.deepEqual(await axeViolations(page), [], `axe with a new secret shown at ${size.width} px`);
      await shot(`rotated-${size.width}`);
    }
    await page.setViewportSize(WIDTHS[0]);
    assert.notEqual(secret, bob.token);
    bobSecret = secret;
    assert.equal((await s.get('/api/me', bob.token)).status, 401, 'the old secret is refused');
    assert.equal(ok(await s.get('/api/me', secret), 200).id, bob.id);
    assert.deepEqual(await page.evaluate((k) => [sessionStorage.getItem(k), localStorage.getItem(k)], TOKEN_KEY), [secret, secret], 'kept where the old one was: this tab and this device');
    await page.waitForFunction(() => document.querySelector('li.token[data-id="primary"] .badge')?.textContent === 'this tab');
    await page.goto(`${s.url}/#/`);
    await page.locator('h1', { hasText: 'Latest activity' }).waitFor({ timeout: 10_000 });
    await other.waitForFunction(([k, v]) => sessionStorage.getItem(k) === v, [TOKEN_KEY, secret], { timeout: 10_000 });
    await other.goto(`${s.url}/#/knowledge`);
    await other.locator('h1', { hasText: 'Knowledge' }).waitFor({ timeout: 10_000 });
    assert.equal(await other.locator('#sign-in').isVisible(), false, 'the other tab is still signed in');
    await other.close();
  });

  await t.test('revoking the token the tab is signed in with signs the tab out', async () => {
    const tab = watchPage(await (await browser.newContext({ serviceWorkers: 'block', viewport: WIDTHS[1] })).newPage(), problems);
    await tab.goto(`${s.url}/#/tokens`);
    await tab.waitForFunction(() => document.getElementById('status-text')?.textContent !== 'Loading…');
    await tab.locator('#token').fill(laptop.token);
    await tab.locator('#token').press('Enter');
    await tab.locator('h1', { hasText: 'Your tokens' }).waitFor({ timeout: 15_000 });
    const mine = tab.locator(`li.token[data-id="${laptop.id}"]`);
    assert.match(await mine.locator('.badge').innerText(), /this tab/);
    await mine.locator('button.token-revoke').click();
    assert.match(await mine.locator('.token-confirm').innerText(), /this tab signs out/);
    await mine.locator('button.token-yes').click();
    await tab.locator('#sign-in-error', { hasText: 'You revoked “laptop”, the token this tab was signed in with.' }).waitFor({ timeout: 10_000 });
    assert.equal((await s.get('/api/me', laptop.token)).status, 401);
    await tab.context().close();
  });

  await t.test('a tab signed in with a read-only token is told it cannot manage tokens', async () => {
    const reader = ok(await s.post('/api/me/tokens', { name: 'read only tab', scopes: ['read'] }, bobSecret));
    // The refused write is logged by the browser as a failed 403 resource: the one console error this tab may have.
    const tabProblems = [];
    const tab = watchPage(await (await browser.newContext({ serviceWorkers: 'block', viewport: WIDTHS[0] })).newPage(), tabProblems);
    await tab.goto(`${s.url}/#/tokens`);
    await tab.waitForFunction(() => document.getElementById('status-text')?.textContent !== 'Loading…');
    await tab.locator('#token').fill(reader.token);
    await tab.locator('#token').press('Enter');
    await tab.locator('h1', { hasText: 'Your tokens' }).waitFor({ timeout: 15_000 });
    await tab.locator('#token-name').fill('another');
    await tab.locator('#token-create').click();
    await tab.locator('#token-form-error', { hasText: 'This tab is signed in with a read-only token' }).waitFor({ timeout: 10_000 });
    assert.equal(ok(await s.get('/api/me/tokens', reader.token), 200).tokens.some((x) => x.name === 'another'), false);
    assert.deepEqual(tabProblems.filter((p) => !/status of 403 \(Forbidden\)/.test(p)), []);
    await tab.context().close();
  });

  assert.deepEqual(problems, [], 'no script error, console error or dialog');
});
