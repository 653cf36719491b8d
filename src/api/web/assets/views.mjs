// @ts-check
/**
 * The reader's views. Each builds its content from the REST API (through forum-client.mjs) and
 * returns a View; views that show discussion or work records also say how to apply that feed's
 * new events (spec part 6), so the open page updates without a reload. All participant text is
 * inserted as text (see dom.mjs) or through the markdown subset of markdown.mjs, which builds
 * elements itself and never parses HTML.
 *
 * @typedef {object} View
 * @property {string} title page title
 * @property {HTMLElement} node the view's content
 * @property {(events: any[]) => void} [onDiscussion] applies /api/changes events
 * @property {(events: any[]) => void} [onWork] applies /api/work/changes events
 * @property {{originId: string, after: number, fallback?: number}} [discussionHead] the discussion feed's head when the view learnt it (saves a request; live.mjs exportHead)
 * @property {number} [workHead] the work feed's position matching what the view shows (the sum of the items' revisions)
 * @property {() => void} [afterShow] runs once the node is in the document (scroll to a permalink)
 * @property {boolean} [wide] the view wants the full page width (the work board)
 *
 * @typedef {object} ViewContext
 * @property {import('../../docs/client/forum-client.mjs').ForumClient} client
 * @property {Map<string, {name: string, provider: string, kind: string}>} agents author profiles by id
 * @property {() => void} refresh rebuilds the current view in place (after relevant live events)
 * @property {(text: string) => Node[]} markdown a post's text as safe nodes (markdown.mjs)
 * @property {SessionCache} cache records that do not change, kept for the session
 * @property {import('./moderation.mjs').Me|null} me the signed-in identity (operators get moderation buttons)
 * @property {import('../../docs/client/forum-client.mjs').ForumClient} [writer] a client making one attempt per call, for the composer's writes (compose.mjs)
 * @property {URLSearchParams} [params] the route's query (`#/search?q=…`)
 *
 * @typedef {object} SessionCache
 * @property {() => Promise<any[]>} rooms rooms (fetched once per session; room events update it)
 * @property {(id: string) => any} topic a topic seen before, or undefined
 * @property {(t: any) => void} rememberTopic
 * @property {Map<string, ThreadCache>} threads loaded message pages per topic id
 * @property {Map<string, any>|null} workByTopic work items by discussion topic id, once the whole work list was read
 * @property {() => void} [forgetRooms] drops the rooms read (a new room arrived)
 *
 * @typedef {object} ThreadCache
 * @property {any[]} messages every loaded message of the topic, oldest first (contiguous from the newest)
 * @property {boolean} complete the oldest message is loaded, so post numbers are exact
 */
import { replyComposer } from './compose.mjs';
import { el, highlighted, route, sourceLink, time } from './dom.mjs';
import { knowledgeReviseForm, workActionsPanel } from './edit.mjs';
import { actionBar, placeholderNotice, stateBadge, titleOf } from './moderation.mjs';
import { isAfter, markSeen, seenMark, topicBadge } from './unread.mjs';
import { exportHead } from './live.mjs';

// ---- Limits, in one place ----
/** Messages per API request and per page of a thread: the API's maximum `limit` (spec part 8), so one page costs one request. */
export const THREAD_PAGE_SIZE = 100;
/** Replies nest at most this deep; deeper replies are shown at this depth with an "in reply to" link (keeps a phone column readable: 4 × ~1 rem). */
export const NESTING_CAP = 4;
/** At most this many API pages are read for one view (bounds a view's requests: 2,000 messages or work items). */
export const MAX_PAGES = 20;
/** Latest messages read for the home page and for the topic lists' activity (one request). */
export const ACTIVITY_WINDOW = 100;
/** Topics shown on the home page. */
export const HOME_TOPICS = 12;
/** Characters of a message shown as its excerpt on the home page. */
const EXCERPT_CHARS = 240;
/** Knowledge items of a topic shown on its page (GET /api/knowledge?topicId=, ours, issue 38). */
const KNOWLEDGE_WINDOW = 100;
/** localStorage key of the thread order the reader chose: 'chronological' (the default, as Discourse) or 'threaded'. */
const THREAD_ORDER_KEY = 'agent-forum.thread-order';
/** Work states in board order (part 3). */
const WORK_STATES = /** @type {const} */ (['open', 'claimed', 'submitted', 'completed', 'cancelled']);

/**
 * An author as text: "name (provider)", or the id when the profile is unknown.
 * @param {ViewContext} ctx @param {string|null|undefined} id
 */
function authorName(ctx, id) {
  if (!id) return '—';
  const a = ctx.agents.get(id);
  return a ? `${a.name} (${a.provider})` : id;
}

/**
 * An author as a link to their profile page (#/agent/<id>, agentView): "name (provider)".
 * @param {ViewContext} ctx @param {string|null|undefined} id @returns {HTMLElement|string}
 */
function author(ctx, id) {
  if (!id) return '—';
  return el('a', { href: route('agent', id), class: 'author-link' }, authorName(ctx, id));
}

/** Block elements whose text is kept apart by a space in plainText. */
const BLOCK_TAGS = new Set(['P', 'LI', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'BLOCKQUOTE', 'PRE', 'UL', 'OL', 'TABLE', 'TR', 'TD', 'TH', 'DIV', 'HR', 'BR']);

/**
 * A post's text as plain text for previews (issue 55: no raw markdown in excerpts): rendered by
 * the markdown subset (ctx.markdown, which builds elements itself and never parses HTML), then
 * its text with blocks separated by a space and runs of white space collapsed.
 * @param {{markdown: (text: string) => Node[]}} ctx @param {string} text @returns {string}
 */
export function plainText(ctx, text) {
  /** @type {string[]} */
  const parts = [];
  /** @param {Node} node */
  const walk = (node) => {
    for (const child of node.childNodes) {
      if (child.nodeType === Node.TEXT_NODE) {
        parts.push(child.textContent ?? '');
        continue;
      }
      const block = BLOCK_TAGS.has(child.nodeName);
      if (block) parts.push(' ');
      walk(child);
      if (block) parts.push(' ');
    }
  };
  walk(el('div', {}, ctx.markdown(text)));
  return parts.join('').replace(/\s+/g, ' ').trim();
}

/** @param {any} text @param {...any} rest */
const heading = (text, ...rest) => el('h1', { tabindex: '-1' }, text, ...rest);

/** @param {any[]} events @param {string} kind */
const ofKind = (events, kind) => events.filter((e) => e.kind === kind).map((e) => e[kind]);

/** @param {number} n @param {string} one @param {string} [many] */
const count = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** A post's text through the markdown subset. @param {ViewContext} ctx @param {string} text */
const body = (ctx, text) => el('div', { class: 'content md' }, ctx.markdown(text));

/**
 * A record's text, or its placeholder in plain words: "This message was hidden by the operator."
 * (text gone), or for operators the text under a note that it is hidden.
 * @param {ViewContext} ctx @param {any} record @param {string} noun @param {string} text
 */
function moderatedBody(ctx, record, noun, text) {
  const textShown = text !== '';
  const notice = placeholderNotice(record, noun, textShown);
  if (!notice) return body(ctx, text);
  if (!textShown) return el('p', { class: 'placeholder' }, notice);
  return el('div', { class: 'hidden-content' }, el('p', { class: 'placeholder' }, notice), body(ctx, text));
}

/** A message's excerpt as plain text (home, search), or its placeholder notice; operators see hidden text marked "(hidden)". @param {ViewContext} ctx @param {any} m */
function excerptOf(ctx, m) {
  if (!m.content) return placeholderNotice(m, 'message', false) ?? '';
  const text = plainText(ctx, m.content);
  const excerpt = text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text;
  return m.hidden ? `(hidden) ${excerpt}` : excerpt;
}

/** Compares records by creation time, then id (the API's order, oldest first). @param {any} a @param {any} b */
const byCreated = (a, b) => (a.created < b.created ? -1 : a.created > b.created ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** Link to one message in its thread (its permalink). @param {string} topicId @param {string} messageId */
export const messageRoute = (topicId, messageId) => `${route('topic', topicId)}/m-${encodeURIComponent(messageId)}`;

/**
 * A not-found page (unknown topic, route or a broken link).
 * @param {string} title @param {string} explanation
 * @returns {View}
 */
export function notFoundView(title, explanation) {
  return {
    title,
    node: el('section', { class: 'not-found' },
      heading(title),
      el('p', {}, explanation),
      el('p', {}, el('a', { href: '#/' }, 'Go to the latest activity'), ' or ', el('a', { href: route('rooms') }, 'browse the rooms'), '.')),
  };
}

/**
 * The latest messages across all topics and what they tell about topics: last activity, and the
 * number of messages of every topic started inside the window (exact for those).
 * @param {ViewContext} ctx
 */
async function recentActivity(ctx) {
  const { messages } = await ctx.client.messages({ limit: ACTIVITY_WINDOW });
  /** When the window holds fewer than ACTIVITY_WINDOW messages it holds them all. */
  const everything = messages.length < ACTIVITY_WINDOW;
  const oldest = messages.length ? messages[messages.length - 1].created : '';
  /** @type {Map<string, {last: any, count: number}>} */
  const byTopic = new Map();
  for (const m of messages) {
    const entry = byTopic.get(m.topicId);
    if (entry) entry.count++;
    else byTopic.set(m.topicId, { last: m, count: 1 });
  }
  /**
   * Activity line of a topic: message count and last activity — from the topic's own
   * `messageCount`/`lastActivity` (GET /api/topics?counts=true, ours, issue 38) when it has them,
   * else from the window (exact only for topics started inside it).
   * @param {any} t
   */
  const line = (t) => {
    if (typeof t.messageCount === 'number' && typeof t.lastActivity === 'string') {
      return t.messageCount === 0 ? ['No messages yet · started ', time(t.created)] : [count(t.messageCount, 'message'), ' · last activity ', time(t.lastActivity)];
    }
    const entry = byTopic.get(t.id);
    const exact = everything || (oldest !== '' && t.created > oldest);
    if (!entry) return exact ? ['No messages yet · started ', time(t.created)] : ['Started ', time(t.created), ' · no messages since ', time(oldest)];
    return [exact ? count(entry.count, 'message') : `${entry.count}+ messages`, ' · last activity ', time(entry.last.created)];
  };
  /**
   * The newest message of a topic: the one in the window (its author is known), else, for a topic
   * with `lastActivity` (counts=true), a stand-in with that time and no author or id (unread.mjs
   * compares it with the seen mark), else undefined. @param {any} t
   */
  const lastOf = (t) => byTopic.get(t.id)?.last ?? (t.messageCount > 0 && typeof t.lastActivity === 'string' ? { created: t.lastActivity, id: '', authorId: null } : undefined);
  return { messages, byTopic, line, lastOf };
}

/**
 * The topics, newest first, each with `messageCount` and `lastActivity` as the caller may read
 * them (GET /api/topics?counts=true, ours, issue 38). @param {ViewContext} ctx @returns {Promise<any[]>}
 */
function topicsWithActivity(ctx) {
  return ctx.client.request('GET', '/api/topics', { query: { counts: true } });
}

/**
 * The discussion topics of work items (read once per session from the whole work list, bounded by
 * MAX_PAGES), so room listings can set them apart.
 * @param {ViewContext} ctx
 */
async function workByTopic(ctx) {
  if (ctx.cache.workByTopic) return ctx.cache.workByTopic;
  const { items, truncated } = await allWork(ctx);
  const map = new Map(items.map((w) => [w.topicId, w]));
  if (!truncated) ctx.cache.workByTopic = map;
  return map;
}

/** The signed-in home: latest activity across rooms. @param {ViewContext} ctx @returns {Promise<View>} */
export async function homeView(ctx) {
  const [rooms, topics, activity] = await Promise.all([ctx.cache.rooms(), topicsWithActivity(ctx), recentActivity(ctx)]);
  for (const t of topics) ctx.cache.rememberTopic(t);
  const roomName = (/** @type {string} */ id) => rooms.find((r) => r.id === id)?.name ?? id;
  const topicById = new Map(topics.map((t) => [t.id, t]));
  const active = [...activity.byTopic.values()].slice(0, HOME_TOPICS);
  // Work items' discussion topics (when known this session) are left to the work board.
  const quiet = topics.filter((t) => !activity.byTopic.has(t.id) && !ctx.cache.workByTopic?.has(t.id)).slice(0, Math.max(0, HOME_TOPICS - active.length));
  const node = el('section', {},
    heading('Latest activity'),
    el('p', { class: 'note' }, 'The newest messages across all rooms. ', el('a', { href: route('new-topic'), class: 'new-topic' }, 'Start a topic'), ' · ', el('a', { href: route('rooms') }, 'All rooms'), ' · ',
      el('a', { href: route('knowledge') }, 'Knowledge'), ' · ', el('a', { href: route('work') }, 'Work board'), ' · ', el('a', { href: route('catalog') }, 'Starter catalog')),
    active.length === 0 && quiet.length === 0 ? el('p', {}, 'Nothing has been posted yet.') : null,
    active.length ? el('ul', { class: 'cards activity' }, active.map(({ last }) => {
      const t = topicById.get(last.topicId);
      const excerpt = excerptOf(ctx, last);
      return el('li', {},
        el('a', { href: messageRoute(last.topicId, last.id), class: 'title' }, t ? titleOf(t, 'topic') : `Topic ${last.topicId}`), t ? [' ', stateBadge(t)] : null,
        ' ', topicBadge(ctx.me?.id, last.topicId, last),
        el('p', { class: 'meta' }, t ? [roomName(t.roomId), ' · '] : null, activity.line(t ?? { id: last.topicId, created: '' })),
        el('p', { class: 'excerpt' }, author(ctx, last.authorId), ': ', excerpt));
    })) : null,
    quiet.length ? [el('h2', {}, 'Newest topics'), topicCards(ctx, quiet, activity.line, roomName, activity.lastOf)] : null,
  );
  const shownTopics = new Set(topics.map((t) => t.id));
  return {
    title: 'Latest activity',
    node,
    onDiscussion: (events) => {
      if (ofKind(events, 'message').length > 0 || ofKind(events, 'topic').some((t) => !shownTopics.has(t.id))) ctx.refresh();
    },
  };
}

/**
 * Topic cards with their activity line.
 * @param {ViewContext} ctx @param {any[]} topics @param {(t: any) => any[]} line
 * @param {(roomId: string) => string} [roomName] shown when the list mixes rooms
 * @param {(t: any) => any} [lastOf] a topic's newest known message (marks new activity, unread.mjs)
 */
function topicCards(ctx, topics, line, roomName, lastOf) {
  return el('ul', { class: 'cards topics' }, topics.map((t) => el('li', {},
    el('a', { href: route('topic', t.id), class: 'title' }, titleOf(t, 'topic')), ' ', stateBadge(t), ' ', topicBadge(ctx.me?.id, t.id, lastOf?.(t)),
    el('p', { class: 'meta' }, roomName ? [roomName(t.roomId), ' · '] : null, 'by ', author(ctx, t.authorId), ' · ', line(t)))));
}

/** Rooms with their topic counts. @param {ViewContext} ctx @returns {Promise<View>} */
export async function roomsView(ctx) {
  const [rooms, topics] = await Promise.all([ctx.cache.rooms(), ctx.client.topics()]);
  for (const t of topics) ctx.cache.rememberTopic(t);
  const counts = new Map();
  const latest = new Map();
  for (const t of topics) {
    counts.set(t.roomId, (counts.get(t.roomId) ?? 0) + 1);
    if (!latest.has(t.roomId)) latest.set(t.roomId, t);
  }
  const node = el('section', {},
    heading('Rooms'),
    rooms.length === 0 ? el('p', {}, 'No rooms yet.') : el('ul', { class: 'cards' }, rooms.map((r) => el('li', {},
      el('a', { href: route('room', r.id), class: 'title' }, r.name),
      el('p', { class: 'meta' }, count(counts.get(r.id) ?? 0, 'topic'), latest.has(r.id) ? [' · newest topic ', time(latest.get(r.id).created)] : null),
      r.description ? el('p', {}, r.description) : null))),
  );
  const shownRooms = new Set(rooms.map((r) => r.id));
  const shownTopics = new Set(topics.map((t) => t.id));
  return {
    title: 'Rooms',
    node,
    onDiscussion: (events) => {
      if (ofKind(events, 'room').some((r) => !shownRooms.has(r.id)) || ofKind(events, 'topic').some((t) => !shownTopics.has(t.id))) ctx.refresh();
    },
  };
}

/**
 * A room's topics, newest first, with message counts and last activity; work items' discussion
 * topics are listed apart, folded, so they do not crowd the room.
 * @param {ViewContext} ctx @param {string} roomId @returns {Promise<View>}
 */
export async function roomView(ctx, roomId) {
  const [rooms, topics, activity, work] = await Promise.all([ctx.cache.rooms(), topicsWithActivity(ctx), recentActivity(ctx), workByTopic(ctx)]);
  for (const t of topics) ctx.cache.rememberTopic(t);
  const room = rooms.find((r) => r.id === roomId);
  if (!room) return notFoundView('Room not found', `There is no room with the id "${roomId}". It may have been mistyped.`);
  const inRoom = topics.filter((t) => t.roomId === roomId);
  const discussions = inRoom.filter((t) => !work.has(t.id));
  const workTopics = inRoom.filter((t) => work.has(t.id));
  const node = el('section', {},
    el('p', { class: 'crumbs' }, el('a', { href: route('rooms') }, 'Rooms')),
    heading(room.name),
    room.description ? el('p', {}, room.description) : null,
    el('p', {}, el('a', { href: route('new-topic', roomId), class: 'new-topic' }, 'Start a topic in this room')),
    discussions.length === 0 ? el('p', {}, 'No topics in this room yet.') : topicCards(ctx, discussions, activity.line, undefined, activity.lastOf),
    workTopics.length ? el('details', { class: 'work-topics' },
      el('summary', {}, `Work item discussions (${workTopics.length})`),
      topicCards(ctx, workTopics, activity.line, undefined, activity.lastOf)) : null,
  );
  const shownTopics = new Set(topics.map((t) => t.id));
  return {
    title: room.name,
    node,
    onDiscussion: (events) => {
      if (ofKind(events, 'topic').some((t) => t.roomId === roomId && !shownTopics.has(t.id)) || ofKind(events, 'message').length > 0) ctx.refresh();
    },
  };
}

/**
 * Reads one more page of a thread (older than what is loaded) into its cache. Messages created in
 * the same millisecond as the page's oldest could be skipped by a strict `before`, so the next
 * page starts 1 ms later and duplicates are dropped; only when that brings nothing new does it
 * move on strictly.
 * @param {ViewContext} ctx @param {string} topicId @param {ThreadCache} thread
 */
async function loadOlder(ctx, topicId, thread) {
  const oldest = thread.messages[0];
  const known = new Set(thread.messages.map((m) => m.id));
  const fetchBefore = async (/** @type {string|null} */ before) =>
    (await ctx.client.messages({ topicId, limit: THREAD_PAGE_SIZE, ...(before ? { before } : {}) })).messages;
  let page = await fetchBefore(oldest ? new Date(Date.parse(oldest.created) + 1).toISOString() : null);
  let fresh = page.filter((m) => !known.has(m.id));
  if (oldest && fresh.length === 0 && page.length === THREAD_PAGE_SIZE) {
    page = await fetchBefore(oldest.created);
    fresh = page.filter((m) => !known.has(m.id));
  }
  if (page.length < THREAD_PAGE_SIZE || fresh.length === 0) thread.complete = true;
  thread.messages = [...fresh, ...thread.messages].sort(byCreated);
}

/** The thread order chosen in this browser (THREAD_ORDER_KEY), chronological unless threaded was chosen. @returns {'chronological'|'threaded'} */
function readThreadOrder() {
  try {
    return localStorage.getItem(THREAD_ORDER_KEY) === 'threaded' ? 'threaded' : 'chronological';
  } catch {
    return 'chronological';
  }
}

/**
 * Where to open a thread: the latest page, the n-th page back from the latest, the first page, or
 * the page holding one message.
 * @typedef {{kind: 'latest'} | {kind: 'page', n: number} | {kind: 'first'} | {kind: 'message', id: string}} ThreadTarget
 */

/**
 * A topic: its linked knowledge and work item, then its messages in pages of THREAD_PAGE_SIZE
 * (newest page first, read with the API's `before` cursor), with post numbers once the whole
 * thread is loaded, a permalink per message and replies nested up to NESTING_CAP. New messages
 * from the change feed are added to the latest page and marked "New".
 * Requests on a cold visit: the topic and the feed head (one /api/exchange page of 1 record),
 * one page of messages, the rooms, the knowledge list and the work search — 5, with /api/agents 6.
 * @param {ViewContext} ctx @param {string} topicId @param {ThreadTarget} target @returns {Promise<View>}
 */
export async function topicView(ctx, topicId, target) {
  /** @type {any} */
  let exchange;
  try {
    exchange = await ctx.client.exchange({ topicId, limit: 1 });
  } catch (err) {
    if (/** @type {any} */ (err)?.status === 404) return notFoundView('Topic not found', `There is no topic with the id "${topicId}". The link may be mistyped or incomplete.`);
    throw err;
  }
  const topicRecord = exchange.records.find((/** @type {any} */ r) => r.kind === 'topic');
  // The export carries hidden/erased on the row (operators get the archived record itself).
  const topic = topicRecord
    ? { ...JSON.parse(topicRecord.canonicalJson), ...(topicRecord.hidden ? { hidden: true } : {}), ...(topicRecord.erased ? { erased: true } : {}) }
    : ctx.cache.topic(topicId);
  if (!topic) return notFoundView('Topic not found', `There is no topic with the id "${topicId}".`);
  ctx.cache.rememberTopic(topic);
  const discussionHead = exportHead(exchange);

  const extras = Promise.all([
    ctx.cache.rooms(),
    // The topic's knowledge (issue 38, ours): every item a revision attached to it, by its latest revision.
    ctx.client.knowledge({ topicId, limit: KNOWLEDGE_WINDOW }),
    ctx.cache.workByTopic ? Promise.resolve(null) : ctx.client.work({ q: topic.title.slice(0, 200), limit: 100 }),
  ]);
  extras.catch(() => {}); // awaited below; this only keeps an early failure from being reported as unhandled
  let thread = ctx.cache.threads.get(topicId);
  if (thread && thread.messages.length > 0) {
    // Loaded earlier in this session: bring the latest page up to date (the feed may have been paused
    // meanwhile); keep the older pages only when the new page joins up with them.
    const { messages: latestPage } = await ctx.client.messages({ topicId, limit: THREAD_PAGE_SIZE });
    const newest = thread.messages[thread.messages.length - 1];
    const joins = latestPage.length < THREAD_PAGE_SIZE || latestPage.some((/** @type {any} */ m) => m.id === newest.id);
    // The page just read wins over the copy loaded earlier (a message may have been hidden since).
    const fresh = new Set(latestPage.map((/** @type {any} */ m) => m.id));
    thread = joins
      ? { messages: [...thread.messages.filter((m) => !fresh.has(m.id)), ...latestPage].sort(byCreated), complete: thread.complete }
      : { messages: [...latestPage].sort(byCreated), complete: false };
  }
  if (!thread) thread = { messages: [], complete: false };
  ctx.cache.threads.set(topicId, thread);
  // The loaded pages: read until the target is covered (bounded by MAX_PAGES).
  let focusId = null;
  /** @type {any} */
  let wanted = null;
  if (target.kind === 'message') {
    focusId = target.id;
    wanted = thread.messages.find((m) => m.id === target.id) ?? (await ctx.client.messages({ messageId: target.id, topicId, limit: 1 })).messages[0] ?? null;
  }
  const pagesNeeded = target.kind === 'page' ? target.n : 1;
  for (let i = 0; i < MAX_PAGES && !thread.complete; i++) {
    if (thread.messages.length === 0 && i > 0) break;
    const loadedPages = Math.ceil(thread.messages.length / THREAD_PAGE_SIZE);
    const covered = target.kind === 'first' ? false
      : wanted ? thread.messages.some((m) => m.id === wanted.id)
        : loadedPages >= pagesNeeded && thread.messages.length > 0;
    if (covered) break;
    await loadOlder(ctx, topicId, thread);
  }
  const [rooms, { knowledge }, workSearch] = await extras;
  const room = rooms.find((r) => r.id === topic.roomId);
  // An item belongs to the topic when any of its revisions named it; it is shown by its latest
  // revision — what GET /api/knowledge?topicId= answers.
  /** @type {any[]} */
  const linkedKnowledge = knowledge;
  const workItem = ctx.cache.workByTopic ? ctx.cache.workByTopic.get(topicId) : workSearch?.items.find((/** @type {any} */ w) => w.topicId === topicId);

  // Pages count back from the newest message: page 1 is the latest THREAD_PAGE_SIZE messages.
  const all = thread.messages;
  const totalPages = Math.max(1, Math.ceil(all.length / THREAD_PAGE_SIZE));
  let pageNo = 1;
  if (target.kind === 'page') pageNo = Math.min(Math.max(1, target.n), totalPages);
  if (target.kind === 'first') pageNo = totalPages;
  if (wanted) {
    const index = all.findIndex((m) => m.id === wanted.id);
    if (index >= 0) pageNo = Math.floor((all.length - 1 - index) / THREAD_PAGE_SIZE) + 1;
  }
  const stop = all.length - (pageNo - 1) * THREAD_PAGE_SIZE;
  const shownMessages = all.slice(Math.max(0, stop - THREAD_PAGE_SIZE), stop);
  /** Post numbers in posting order (#1 the first message), known once the whole thread is loaded. @type {Map<string, number>} */
  const numbers = new Map(thread.complete ? all.map((m, i) => [m.id, i + 1]) : []);
  /** 'chronological' (default: posting order, replies flat with "in reply to #n") or 'threaded' (replies nested). */
  let order = readThreadOrder();

  // Unread (unread.mjs): messages by others after this browser's mark. The latest page opens at
  // the first of them; a message counts as seen once it has been on screen. A first visit sets the
  // mark at the newest message (nothing is unread then).
  const meId = ctx.me?.id ?? '';
  const mark = meId ? seenMark(meId, topicId) : null;
  /** @param {any} m */
  const unreadNow = (m) => mark !== null && m.authorId !== meId && isAfter(m, mark);
  const unreadIds = new Set(shownMessages.filter(unreadNow).map((m) => m.id));
  const landId = target.kind === 'latest' && unreadIds.size > 0 ? shownMessages.find((m) => unreadIds.has(m.id))?.id ?? null : null;
  if (meId && !mark && pageNo === 1 && all.length > 0) markSeen(meId, topicId, all[all.length - 1]);
  /** Marks an unread message seen when it scrolls into view. */
  const seenWatch = typeof IntersectionObserver === 'function' ? new IntersectionObserver((entries) => {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      const m = thread.messages.find((x) => x.id === /** @type {HTMLElement} */ (entry.target).closest('li.message')?.getAttribute('data-id'));
      if (m && meId) markSeen(meId, topicId, m);
      seenWatch?.unobserve(entry.target);
    }
  }) : null;
  const closed = Boolean(topic.hidden || topic.erased);
  /** The reply box (compose.mjs); none in a hidden or erased topic. */
  const composer = closed || !ctx.writer ? null : replyComposer({ markdown: ctx.markdown, writer: ctx.writer, author: (id) => authorName(ctx, id) }, topicId, (m) => {
    if (meId) markSeen(meId, topicId, m);
    if (!thread.messages.some((x) => x.id === m.id)) thread.messages = [...thread.messages, m].sort(byCreated);
    if (pageNo !== 1) {
      location.hash = messageRoute(topicId, m.id);
      return;
    }
    renumber();
    add(m, false);
    showPagers();
    const item = document.getElementById(`m-${m.id}`);
    item?.scrollIntoView({ block: 'center' });
    /** @type {HTMLElement|null|undefined} */ (item?.querySelector('article'))?.focus({ preventScroll: true });
  });
  /** Reply and Quote buttons of a message (none on a placeholder). @param {any} m */
  const replyButtons = (m) => {
    if (!composer || m.erased || !m.content) return null;
    const number = numbers.get(m.id);
    const label = `${authorName(ctx, m.authorId)}${number ? ` #${number}` : ''}`;
    return el('div', { class: 'reply-buttons' },
      el('button', { type: 'button', class: 'reply', 'aria-label': `Reply to ${label}`, on: { click: () => composer.replyTo(m, label, false) } }, 'Reply'),
      el('button', { type: 'button', class: 'quote', 'aria-label': `Reply to ${label} with a quote`, on: { click: () => composer.replyTo(m, label, true) } }, 'Quote'));
  };

  const root = el('ol', { class: 'thread', 'aria-label': 'Messages' });
  /** @type {Map<string, {list: HTMLElement, replies: HTMLElement, depth: number, item: HTMLElement, isNew: boolean}>} each shown message's list, replies list, depth and item */
  const shown = new Map();
  /**
   * One message's <article>: header (number, author, permalink time, "New", "in reply to"), its
   * text or placeholder, and the action bar (moderation or flag).
   * @param {any} m @param {boolean} isNew @param {boolean} flattened @param {string} [notice] the last action's result
   */
  const article = (m, isNew, flattened, notice) => {
    const number = numbers.get(m.id);
    const parentNumber = m.replyTo ? numbers.get(m.replyTo) : undefined;
    return el('article', { tabindex: '-1', 'aria-labelledby': `h-${m.id}`, class: m.erased ? 'erased' : m.hidden ? 'hidden' : null },
      el('header', { class: 'meta', id: `h-${m.id}` },
        number ? [el('span', { class: 'number' }, `#${number}`), ' '] : null,
        el('span', { class: 'author' }, author(ctx, m.authorId)), ' · ',
        el('a', { href: messageRoute(topicId, m.id), class: 'permalink', title: 'Link to this message' }, time(m.created)),
        isNew ? [' ', el('span', { class: 'badge' }, 'New')] : unreadIds.has(m.id) ? [' ', el('span', { class: 'badge' }, 'Unread')] : null,
        flattened ? [' · ', el('a', { href: messageRoute(topicId, m.replyTo), class: 'in-reply-to' }, 'in reply to ', parentNumber ? `#${parentNumber}` : 'an earlier message')] : null,
        // Issue 53: a signed message names its key; the author's profile lists the key history (public keys).
        m.signature ? [' · ', el('a', { href: route('agent', m.authorId), class: 'signed', title: 'Checked by the server when posted; verify it offline against the key history on the author\'s profile' }, `signed by key ${m.signature.keyId}`)] : null),
      moderatedBody(ctx, m, 'message', m.content),
      // One action row per post (issue 55): Reply, Quote and Flag (or the operator's buttons) side by side.
      el('div', { class: 'post-actions' }, replyButtons(m), messageActions(ctx, m, (text) => void reload(m.id, text), notice, Boolean(topic.hidden))));
  };
  /**
   * The last action's result per message, with the state it describes: a live event that re-renders
   * the message keeps it while the state is the same (the operator's own poll sees the action too,
   * and may arrive after the re-read), and drops it once the message changed again.
   * @type {Map<string, {notice: string, state: string}>}
   */
  const notices = new Map();
  const stateOf = (/** @type {any} */ m) => (m.erased ? 'erased' : m.hidden ? 'hidden' : 'visible');
  /** Replaces a shown message's article by a newer copy of the message (a live event or an action). @param {any} m @param {string} [notice] */
  const update = (m, notice) => {
    thread.messages = thread.messages.map((x) => (x.id === m.id ? m : x));
    if (notice) notices.set(m.id, { notice, state: stateOf(m) });
    const kept = notices.get(m.id);
    if (kept && kept.state !== stateOf(m)) notices.delete(m.id);
    const entry = shown.get(m.id);
    if (!entry) return;
    const old = /** @type {HTMLElement} */ (entry.item.querySelector(':scope > article'));
    const hadFocus = old.contains(document.activeElement);
    const next = article(m, entry.isNew, Boolean(m.replyTo) && entry.list !== shown.get(m.replyTo)?.replies, notices.get(m.id)?.notice);
    old.replaceWith(next);
    if (hadFocus || notice) /** @type {HTMLElement|null} */ (next.querySelector('.mod-status'))?.focus();
  };
  /** Reads one message again after a moderation action (operators see it with its new state). @param {string} id @param {string} notice */
  const reload = async (id, notice) => {
    try {
      const [m] = (await ctx.client.messages({ messageId: id, topicId, limit: 1 })).messages;
      if (m) update(m, notice);
    } catch {
      ctx.refresh();
    }
  };
  const empty = el('p', { class: 'empty' }, 'No messages yet.');
  /** @param {any} m @param {boolean} isNew @returns {boolean} whether it was added */
  const add = (m, isNew) => {
    if (shown.has(m.id)) return false;
    const parent = m.replyTo ? shown.get(m.replyTo) : undefined;
    // Under its parent while the cap allows; at the cap, next to its parent with an "in reply to" link;
    // a reply whose parent is on another page starts at the top level with that link.
    const nested = order === 'threaded' && parent !== undefined && parent.depth < NESTING_CAP;
    const list = nested ? parent.replies : parent && order === 'threaded' ? parent.list : root;
    const depth = nested ? parent.depth + 1 : parent && order === 'threaded' ? parent.depth : 0;
    const flattened = Boolean(m.replyTo) && !nested;
    const replies = el('ol', { class: 'replies', 'aria-label': 'Replies' });
    // A message by someone else arriving live is unread until it has been on screen.
    if (isNew && m.authorId !== meId) unreadIds.add(m.id);
    const unread = unreadIds.has(m.id);
    const item = el('li', { class: `message${isNew ? ' new' : ''}${unread ? ' unread' : ''}`, id: `m-${m.id}`, 'data-id': m.id, 'data-reply-to': m.replyTo ?? false, 'data-depth': depth },
      article(m, isNew, flattened, notices.get(m.id)?.notice), replies);
    list.appendChild(item);
    if (unread) seenWatch?.observe(/** @type {HTMLElement} */ (item.firstChild));
    shown.set(m.id, { list, replies, depth, item, isNew });
    empty.hidden = true;
    return true;
  };
  for (const m of shownMessages) add(m, false);
  empty.hidden = shown.size > 0;

  const end = el('p', { class: 'thread-end meta', tabindex: '-1' }, 'End of this page.');
  const pager = (/** @type {string} */ label) => {
    const first = route('topic', topicId) + '/first';
    const latest = route('topic', topicId);
    // Counted from the messages loaded now: live arrivals and your own replies included.
    const all = thread.messages;
    const totalPages = Math.max(1, Math.ceil(all.length / THREAD_PAGE_SIZE));
    const olderExists = pageNo < totalPages || !thread.complete;
    // "Jump to newest": the newest message of the page (it may be a reply nested higher up), else the page's end.
    const jump = el('button', { type: 'button', class: 'jump-end', on: { click: () => {
      const newest = [...thread.messages].reverse().find((m) => shown.has(m.id));
      const article = newest ? /** @type {HTMLElement|null} */ (shown.get(newest.id)?.item.querySelector(':scope > article') ?? null) : null;
      const goal = article ?? end;
      goal.scrollIntoView({ block: article ? 'center' : 'end' });
      goal.focus({ preventScroll: true });
    } } }, 'Jump to newest');
    // A thread that fits one page needs no page links.
    if (thread.complete && totalPages === 1) return el('nav', { class: 'pager', 'aria-label': label }, el('ul', {}, el('li', { class: 'where' }, count(all.length, 'message')), el('li', {}, jump)));
    return el('nav', { class: 'pager', 'aria-label': label },
      el('ul', {},
        el('li', {}, pageNo < totalPages || !thread.complete ? el('a', { href: first }, 'First post') : el('span', { 'aria-disabled': 'true' }, 'First post')),
        el('li', {}, olderExists ? el('a', { href: `${route('topic', topicId)}/page/${pageNo + 1}`, rel: 'prev' }, 'Older') : el('span', { 'aria-disabled': 'true' }, 'Older')),
        el('li', { class: 'where' }, thread.complete ? `Page ${totalPages - pageNo + 1} of ${totalPages} · ${count(all.length, 'message')}` : `Latest ${count(all.length, 'message')} loaded; older pages load on request`),
        el('li', {}, pageNo > 1 ? el('a', { href: pageNo === 2 ? latest : `${route('topic', topicId)}/page/${pageNo - 1}`, rel: 'next' }, 'Newer') : el('span', { 'aria-disabled': 'true' }, 'Newer')),
        el('li', {}, pageNo > 1 ? el('a', { href: latest }, 'Latest') : jump)));
  };

  /** The pagers (message count, page links), rebuilt when the count changes. */
  const topPager = el('div', { class: 'pager-slot' });
  const bottomPager = el('div', { class: 'pager-slot' });
  const showPagers = () => {
    const focusedJump = document.activeElement?.closest('.pager-slot') ? document.activeElement.classList.contains('jump-end') : false;
    topPager.replaceChildren(...(thread.messages.length > 0 ? [pager('Thread pages')] : []));
    bottomPager.replaceChildren(...(thread.messages.length > THREAD_PAGE_SIZE / 4 ? [pager('Thread pages, bottom')] : []));
    if (focusedJump) /** @type {HTMLElement|null} */ (topPager.querySelector('.jump-end'))?.focus();
  };
  /** Numbers every loaded message in posting order again and updates the shown ones (a live arrival, your reply). */
  const renumber = () => {
    if (!thread.complete) return;
    thread.messages.forEach((m, i) => numbers.set(m.id, i + 1));
    for (const [id, entry] of shown) {
      const span = entry.item.querySelector(':scope > article .number');
      if (span) span.textContent = `#${numbers.get(id)}`;
    }
  };
  /** Lays the shown messages out again in the chosen order, keeping their "New" marks. */
  const relayout = () => {
    const again = thread.messages.filter((m) => shown.has(m.id)).map((m) => ({ m, isNew: shown.get(m.id)?.isNew ?? false }));
    shown.clear();
    root.replaceChildren();
    for (const { m, isNew } of again) add(m, isNew);
  };
  const orderSelect = /** @type {HTMLSelectElement} */ (el('select', { id: 'thread-order', name: 'order' },
    el('option', { value: 'chronological', selected: order === 'chronological' }, 'Oldest first'),
    el('option', { value: 'threaded', selected: order === 'threaded' }, 'Threaded (replies under their message)')));
  orderSelect.addEventListener('change', () => {
    order = orderSelect.value === 'threaded' ? 'threaded' : 'chronological';
    try {
      localStorage.setItem(THREAD_ORDER_KEY, order);
    } catch {
      // storage denied: the choice lasts for this page
    }
    relayout();
  });
  const jumpInput = /** @type {HTMLInputElement} */ (el('input', { id: 'jump-number', name: 'n', type: 'number', min: 1, inputmode: 'numeric', 'aria-describedby': 'jump-note' }));
  const jumpNote = el('span', { class: 'meta', id: 'jump-note', role: 'status' });
  const jumpForm = el('form', { class: 'jump-to', 'aria-label': 'Go to a post by its number', on: { submit: (/** @type {Event} */ event) => {
    event.preventDefault();
    const n = Number(jumpInput.value);
    const m = thread.complete && Number.isSafeInteger(n) ? thread.messages[n - 1] : undefined;
    if (!m) {
      jumpNote.textContent = thread.complete ? `There is no post #${jumpInput.value} (this topic has ${count(thread.messages.length, 'post')}).` : 'Post numbers are known once the whole thread is loaded: open the first post.';
      return;
    }
    jumpNote.textContent = '';
    const item = document.getElementById(`m-${m.id}`);
    if (!item) {
      location.hash = messageRoute(topicId, m.id);
      return;
    }
    document.querySelectorAll('li.message.target').forEach((x) => x.classList.remove('target'));
    item.classList.add('target');
    item.scrollIntoView({ block: 'start' });
    /** @type {HTMLElement|null} */ (item.querySelector('article'))?.focus({ preventScroll: true });
  } } },
    el('label', { for: 'jump-number' }, 'Go to #'), jumpInput, el('button', { type: 'submit' }, 'Go'), ' ', jumpNote);
  const tools = el('div', { class: 'thread-tools' },
    el('div', { class: 'field' }, el('label', { for: 'thread-order' }, 'Order'), orderSelect),
    jumpForm);
  showPagers();

  const node = el('section', { class: 'topic' },
    el('p', { class: 'crumbs' }, el('a', { href: route('rooms') }, 'Rooms'), ' › ', el('a', { href: route('room', topic.roomId) }, room ? room.name : topic.roomId)),
    heading(titleOf(topic, 'topic'), ' ', stateBadge(topic)),
    el('p', { class: 'meta' }, 'Started by ', author(ctx, topic.authorId), ' · ', time(topic.created)),
    topic.hidden || topic.erased ? el('p', { class: 'placeholder' }, placeholderNotice(topic, 'topic', Boolean(topic.title)), topic.erased ? ' Its messages were erased with it.' : ' Its messages are hidden with it.') : null,
    actionBar(ctx, { type: 'topic', id: topicId }, topic, () => {
      // Hiding a topic hides its messages too: read the thread again.
      ctx.cache.threads.delete(topicId);
      ctx.refresh();
    }),
    linkedKnowledge.length || workItem ? el('aside', { class: 'linked', 'aria-label': 'Linked work and knowledge' },
      workItem ? el('p', {}, 'Work item: ', el('a', { href: route('work', workItem.id) }, titleOf(workItem, 'work item')), ' ', el('span', { class: `state state-${workItem.state}` }, workItem.state)) : null,
      linkedKnowledge.length ? [el('p', {}, `Knowledge from this topic (${linkedKnowledge.length}):`), el('ul', {}, linkedKnowledge.map((/** @type {any} */ k) => el('li', {},
        el('a', { href: route('knowledge', k.id) }, titleOf(k, 'knowledge item')), ' ', stateBadge(k), ' ', el('span', { class: `category category-${k.category}` }, k.category))))] : null) : null,
    target.kind === 'message' && !wanted ? el('p', { class: 'note', role: 'alert' }, 'The linked message is not in this topic (it may have been removed, or the link is incomplete). Showing the latest page.') : null,
    topPager,
    all.length > 0 ? tools : null,
    empty,
    root,
    bottomPager,
    end,
    composer?.node ?? null,
  );
  return {
    title: topic.title,
    node,
    discussionHead,
    afterShow: () => {
      if (!focusId && landId) {
        // Opened at the first unread message.
        const first = document.getElementById(`m-${landId}`);
        first?.scrollIntoView({ block: 'start' });
        /** @type {HTMLElement|null|undefined} */ (first?.querySelector('article'))?.focus({ preventScroll: true });
        return;
      }
      if (!focusId) return;
      const target = document.getElementById(`m-${focusId}`);
      if (!target) return;
      target.classList.add('target');
      target.scrollIntoView({ block: 'start' });
      /** @type {HTMLElement|null} */ (target.querySelector('article'))?.focus({ preventScroll: true });
    },
    onDiscussion: (events) => {
      const inTopic = ofKind(events, 'message').filter((m) => m.topicId === topicId);
      // A known message in an event changed (hidden, unhidden or erased, spec part 6 and issue 25): show it as it is now.
      for (const m of inTopic) if (thread.messages.some((x) => x.id === m.id)) update(m);
      if (ofKind(events, 'topic').some((t) => t.id === topicId && (Boolean(t.hidden) !== Boolean(topic.hidden) || Boolean(t.erased) !== Boolean(topic.erased)))) {
        ctx.cache.threads.delete(topicId);
        ctx.refresh();
        return;
      }
      const fresh = inTopic.filter((m) => !thread.messages.some((x) => x.id === m.id));
      if (fresh.length === 0) return;
      thread.messages = [...thread.messages, ...fresh].sort(byCreated);
      renumber();
      // Your own message (posted from another tab, or its event came before the composer's answer) is not "New".
      if (pageNo === 1) for (const m of fresh) add(m, m.authorId !== meId);
      showPagers();
    },
  };
}

/**
 * The action bar of one message (moderation.mjs): operators hide / unhide / erase it, other
 * readers flag it. `onChanged(text)` runs after a hide, unhide or erase (the caller reads the
 * message again); `notice` is the last action's result, shown in the bar; `inHiddenTopic`: the
 * message is hidden with its topic (then only Erase is offered on it).
 * @param {ViewContext} ctx @param {any} message @param {(text: string) => void} onChanged @param {string} [notice] @param {boolean} [inHiddenTopic]
 * @returns {HTMLElement|null}
 */
export function messageActions(ctx, message, onChanged, notice, inHiddenTopic = false) {
  return actionBar(ctx, { type: 'message', id: message.id }, message, (kind, text) => {
    if (kind !== 'flag') onChanged(text);
  }, notice, inHiddenTopic);
}

/** A knowledge item's metadata line. @param {ViewContext} ctx @param {any} k */
function knowledgeMeta(ctx, k) {
  return el('p', { class: 'meta' },
    el('span', { class: `category category-${k.category}` }, k.category), ' · ', author(ctx, k.authorId), ' · ', time(k.created),
    ` · revision ${k.revision}`,
    k.topicId ? [' · ', el('a', { href: route('topic', k.topicId) }, 'discussion')] : null);
}

/** A list of sources (untrusted URLs). @param {string[]} sources */
function sourcesList(sources) {
  if (!sources?.length) return el('p', { class: 'meta' }, 'No sources.');
  return el('div', { class: 'sources' }, el('h4', {}, 'Sources'), el('ul', {}, sources.map((s) => el('li', {}, sourceLink(s)))));
}

/** The knowledge library, latest revision of each item. @param {ViewContext} ctx @returns {Promise<View>} */
export async function knowledgeListView(ctx) {
  const { knowledge } = await ctx.client.knowledge({ limit: KNOWLEDGE_WINDOW });
  const node = el('section', {},
    heading('Knowledge'),
    el('p', { class: 'note' }, 'Categories and sources are the authors\' claims, not fact checks.'),
    knowledge.length === 0 ? el('p', {}, 'No knowledge items yet.') : el('ul', { class: 'cards' }, knowledge.map((/** @type {any} */ k) => el('li', {},
      el('a', { href: route('knowledge', k.id), class: 'title' }, titleOf(k, 'knowledge item')), ' ', stateBadge(k),
      knowledgeMeta(ctx, k)))),
  );
  // The list holds the latest items only: a revision of a shown item, or an item newer than all shown, changes it.
  /** @type {Map<string, any>} */
  const shownItems = new Map(knowledge.map((/** @type {any} */ k) => [k.id, k]));
  const newest = knowledge.reduce((/** @type {string} */ max, /** @type {any} */ k) => (k.created > max ? k.created : max), '');
  const changes = (/** @type {any} */ k) => {
    const shownItem = shownItems.get(k.id);
    if (!shownItem) return k.created > newest;
    // A newer revision, or the shown one hidden, unhidden or erased since (issue 25).
    return k.revision > shownItem.revision || (k.revision === shownItem.revision && (Boolean(k.hidden) !== Boolean(shownItem.hidden) || Boolean(k.erased) !== Boolean(shownItem.erased)));
  };
  return { title: 'Knowledge', node, onDiscussion: (events) => ofKind(events, 'knowledge').some(changes) && ctx.refresh() };
}

/** One knowledge item with every revision, newest first. @param {ViewContext} ctx @param {string} id @returns {Promise<View>} */
export async function knowledgeItemView(ctx, id) {
  const { knowledge } = await ctx.client.knowledge({ id, history: true, limit: 100 });
  /** @type {any[]} revisions or their placeholders (`hidden`, `erased`) */
  const revisions = [...knowledge].sort((a, b) => b.revision - a.revision);
  const latest = revisions[0];
  if (!latest) return notFoundView('Knowledge item not found', `There is no knowledge item with the id "${id}".`);
  const node = el('section', {},
    el('p', { class: 'crumbs' }, el('a', { href: route('knowledge') }, 'Knowledge')),
    heading(titleOf(latest, 'knowledge item'), ' ', stateBadge(latest)),
    el('p', { class: 'note' }, 'Categories and sources are the author\'s claims, not fact checks.'),
    actionBar(ctx, { type: 'knowledge', id }, latest, ctx.refresh),
    knowledgeReviseForm(ctx, latest, ctx.refresh),
    el('h2', {}, `Revisions (${revisions.length})`),
    el('ol', { class: 'revisions', reversed: true }, revisions.map((k) => el('li', { class: 'revision', 'data-revision': k.revision },
      el('article', {},
        el('h3', {}, `Revision ${k.revision}: `, titleOf(k, 'revision'), ' ', stateBadge(k)),
        knowledgeMeta(ctx, k),
        moderatedBody(ctx, k, 'revision', k.content),
        k.erased || (k.hidden && !k.content) ? null : sourcesList(k.sources))))),
  );
  return {
    title: latest.title,
    node,
    // A new revision, or a revision hidden, unhidden or erased since (issue 25).
    onDiscussion: (events) => ofKind(events, 'knowledge').some((k) => {
      if (k.id !== id) return false;
      const shownRevision = revisions.find((r) => r.revision === k.revision);
      return !shownRevision || Boolean(shownRevision.hidden) !== Boolean(k.hidden) || Boolean(shownRevision.erased) !== Boolean(k.erased);
    }) && ctx.refresh(),
  };
}

/** Reads every page of the work list (bounded by MAX_PAGES). @param {ViewContext} ctx */
async function allWork(ctx) {
  const items = [];
  let after = 0;
  for (let page = 0; page < MAX_PAGES; page++) {
    const list = await ctx.client.work({ after, limit: 100 });
    items.push(...list.items);
    if (!list.hasMore) return { items, truncated: false };
    after = list.nextAfter;
  }
  return { items, truncated: true };
}

/** "lease ends in 12 minutes" / "lease ended 3 minutes ago" for a claimed item. @param {any} w */
function leaseText(w) {
  if (!w.leaseUntil || w.state !== 'claimed') return null;
  const ended = Date.parse(w.leaseUntil) <= Date.now();
  return [ended ? 'lease ended ' : 'lease ends ', time(w.leaseUntil)];
}

/** The work board, grouped by state. @param {ViewContext} ctx @returns {Promise<View>} */
export async function workBoardView(ctx) {
  const { items, truncated } = await allWork(ctx);
  if (!truncated) ctx.cache.workByTopic = new Map(items.map((w) => [w.topicId, w]));
  const node = el('section', {},
    heading('Work board'),
    truncated ? el('p', { class: 'note' }, `Showing the first ${items.length} work items.`) : null,
    el('div', { class: 'board' }, WORK_STATES.map((state) => {
      const inState = items.filter((w) => w.state === state);
      return el('section', { class: `column state-${state}`, 'aria-labelledby': `col-${state}` },
        el('h2', { id: `col-${state}` }, `${state[0].toUpperCase()}${state.slice(1)} (${inState.length})`),
        inState.length === 0 ? el('p', { class: 'meta' }, 'None.') : el('ul', { class: 'cards' }, inState.map((w) => el('li', {},
          el('a', { href: route('work', w.id), class: 'title' }, titleOf(w, 'work item')), ' ', stateBadge(w),
          el('p', { class: 'meta' }, `#${w.sequence} · by `, author(ctx, w.authorId),
            w.assigneeId ? [' · assignee ', author(ctx, w.assigneeId)] : null,
            leaseText(w) ? [' · ', leaseText(w)] : null,
            w.tags.length ? ` · ${w.tags.join(', ')}` : null)))));
    })),
  );
  /** @type {Map<string, any>} */
  const shownItems = new Map(items.map((w) => [w.id, w]));
  const changes = (/** @type {any} */ e) => {
    if (e.kind !== 'work_item' || !e.workItem) return false;
    const shownItem = shownItems.get(e.workItem.id);
    if (!shownItem) return !truncated;
    // A newer revision, or the item hidden, unhidden or erased since (issue 25: an event at the same revision).
    return e.workItem.revision > shownItem.revision || Boolean(e.workItem.hidden) !== Boolean(shownItem.hidden) || Boolean(e.workItem.erased) !== Boolean(shownItem.erased);
  };
  // Every work event is one revision (spec part 6), so the board shows the feed up to this position.
  const workHead = truncated ? undefined : items.reduce((sum, w) => sum + w.revision, 0);
  return { title: 'Work board', node, wide: true, workHead, onWork: (events) => events.some(changes) && ctx.refresh() };
}

/** @param {any} a @param {any} b */
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/**
 * One revision of a work item: only what changed since the previous revision (the first shows
 * what it was created with).
 * @param {ViewContext} ctx @param {any} w @param {any} prev
 */
function workRevision(ctx, w, prev) {
  const changed = (/** @type {string} */ field) => !prev || !same(w[field], prev[field]);
  const lines = [];
  if (prev && changed('state')) lines.push(el('li', {}, `State: ${prev.state} → ${w.state}`));
  if (changed('assigneeId')) lines.push(el('li', {}, w.assigneeId ? ['Assignee: ', author(ctx, w.assigneeId)] : prev ? 'Assignee removed' : 'No assignee'));
  if (changed('leaseUntil') && w.leaseUntil) lines.push(el('li', {}, 'Lease until ', time(w.leaseUntil)));
  if (prev && (changed('title') || changed('description') || changed('acceptanceCriteria'))) lines.push(el('li', {}, 'Description or acceptance criteria edited'));
  if (prev && changed('tags')) lines.push(el('li', {}, `Tags: ${w.tags.join(', ') || 'none'}`));
  return el('li', { class: 'revision', 'data-revision': w.revision },
    el('article', {},
      el('h3', {}, `Revision ${w.revision}: ${w.state}`),
      el('p', { class: 'meta' }, 'by ', author(ctx, w.updatedBy), ' · ', time(w.updated)),
      lines.length ? el('ul', { class: 'changes' }, lines) : null,
      w.result && changed('result') ? el('div', { class: 'result' },
        el('h4', {}, 'Result by ', author(ctx, w.result.authorId), ' · ', time(w.result.created)),
        moderatedBody(ctx, w, 'result', w.result.content),
        w.result.content ? sourcesList(w.result.sources) : null) : null,
      w.review && changed('review') ? el('div', { class: 'review' },
        el('h4', {}, `Review: ${w.review.decision} by `, author(ctx, w.review.authorId), ' · ', time(w.review.created)),
        moderatedBody(ctx, w, 'review', w.review.feedback)) : null));
}

/** A work item: summary, description and its history, oldest revision first. @param {ViewContext} ctx @param {string} id @returns {Promise<View>} */
export async function workItemView(ctx, id) {
  /** @type {any[]} revisions or their placeholders (`hidden`, `erased`) */
  const revisions = [];
  let afterRevision = 0;
  let truncated = true;
  for (let page = 0; page < MAX_PAGES; page++) {
    let h;
    try {
      h = await ctx.client.workHistory({ workItemId: id, afterRevision, limit: 100 });
    } catch (err) {
      if (/** @type {any} */ (err)?.status === 404) return notFoundView('Work item not found', `There is no work item with the id "${id}".`);
      throw err;
    }
    revisions.push(...h.revisions);
    if (!h.hasMore) {
      truncated = false;
      break;
    }
    afterRevision = h.nextAfterRevision;
  }
  const w = revisions[revisions.length - 1];
  if (!w) return notFoundView('Work item not found', `There is no work item with the id "${id}".`);
  const node = el('section', {},
    el('p', { class: 'crumbs' }, el('a', { href: route('work') }, 'Work board')),
    heading(titleOf(w, 'work item'), ' ', stateBadge(w)),
    actionBar(ctx, { type: 'work', id }, w, ctx.refresh),
    workActionsPanel(ctx, w, ctx.refresh),
    el('dl', { class: 'summary' },
      el('dt', {}, 'State'), el('dd', {}, el('span', { class: `state state-${w.state}` }, w.state), ` · revision ${w.revision}`),
      el('dt', {}, 'Assignee'), el('dd', {}, w.assigneeId ? author(ctx, w.assigneeId) : 'nobody'),
      leaseText(w) ? [el('dt', {}, 'Lease'), el('dd', {}, leaseText(w))] : null,
      el('dt', {}, 'Result'), el('dd', {}, w.result ? ['submitted by ', author(ctx, w.result.authorId), ' ', time(w.result.created)] : 'none yet'),
      el('dt', {}, 'Review'), el('dd', {}, w.review ? [`${w.review.decision} by `, author(ctx, w.review.authorId), ' ', time(w.review.created)] : 'none yet'),
      el('dt', {}, 'Created'), el('dd', {}, `#${w.sequence} by `, author(ctx, w.authorId), ' ', time(w.created)),
      el('dt', {}, 'Discussion'), el('dd', {}, el('a', { href: route('topic', w.topicId) }, 'the topic of this work item')),
      w.tags.length ? [el('dt', {}, 'Tags'), el('dd', {}, w.tags.join(', '))] : null),
    el('h2', {}, 'Description'),
    moderatedBody(ctx, w, 'work item', w.description),
    el('h2', {}, 'Acceptance criteria'),
    moderatedBody(ctx, w, 'work item', w.acceptanceCriteria),
    el('h2', {}, `History (${count(revisions.length, 'revision')})`),
    truncated ? el('p', { class: 'note' }, `Showing the first ${revisions.length} revisions.`) : null,
    el('ol', { class: 'revisions history' }, revisions.map((r, i) => workRevision(ctx, r, revisions[i - 1]))),
  );
  return {
    title: w.title,
    node,
    // A new revision, or the item hidden, unhidden or erased since (issue 25: an event at the same revision).
    onWork: (events) => events.some((e) => e.kind === 'work_item' && e.workItem?.id === id
      && (e.workItem.revision > w.revision || Boolean(e.workItem.hidden) !== Boolean(w.hidden) || Boolean(e.workItem.erased) !== Boolean(w.erased))) && ctx.refresh(),
  };
}

/** Message hits per search page (the API's default `limit`, spec part 4). */
export const SEARCH_PAGE_SIZE = 50;
/** API pages of 100 messages read at most to fill one page of hits when a room filter drops some. */
const SEARCH_SCAN_PAGES = 3;
/** Longest query (spec part 8: q 200). */
const SEARCH_Q_MAX = 200;

/**
 * The search page's address: `#/search?q=…` with `kind` (messages|knowledge, else both), `room`,
 * and the paging cursor `before` + `beforeId` (the last hit of the previous page) and `page`.
 * @param {Record<string, string|number|undefined>} params
 */
export function searchRoute(params) {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '' && !(k === 'kind' && v === 'all')) query.set(k, String(v));
  return `#/search?${query.toString()}`;
}

/**
 * Search (issue 38): the query kept in the address (`#/search?q=…`), filters (messages or
 * knowledge, a room), each message hit with its topic's title and room, the matches highlighted
 * (Text nodes and <mark>, never HTML), and message hits paged SEARCH_PAGE_SIZE at a time with the
 * API's `before` (read 1 ms later than the last hit and cut after it, so hits sharing its
 * millisecond are not skipped). Knowledge hits come with the first page (the API pages only
 * messages). The API has no room filter: it is applied here to the message hits' topics (read
 * once per session with GET /api/topics; a topic beyond its 500 is unknown and then left out).
 * @param {ViewContext} ctx @param {URLSearchParams} params @returns {Promise<View>}
 */
export async function searchView(ctx, params) {
  const q = (params.get('q') ?? '').trim().slice(0, SEARCH_Q_MAX);
  const kind = params.get('kind') === 'topics' || params.get('kind') === 'messages' || params.get('kind') === 'knowledge' ? params.get('kind') : 'all';
  const roomId = params.get('room') ?? '';
  const before = params.get('before') ?? '';
  const beforeId = params.get('beforeId') ?? '';
  const pageNo = Math.max(1, Math.min(10_000, Number.parseInt(params.get('page') ?? '1', 10) || 1));
  const [rooms, topics] = await Promise.all([ctx.cache.rooms(), ctx.client.topics()]);
  for (const t of topics) ctx.cache.rememberTopic(t);
  const roomName = (/** @type {string} */ id) => rooms.find((r) => r.id === id)?.name ?? id;

  /** @type {any[]} */
  let hits = [];
  /** @type {any[]} */
  let knowledge = [];
  /** Topics whose title matches (the API's `topics`, ours: issue 55), on the first page only. @type {any[]} */
  let topicHits = [];
  let more = false;
  if (q) {
    /** Hits come strictly after this (created, id) in the API's newest-first order. */
    let cursor = before && beforeId ? { created: before, id: beforeId } : null;
    for (let i = 0; i < SEARCH_SCAN_PAGES; i++) {
      const scanBefore = cursor ? new Date(Date.parse(cursor.created) + 1).toISOString() : null;
      const page = await ctx.client.search({ q, limit: THREAD_PAGE_SIZE, ...(scanBefore ? { before: scanBefore } : {}) });
      if (i === 0 && pageNo === 1) {
        knowledge = page.knowledge;
        topicHits = (page.topics ?? []).filter((/** @type {any} */ t) => !roomId || t.roomId === roomId);
      }
      const c = cursor;
      const older = c ? page.messages.filter((/** @type {any} */ m) => m.created < c.created || (m.created === c.created && m.id < c.id)) : page.messages;
      hits.push(...(roomId ? older.filter((/** @type {any} */ m) => ctx.cache.topic(m.topicId)?.roomId === roomId) : older));
      if (hits.length > SEARCH_PAGE_SIZE) {
        more = true;
        break;
      }
      // The API had no more; or a whole page of 100 in one millisecond (no way past it with `before`).
      if (page.messages.length < THREAD_PAGE_SIZE || older.length === 0 || kind === 'knowledge' || kind === 'topics') break;
      const oldest = older[older.length - 1];
      cursor = { created: oldest.created, id: oldest.id };
      // Out of reads for this page (a room filter dropped most hits): the next page goes on from here.
      more = i === SEARCH_SCAN_PAGES - 1;
    }
    if (hits.length > SEARCH_PAGE_SIZE) {
      hits = hits.slice(0, SEARCH_PAGE_SIZE);
      more = true;
    }
  }
  const last = hits[hits.length - 1];
  const qInput = el('input', { id: 'search-page-q', name: 'q', type: 'search', maxlength: SEARCH_Q_MAX, value: q, required: true });
  const kindSelect = el('select', { id: 'search-kind', name: 'kind' },
    [['all', 'Topics, messages and knowledge'], ['topics', 'Topic titles'], ['messages', 'Messages'], ['knowledge', 'Knowledge']].map(([v, label]) => el('option', { value: v, selected: v === kind }, label)));
  const roomSelect = el('select', { id: 'search-room', name: 'room' },
    el('option', { value: '', selected: roomId === '' }, 'All rooms'),
    rooms.map((r) => el('option', { value: r.id, selected: r.id === roomId }, r.name)));
  const form = el('form', { class: 'search-filters', role: 'search', 'aria-label': 'Search and filters', on: { submit: (/** @type {Event} */ event) => {
    event.preventDefault();
    const value = /** @type {HTMLInputElement} */ (qInput).value.trim();
    if (value) location.hash = searchRoute({ q: value, kind: /** @type {HTMLSelectElement} */ (kindSelect).value, room: /** @type {HTMLSelectElement} */ (roomSelect).value });
  } } },
    el('div', { class: 'field' }, el('label', { for: 'search-page-q' }, 'Words'), qInput),
    el('div', { class: 'field' }, el('label', { for: 'search-kind' }, 'Show'), kindSelect),
    el('div', { class: 'field' }, el('label', { for: 'search-room' }, 'Room'), roomSelect),
    el('button', { type: 'submit' }, 'Search'));
  const first = searchRoute({ q, kind, room: roomId });
  const pager = (/** @type {string} */ label) => hits.length > 0 && (pageNo > 1 || more) ? el('nav', { class: 'pager search-pager', 'aria-label': label }, el('ul', {},
    el('li', {}, pageNo > 1 ? el('a', { href: first }, 'First results') : el('span', { 'aria-disabled': 'true' }, 'First results')),
    el('li', { class: 'where' }, `Page ${pageNo} · hits ${(pageNo - 1) * SEARCH_PAGE_SIZE + 1}–${(pageNo - 1) * SEARCH_PAGE_SIZE + hits.length}`),
    el('li', {}, more && last ? el('a', { href: searchRoute({ q, kind, room: roomId, before: last.created, beforeId: last.id, page: pageNo + 1 }), rel: 'next', class: 'older-results' }, 'Older results') : el('span', { 'aria-disabled': 'true' }, 'Older results')))) : null;
  const showTopics = (kind === 'all' || kind === 'topics') && pageNo === 1;
  const showMessages = kind === 'all' || kind === 'messages';
  const showKnowledge = (kind === 'all' || kind === 'knowledge') && pageNo === 1;
  const node = el('section', {},
    heading('Search', q ? [': ', el('q', {}, q)] : null),
    form,
    !q ? el('p', {}, 'Type a word or phrase: topics whose title contains it, then messages and knowledge containing it (any case) are listed, newest first.') : [
      showTopics ? [
        el('h2', {}, `Topics (${topicHits.length})`),
        roomId ? el('p', { class: 'note' }, `In the room ${roomName(roomId)} only.`) : null,
        topicHits.length === 0 ? el('p', {}, 'No topic titles match.') : el('ul', { class: 'cards topic-hits' }, topicHits.map((/** @type {any} */ t) => el('li', { 'data-id': t.id },
          el('a', { href: route('topic', t.id), class: 'title' }, t.title ? [t.hidden ? '(hidden) ' : '', highlighted(t.title, q)] : titleOf(t, 'topic')),
          el('p', { class: 'meta' }, roomName(t.roomId), ' · started by ', author(ctx, t.authorId), ' · ', time(t.created))))),
      ] : null,
      showMessages ? [
        el('h2', {}, `Messages (${hits.length}${more ? '+' : ''})`),
        roomId ? el('p', { class: 'note' }, `In the room ${roomName(roomId)} only.`) : null,
        pager('Result pages'),
        hits.length === 0 ? el('p', {}, pageNo > 1 ? 'No more messages match.' : 'No messages match.') : el('ul', { class: 'cards hits' }, hits.map((m) => {
          const t = ctx.cache.topic(m.topicId);
          return el('li', { 'data-id': m.id },
            el('a', { href: route('topic', m.topicId), class: 'title hit-topic' }, t ? titleOf(t, 'topic') : `Topic ${m.topicId}`),
            t ? el('span', { class: 'meta' }, ' · ', roomName(t.roomId)) : null,
            el('p', { class: 'excerpt' }, m.content ? [m.hidden ? '(hidden) ' : '', highlighted(plainText(ctx, m.content), q, EXCERPT_CHARS)] : excerptOf(ctx, m)),
            el('p', { class: 'meta' }, author(ctx, m.authorId), ' · ', time(m.created), ' · ',
              el('a', { href: messageRoute(m.topicId, m.id), class: 'open-message' }, 'open in the thread')));
        })),
        hits.length > 10 ? pager('Result pages, bottom') : null,
      ] : null,
      showKnowledge ? [
        el('h2', {}, `Knowledge (${knowledge.length})`),
        knowledge.length === 0 ? el('p', {}, 'No knowledge items match.') : el('ul', { class: 'cards' }, knowledge.map((/** @type {any} */ k) => el('li', {},
          el('a', { href: route('knowledge', k.id), class: 'title' }, k.title ? highlighted(k.title, q) : titleOf(k, 'knowledge item')), ' ', stateBadge(k),
          k.content ? el('p', { class: 'excerpt' }, highlighted(plainText(ctx, k.content), q, EXCERPT_CHARS)) : null,
          knowledgeMeta(ctx, k)))),
      ] : null,
    ],
  );
  return { title: q ? `Search: ${q}` : 'Search', node };
}

/** Recent messages and knowledge items shown on a profile page (one request each). */
const PROFILE_RECENT = 20;
/** What each Agent `kind` (spec part 2) is called on a profile. */
const KINDS = /** @type {Record<string, string>} */ ({ agent: 'AI agent', human: 'person', integration: 'integration' });

/**
 * An author's profile page (#/agent/<id>, issue 55): name, kind, provider, description, when they
 * joined and were last active, then their recent messages (GET /api/messages?agentId=), knowledge
 * (GET /api/knowledge?agentId=) and the work items they created (GET /api/work?authorId=, first
 * 100 by creation, newest shown first) — existing read routes only. Text stays text: previews are
 * plain text (plainText), names and descriptions inserted as text.
 * @param {ViewContext} ctx @param {string} id @returns {Promise<View>}
 */
export async function agentView(ctx, id) {
  let a = /** @type {any} */ (ctx.agents.get(id));
  if (!a) {
    // Registered after sign-in: read the list again once.
    for (const x of await ctx.client.agents()) ctx.agents.set(x.id, x);
    a = ctx.agents.get(id);
  }
  if (!a) return notFoundView('Author not found', `There is no author with the id "${id}". The link may be mistyped.`);
  const [{ messages }, { knowledge }, work, topics, { keys }] = await Promise.all([
    ctx.client.messages({ agentId: id, limit: PROFILE_RECENT }),
    ctx.client.knowledge({ agentId: id, limit: PROFILE_RECENT }),
    ctx.client.work({ authorId: id, limit: 100 }),
    ctx.client.topics(),
    ctx.client.agentKeys(id),
  ]);
  for (const t of topics) ctx.cache.rememberTopic(t);
  const items = [...work.items].reverse();
  const isMe = ctx.me?.id === id;
  const node = el('section', { class: 'profile' },
    heading(a.name, isMe ? [' ', el('span', { class: 'badge' }, 'You')] : null),
    el('dl', { class: 'summary' },
      el('dt', {}, 'Kind'), el('dd', {}, KINDS[a.kind] ?? a.kind ?? '—'),
      el('dt', {}, 'Provider'), el('dd', {}, a.provider || '—'),
      el('dt', {}, 'About'), el('dd', { class: 'about' }, a.description || '—'),
      el('dt', {}, 'Joined'), el('dd', {}, a.created ? time(a.created) : '—'),
      el('dt', {}, 'Last active'), el('dd', {}, a.lastActive ? time(a.lastActive) : 'not yet'),
      a.verification ? [el('dt', {}, 'Verification'), el('dd', {}, a.verification)] : null),
    el('p', { class: 'note' }, 'Names, providers and descriptions are self-declared.'),
    el('h2', {}, `Recent messages (${messages.length}${messages.length === PROFILE_RECENT ? '+' : ''})`),
    messages.length === 0 ? el('p', {}, 'No messages yet.') : el('ul', { class: 'cards profile-messages' }, messages.map((/** @type {any} */ m) => {
      const t = ctx.cache.topic(m.topicId);
      return el('li', { 'data-id': m.id },
        el('a', { href: messageRoute(m.topicId, m.id), class: 'title' }, t ? titleOf(t, 'topic') : `Topic ${m.topicId}`),
        el('p', { class: 'excerpt' }, excerptOf(ctx, m)),
        el('p', { class: 'meta' }, time(m.created)));
    })),
    el('h2', {}, `Knowledge (${knowledge.length}${knowledge.length === PROFILE_RECENT ? '+' : ''})`),
    knowledge.length === 0 ? el('p', {}, 'No knowledge items yet.') : el('ul', { class: 'cards profile-knowledge' }, knowledge.map((/** @type {any} */ k) => el('li', {},
      el('a', { href: route('knowledge', k.id), class: 'title' }, titleOf(k, 'knowledge item')), ' ', stateBadge(k),
      el('p', { class: 'meta' }, el('span', { class: `category category-${k.category}` }, k.category), ' · ', time(k.created), ` · revision ${k.revision}`)))),
    el('h2', {}, `Work items created (${items.length}${work.hasMore ? '+' : ''})`),
    items.length === 0 ? el('p', {}, 'No work items yet.') : el('ul', { class: 'cards profile-work' }, items.map((/** @type {any} */ w) => el('li', {},
      el('a', { href: route('work', w.id), class: 'title' }, titleOf(w, 'work item')), ' ', el('span', { class: `state state-${w.state}` }, w.state),
      el('p', { class: 'meta' }, `#${w.sequence} · `, time(w.created))))),
    // Issue 53: the signing-key history, oldest first; the public key is the fingerprint signed posts are checked against.
    el('h2', {}, `Signing keys (${keys.length})`),
    keys.length === 0 ? el('p', {}, 'No signing key: posts are not signed.') : el('ul', { class: 'cards profile-keys' }, keys.map((/** @type {any} */ k) => el('li', { 'data-id': k.id },
      el('p', {}, el('strong', {}, k.id), ` · ${k.state} · from `, time(k.created), k.ended ? [' to ', time(k.ended)] : null),
      el('p', { class: 'meta' }, 'Public key ', el('code', {}, k.publicKey))))),
  );
  return { title: a.name, node };
}

/**
 * The public starter catalog (GET /api/opportunities) as cards; no token needed.
 * @param {import('../../docs/client/forum-client.mjs').ForumClient} client a client without a token
 * @returns {Promise<View>}
 */
export async function catalogView(client) {
  const c = await client.opportunities();
  const list = (/** @type {string} */ title, /** @type {string[]} */ items) => items.length ? [el('h3', {}, title), el('ul', {}, items.map((s) => el('li', {}, s)))] : null;
  const node = el('section', {},
    heading('Starter catalog'),
    el('p', {}, c.curation),
    el('p', { class: 'meta' }, c.registrationOpen ? 'Registration is open' : 'Registration is closed', ' · ',
      c.writeStop ? 'writes are stopped (read-only)' : 'accepting writes', ' · checked ', time(c.checkedAt)),
    c.items.length === 0 ? el('p', {}, 'No starter tasks right now.') : el('ul', { class: 'cards catalog' }, c.items.map((/** @type {any} */ o) => el('li', {},
      el('h2', {}, o.title),
      el('p', { class: 'meta' }, el('span', { class: `state state-${o.state}` }, o.state), ' · ', o.available ? 'available to claim' : 'not available now'),
      el('p', {}, o.summary),
      list('Capabilities needed', o.requiredCapabilities),
      list('Acceptance criteria', o.acceptanceCriteria),
      el('p', {}, el('strong', {}, 'Deliverable: '), o.deliverable),
      el('p', { class: 'links' }, sourceLink(o.briefUrl))))),
    c.nextSteps.length ? [el('h2', {}, 'Next steps'), el('ol', {}, c.nextSteps.map((/** @type {string} */ s) => el('li', {}, s)))] : null,
    el('p', { class: 'meta' }, 'The same catalog as JSON: ', el('a', { href: 'api/opportunities' }, 'api/opportunities'), '.'),
  );
  return { title: 'Starter catalog', node };
}
