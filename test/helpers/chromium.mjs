/**
 * The browser tests' one way to find Chromium (the system's /usr/bin/chromium, driven by
 * playwright-core) and the one rule for when it is missing (issue 52): where the browser checks
 * must run (CI: .ci/run installs Chromium and sets FORUM_REQUIRE_CHROMIUM=1) a missing browser
 * fails the test; elsewhere the test is skipped with a message saying it did NOT run.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';

/** Where the browser tests find Chromium. */
export const CHROMIUM = '/usr/bin/chromium';

/** Launch arguments of every browser test: headless, no sandbox (containers), no network of its own. */
export const BROWSER_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/**
 * Whether test `t` (a node:test context) must stop because Chromium is missing: false when it is
 * installed; true after marking `t` skipped with a message naming `what` (e.g. "the web reader
 * browser check"); throws an AssertionError instead when FORUM_REQUIRE_CHROMIUM=1. Use as
 * `if (chromiumOrSkip(t, '…')) return;` at the top of a browser test.
 */
export function chromiumOrSkip(t, what) {
  if (existsSync(CHROMIUM)) return false;
  if (process.env.FORUM_REQUIRE_CHROMIUM === '1') assert.fail(`${CHROMIUM} is missing and FORUM_REQUIRE_CHROMIUM=1: ${what} must run here`);
  t.skip(`${CHROMIUM} is missing: ${what} did NOT run (install it with: apt-get install -y chromium)`);
  return true;
}

/**
 * Watches a browser page for what a test must not meet: script errors, console errors other than
 * the ones the page handles (answers 401, 404, 409, 410 (a used device code), 422, 429, and `net::ERR_FAILED` /
 * `net::ERR_CONNECTION_RESET` when `resets` is true: tests that cut connections), and dialogs
 * (dismissed). Each is pushed to `problems` as a line. Output: the page.
 * @param {import('playwright-core').Page} page
 * @param {string[]} problems
 * @param {{ resets?: boolean }} [opts]
 */
export function watchPage(page, problems, { resets = false } = {}) {
  const allowed = resets ? /\b(401|404|409|410|422|429)\b|net::ERR_(FAILED|CONNECTION_RESET)/ : /\b(401|404|409|410|422|429)\b/;
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !allowed.test(msg.text())) problems.push(`console error: ${msg.text()}`);
  });
  page.on('dialog', (dialog) => {
    problems.push(`dialog: ${dialog.message()}`);
    void dialog.dismiss();
  });
  return page;
}
