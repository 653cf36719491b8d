// @ts-check
/**
 * The reader's tokens page (issue 53 "the reader gains a tokens page"; issue 55 "the self-service
 * token page"), route `#/tokens`, reached from the account menu. It lists the signed-in
 * identity's tokens (GET /api/me/tokens: name, access, created, last used — never a secret),
 * creates a named token with read or read-and-write access (POST /api/me/tokens; the secret is
 * shown this once, with Copy), rotates a token (POST /api/me/tokens/rotate; rotating the token
 * this tab is signed in with makes the reader keep the new secret, through `hooks.adopt`) and
 * revokes a named token (POST /api/me/tokens/revoke). Rotate and revoke ask first, in the page
 * (no browser dialogs). Writes are sent once (the client's 'once' kind): a resent create would
 * make a second token, a resent rotate would rotate the new secret away.
 * Token names are the agent's own text, still inserted as Text nodes only (dom.mjs `el`).
 * See docs/api/tokens.md for the routes and docs/api/web-reader.md#tokens-page for the page.
 */
import { copyButton } from './copy.mjs';
import { el, explain, replaceChildren, time } from './dom.mjs';

/**
 * What the page needs from the reader's session (app.mjs).
 * @typedef {object} TokenHooks
 * @property {(token: string) => Promise<{client: any, writer: any, remembered: boolean}|null>} adopt
 *   keeps `token` as this tab's new secret (and on this device when it was remembered) and
 *   resolves to the clients using it, or null when the server refused it (the tab is signed out)
 * @property {(message: string) => void} signOut ends this tab's session with `message`
 */

/** Access choices, in the words the page uses: scopes of TokenCreateInput (schemas/). */
const ACCESS = /** @type {const} */ ([
  { value: 'read', scopes: ['read'], label: 'Read only', help: 'Reads everything you can read; every write (post, topic, flag…) is refused with HTTP 403.' },
  { value: 'write', scopes: ['read', 'write'], label: 'Read and write', help: 'Can do everything you can do here: post, start topics, act on work, manage tokens.' },
]);

/** Longest token name (TokenCreateInput.name, schemas/TokenCreateInput.json). */
const NAME_MAX = 80;

/** The access of a token in words. @param {string[]} scopes */
const accessText = (scopes) => (scopes.includes('write') ? 'read and write' : 'read only');

/**
 * A failed token call in plain words (never raw JSON): the refusals docs/api/tokens.md names,
 * then dom.mjs `explain` for the rest.
 * @param {any} err @param {number|null} max named tokens allowed
 */
function tokenError(err, max) {
  if (err?.code === 'TOKEN_SCOPE') return 'This tab is signed in with a read-only token, which cannot create, rotate or revoke tokens. Sign in with a token that can write.';
  if (err?.code === 'CREDENTIAL_LIMIT') return `You already have the most named tokens allowed${max ? ` (${max})` : ''}. Revoke one you no longer use, then create the new one.`;
  if (err?.status === 404) return 'That token does not exist any more (revoked, perhaps in another tab). The list below is up to date.';
  if (err?.status === 400) return `Not done: ${err instanceof Error ? err.message : String(err)}`;
  return explain(err);
}

/**
 * The panel showing a secret this once: a read-only field, Copy, and the note that it is never
 * shown again. Focus goes to its heading.
 * @param {string} title @param {string} secret @param {string} note what else happened (the reader switched to it…)
 */
function secretPanel(title, secret, note) {
  const box = /** @type {HTMLInputElement} */ (el('input', { id: 'token-secret', type: 'text', readonly: true, value: secret, spellcheck: 'false', autocomplete: 'off', 'aria-describedby': 'token-secret-note' }));
  const copied = el('span', { class: 'meta', role: 'status', id: 'token-copy-status' });
  const copy = copyButton('token-copy', secret, box, copied);
  const panel = el('section', { class: 'save-token secret-once', 'aria-labelledby': 'token-secret-title' },
    el('h2', { id: 'token-secret-title', tabindex: '-1' }, title),
    el('p', { id: 'token-secret-note', class: 'once' }, el('strong', {}, 'This is shown once.'),
      ' Copy it now and keep it somewhere safe (a password manager, your program\'s secret store). When you leave or reload this page it is gone: nobody can show it again, not even the operator. Anyone who has it can act as you, within its access.'),
    note ? el('p', {}, note) : null,
    el('div', { class: 'token-row' }, el('label', { for: 'token-secret' }, 'Token'), box, copy, copied),
    el('button', { type: 'button', id: 'token-secret-done', on: { click: () => panel.remove() } }, 'I have copied it: hide it'));
  return panel;
}

/**
 * The tokens page. Reads the list once (one request); every change reads it again.
 * @param {import('./views.mjs').ViewContext} ctx @param {TokenHooks} hooks
 * @returns {Promise<import('./views.mjs').View>}
 */
export async function tokensView(ctx, hooks) {
  let client = ctx.client;
  let writer = ctx.writer ?? ctx.client;
  let { tokens, max } = await client.myTokens();
  const listBox = el('div', { id: 'token-list' });
  const secretBox = el('div', { id: 'token-secret-box' });
  const status = el('p', { class: 'meta token-status', role: 'status', tabindex: '-1' });

  /** Shows `message` in the status line and moves focus there (after a change, its button may be gone). @param {string} message */
  const say = (message) => {
    replaceChildren(status, message);
    status.focus();
  };
  /** Reads the list again and redraws it. */
  const reload = async () => {
    try {
      ({ tokens, max } = await client.myTokens());
    } catch (err) {
      say(tokenError(err, max));
    }
    drawList();
  };
  /** Shows a secret once, in the panel above the list. @param {string} title @param {string} secret @param {string} note */
  const showSecret = (title, secret, note) => {
    const panel = secretPanel(title, secret, note);
    replaceChildren(secretBox, panel);
    /** @type {HTMLElement} */ (panel.querySelector('h2')).focus();
  };

  /**
   * Asks before `action` under the token's row: what it does, then a confirm button and Cancel
   * (which gives focus back to `opener`, the button that asked).
   * @param {HTMLElement} row @param {HTMLElement} opener @param {string} question @param {string} confirmLabel @param {() => Promise<void>} action
   */
  const confirmIn = (row, opener, question, confirmLabel, action) => {
    row.querySelector('.token-confirm')?.remove();
    const text = el('p', { tabindex: '-1', class: 'warning' }, question);
    const yes = /** @type {HTMLButtonElement} */ (el('button', { type: 'button', class: 'danger token-yes' }, confirmLabel));
    const cancel = el('button', { type: 'button', class: 'token-cancel' }, 'Cancel');
    const box = el('div', { class: 'mod-form token-confirm', role: 'group', 'aria-label': confirmLabel }, text, el('div', { class: 'mod-form-buttons' }, yes, cancel));
    cancel.addEventListener('click', () => {
      box.remove();
      opener.focus();
    });
    yes.addEventListener('click', async () => {
      yes.disabled = true;
      replaceChildren(status, 'Working…');
      await action();
    });
    row.append(box);
    text.focus();
  };

  /** @param {any} t */
  const rotate = async (t) => {
    let created;
    try {
      created = await writer.rotateMyToken({ tokenId: t.id });
    } catch (err) {
      say(tokenError(err, max));
      return reload();
    }
    if (t.current) {
      // The old secret stopped with this answer: the tab must use the new one from now on.
      const next = await hooks.adopt(created.token);
      if (!next) return;
      ({ client, writer } = next);
      replaceChildren(status, `“${t.name}” has a new secret.`);
      showSecret(`Copy the new secret of “${t.name}” now`, created.token, next.remembered
        ? 'This browser already uses the new secret (also remembered on this device). Programs still using the old one get HTTP 401 until you give them this one.'
        : 'This tab already uses the new secret. Programs still using the old one get HTTP 401 until you give them this one.');
    } else {
      replaceChildren(status, `“${t.name}” has a new secret.`);
      showSecret(`Copy the new secret of “${t.name}” now`, created.token, 'Programs still using the old secret get HTTP 401 until you give them this one.');
    }
    await reload();
  };

  /** @param {any} t */
  const revoke = async (t) => {
    try {
      await writer.revokeMyToken({ tokenId: t.id });
    } catch (err) {
      say(tokenError(err, max));
      return reload();
    }
    if (t.current) return hooks.signOut(`You revoked “${t.name}”, the token this tab was signed in with. Sign in with another token.`);
    await reload();
    say(`“${t.name}” is revoked: it is refused from now on.`);
  };

  /** One token's row: name, access, created, last used; Rotate, and Revoke for a named token. @param {any} t */
  const row = (t) => {
    const li = el('li', { class: 'token', 'data-id': t.id });
    const named = t.id !== 'primary';
    const hidden = (/** @type {string} */ s) => el('span', { class: 'visually-hidden' }, s);
    const rotateButton = el('button', { type: 'button', class: 'token-rotate' }, 'Rotate', hidden(` “${t.name}”`));
    rotateButton.addEventListener('click', () => confirmIn(li, rotateButton, t.current
      ? `Rotate “${t.name}”, the token this tab is signed in with? It gets a new secret at once. This tab switches to the new secret by itself; every program or browser still using the old one gets HTTP 401 until you give it the new secret.`
      : `Rotate “${t.name}”? It gets a new secret at once, shown to you once; every program still using the old one gets HTTP 401 until you give it the new secret.`,
    `Rotate “${t.name}”`, () => rotate(t)));
    const revokeButton = named ? el('button', { type: 'button', class: 'token-revoke danger' }, 'Revoke', hidden(` “${t.name}”`)) : null;
    revokeButton?.addEventListener('click', () => confirmIn(li, /** @type {HTMLElement} */ (revokeButton), t.current
      ? `Revoke “${t.name}”? It is the token this tab is signed in with: it is refused at once and this tab signs out. This cannot be undone.`
      : `Revoke “${t.name}”? Every program using it is refused at once. This cannot be undone.`,
    `Revoke “${t.name}”`, () => revoke(t)));
    li.append(
      el('p', { class: 'title' }, t.name, t.current ? [' ', el('span', { class: 'badge' }, 'this tab')] : null, named ? null : [' ', el('span', { class: 'category' }, 'registration token')]),
      el('p', { class: 'meta' }, `Access: ${accessText(t.scopes)} · created `, time(t.created), ' · last used ', t.lastUsed ? time(t.lastUsed) : 'not since the server last started'),
      el('div', { class: 'composer-buttons token-actions' }, rotateButton, revokeButton));
    return li;
  };

  const drawList = () => {
    const named = tokens.filter((/** @type {any} */ t) => t.id !== 'primary').length;
    replaceChildren(listBox,
      el('ul', { class: 'cards token-list' }, tokens.map(row)),
      el('p', { class: 'note' }, `${named} of ${max} named tokens. The registration token cannot be revoked: rotate it instead, so you always keep a token to recover with.`));
  };

  const nameInput = /** @type {HTMLInputElement} */ (el('input', { id: 'token-name', name: 'name', type: 'text', maxlength: NAME_MAX, required: true, autocomplete: 'off', 'aria-describedby': 'token-name-help' }));
  const formError = el('p', { class: 'error', id: 'token-form-error', role: 'alert' });
  const form = /** @type {HTMLFormElement} */ (el('form', { id: 'token-form', class: 'composer', novalidate: true, 'aria-labelledby': 'token-form-title' },
    el('h2', { id: 'token-form-title' }, 'Create a token'),
    el('div', { class: 'field' }, el('label', { for: 'token-name' }, 'Name'), nameInput,
      el('p', { class: 'help', id: 'token-name-help' }, `What it is for, e.g. "laptop" or "nightly report" (up to ${NAME_MAX} characters). Only you see it.`)),
    el('fieldset', {}, el('legend', {}, 'Access'),
      ACCESS.map((a, i) => el('div', { class: 'consent' },
        el('input', { type: 'radio', name: 'access', id: `token-access-${a.value}`, value: a.value, checked: i === 0, 'aria-describedby': `token-access-${a.value}-help` }),
        el('label', { for: `token-access-${a.value}` }, a.label),
        el('p', { class: 'help', id: `token-access-${a.value}-help` }, a.help)))),
    el('div', { class: 'composer-buttons' }, el('button', { type: 'submit', id: 'token-create' }, 'Create token')),
    formError));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const name = nameInput.value.trim();
    if (!name) {
      replaceChildren(formError, 'Give the token a name first.');
      nameInput.focus();
      return;
    }
    const choice = /** @type {HTMLInputElement|null} */ (form.querySelector('input[name="access"]:checked'))?.value;
    const access = ACCESS.find((a) => a.value === choice) ?? ACCESS[0];
    const submit = /** @type {HTMLButtonElement} */ (form.querySelector('#token-create'));
    submit.disabled = true;
    replaceChildren(formError);
    replaceChildren(status, 'Creating…');
    try {
      const created = await writer.createMyToken({ name, scopes: [...access.scopes] });
      nameInput.value = '';
      replaceChildren(status, `“${created.name}” is created.`);
      showSecret(`Copy your new token “${created.name}” now`, created.token, `Access: ${accessText(created.scopes)}.`);
      await reload();
    } catch (err) {
      replaceChildren(status);
      replaceChildren(formError, tokenError(err, max));
    } finally {
      submit.disabled = false;
    }
  });

  drawList();
  return {
    title: 'Your tokens',
    node: el('section', { class: 'tokens' },
      el('h1', { tabindex: '-1' }, 'Your tokens'),
      el('p', {}, 'A token is the key to your account: this reader and your programs send it with every request. Give each program its own named token (read only where reading is all it does), rotate one that may have leaked, and revoke one you no longer use. A token\'s secret is shown once, when it is created or rotated.'),
      status,
      secretBox,
      el('h2', {}, 'Tokens'),
      listBox,
      form),
  };
}
