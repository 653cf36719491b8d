// @ts-check
/**
 * Adding another device (issue 55, docs/api/web-reader.md#adding-a-device): on a signed-in
 * browser, "Add a device" (#/add-device, in the account menu) makes a one-time code
 * (POST /api/me/device-codes) shown as ABCD-EFGH with the time it expires; on the other browser,
 * "Sign in with a code" (#/use-code, from the sign-in box) enters it (POST /api/device-codes/redeem,
 * no token) and is signed in with a new named token of the same account. The token never leaves
 * the browser it was made for, and no token is in a URL; only the code is typed across.
 */
import { ForumClient } from '../api/client/forum-client.mjs';
import { el, replaceChildren, waitText } from './dom.mjs';

/** The code as shown: two groups of four. @param {string} code */
const shown = (code) => `${code.slice(0, 4)}-${code.slice(4)}`;

/** A time of day as the browser writes it, e.g. "14:05". @param {string} iso */
const clockTime = (iso) => new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });

/**
 * The "Add a device" page (#/add-device, signed in). Output: a View (views.mjs).
 * @param {{writer?: ForumClient, client: ForumClient}} ctx
 * @returns {import('./views.mjs').View}
 */
export function addDeviceView(ctx) {
  const client = ctx.writer ?? ctx.client;
  const out = el('div', { id: 'device-code-result', 'aria-live': 'polite' });
  const name = /** @type {HTMLInputElement} */ (el('input', { type: 'text', id: 'device-name', maxlength: 80, placeholder: 'another device', 'aria-describedby': 'device-name-help' }));
  const form = /** @type {HTMLFormElement} */ (el('form', { id: 'device-code-form', class: 'device-form' },
    el('div', { class: 'field' },
      el('label', { for: 'device-name' }, 'Name the other device (optional)'), name,
      el('p', { class: 'help', id: 'device-name-help' }, 'For example "phone" or "work laptop": it names the sign-in the code creates, in your list of tokens.')),
    el('button', { type: 'submit', class: 'primary' }, 'Make a code')));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const submit = /** @type {HTMLButtonElement} */ (form.querySelector('button[type="submit"]'));
    submit.disabled = true;
    replaceChildren(out, el('p', {}, 'Making a code…'));
    try {
      const made = await client.createMyDeviceCode(name.value.trim() ? { name: name.value.trim() } : {});
      replaceChildren(out,
        el('p', {}, 'Enter this code on the other device:'),
        el('p', { class: 'device-code', id: 'device-code' }, shown(made.code)),
        el('p', { class: 'meta', id: 'device-code-expiry' }, `It works once, until ${clockTime(made.expiresAt)} (10 minutes). Nobody from this forum will ever ask you for it.`),
        el('ol', {},
          el('li', {}, 'On the other device, open this page: ', el('code', {}, location.origin + location.pathname)),
          el('li', {}, 'Choose Sign in, then "Sign in with a code from another device".'),
          el('li', {}, 'Type the code. That device is then signed in as you, with its own sign-in you can revoke later.')));
    } catch (err) {
      const e = /** @type {any} */ (err);
      const why = e?.status === 429 ? `Too many requests right now: wait ${waitText(e.retryAfterSeconds)} and try again.`
        : e instanceof Error ? e.message : String(e);
      replaceChildren(out, el('p', { class: 'error', role: 'alert' }, `No code was made: ${why}`));
    } finally {
      submit.disabled = false;
    }
  });
  return {
    title: 'Add a device',
    node: el('section', {},
      el('h1', { tabindex: '-1' }, 'Add a device'),
      el('p', {}, 'Sign in on another phone, tablet or computer without carrying your token over: make a one-time code here and type it there.'),
      form,
      out),
  };
}

/**
 * @typedef {object} UseCodeDeps
 * @property {string} baseUrl the server's base URL (no trailing slash)
 * @property {(token: string, remember: boolean) => Promise<string|null>} signIn starts the session; an error text or null
 */

/**
 * "Sign in with a code" (#/use-code, signed out): the code from a signed-in device, and whether
 * to keep this device signed in (on by default: the point is to add this device). Output: a View.
 * @param {UseCodeDeps} deps
 * @returns {import('./views.mjs').View}
 */
export function useCodeView(deps) {
  const error = el('p', { class: 'error', id: 'use-code-error', role: 'alert' });
  const code = /** @type {HTMLInputElement} */ (el('input', { type: 'text', id: 'use-code', name: 'code', maxlength: 20, autocomplete: 'one-time-code', autocapitalize: 'characters', spellcheck: 'false', required: true, 'aria-describedby': 'use-code-help' }));
  const remember = /** @type {HTMLInputElement} */ (el('input', { type: 'checkbox', id: 'use-code-remember', checked: true, 'aria-describedby': 'use-code-remember-help' }));
  const form = /** @type {HTMLFormElement} */ (el('form', { id: 'use-code-form', class: 'device-form', novalidate: true },
    el('div', { class: 'field' },
      el('label', { for: 'use-code' }, 'Code'), code,
      el('p', { class: 'help', id: 'use-code-help' }, 'Eight letters and digits, like ABCD-EFGH, from "Add a device" in the account menu of a browser where you are signed in.')),
    el('div', { class: 'consent' }, remember, el('label', { for: 'use-code-remember' }, 'Keep me signed in on this device'),
      el('p', { class: 'help', id: 'use-code-remember-help' }, 'Leave it off on a shared computer: then closing this tab signs you out.')),
    el('button', { type: 'submit', class: 'primary' }, 'Sign in'),
    error));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (!code.value.trim()) return replaceChildren(error, 'Type the code first.');
    const submit = /** @type {HTMLButtonElement} */ (form.querySelector('button[type="submit"]'));
    submit.disabled = true;
    replaceChildren(error, 'Checking the code…');
    let token;
    try {
      ({ created: { token } } = await ForumClient.redeemDeviceCode(code.value.trim(), { baseUrl: deps.baseUrl }));
    } catch (err) {
      submit.disabled = false;
      const e = /** @type {any} */ (err);
      const why = e?.status === 404 ? 'This code is not known here: check it (letters and digits, no 0, 1, I, L or O), or make a new one.'
        : e?.code === 'DEVICE_CODE_GONE' ? 'This code was used already or has expired: make a new one on your signed-in device.'
          : e?.status === 400 ? 'That is not a code: it has eight letters and digits, like ABCD-EFGH.'
            : e?.status === 429 ? `Too many tries from here: wait ${waitText(e.retryAfterSeconds)} before the next.`
              : `Could not sign in: ${e instanceof Error ? e.message : String(e)}`;
      replaceChildren(error, why);
      code.focus();
      return;
    }
    const failed = await deps.signIn(token, remember.checked);
    if (failed) {
      submit.disabled = false;
      return replaceChildren(error, failed);
    }
    location.hash = '#/';
  });
  return {
    title: 'Sign in with a code',
    node: el('section', {},
      el('h1', { tabindex: '-1' }, 'Sign in with a code'),
      el('p', {}, 'Signed in on another device? Make a code there (account menu → Add a device) and type it here.'),
      form,
      el('p', { class: 'meta' }, 'Have your token instead? ', el('a', { href: '#/sign-in' }, 'Sign in with it'), '.')),
  };
}
