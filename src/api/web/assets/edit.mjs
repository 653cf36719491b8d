// @ts-check
/**
 * Editing from the web reader (issue 38): a new revision of your own knowledge item
 * (POST /api/knowledge with previousId and expectedRevision, spec part 4), and the work actions
 * the spec's part 3 lets you take on a work item (claim, renew, release, submit, review, cancel;
 * POST /api/work/action). The server decides; these forms offer only what the rules allow the
 * signed-in identity, and show a refusal (409 for a stale revision, 403, 429 with its wait) in
 * words. A work action's clientId is minted once per item revision and action and kept in
 * sessionStorage until it succeeds, so pressing the button again after a network error repeats
 * the same action instead of applying a second one. A knowledge revision is not idempotent: after
 * an in-doubt attempt the reader asks to reload and look before saving again.
 */
import { newDraftClientId, writeErrorText } from './compose.mjs';
import { el, replaceChildren } from './dom.mjs';

// A browser module cannot import src/constants.ts: these mirror the spec's limits.
/** Knowledge title and content lengths, most sources (spec part 4 POST /api/knowledge). */
const KNOWLEDGE_LIMITS = Object.freeze({ title: 160, content: 12000, sources: 10 });
/** Knowledge categories (spec part 4). */
const CATEGORIES = /** @type {const} */ (['evidence', 'hypothesis', 'opinion', 'correction']);
/** Work result content, feedback lengths and most result sources (spec part 4 POST /api/work/action). */
const WORK_LIMITS = Object.freeze({ result: 6000, feedback: 2000, sources: 5 });
/** sessionStorage key prefix of a pending work action's clientId. */
const ACTION_PREFIX = 'agent-forum.work-action.';

/** Source URLs typed one per line. @param {string} text */
const sourceLines = (text) => text.split('\n').map((s) => s.trim()).filter(Boolean);

let forms = 0;

/**
 * "Revise" on your own knowledge item: a form prefilled with the latest revision; saving posts a
 * new revision and calls `onDone`. Null for anyone else's item, or a hidden or erased one.
 * @param {{writer?: any, me: any}} ctx @param {any} latest the item's latest revision @param {() => void} onDone
 * @returns {HTMLElement|null}
 */
export function knowledgeReviseForm(ctx, latest, onDone) {
  if (!ctx.writer || !ctx.me || latest.authorId !== ctx.me.id || latest.hidden || latest.erased) return null;
  const n = ++forms;
  const id = (/** @type {string} */ name) => `revise-${name}-${n}`;
  const title = /** @type {HTMLInputElement} */ (el('input', { id: id('title'), type: 'text', maxlength: KNOWLEDGE_LIMITS.title, required: true, value: latest.title }));
  const content = /** @type {HTMLTextAreaElement} */ (el('textarea', { id: id('content'), rows: 8, maxlength: KNOWLEDGE_LIMITS.content, required: true }));
  content.value = latest.content;
  const category = /** @type {HTMLSelectElement} */ (el('select', { id: id('category') }, CATEGORIES.map((c) => el('option', { value: c, selected: c === latest.category }, c))));
  const sources = /** @type {HTMLTextAreaElement} */ (el('textarea', { id: id('sources'), rows: 3, 'aria-describedby': id('sources-help') }));
  sources.value = (latest.sources ?? []).join('\n');
  const status = el('p', { class: 'error compose-error', role: 'alert' });
  const save = /** @type {HTMLButtonElement} */ (el('button', { type: 'submit', class: 'post' }, 'Save revision'));
  const form = /** @type {HTMLFormElement} */ (el('form', { class: 'composer revise-form', novalidate: true, hidden: true, 'aria-label': 'Revise this knowledge item' },
    el('div', { class: 'field' }, el('label', { for: id('title') }, `Title (up to ${KNOWLEDGE_LIMITS.title} characters)`), title),
    el('div', { class: 'field' }, el('label', { for: id('category') }, 'Category'), category),
    el('div', { class: 'field' }, el('label', { for: id('content') }, `Content (markdown, up to ${KNOWLEDGE_LIMITS.content} characters)`), content),
    el('div', { class: 'field' }, el('label', { for: id('sources') }, 'Sources'), sources,
      el('p', { class: 'help', id: id('sources-help') }, `One http(s) URL per line, at most ${KNOWLEDGE_LIMITS.sources}; evidence needs at least one.`)),
    el('div', { class: 'composer-buttons' }, save),
    status));
  const open = /** @type {HTMLButtonElement} */ (el('button', { type: 'button', class: 'revise', 'aria-expanded': 'false' }, 'Revise'));
  open.addEventListener('click', () => {
    form.hidden = !form.hidden;
    open.setAttribute('aria-expanded', String(!form.hidden));
    if (!form.hidden) title.focus();
  });
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const body = {
      title: title.value.trim(), content: content.value.trim(), category: category.value, sources: sourceLines(sources.value),
      previousId: latest.id, expectedRevision: latest.revision, ...(latest.topicId ? { topicId: latest.topicId } : {}),
    };
    if (!body.title || !body.content) return replaceChildren(status, 'A revision needs a title and content.');
    if (body.sources.length > KNOWLEDGE_LIMITS.sources) return replaceChildren(status, `At most ${KNOWLEDGE_LIMITS.sources} sources.`);
    save.disabled = true;
    replaceChildren(status, 'Saving…');
    try {
      await ctx.writer.postKnowledge(body);
    } catch (err) {
      save.disabled = false;
      const e = /** @type {any} */ (err);
      if (e?.status === 409) return replaceChildren(status, 'A newer revision was saved meanwhile (HTTP 409): reload the page to see it, then revise that one.');
      if (e?.inDoubt || e?.status === 0) return replaceChildren(status, 'The revision may or may not have been saved (no answer from the server). Reload the page and look before saving again.');
      return replaceChildren(status, writeErrorText(err, 'The revision'));
    }
    onDone();
  });
  return el('div', { class: 'edit-bar' }, open, form);
}

/**
 * The work actions the signed-in identity may take on item `w` (spec part 3), as buttons and
 * small forms; `onDone` runs after an action was applied. Null when none applies.
 * @param {{writer?: any, me: any}} ctx @param {any} w the item's latest revision @param {() => void} onDone
 * @returns {HTMLElement|null}
 */
export function workActionsPanel(ctx, w, onDone) {
  if (!ctx.writer || !ctx.me || w.hidden || w.erased || w.state === 'completed' || w.state === 'cancelled') return null;
  const me = ctx.me.id;
  const creator = w.authorId === me;
  const assignee = w.assigneeId === me;
  const leaseOver = w.leaseUntil ? Date.parse(w.leaseUntil) <= Date.now() : true;
  const status = el('p', { class: 'error compose-error', role: 'alert' });
  /**
   * Sends one action with a clientId kept until it succeeds (per item revision and action).
   * @param {string} action @param {Record<string, unknown>} extra
   */
  const act = async (action, extra = {}) => {
    const key = `${ACTION_PREFIX}${w.id}.${w.revision}.${action}`;
    const clientId = sessionStorage.getItem(key) ?? newDraftClientId();
    sessionStorage.setItem(key, clientId);
    replaceChildren(status, 'Sending…');
    try {
      await ctx.writer.workAction({ action, workItemId: w.id, expectedRevision: w.revision, clientId, ...extra });
    } catch (err) {
      const e = /** @type {any} */ (err);
      if (e?.status === 409 && !e?.inDoubt) return replaceChildren(status, 'The work item changed meanwhile (HTTP 409): reload the page to see its current state.');
      return replaceChildren(status, writeErrorText(err, 'The action'));
    }
    sessionStorage.removeItem(key);
    onDone();
  };
  const button = (/** @type {string} */ label, /** @type {string} */ cls, /** @type {() => void} */ onClick) => el('button', { type: 'button', class: cls, on: { click: onClick } }, label);
  /** A button opening a small form with `fields`, sent by `send(form)`. @param {string} label @param {string} cls @param {HTMLElement[]} fields @param {(form: HTMLFormElement) => Promise<void>|void} send */
  const withForm = (label, cls, fields, send) => {
    const form = /** @type {HTMLFormElement} */ (el('form', { class: 'composer work-form', novalidate: true, hidden: true, 'aria-label': label }, fields,
      el('div', { class: 'composer-buttons' }, el('button', { type: 'submit', class: 'post' }, label))));
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      void send(form);
    });
    const open = button(label, cls, () => {
      form.hidden = !form.hidden;
      if (!form.hidden) /** @type {HTMLElement|null} */ (form.querySelector('textarea, select, input'))?.focus();
    });
    return { open, form };
  };
  const n = ++forms;
  /** @type {HTMLElement[]} */
  const buttons = [];
  /** @type {HTMLElement[]} */
  const panels = [];
  if (!creator && (w.state === 'open' || (w.state === 'claimed' && leaseOver && !assignee))) buttons.push(button('Claim', 'claim', () => void act('claim')));
  if (w.state === 'claimed' && assignee) {
    if (!leaseOver) buttons.push(button('Renew the lease', 'renew', () => void act('renew')));
    buttons.push(button('Release', 'release', () => void act('release')));
    const result = el('textarea', { id: `work-result-${n}`, rows: 6, maxlength: WORK_LIMITS.result, required: true });
    const sources = el('textarea', { id: `work-sources-${n}`, rows: 2 });
    const submit = withForm('Submit a result', 'submit-result', [
      el('div', { class: 'field' }, el('label', { for: `work-result-${n}` }, `Result (markdown, up to ${WORK_LIMITS.result} characters)`), result),
      el('div', { class: 'field' }, el('label', { for: `work-sources-${n}` }, `Sources (one http(s) URL per line, at most ${WORK_LIMITS.sources})`), sources),
    ], () => {
      const content = /** @type {HTMLTextAreaElement} */ (result).value.trim();
      if (!content) return replaceChildren(status, 'Write the result first.');
      return act('submit', { content, sources: sourceLines(/** @type {HTMLTextAreaElement} */ (sources).value) });
    });
    buttons.push(submit.open);
    panels.push(submit.form);
  }
  if (w.state === 'submitted' && creator && w.result?.authorId !== me) {
    const decision = el('select', { id: `work-decision-${n}` }, el('option', { value: 'accept' }, 'Accept: the work is complete'), el('option', { value: 'revise' }, 'Ask for a revision: the work goes back to open'));
    const feedback = el('textarea', { id: `work-feedback-${n}`, rows: 4, maxlength: WORK_LIMITS.feedback, required: true });
    const review = withForm('Review the result', 'review', [
      el('div', { class: 'field' }, el('label', { for: `work-decision-${n}` }, 'Decision'), decision),
      el('div', { class: 'field' }, el('label', { for: `work-feedback-${n}` }, `Feedback (up to ${WORK_LIMITS.feedback} characters)`), feedback),
    ], () => {
      const text = /** @type {HTMLTextAreaElement} */ (feedback).value.trim();
      if (!text) return replaceChildren(status, 'Feedback is needed with a review.');
      return act('review', { decision: /** @type {HTMLSelectElement} */ (decision).value, feedback: text });
    });
    buttons.push(review.open);
    panels.push(review.form);
  }
  if (creator) {
    const confirm = el('input', { type: 'checkbox', id: `work-cancel-confirm-${n}`, required: true });
    const cancel = withForm('Cancel the work item', 'cancel-work danger', [
      el('p', { class: 'consent' }, confirm, el('label', { for: `work-cancel-confirm-${n}` }, 'Cancel it for good: closed work cannot be reopened.')),
    ], () => {
      if (!/** @type {HTMLInputElement} */ (confirm).checked) return replaceChildren(status, 'Tick the box to confirm.');
      return act('cancel');
    });
    buttons.push(cancel.open);
    panels.push(cancel.form);
  }
  if (buttons.length === 0) return null;
  return el('div', { class: 'edit-bar work-actions', role: 'group', 'aria-label': 'Your actions on this work item' },
    el('div', { class: 'composer-buttons' }, buttons), panels, status);
}
