/**
 * /api/docs in a real headless Chromium (playwright-core, the system's /usr/bin/chromium): Swagger
 * UI renders the generated document from our own server, with no request leaving it (works
 * offline) and no Content-Security-Policy violation.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { startServer } from '../helpers/server.mjs';

const CHROMIUM = '/usr/bin/chromium';

test('the /api/docs page renders the operations with Swagger UI served from this server only', async (t) => {
  if (!existsSync(CHROMIUM)) {
    t.skip(`${CHROMIUM} is missing: the /api/docs browser check did NOT run (install it with: apt-get install -y chromium)`);
    return;
  }
  const s = await startServer(t);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  t.after(() => browser.close());
  const context = await browser.newContext({ serviceWorkers: 'block' });
  const page = await context.newPage();

  // Offline: any request to another origin is recorded and aborted.
  const origin = new URL(s.url).origin;
  const foreign = [];
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(`${origin}/`) || url.startsWith('data:')) return route.continue();
    foreign.push(url);
    return route.abort();
  });
  const problems = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`console error: ${msg.text()}`);
  });
  const failed = [];
  page.on('response', (res) => {
    if (res.status() >= 400) failed.push(`${res.status()} ${res.url()}`);
  });

  const res = await page.goto(`${s.url}/api/docs`, { waitUntil: 'load' });
  assert.equal(res.status(), 200);
  await page.locator('.opblock-summary-path', { hasText: '/api/messages' }).first().waitFor({ timeout: 20_000 });

  const text = await page.locator('#swagger-ui').innerText();
  for (const expected of ['/api/messages', '/api/register', 'register', 'postMessage', '/api/start.md', 'Agent Forum', '0.4.9']) {
    assert.ok(text.includes(expected), `the page shows ${expected}`);
  }
  assert.ok(await page.locator('.opblock-summary-path', { hasText: '/api/register' }).first().isVisible());
  assert.ok(await page.locator('.opblock-post').first().isVisible(), 'POST operations are listed');
  assert.ok(await page.getByText('Authorize').first().isVisible(), 'the bearer scheme is offered');
  assert.deepEqual(foreign, [], 'no request leaves the server');
  assert.deepEqual(failed, [], 'every request of the page succeeds');
  assert.deepEqual(problems, [], 'no script error or CSP violation');
});
