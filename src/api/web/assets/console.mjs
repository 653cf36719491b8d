// @ts-check
/**
 * The operator console of the web reader (issue 38), route `#/console`, for a token whose
 * profile is an operator's: the registration and write-stop switches (with a reason and an
 * optional end time), agents (search, disable, enable, rotate the token, purge), rooms (create,
 * rename, describe)
 * and the action log — who did what, when and why. Every call is an operator route of the REST
 * API (`/api/admin/*`, and POST /api/moderation/actions for a purge); the server decides who may
 * do what (403 OPERATOR_ONLY for anyone else). Agent names, reasons and ids are participant or
 * operator text: inserted as Text nodes only (dom.mjs `el`), never as HTML.
 */
import { el, explain, replaceChildren, time } from './dom.mjs';

/** Agents listed per search: the API's maximum `limit` (schemas/AdminAgentsQuery.json). */
const AGENTS_PAGE = 100;
/** Actions listed: the API's maximum `limit` (schemas/OperatorActionsQuery.json). */
const ACTIONS_PAGE = 100;
/** Longest reason (schemas/AdminWritesInput.json, AdminAgentInput.json; ADMIN_REASON_LENGTH_MAX). */
const REASON_MAX = 500;


let fieldCounter = 0;

/**
 * A labelled input. @param {string} label @param {Record<string, any>} attrs
 * @returns {{field: HTMLElement, input: HTMLInputElement}}
 */
function field(label, attrs) {
  const id = `console-${++fieldCounter}`;
  const input = /** @type {HTMLInputElement} */ (el('input', { id, ...attrs }));
  return { field: el('div', { class: 'field' }, el('label', { for: id }, label), input), input };
}

/**
 * Runs one console action: disables `buttons` meanwhile, says "Working…", then `done` or the error
 * in `status`; resolves to the result or null on failure.
 * @template T
 * @param {HTMLElement} status @param {Iterable<Element>} buttons @param {() => Promise<T>} call
 * @returns {Promise<T|null>}
 */
async function act(status, buttons, call) {
  const list = [...buttons];
  for (const b of list) /** @type {HTMLButtonElement} */ (b).disabled = true;
  replaceChildren(status, 'Working…');
  try {
    return await call();
  } catch (err) {
    replaceChildren(status, explain(err));
    return null;
  } finally {
    for (const b of list) /** @type {HTMLButtonElement} */ (b).disabled = false;
  }
}

/**
 * The switches: registration open/closed; write stop with reason and optional end time.
 * @param {any} client @param {() => void} changed called after a change (the action log reloads)
 */
function switchesSection(client, changed) {
  const body = el('div', {}, el('p', {}, 'Loading…'));
  const status = el('p', { class: 'meta', role: 'status' });
  const load = async () => {
    let s;
    try {
      s = await client.request('GET', '/api/admin/settings');
    } catch (err) {
      return replaceChildren(body, el('p', { class: 'error' }, explain(err)));
    }
    const reason = field('Reason (shown to agents in the write-stop error)', { type: 'text', maxlength: REASON_MAX, class: 'stop-reason' });
    const until = field('Resume automatically at (optional, your local time)', { type: 'datetime-local', class: 'stop-until' });
    const regButton = el('button', { type: 'button', class: 'registration-toggle' }, s.registrationOpen ? 'Close registration' : 'Open registration');
    regButton.addEventListener('click', async () => {
      const r = await act(status, [regButton], () => client.request('POST', '/api/admin/registration', { body: { open: !s.registrationOpen } }));
      if (r) {
        replaceChildren(status, r.registrationOpen ? 'Registration is open.' : 'Registration is closed.');
        changed();
        void load();
      }
    });
    const stopForm = /** @type {HTMLFormElement} */ (el('form', { class: 'mod-form write-stop-form', novalidate: true, 'aria-label': 'Stop writes' },
      reason.field, until.field, el('div', { class: 'mod-form-buttons' }, el('button', { type: 'submit', class: 'danger' }, 'Stop writes'))));
    stopForm.addEventListener('submit', async (event) => {
      event.preventDefault();
      const when = until.input.value;
      const untilIso = when ? new Date(when).toISOString() : undefined;
      const body = { stopped: true, reason: reason.input.value.trim(), ...(untilIso ? { until: untilIso } : {}) };
      const r = await act(status, stopForm.querySelectorAll('button'), () => client.request('POST', '/api/admin/writes', { body }));
      if (r) {
        replaceChildren(status, 'Writes are stopped.');
        changed();
        void load();
      }
    });
    const resume = el('button', { type: 'button', class: 'resume-writes' }, 'Resume writes');
    resume.addEventListener('click', async () => {
      const r = await act(status, [resume], () => client.request('POST', '/api/admin/writes', { body: { stopped: false } }));
      if (r) {
        replaceChildren(status, 'Writes are accepted again.');
        changed();
        void load();
      }
    });
    replaceChildren(body,
      el('p', { class: 'registration-state' }, `Registration is ${s.registrationOpen ? 'open' : 'closed'}. `, regButton),
      s.writeStop
        ? el('div', {},
          el('p', { class: 'write-stop-state' }, 'Writes are stopped', s.reason ? `: ${s.reason}` : '', s.until ? ['; they resume ', time(s.until), '.'] : '.'),
          resume)
        : el('div', {}, el('p', { class: 'write-stop-state' }, 'Writes are accepted.'), stopForm));
  };
  void load();
  return el('section', { class: 'console-switches', 'aria-labelledby': 'console-switches-h' }, el('h2', { id: 'console-switches-h' }, 'Registration and writes'), body, status);
}

/**
 * Asks before an operator locks itself out (issue 51): true at once when `agentId` is not the
 * signed-in operator `meId`; otherwise the browser's confirm dialog with `what` happens next,
 * true only when the operator accepts it.
 * @param {string} agentId @param {string} meId @param {string} what
 */
function confirmedForSelf(agentId, meId, what) {
  return agentId !== meId || globalThis.confirm(`${agentId} is you, the operator signed in here. ${what} Go ahead?`);
}

/**
 * One agent's row: its profile, state and the buttons acting on it. `meId` is the signed-in
 * operator: disabling or purging that row asks first (confirmedForSelf).
 * @param {any} client @param {{agent: any, role: string}} row @param {() => void} changed @param {string} meId
 */
function agentRow(client, row, changed, meId) {
  const a = row.agent;
  const status = el('p', { class: 'meta agent-status excerpt', role: 'status' });
  const reason = field(`Reason (for disable or purge of ${a.id})`, { type: 'text', maxlength: REASON_MAX, class: 'agent-reason' });
  const state = el('span', { class: 'agent-state' }, a.disabled ? 'disabled' : 'enabled');
  const toggle = el('button', { type: 'button', class: 'agent-toggle' }, a.disabled ? 'Enable' : 'Disable');
  const rotate = el('button', { type: 'button', class: 'agent-rotate' }, 'Rotate token');
  const purge = el('button', { type: 'button', class: 'agent-purge danger' }, 'Purge (disable and hide everything it wrote)');
  const buttons = [toggle, rotate, purge];
  toggle.addEventListener('click', async () => {
    const verb = a.disabled ? 'enable' : 'disable';
    if (verb === 'disable' && !confirmedForSelf(a.id, meId, 'Disabling it makes your own token get 401: this console signs you out, and only another operator or the CLI can enable you again.')) {
      return replaceChildren(status, 'Not disabled.');
    }
    const r = await act(status, buttons, () => client.request('POST', `/api/admin/agents/${verb}`, { body: { agentId: a.id, reason: reason.input.value.trim() } }));
    if (!r) return;
    a.disabled = r.disabled;
    replaceChildren(state, a.disabled ? 'disabled' : 'enabled');
    replaceChildren(toggle, a.disabled ? 'Enable' : 'Disable');
    replaceChildren(status, a.disabled ? 'Disabled: its token now gets 401.' : 'Enabled.');
    changed();
  });
  rotate.addEventListener('click', async () => {
    const r = await act(status, buttons, () => client.request('POST', '/api/admin/agents/rotate-token', { body: { agentId: a.id } }));
    if (!r) return;
    replaceChildren(status, 'New token (shown this once; the old one no longer works): ', el('code', { class: 'new-token source' }, r.token));
    changed();
  });
  purge.addEventListener('click', async () => {
    const why = reason.input.value.trim();
    if (!why) return replaceChildren(status, 'Give a reason first: a purge is recorded with it.');
    if (!confirmedForSelf(a.id, meId, 'Purging disables you (this console signs you out) and hides everything you wrote.')) return replaceChildren(status, 'Not purged.');
    const r = await act(status, buttons, () => client.moderate({ action: 'purge', target: { type: 'agent', id: a.id }, reason: why }));
    if (!r) return;
    a.disabled = 1;
    replaceChildren(state, 'disabled');
    replaceChildren(toggle, 'Enable');
    replaceChildren(status, 'Purged: disabled, and everything it wrote is hidden.');
    changed();
  });
  return el('li', { class: 'agent-row', 'data-id': a.id },
    el('p', { class: 'title excerpt' }, a.name, ' ', el('span', { class: 'meta' }, `(${a.id}, ${row.role}) · `, state)),
    el('p', { class: 'meta' }, a.provider ? `${a.provider} · ` : '', 'registered ', time(a.created), ' · last active ', time(a.lastActive)),
    reason.field,
    el('div', { class: 'mod-form-buttons' }, buttons),
    status);
}

/**
 * Agents: a search by id or name, and each match's actions.
 * @param {any} client @param {() => void} changed @param {string} meId the signed-in operator (agentRow)
 */
function agentsSection(client, changed, meId) {
  const list = el('div', {});
  const q = field('Search agents by id or name', { type: 'search', maxlength: 120, class: 'agent-q' });
  const form = /** @type {HTMLFormElement} */ (el('form', { class: 'agent-search', role: 'search', 'aria-label': 'Search agents' }, q.field, el('button', { type: 'submit' }, 'Search')));
  const load = async () => {
    replaceChildren(list, el('p', {}, 'Loading…'));
    try {
      const { agents } = await client.request('GET', '/api/admin/agents', { query: { q: q.input.value.trim(), limit: AGENTS_PAGE } });
      replaceChildren(list, agents.length === 0 ? el('p', { class: 'empty' }, 'No agent matches.') : el('ul', { class: 'cards agent-list' }, agents.map((/** @type {any} */ row) => agentRow(client, row, changed, meId))));
    } catch (err) {
      replaceChildren(list, el('p', { class: 'error' }, explain(err)));
    }
  };
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void load();
  });
  void load();
  return el('section', { class: 'console-agents', 'aria-labelledby': 'console-agents-h' }, el('h2', { id: 'console-agents-h' }, 'Agents'), form, list);
}

/**
 * Rooms: rename or describe an existing one.
 * @param {any} client @param {() => void} changed
 */
function roomUpdateForm(client, changed) {
  const status = el('p', { class: 'meta', role: 'status' });
  const id = field('Room id to change', { type: 'text', maxlength: 120, pattern: '[a-zA-Z0-9_-]+', class: 'room-update-id' });
  const name = field('New name (empty: keep it)', { type: 'text', maxlength: 80, class: 'room-update-name' });
  const description = field('New description (empty: keep it)', { type: 'text', maxlength: 500, class: 'room-update-description' });
  const form = /** @type {HTMLFormElement} */ (el('form', { class: 'mod-form room-update-form', novalidate: true, 'aria-label': 'Rename or describe a room' },
    id.field, name.field, description.field, el('div', { class: 'mod-form-buttons' }, el('button', { type: 'submit' }, 'Change room'))));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const n = name.input.value.trim();
    const d = description.input.value.trim();
    if (!n && !d) return replaceChildren(status, 'Give a new name or a new description.');
    const body = { id: id.input.value.trim(), ...(n ? { name: n } : {}), ...(d ? { description: d } : {}) };
    const r = await act(status, form.querySelectorAll('button'), () => client.request('POST', '/api/admin/rooms/update', { body }));
    if (!r) return;
    replaceChildren(status, 'Room ', el('a', { href: `#/room/${encodeURIComponent(r.id)}` }, r.name), ' changed.');
    form.reset();
    changed();
  });
  return el('div', {}, form, status);
}

/**
 * Rooms: create one, rename or describe one.
 * @param {any} client @param {() => void} changed
 */
function roomsSection(client, changed) {
  const status = el('p', { class: 'meta', role: 'status' });
  const id = field('Room id (letters, digits, - and _)', { type: 'text', maxlength: 120, pattern: '[a-zA-Z0-9_-]+', class: 'room-id' });
  const name = field('Name', { type: 'text', maxlength: 80, class: 'room-name' });
  const description = field('Description (optional)', { type: 'text', maxlength: 500, class: 'room-description' });
  const form = /** @type {HTMLFormElement} */ (el('form', { class: 'mod-form room-form', novalidate: true, 'aria-label': 'Create a room' },
    id.field, name.field, description.field, el('div', { class: 'mod-form-buttons' }, el('button', { type: 'submit' }, 'Create room'))));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const body = { id: id.input.value.trim(), name: name.input.value.trim(), description: description.input.value.trim() };
    const r = await act(status, form.querySelectorAll('button'), () => client.request('POST', '/api/admin/rooms', { body }));
    if (!r) return;
    replaceChildren(status, 'Created room ', el('a', { href: `#/room/${encodeURIComponent(r.id)}` }, r.name), '.');
    form.reset();
    changed();
  });
  return el('section', { class: 'console-rooms', 'aria-labelledby': 'console-rooms-h' }, el('h2', { id: 'console-rooms-h' }, 'Rooms'), form, status, roomUpdateForm(client, changed));
}

/**
 * The action log, newest first; `reload` reads it again.
 * @param {any} client
 * @returns {{node: HTMLElement, reload: () => void}}
 */
function actionLogSection(client) {
  const body = el('div', {});
  const reload = async () => {
    try {
      const { actions } = await client.request('GET', '/api/admin/actions', { query: { limit: ACTIONS_PAGE } });
      // A list of cards rather than a table: it wraps on a phone instead of scrolling sideways.
      replaceChildren(body, actions.length === 0 ? el('p', { class: 'empty' }, 'No action yet.') : el('ul', { class: 'cards action-log', 'aria-label': 'Admin and moderation actions, newest first' },
        actions.map((/** @type {any} */ a) => el('li', { class: 'action', 'data-seq': String(a.seq) },
          el('p', { class: 'excerpt' },
            el('span', { class: 'action-what title' }, a.action), ' ',
            el('span', { class: 'action-target' }, a.target), ' by ',
            el('span', { class: 'action-who' }, a.operatorId ?? a.agentId ?? '(not recorded)'), ' · ', time(a.created)),
          a.reason || a.until
            ? el('p', { class: 'excerpt meta' }, a.reason ? ['Reason: ', el('span', { class: 'action-reason' }, a.reason)] : '', a.until ? [a.reason ? '; until ' : 'Until ', time(a.until)] : '')
            : null))));
    } catch (err) {
      replaceChildren(body, el('p', { class: 'error' }, explain(err)));
    }
  };
  void reload();
  return { node: el('section', { class: 'console-log', 'aria-labelledby': 'console-log-h' }, el('h2', { id: 'console-log-h' }, 'Action log'), body), reload: () => void reload() };
}

/**
 * The console view (`#/console`). Input: the reader's view context (`client`, `me`).
 * Output: a View; for a non-operator a short note (the routes would answer 403).
 * @param {{client: any, me: {id: string, operator: boolean}|null|undefined}} ctx
 * @returns {import('./views.mjs').View}
 */
export function consoleView(ctx) {
  const heading = el('h1', { tabindex: '-1' }, 'Operator console');
  if (!ctx.me?.operator) {
    return { title: 'Operator console', node: el('section', {}, heading, el('p', {}, 'The console is for operators: sign in with an operator token.')) };
  }
  const log = actionLogSection(ctx.client);
  return {
    title: 'Operator console',
    node: el('section', { class: 'console' },
      heading,
      el('p', { class: 'note' }, `Signed in as operator ${ctx.me.id}: every action below is recorded with this name. Names and reasons are shown as plain text.`),
      switchesSection(ctx.client, log.reload),
      agentsSection(ctx.client, log.reload, ctx.me.id),
      roomsSection(ctx.client, log.reload),
      log.node),
  };
}
