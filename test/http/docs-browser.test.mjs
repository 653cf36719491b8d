/**
 * /api/docs in a real headless Chromium (playwright-core, the system's /usr/bin/chromium): Swagger
 * UI renders the generated document from our own server, with no request leaving it (works
 * offline) and no Content-Security-Policy violation.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { BROWSER_ARGS, CHROMIUM, chromiumOrSkip } from '../helpers/chromium.mjs';
import { prefixProxy } from '../helpers/prefix-proxy.mjs';
import { startServer } from '../helpers/server.mjs';

/** Launches Chromium with a page that records foreign requests, failed responses and script errors. */
async function openPage(t, origin) {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: BROWSER_ARGS,
  });
  t.after(() => browser.close());
  const context = await browser.newContext({ serviceWorkers: 'block' });
  const page = await context.newPage();
  // Offline: any request to another origin is recorded and aborted.
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
  return { page, foreign, problems, failed };
}

test('the /api/docs page renders the operations with Swagger UI served from this server only', async (t) => {
  if (chromiumOrSkip(t, 'the /api/docs browser check')) return;
  const s = await startServer(t);
  const { page, foreign, problems, failed } = await openPage(t, new URL(s.url).origin);

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

test('"Try it out" on POST /a2a/message:send succeeds with the documented A2A-Version header pre-filled', async (t) => {
  if (chromiumOrSkip(t, 'the /api/docs browser check')) return;
  const s = await startServer(t);
  const agent = await s.register('swagger-try-it-out');
  const { page, foreign, problems } = await openPage(t, new URL(s.url).origin);
  await page.goto(`${s.url}/api/docs#/A2A/a2aSendMessage`, { waitUntil: 'load' });
  const op = page.locator('#operations-A2A-a2aSendMessage');
  await op.waitFor({ timeout: 20_000 });
  await page.evaluate((token) => window.ui.preauthorizeApiKey('bearer', token), agent.token);
  if (!(await op.locator('.try-out__btn').isVisible())) await op.locator('.opblock-summary').click();
  await op.locator('.try-out__btn').click();
  const version = op.locator('tr[data-param-name="A2A-Version"][data-param-in="header"] input');
  assert.equal(await version.inputValue(), '1.0', 'the header is pre-filled from the document');
  const body = { message: { messageId: 'swagger-status-1', role: 'ROLE_USER', parts: [{ data: { action: 'status' }, mediaType: 'application/json' }] } };
  await op.locator('textarea.body-param__text').fill(JSON.stringify(body));
  const answered = page.waitForResponse((res) => res.url().endsWith('/a2a/message:send'));
  await op.locator('button.execute').click();
  const res = await answered;
  assert.equal(res.status(), 200, await res.text());
  assert.equal(res.request().headers()['a2a-version'], '1.0');
  const data = (await res.json()).message.parts[0].data;
  assert.equal(data.action, 'status');
  assert.equal(data.result.version, '0.4.9');
  assert.deepEqual(foreign, []);
  assert.deepEqual(problems, []);
});

test('the /api/docs page renders behind a path-prefixed FORUM_PUBLIC_URL', async (t) => {
  if (chromiumOrSkip(t, 'the /api/docs browser check')) return;
  const proxy = await prefixProxy(t);
  const publicUrl = proxy.url;
  const s = await startServer(t, { env: { FORUM_PUBLIC_URL: `${publicUrl}/` } });
  proxy.setTarget(s.url);

  const { page, foreign, problems, failed } = await openPage(t, new URL(publicUrl).origin);
  const requested = [];
  page.on('request', (req) => requested.push(req.url()));
  const res = await page.goto(`${publicUrl}/api/docs`, { waitUntil: 'load' });
  assert.equal(res.status(), 200);
  await page.locator('.opblock-summary-path', { hasText: '/api/messages' }).first().waitFor({ timeout: 20_000 });
  assert.ok((await page.locator('#swagger-ui').innerText()).includes('0.4.9'));
  for (const url of requested) assert.ok(url.startsWith(`${publicUrl}/`) || url.startsWith('data:'), `${url} stays under the prefix`);
  assert.ok(requested.includes(`${publicUrl}/openapi.json`));
  assert.deepEqual(foreign, []);
  assert.deepEqual(failed, [], 'every request of the page succeeds');
  assert.deepEqual(problems, [], 'no script error or CSP violation');
});
