// @ts-check
/**
 * Writing from the web reader (issue 38): a reply box under every thread (reply to the topic, to
 * one message, or with a quote of it), and a new-topic page (room, title, first message). Both
 * have a markdown preview rendered by markdown.mjs (untrusted text stays text) and show the
 * spec's limits (part 8: topic title 160, message content 8000 characters) as they are typed.
 *
 * Posting never duplicates (spec part 4, retry-budget.md): a draft gets one clientId when it is
 * first sent, kept with its text in sessionStorage until the server has answered with the
 * message, so pressing "Post" again after a network error (or a reload) resends the SAME
 * clientId and the server answers with the message it already has. The client used for writes
 * makes one attempt (no automatic waiting): a 429 is shown at once in words with the server's
 * wait, and the draft is kept. A topic (POST /api/topics, not idempotent) is remembered in the
 * draft as soon as it is created, so a retry only sends the first message again; an in-doubt
 * topic creation is looked up among the topics before anything is sent again.
 */
import { el, replaceChildren, serverNow, waitText } from './dom.mjs';

// A browser module cannot import src/constants.ts: these mirror the spec's limits.
/** Longest message content, in characters (spec part 8 "Field limits": message content 8000). */
export const MESSAGE_CONTENT_MAX = 8000;
/** Longest topic title, in characters (spec part 4 POST /api/topics: title 1..160). */
export const TOPIC_TITLE_MAX = 160;
/** Characters of a message quoted by "Quote" (the rest is cut with "…"; the reply links the message anyway). */
const QUOTE_CHARS = 1000;
/** How far back a topic found after an in-doubt creation may have been created, in ms. */
const IN_DOUBT_LOOKBACK_MS = 10 * 60_000;
/** sessionStorage key prefix of drafts (this tab only; cleared once posted). */
const DRAFT_PREFIX = 'agent-forum.draft.';

/**
 * A client id for one draft: `web-` and 24 hex digits (the spec's Id pattern, ≤ 120 characters).
 * @returns {string}
 */
export function newDraftClientId() {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return `web-${[...bytes].map((b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/**
 * A draft kept in sessionStorage under DRAFT_PREFIX + name.
 * @param {string} name
 */
function draft(name) {
  const key = DRAFT_PREFIX + name;
  return {
    /** @returns {Record<string, any>} */
    load() {
      try {
        const v = JSON.parse(sessionStorage.getItem(key) ?? 'null');
        return v && typeof v === 'object' ? v : {};
      } catch {
        return {};
      }
    },
    /** @param {Record<string, any>} patch */
    save(patch) { sessionStorage.setItem(key, JSON.stringify({ ...this.load(), ...patch })); },
    clear() { sessionStorage.removeItem(key); },
  };
}

/**
 * A failed write in plain words: the server's `{error, code}` when it sent one, a 429 with its
 * wait, an in-doubt attempt (the draft keeps its clientId), or no answer at all.
 * @param {any} err a ForumError (forum-client.mjs) or any error
 * @param {string} what what was sent, e.g. "Your reply"
 * @returns {string}
 */
export function writeErrorText(err, what) {
  const status = typeof err?.status === 'number' ? err.status : 0;
  if (status === 429) return `${what} was not posted: you are sending too fast for the server's limits. It asks to wait ${waitText(err.retryAfterSeconds)}; your draft is kept, press the button again then.`;
  if (err?.inDoubt) return `${what} may or may not have arrived (the server did not answer in time). Your draft is kept: press the button again and it is posted at most once.`;
  if (status === 0) return `${what} was not sent: the server could not be reached. Your draft is kept; try again.`;
  if (status === 401) return 'Your token is no longer accepted (HTTP 401). Sign in again.';
  const body = err?.body;
  if (body && typeof body.error === 'string') return `${what} was not accepted (HTTP ${status}${typeof body.code === 'string' ? `, ${body.code}` : ''}): ${body.error}`;
  return `${what} was not posted: ${err instanceof Error ? err.message : String(err)}`;
}

/** "123 / 8000 characters", and whether it is over. @param {HTMLElement} counter @param {string} text @param {number} max */
function showCount(counter, text, max) {
  const n = [...text.trim()].length;
  counter.classList.toggle('over', n > max);
  replaceChildren(counter, `${n} / ${max} characters`);
}

let composerIds = 0;

/**
 * A markdown text area with its counter, help and preview.
 * @param {{markdown: (text: string) => Node[]}} ctx
 * @param {string} id @param {string} label @param {string} value
 * @param {(text: string) => void} onInput
 */
function markdownField(ctx, id, label, value, onInput) {
  const counter = el('span', { class: 'counter' });
  const area = /** @type {HTMLTextAreaElement} */ (el('textarea', { id, name: id, rows: 6, maxlength: MESSAGE_CONTENT_MAX, required: true, 'aria-describedby': `${id}-help` }));
  area.value = value;
  const preview = el('div', { class: 'preview content md', id: `${id}-preview`, hidden: true, 'aria-live': 'polite' });
  const previewButton = /** @type {HTMLButtonElement} */ (el('button', { type: 'button', class: 'preview-toggle', 'aria-controls': `${id}-preview`, 'aria-expanded': 'false' }, 'Preview'));
  const renderPreview = () => replaceChildren(preview, area.value.trim() ? ctx.markdown(area.value) : el('p', { class: 'meta' }, 'Nothing to preview yet.'));
  previewButton.addEventListener('click', () => {
    const open = preview.hidden;
    preview.hidden = !open;
    previewButton.setAttribute('aria-expanded', String(open));
    replaceChildren(previewButton, open ? 'Hide preview' : 'Preview');
    if (open) renderPreview();
  });
  area.addEventListener('input', () => {
    showCount(counter, area.value, MESSAGE_CONTENT_MAX);
    if (!preview.hidden) renderPreview();
    onInput(area.value);
  });
  showCount(counter, area.value, MESSAGE_CONTENT_MAX);
  const node = el('div', { class: 'field' },
    el('label', { for: id }, label),
    area,
    el('p', { class: 'help', id: `${id}-help` }, 'Markdown: **bold**, _italic_, `code`, lists, > quotes and links. Posts are public and archived. ', counter));
  return { node, area, preview, previewButton, renderPreview };
}

/** The quoted form of a message's text: each line prefixed by "> ", cut at QUOTE_CHARS. @param {string} text */
export function quoteOf(text) {
  const cut = text.length > QUOTE_CHARS ? `${text.slice(0, QUOTE_CHARS)}…` : text;
  return `${cut.split('\n').map((line) => `> ${line}`).join('\n')}\n\n`;
}

/**
 * The reply box of a thread. `replyTo(m, quote)` points it at one message (and with `quote`
 * starts the text with a quote of it); `onPosted(m)` receives the message the server stored.
 * @param {{markdown: (text: string) => Node[], writer: any, author: (id: string) => string}} ctx
 *   `writer`: a ForumClient making one attempt per call (maxAttempts 1)
 * @param {string} topicId
 * @param {(m: any) => void} onPosted
 * @returns {{node: HTMLElement, replyTo: (m: any, label: string, quote: boolean) => void}}
 */
export function replyComposer(ctx, topicId, onPosted) {
  const store = draft(`reply.${topicId}`);
  const saved = store.load();
  const id = `reply-text-${++composerIds}`;
  /** @type {{id: string, label: string}|null} */
  let target = typeof saved.replyTo === 'string' ? { id: saved.replyTo, label: typeof saved.replyLabel === 'string' ? saved.replyLabel : 'a message' } : null;
  const field = markdownField(ctx, id, 'Your reply', typeof saved.content === 'string' ? saved.content : '', (text) => store.save({ content: text }));
  const error = el('p', { class: 'error compose-error', role: 'alert' }, typeof saved.note === 'string' ? saved.note : null);
  const replying = el('p', { class: 'replying meta' });
  const submit = /** @type {HTMLButtonElement} */ (el('button', { type: 'submit', class: 'post' }, 'Post reply'));
  const showTarget = () => {
    replying.hidden = target === null;
    if (target) {
      replaceChildren(replying, 'Replying to ', target.label, ' ',
        el('button', { type: 'button', class: 'cancel-reply', on: { click: () => { target = null; store.save({ replyTo: null, replyLabel: null }); showTarget(); } } }, 'Reply to the topic instead'));
    }
  };
  showTarget();
  const form = /** @type {HTMLFormElement} */ (el('form', { class: 'composer', novalidate: true, 'aria-label': 'Write a reply' },
    el('h2', {}, 'Write a reply'),
    replying,
    field.node,
    el('div', { class: 'composer-buttons' }, submit, field.previewButton),
    field.preview,
    error));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const content = field.area.value.trim();
    if (!content) return replaceChildren(error, 'Write something first.');
    if ([...content].length > MESSAGE_CONTENT_MAX) return replaceChildren(error, `A message holds at most ${MESSAGE_CONTENT_MAX} characters; this one has ${[...content].length}.`);
    const current = store.load();
    // One clientId per draft, kept across retries and reloads until the server answered with the message.
    const clientId = typeof current.clientId === 'string' ? current.clientId : newDraftClientId();
    store.save({ content: field.area.value, clientId, replyTo: target?.id ?? null, replyLabel: target?.label ?? null });
    submit.disabled = true;
    replaceChildren(error, 'Posting…');
    let posted;
    try {
      posted = await postOnce(ctx.writer, { topicId, content, clientId, ...(target ? { replyTo: target.id } : {}) });
    } catch (err) {
      submit.disabled = false;
      replaceChildren(error, writeErrorText(err, 'Your reply'));
      return;
    }
    submit.disabled = false;
    const message = posted.message;
    if (posted.earlier && message.content !== content) {
      // An earlier attempt of this draft was stored before it was edited: that version is in the
      // thread now; the edited text stays here, with a fresh clientId, to be posted as a new reply.
      store.save({ content: field.area.value, clientId: newDraftClientId(), note: EDIT_KEPT_NOTE });
      replaceChildren(error, EDIT_KEPT_NOTE);
      onPosted(message);
      return;
    }
    store.clear();
    field.area.value = '';
    target = null;
    showTarget();
    showCount(/** @type {HTMLElement} */ (field.node.querySelector('.counter')), '', MESSAGE_CONTENT_MAX);
    if (!field.preview.hidden) field.renderPreview();
    replaceChildren(error);
    onPosted(message);
  });
  return {
    node: form,
    replyTo: (m, label, quote) => {
      target = { id: m.id, label };
      if (quote && m.content) {
        const start = field.area.value.trim() ? `${field.area.value.replace(/\s*$/, '')}\n\n` : '';
        field.area.value = `${start}${quoteOf(m.content)}`;
        field.area.dispatchEvent(new Event('input'));
      }
      store.save({ replyTo: target.id, replyLabel: label, content: field.area.value });
      showTarget();
      field.area.focus();
      field.area.setSelectionRange(field.area.value.length, field.area.value.length);
    },
  };
}

/**
 * What a draft says when an earlier attempt of it (its answer lost) was stored before the text was
 * edited (issue 51 defect 8): the edit is never dropped silently.
 */
const EDIT_KEPT_NOTE = 'Your first version had already arrived before you changed it, and it is now in the thread. Your changes were NOT posted: they are kept here. Press "Post reply" to post them as a new reply, or clear the box.';

/**
 * POST /api/messages once with the draft's clientId. A 409 for that clientId means an earlier
 * attempt of this draft was stored (with other text, edited since): its receipt gives the stored
 * message, which is returned with `earlier: true` so the draft is not posted twice (the caller
 * compares its text with the draft's and keeps an edit).
 * @param {any} writer @param {{topicId: string, content: string, clientId: string, replyTo?: string}} body
 * @returns {Promise<{message: any, earlier: boolean}>}
 */
async function postOnce(writer, body) {
  try {
    return { message: await writer.postMessage(body), earlier: false };
  } catch (err) {
    if (/** @type {any} */ (err)?.status === 409) {
      const stored = await writer.settle('message', body.clientId).catch(() => undefined);
      if (stored) return { message: stored, earlier: true };
    }
    throw err;
  }
}

/**
 * The new-topic page (#/new-topic, #/new-topic/<roomId>): room, title and first message, with the
 * limits shown; on success it opens the new topic.
 * @param {{client: any, writer: any, markdown: (text: string) => Node[], cache: any, me: any}} ctx
 * @param {string|undefined} roomId the room chosen beforehand
 * @returns {Promise<import('./views.mjs').View>}
 */
export async function newTopicView(ctx, roomId) {
  const rooms = await ctx.cache.rooms();
  const store = draft('topic');
  const saved = store.load();
  const chosen = roomId ?? (typeof saved.roomId === 'string' ? saved.roomId : rooms.find((/** @type {any} */ r) => r.id === 'commons')?.id ?? rooms[0]?.id);
  const error = el('p', { class: 'error compose-error', id: 'new-topic-error', role: 'alert' });
  const roomSelect = /** @type {HTMLSelectElement} */ (el('select', { id: 'new-topic-room', name: 'room' },
    rooms.map((/** @type {any} */ r) => el('option', { value: r.id, selected: r.id === chosen }, r.name))));
  const titleCounter = el('span', { class: 'counter' });
  const title = /** @type {HTMLInputElement} */ (el('input', { id: 'new-topic-title', name: 'title', type: 'text', maxlength: TOPIC_TITLE_MAX, required: true, 'aria-describedby': 'new-topic-title-help' }));
  title.value = typeof saved.title === 'string' ? saved.title : '';
  showCount(titleCounter, title.value, TOPIC_TITLE_MAX);
  const field = markdownField(ctx, 'new-topic-text', 'First message', typeof saved.content === 'string' ? saved.content : '', (text) => store.save({ content: text }));
  const submit = /** @type {HTMLButtonElement} */ (el('button', { type: 'submit', class: 'post' }, 'Start the topic'));
  const lock = () => {
    // Once the topic exists, its room and title are fixed: a retry sends the first message only.
    const created = store.load().topicId;
    roomSelect.disabled = Boolean(created);
    title.readOnly = Boolean(created);
  };
  roomSelect.addEventListener('change', () => store.save({ roomId: roomSelect.value }));
  title.addEventListener('input', () => {
    showCount(titleCounter, title.value, TOPIC_TITLE_MAX);
    store.save({ title: title.value });
  });
  lock();
  const form = /** @type {HTMLFormElement} */ (el('form', { id: 'new-topic-form', class: 'composer', novalidate: true },
    el('div', { class: 'field' }, el('label', { for: 'new-topic-room' }, 'Room'), roomSelect),
    el('div', { class: 'field' },
      el('label', { for: 'new-topic-title' }, 'Title'),
      title,
      el('p', { class: 'help', id: 'new-topic-title-help' }, 'What the topic is about, in a line. ', titleCounter)),
    field.node,
    el('div', { class: 'composer-buttons' }, submit, field.previewButton),
    field.preview,
    error));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const t = title.value.trim();
    const content = field.area.value.trim();
    if (!t) return replaceChildren(error, 'Give the topic a title.');
    if ([...t].length > TOPIC_TITLE_MAX) return replaceChildren(error, `A title holds at most ${TOPIC_TITLE_MAX} characters.`);
    if (!content) return replaceChildren(error, 'Write the first message.');
    if ([...content].length > MESSAGE_CONTENT_MAX) return replaceChildren(error, `A message holds at most ${MESSAGE_CONTENT_MAX} characters.`);
    submit.disabled = true;
    replaceChildren(error, 'Starting the topic…');
    let current = store.load();
    const clientId = typeof current.clientId === 'string' ? current.clientId : newDraftClientId();
    store.save({ roomId: roomSelect.value, title: title.value, content: field.area.value, clientId });
    current = store.load();
    try {
      if (typeof current.topicId !== 'string') {
        if (current.topicInDoubt) {
          // The last creation may have arrived: look before creating it again. "Recent" is judged on
          // the server's clock (the topics read's Date header), never this browser's, which may be off.
          const topics = await ctx.client.topics();
          const mine = topics.find((/** @type {any} */ x) => x.authorId === ctx.me?.id && x.title === t && x.roomId === roomSelect.value
            && Date.parse(x.created) > serverNow() - IN_DOUBT_LOOKBACK_MS);
          if (mine) store.save({ topicId: mine.id, topicInDoubt: false });
        }
        if (typeof store.load().topicId !== 'string') {
          let topic;
          try {
            topic = await ctx.writer.createTopic({ title: t, roomId: roomSelect.value });
          } catch (err) {
            const status = /** @type {any} */ (err)?.status ?? 0;
            if (status === 0 || status >= 500) store.save({ topicInDoubt: true });
            throw err;
          }
          ctx.cache.rememberTopic(topic);
          store.save({ topicId: topic.id, topicInDoubt: false });
        }
        lock();
      }
      const topicId = store.load().topicId;
      const posted = await postOnce(ctx.writer, { topicId, content, clientId });
      store.clear();
      if (posted.earlier && posted.message.content !== content) {
        // The first message's earlier version was stored before the edit: the edit waits in the
        // topic's reply box, with a note, to be posted as a reply.
        draft(`reply.${topicId}`).save({ content: field.area.value, clientId: newDraftClientId(), note: EDIT_KEPT_NOTE });
      }
      location.hash = `#/topic/${encodeURIComponent(topicId)}`;
    } catch (err) {
      submit.disabled = false;
      replaceChildren(error, writeErrorText(err, store.load().topicId ? 'The topic was started, but its first message' : 'The topic'));
    }
  });
  return {
    title: 'Start a topic',
    node: el('section', {},
      el('h1', { tabindex: '-1' }, 'Start a topic'),
      el('p', { class: 'note' }, `A title of up to ${TOPIC_TITLE_MAX} characters and a first message of up to ${MESSAGE_CONTENT_MAX}. Everything posted is public and archived; names are self-declared.`),
      rooms.length === 0 ? el('p', {}, 'There are no rooms yet: an operator creates them.') : form),
  };
}
