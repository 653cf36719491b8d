/**
 * The operator console of the web reader (issue 38) in a real headless Chromium (playwright-core,
 * the system's /usr/bin/chromium): an operator finds an agent, disables it with a reason, rotates
 * its token, stops writes with a reason and sees each action with its name in the action log; a
 * hostile agent name stays text; the view passes axe-core and html-validate at desktop and phone
 * widths. Screenshots go to test-results/web-console/ (git-ignored).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { BROWSER_ARGS, CHROMIUM, chromiumOrSkip } from '../helpers/chromium.mjs';
import { HtmlValidate } from 'html-validate';
import { ROOT, startServer } from '../helpers/server.mjs';

const SHOTS = join(ROOT, 'test-results', 'web-console');
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const WIDTHS = [{ width: 1366, height: 900 }, { width: 390, height: 844 }];
const HOSTILE_NAME = '<img src=x onerror="window.__pwned=1">';

/** Serious or critical axe-core violations of the page as it is now. */
async function seriousViolations(page) {
  if (!(await page.evaluate(() => typeof window.axe !== 'undefined'))) await page.evaluate(AXE_SOURCE);
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}

/** The live DOM's html-validate messages (serializer-only rules off, as in web-reader.test.mjs). */
const domValidator = new HtmlValidate({
  extends: ['html-validate:recommended'],
  // aria-label on an element that may be named (a section, a textarea) is the reader's choice; one that
  // cannot be named is still an error. html-validate 10 reports the first by default, 11 does not.
  rules: { 'attribute-empty-style': 'off', 'attribute-boolean-style': 'off', 'no-trailing-whitespace': 'off', 'aria-label-misuse': ['error', { allowAnyNamable: true }] },
});
async function htmlProblems(page) {
  const report = await domValidator.validateString((await page.content()).replaceAll(' style=""', ''));
  return report.results.flatMap((r) => r.messages.map((m) => `${m.line}:${m.column} ${m.ruleId} ${m.message}`));
}

test('an operator disables an agent, rotates its token and stops writes with a reason from the console, and sees each action with its name in the log', async (t) => {
  if (chromiumOrSkip(t, 'the operator console browser check')) return;
  rmSync(SHOTS, { recursive: true, force: true });
  mkdirSync(SHOTS, { recursive: true });
  const s = await startServer(t);
  const op = (await s.cli('operator', 'create', '--name', 'Console Op')).json;
  const target = await s.register('spammy-bot');
  await s.register(HOSTILE_NAME);

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: BROWSER_ARGS });
  t.after(() => browser.close());
  const context = await browser.newContext({ serviceWorkers: 'block', viewport: WIDTHS[0] });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('dialog', (d) => {
    problems.push(`dialog: ${d.message()}`);
    void d.dismiss();
  });

  await page.goto(`${s.url}/#/console`);
  await page.locator('#token').fill(op.token);
  await page.locator('#token').press('Enter');
  await page.locator('h1', { hasText: 'Operator console' }).waitFor({ timeout: 10_000 });
  assert.ok(await page.locator('#nav-console').isVisible(), 'operators see the Console link');
  await page.locator('.agent-row').first().waitFor({ timeout: 10_000 });
  await page.locator('.action-log').waitFor({ timeout: 10_000 });

  // The hostile name is text: no element was made from it, nothing ran.
  assert.ok(await page.locator('.agent-row .title', { hasText: HOSTILE_NAME }).count() === 1, 'the name is shown as written');
  assert.equal(await page.locator('.console img').count(), 0);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);

  for (const size of WIDTHS) {
    await page.setViewportSize(size);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 0, `no horizontal overflow at ${size.width}px (${overflow}px)`);
    await page.screenshot({ path: join(SHOTS, `console-${size.width}.png`), fullPage: true });
    assert.deepEqual(await seriousViolations(page), [], `axe-core at ${size.width}px`);
  }
  await page.setViewportSize(WIDTHS[0]);
  assert.deepEqual(await htmlProblems(page), [], 'the console is valid HTML');

  // Search, then disable with a reason.
  await page.locator('.agent-q').fill('spammy');
  await page.locator('.agent-search button').click();
  const row = page.locator(`.agent-row[data-id="${target.id}"]`);
  await row.waitFor({ timeout: 10_000 });
  assert.equal(await page.locator('.agent-row').count(), 1, 'the search narrows the list');
  await row.locator('.agent-reason').fill('posting spam');
  await row.locator('.agent-toggle').click();
  await row.locator('.agent-status', { hasText: 'Disabled' }).waitFor({ timeout: 10_000 });
  assert.equal((await s.get('/api/rooms', target.token)).status, 401, 'the agent is disabled');

  await row.locator('.agent-rotate').click();
  await row.locator('.new-token').waitFor({ timeout: 10_000 });
  assert.match(await row.locator('.new-token').innerText(), /^af_/);

  // Stop writes with a reason.
  await page.locator('.stop-reason').fill('moving to new disks');
  await page.locator('.write-stop-form button').click();
  await page.locator('.write-stop-state', { hasText: 'Writes are stopped: moving to new disks' }).waitFor({ timeout: 10_000 });
  const agent = await s.register('late-writer').catch((err) => err);
  assert.match(String(agent.message ?? ''), /423/, 'registration is a write: refused during the stop');

  // The action log names the operator for each action.
  await page.locator('.action-log .action-what', { hasText: 'writes.stop' }).waitFor({ timeout: 10_000 });
  const rows = await page.locator('.action-log .action').evaluateAll((lis) =>
    lis.map((li) => ['.action-who', '.action-what', '.action-target', '.action-reason'].map((c) => li.querySelector(c)?.textContent ?? '')));
  assert.deepEqual(rows.slice(0, 3), [
    [op.id, 'writes.stop', 'writes', 'moving to new disks'],
    [op.id, 'agents.rotate-token', target.id, ''],
    [op.id, 'agents.disable', target.id, 'posting spam'],
  ]);
  await page.screenshot({ path: join(SHOTS, 'console-after-actions-1366.png'), fullPage: true });

  // Resume from the console (operator routes answer during a write stop).
  await page.locator('.resume-writes').click();
  await page.locator('.write-stop-state', { hasText: 'Writes are accepted.' }).waitFor({ timeout: 10_000 });
  assert.equal((await s.get('/api/status')).body.writeStop, false);
  assert.deepEqual(problems, []);
});

test('a signed-in agent sees no Console link, and #/console tells it the console is for operators', async (t) => {
  if (chromiumOrSkip(t, 'the operator console browser check')) return;
  const s = await startServer(t);
  const agent = await s.register('curious');
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: BROWSER_ARGS });
  t.after(() => browser.close());
  const page = await (await browser.newContext({ serviceWorkers: 'block' })).newPage();
  await page.goto(`${s.url}/#/console`);
  await page.locator('#token').fill(agent.token);
  await page.locator('#token').press('Enter');
  await page.locator('h1', { hasText: 'Operator console' }).waitFor({ timeout: 10_000 });
  assert.match(await page.locator('main').innerText(), /for operators/);
  assert.equal(await page.locator('#nav-console').isVisible(), false);
});

test('disabling or purging the signed-in operator asks first; declined, nothing changes; another agent is disabled without a question', async (t) => {
  if (chromiumOrSkip(t, 'the operator console browser check')) return;
  const s = await startServer(t);
  const op = (await s.cli('operator', 'create', '--name', 'Careful Op')).json;
  const other = await s.register('other-bot');
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: BROWSER_ARGS });
  t.after(() => browser.close());
  const page = await (await browser.newContext({ serviceWorkers: 'block' })).newPage();
  const dialogs = [];
  let accept = false;
  page.on('dialog', (d) => {
    dialogs.push({ type: d.type(), message: d.message() });
    void (accept ? d.accept() : d.dismiss());
  });
  await page.goto(`${s.url}/#/console`);
  await page.locator('#token').fill(op.token);
  await page.locator('#token').press('Enter');
  const self = page.locator(`.agent-row[data-id="${op.id}"]`);
  await self.waitFor({ timeout: 10_000 });

  await self.locator('.agent-toggle').click();
  await self.locator('.agent-status', { hasText: 'Not disabled.' }).waitFor({ timeout: 10_000 });
  await self.locator('.agent-reason').fill('testing');
  await self.locator('.agent-purge').click();
  await self.locator('.agent-status', { hasText: 'Not purged.' }).waitFor({ timeout: 10_000 });
  assert.deepEqual(dialogs.map((d) => d.type), ['confirm', 'confirm'], 'one confirmation for each');
  assert.ok(dialogs.every((d) => d.message.startsWith(`${op.id} is you`)), JSON.stringify(dialogs));
  assert.equal((await s.get('/api/rooms', op.token)).status, 200, 'declined: the operator is still enabled');
  const actions = (await s.get('/api/admin/actions?limit=100', op.token)).body.actions;
  assert.ok(Array.isArray(actions));
  assert.deepEqual(actions.filter((a) => a.target === op.id && a.action !== 'operator.create'), [], 'and nothing was done to it');

  const row = page.locator(`.agent-row[data-id="${other.id}"]`);
  await row.locator('.agent-toggle').click();
  await row.locator('.agent-status', { hasText: 'Disabled' }).waitFor({ timeout: 10_000 });
  assert.equal(dialogs.length, 2, 'no question for another agent');

  accept = true;
  await self.locator('.agent-toggle').click();
  await page.waitForFunction(async ([token]) => (await fetch('/api/rooms', { headers: { authorization: `Bearer ${token}` } })).status === 401, [op.token], { timeout: 10_000 });
  assert.equal(dialogs.length, 3, 'confirmed: the operator disabled itself');
});
