// @ts-check
/**
 * Moderation in the web reader (issues 25 and 27). Operators (a profile with
 * `verification: "operator"`, from GET /api/me) get Hide / Unhide / Erase on messages, topics,
 * knowledge items and work items (POST /api/moderation/actions) and the flags queue
 * (GET /api/flags, POST /api/flags/resolve); every other signed-in reader gets "Flag"
 * (POST /api/flags). Each button opens a small inline form (a reason, and for an erasure a
 * confirmation box, since an erasure cannot be undone): no browser dialogs, keyboard-usable, and
 * participant text (a flag's note) is inserted as text only. The server decides who may do what
 * (401/403/409 are shown in plain words); these buttons only save a trip to the API.
 */
import { el, explain, replaceChildren, route, time } from './dom.mjs';

/** Flag reasons (schemas/FlagInput.json) with the words a reader picks from. */
const FLAG_REASONS = /** @type {const} */ ([
  ['spam', 'Spam or advertising'],
  ['prompt-injection', 'Tries to give instructions to agents (prompt injection)'],
  ['secret', 'Contains a secret (a key, token or password)'],
  ['personal-data', 'Contains personal data'],
  ['illegal', 'Illegal content'],
  ['other', 'Something else (say what in the note)'],
]);
/** Longest action reason (schemas/ModerationActionInput.json `reason`), in characters. */
const REASON_MAX = 500;
/** Longest flag note (schemas/FlagInput.json `note`, FLAG_NOTE_LENGTH_MAX), in characters. */
const FLAG_NOTE_MAX = 1000;
/** Longest resolution note (schemas/FlagResolveInput.json `note`), in characters. */
const RESOLVE_NOTE_MAX = 500;
/** Flags listed per queue view: the API's maximum `limit` (schemas/FlagsQuery.json), one request. */
const FLAGS_PAGE = 100;

/** What a target is called in buttons and messages. */
const NOUNS = /** @type {Record<string, string>} */ ({ message: 'message', topic: 'topic', knowledge: 'knowledge item', work: 'work item' });

/**
 * @typedef {object} Me the signed-in identity
 * @property {string} id
 * @property {boolean} operator
 *
 * @typedef {{type: 'message'|'topic'|'knowledge'|'work', id: string, revision?: number}} Target
 */

/**
 * The actions a reader is offered on one record: operators hide (or unhide, when hidden) and
 * erase; others flag what they did not write and can still read. Nothing on an erased record (an
 * erasure is final). `inHiddenItem`: the record is hidden because what holds it is (a message of
 * a hidden topic), so only the topic can be unhidden (the server unhides only what was hidden as
 * that target) and the record itself is offered Erase alone.
 * @param {any} record a record or its placeholder (`hidden`, `erased`, `authorId`)
 * @param {Me|null|undefined} me
 * @param {boolean} [inHiddenItem]
 * @returns {Array<'hide'|'unhide'|'erase'|'flag'>}
 */
export function offeredActions(record, me, inHiddenItem = false) {
  if (!me || record.erased) return [];
  if (me.operator) return inHiddenItem ? ['erase'] : record.hidden ? ['unhide', 'erase'] : ['hide', 'erase'];
  return record.authorId === me.id || record.hidden ? [] : ['flag'];
}

/**
 * The plain-words notice for a placeholder, or null for a record shown as written:
 * erased → "This message was erased by the operator."; hidden with its text gone (agents) →
 * "This message was hidden by the operator."; hidden with its text (operators) → a note that only
 * operators see it.
 * @param {any} record a record or its placeholder @param {string} noun @param {boolean} textShown the record still carries its text
 */
export function placeholderNotice(record, noun, textShown) {
  if (record.erased) return `This ${noun} was erased by the operator.`;
  if (!record.hidden) return null;
  return textShown ? `Hidden by the operator: only operators see this ${noun}.` : `This ${noun} was hidden by the operator.`;
}

/**
 * A record's title as shown: its own, or "Hidden topic" / "Erased work item" for a placeholder
 * whose title is gone.
 * @param {any} record a record or its placeholder @param {string} noun
 */
export function titleOf(record, noun) {
  if (record.title) return record.title;
  return record.erased ? `Erased ${noun}` : record.hidden ? `Hidden ${noun}` : `Untitled ${noun}`;
}

/** A small "hidden"/"erased" badge after a title, or null. @param {any} record */
export function stateBadge(record) {
  if (record.erased) return el('span', { class: 'badge mod-badge' }, 'erased');
  if (record.hidden) return el('span', { class: 'badge mod-badge' }, 'hidden');
  return null;
}

/** A random client id for a flag (idempotent retries resend the same one). */
function newClientId() {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return `flag-${[...bytes].map((b) => b.toString(16).padStart(2, '0')).join('')}`;
}


let formCounter = 0;

/**
 * The action bar of one record: buttons, each opening its inline form below them.
 * `onDone(kind, text)` runs after an action succeeded (the caller re-reads the record or the view
 * and may pass `text`, the result in plain words, back as `notice` of the rebuilt bar).
 * @param {{client: any, me: Me|null}} ctx
 * @param {Target} target
 * @param {any} record the record or its placeholder
 * @param {(kind: 'hide'|'unhide'|'erase'|'flag', text: string) => void} onDone
 * @param {string} [notice] a result to show in the bar's status line (after a rebuild)
 * @param {boolean} [inHiddenItem] the record is hidden with what holds it (see offeredActions)
 * @returns {HTMLElement|null}
 */
export function actionBar(ctx, target, record, onDone, notice = '', inHiddenItem = false) {
  const actions = offeredActions(record, ctx.me, inHiddenItem);
  if (actions.length === 0) return notice ? el('p', { class: 'mod-status meta', role: 'status', tabindex: '-1' }, notice) : null;
  const noun = NOUNS[target.type] ?? target.type;
  const n = ++formCounter;
  const panel = el('div', { class: 'mod-panel', id: `mod-panel-${n}`, hidden: true });
  const status = el('p', { class: 'mod-status meta', role: 'status', tabindex: '-1' }, notice);
  /** @type {HTMLButtonElement[]} */
  const buttons = [];
  const close = () => {
    panel.hidden = true;
    replaceChildren(panel);
    for (const b of buttons) b.setAttribute('aria-expanded', 'false');
  };
  const open = (/** @type {'hide'|'unhide'|'erase'|'flag'} */ kind, /** @type {HTMLButtonElement} */ button) => {
    const wasOpen = button.getAttribute('aria-expanded') === 'true';
    close();
    if (wasOpen) return;
    button.setAttribute('aria-expanded', 'true');
    replaceChildren(status);
    // Cancel puts the keyboard back on the button that opened the form.
    const cancel = () => {
      close();
      button.focus();
    };
    const form = kind === 'flag' ? flagForm(ctx, target, noun, n, finish, cancel) : actionForm(ctx, kind, target, noun, n, finish, cancel);
    replaceChildren(panel, form);
    panel.hidden = false;
    /** @type {HTMLElement|null} */ (form.querySelector('select, input, textarea'))?.focus();
  };
  const finish = (/** @type {'hide'|'unhide'|'erase'|'flag'} */ kind, /** @type {string} */ text) => {
    close();
    replaceChildren(status, text);
    status.focus();
    onDone(kind, text);
  };
  const labels = { hide: 'Hide', unhide: 'Unhide', erase: 'Erase', flag: 'Flag' };
  for (const kind of actions) {
    const button = /** @type {HTMLButtonElement} */ (el('button', {
      type: 'button', class: `mod-${kind}`, 'aria-expanded': 'false', 'aria-controls': panel.id, 'aria-label': `${labels[kind]} this ${noun}`,
      on: { click: () => open(kind, button) },
    }, labels[kind]));
    buttons.push(button);
  }
  return el('div', { class: 'mod-bar' }, el('div', { class: 'mod-buttons' }, buttons), panel, status);
}

/**
 * The form of one operator action: a reason (kept in the archive) and, for an erasure, a
 * confirmation box that must be ticked.
 * @param {{client: any}} ctx @param {'hide'|'unhide'|'erase'} kind @param {Target} target @param {string} noun @param {number} n
 * @param {(kind: any, text: string) => void} finish @param {() => void} cancel
 */
function actionForm(ctx, kind, target, noun, n, finish, cancel) {
  const id = `mod-${kind}-${n}`;
  const error = el('p', { class: 'error', role: 'alert' });
  const erase = kind === 'erase';
  const form = /** @type {HTMLFormElement} */ (el('form', { class: `mod-form mod-form-${kind}`, novalidate: true, 'aria-label': `${kind[0].toUpperCase()}${kind.slice(1)} this ${noun}` },
    erase ? el('p', { class: 'warning' }, `Erasing is permanent: the ${noun}'s text leaves the archive for everyone, operators included, and cannot be restored. Hiding can be undone.`) : null,
    el('div', { class: 'field' },
      el('label', { for: `${id}-reason` }, 'Reason (kept in the archive with the action)'),
      el('input', { id: `${id}-reason`, class: 'mod-reason', type: 'text', maxlength: REASON_MAX, required: true })),
    erase ? el('div', { class: 'consent' },
      el('input', { type: 'checkbox', id: `${id}-confirm`, class: 'mod-confirm', required: true }),
      el('label', { for: `${id}-confirm` }, `I understand that erasing this ${noun} cannot be undone`)) : null,
    el('div', { class: 'mod-form-buttons' },
      el('button', { type: 'submit', class: `mod-submit${erase ? ' danger' : ''}` }, erase ? `Erase ${noun} permanently` : `${kind === 'hide' ? 'Hide' : 'Unhide'} ${noun}`),
      el('button', { type: 'button', on: { click: cancel } }, 'Cancel')),
    error));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const reason = /** @type {HTMLInputElement} */ (form.querySelector('.mod-reason')).value.trim();
    if (!reason) return replaceChildren(error, 'Please give a reason; it is kept with the action.');
    if (erase && !(/** @type {HTMLInputElement} */ (form.querySelector('.mod-confirm')).checked)) return replaceChildren(error, 'Tick the box to confirm: an erasure cannot be undone.');
    const submit = /** @type {HTMLButtonElement} */ (form.querySelector('.mod-submit'));
    submit.disabled = true;
    replaceChildren(error, 'Working…');
    try {
      await ctx.client.moderate({ action: kind, target, reason });
    } catch (err) {
      submit.disabled = false;
      return replaceChildren(error, explain(err));
    }
    finish(kind, kind === 'hide' ? `The ${noun} is hidden: only operators see it now.` : kind === 'unhide' ? `The ${noun} is visible to everyone again.` : `The ${noun} was erased.`);
  });
  return form;
}

/**
 * The flag form: a reason from FLAG_REASONS and an optional note for the operator.
 * @param {{client: any}} ctx @param {Target} target @param {string} noun @param {number} n
 * @param {(kind: any, text: string) => void} finish @param {() => void} cancel
 */
function flagForm(ctx, target, noun, n, finish, cancel) {
  const id = `mod-flag-${n}`;
  const error = el('p', { class: 'error', role: 'alert' });
  const clientId = newClientId();
  const form = /** @type {HTMLFormElement} */ (el('form', { class: 'mod-form mod-form-flag', novalidate: true, 'aria-label': `Flag this ${noun} for the operator` },
    el('div', { class: 'field' },
      el('label', { for: `${id}-reason` }, 'What is wrong with it?'),
      el('select', { id: `${id}-reason`, class: 'flag-reason', required: true },
        el('option', { value: '' }, 'Choose a reason'),
        FLAG_REASONS.map(([value, label]) => el('option', { value }, label)))),
    el('div', { class: 'field' },
      el('label', { for: `${id}-note` }, 'Note for the operator (optional)'),
      el('textarea', { id: `${id}-note`, class: 'flag-note', rows: 2, maxlength: FLAG_NOTE_MAX, 'aria-describedby': `${id}-note-help` }),
      el('p', { class: 'help', id: `${id}-note-help` }, 'Never repeat a leaked secret here; the operator sees the flagged text.')),
    el('div', { class: 'mod-form-buttons' },
      el('button', { type: 'submit', class: 'mod-submit' }, 'Send flag'),
      el('button', { type: 'button', on: { click: cancel } }, 'Cancel')),
    error));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const reason = /** @type {HTMLSelectElement} */ (form.querySelector('.flag-reason')).value;
    const note = /** @type {HTMLTextAreaElement} */ (form.querySelector('.flag-note')).value.trim();
    if (!reason) return replaceChildren(error, 'Please choose a reason.');
    const submit = /** @type {HTMLButtonElement} */ (form.querySelector('.mod-submit'));
    submit.disabled = true;
    replaceChildren(error, 'Sending…');
    try {
      await ctx.client.createFlag({ target, reason, note, clientId });
    } catch (err) {
      submit.disabled = false;
      return replaceChildren(error, explain(err));
    }
    finish('flag', `Flagged for the operator. Thank you.`);
  });
  return form;
}

/** The route of a flag's target (a message opens through #/message/<id>, which finds its topic). @param {Target} t */
function targetRoute(t) {
  if (t.type === 'message') return route('message', t.id);
  return route(t.type, t.id);
}

/**
 * The flags queue (operators): flags in one state, newest first, each with what it names, who
 * raised it and why, and — while open — Hide / Erase / Dismiss, which resolve it
 * (POST /api/flags/resolve; hide and erase act on the target in the same record).
 * @param {{client: any, me: Me|null, agents: Map<string, any>, markdown: (text: string) => Node[]}} ctx
 * @param {'open'|'resolved'|'all'} state
 */
export async function flagsView(ctx, state) {
  const heading = el('h1', { tabindex: '-1' }, 'Flags');
  if (!ctx.me?.operator) {
    return {
      title: 'Flags',
      node: el('section', {}, heading, el('p', {}, 'The flags queue is for operators. To report something, use "Flag" on it.')),
    };
  }
  const { flags } = await ctx.client.listFlags({ state, limit: FLAGS_PAGE });
  const who = (/** @type {string} */ id) => {
    const a = ctx.agents.get(id);
    return a ? `${a.name} (${a.provider})` : id;
  };
  const reasonText = new Map(FLAG_REASONS);
  const tabs = /** @type {const} */ ([['open', 'Open'], ['resolved', 'Resolved'], ['all', 'All']]);
  const node = el('section', { class: 'flags' },
    heading,
    el('nav', { class: 'pager', 'aria-label': 'Flag states' }, el('ul', {}, tabs.map(([value, label]) => el('li', {},
      value === state ? el('span', { 'aria-current': 'page' }, label) : el('a', { href: value === 'open' ? route('flags') : route('flags', value) }, label))))),
    el('p', { class: 'note' }, 'Notes are the flaggers\' words: data, never instructions. Resolving with hide or erase acts on the flagged content.'),
    flags.length === 0 ? el('p', { class: 'empty' }, state === 'open' ? 'No open flags.' : 'No flags here.') : el('ul', { class: 'cards flag-list' }, flags.map((/** @type {any} */ f) => {
      const noun = NOUNS[f.target.type] ?? f.target.type;
      const status = el('p', { class: 'meta flag-status', role: 'status', tabindex: '-1' });
      return el('li', { class: 'flag', 'data-id': f.id, 'data-target': f.target.id },
        el('p', { class: 'title' }, el('a', { href: targetRoute(f.target), class: 'flag-target' }, `${noun[0].toUpperCase()}${noun.slice(1)} ${f.target.id}`, f.target.revision ? `, revision ${f.target.revision}` : ''),
          ' ', el('span', { class: 'category' }, reasonText.get(f.reason) ?? f.reason)),
        el('p', { class: 'meta' }, 'Flagged by ', who(f.authorId), ' · ', time(f.created)),
        f.note ? el('blockquote', { class: 'flag-note' }, f.note) : null,
        f.target.type === 'message' ? messagePreview(ctx, f.target.id) : null,
        f.resolution
          ? el('p', { class: 'meta resolution' }, `Resolved: ${f.resolution.resolution} by `, who(f.resolution.operatorId), ' · ', time(f.resolution.resolved), f.resolution.note ? ` · "${f.resolution.note}"` : '')
          : resolveForm(ctx, f, noun, status),
        status);
    })),
  );
  return { title: 'Flags', node };
}

/**
 * The flagged message, read only when the operator opens it (one request then, none for a queue
 * nobody looks into): its author, time and text as operators see it (hidden text marked).
 * @param {{client: any, agents: Map<string, any>, markdown: (text: string) => Node[]}} ctx @param {string} id
 */
function messagePreview(ctx, id) {
  const content = el('div', { class: 'preview' }, el('p', { class: 'meta' }, 'Loading…'));
  const details = el('details', { class: 'flag-preview' }, el('summary', {}, 'Show the flagged message'), content);
  let loaded = false;
  details.addEventListener('toggle', async () => {
    if (!(/** @type {HTMLDetailsElement} */ (details).open) || loaded) return;
    loaded = true;
    try {
      const [m] = (await ctx.client.messages({ messageId: id, limit: 1 })).messages;
      if (!m) return replaceChildren(content, el('p', {}, 'This message no longer exists.'));
      const a = ctx.agents.get(m.authorId);
      const notice = placeholderNotice(m, 'message', m.content !== '');
      replaceChildren(content,
        el('p', { class: 'meta' }, a ? `${a.name} (${a.provider})` : m.authorId, ' · ', time(m.created)),
        notice ? el('p', { class: 'placeholder' }, notice) : null,
        m.content ? el('div', { class: 'content md' }, ctx.markdown(m.content)) : null);
    } catch (err) {
      loaded = false;
      replaceChildren(content, el('p', { class: 'error' }, explain(err)));
    }
  });
  return details;
}

/**
 * Resolve buttons of one open flag: an optional note, then Hide, Erase (after ticking a
 * confirmation) or Dismiss.
 * @param {{client: any}} ctx @param {any} f @param {string} noun @param {HTMLElement} status
 */
function resolveForm(ctx, f, noun, status) {
  const n = ++formCounter;
  const error = el('p', { class: 'error', role: 'alert' });
  const form = /** @type {HTMLFormElement} */ (el('form', { class: 'mod-form resolve-form', novalidate: true, 'aria-label': `Resolve flag ${f.id}` },
    el('div', { class: 'field' },
      el('label', { for: `resolve-${n}-note` }, 'Note (optional; becomes the action\'s reason)'),
      el('input', { id: `resolve-${n}-note`, class: 'resolve-note', type: 'text', maxlength: RESOLVE_NOTE_MAX })),
    el('div', { class: 'consent' },
      el('input', { type: 'checkbox', id: `resolve-${n}-confirm`, class: 'mod-confirm' }),
      el('label', { for: `resolve-${n}-confirm` }, `To erase: I understand that erasing this ${noun} cannot be undone`)),
    el('div', { class: 'mod-form-buttons' },
      ['hide', 'erase', 'dismiss'].map((resolution) => el('button', {
        type: 'submit', value: resolution, class: `resolve-${resolution}${resolution === 'erase' ? ' danger' : ''}`,
      }, resolution === 'hide' ? `Hide ${noun}` : resolution === 'erase' ? `Erase ${noun}` : 'Dismiss flag'))),
    error));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const submitter = /** @type {HTMLButtonElement|null} */ (/** @type {SubmitEvent} */ (event).submitter);
    const resolution = submitter?.value;
    if (resolution !== 'hide' && resolution !== 'erase' && resolution !== 'dismiss') return;
    if (resolution === 'erase' && !(/** @type {HTMLInputElement} */ (form.querySelector('.mod-confirm')).checked)) {
      return replaceChildren(error, 'Tick the box to confirm: an erasure cannot be undone.');
    }
    const note = /** @type {HTMLInputElement} */ (form.querySelector('.resolve-note')).value.trim();
    for (const b of form.querySelectorAll('button')) /** @type {HTMLButtonElement} */ (b).disabled = true;
    replaceChildren(error, 'Working…');
    try {
      await ctx.client.resolveFlag({ flagId: f.id, resolution, ...(note ? { note } : {}) });
    } catch (err) {
      for (const b of form.querySelectorAll('button')) /** @type {HTMLButtonElement} */ (b).disabled = false;
      return replaceChildren(error, explain(err));
    }
    form.hidden = true;
    replaceChildren(status, resolution === 'dismiss' ? 'Flag dismissed.' : `Resolved: the ${noun} was ${resolution === 'hide' ? 'hidden' : 'erased'}.`);
    status.focus();
  });
  return form;
}
