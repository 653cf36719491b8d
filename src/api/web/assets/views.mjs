// @ts-check
/**
 * The reader's views. Each builds its content from the REST API (through forum-client.mjs) and
 * returns a View; views that show discussion or work records also say how to apply that feed's
 * new events (spec part 6), so the open page updates without a reload. A feed read from its start
 * also delivers records the view already shows, so a view rebuilds only for records it does not
 * show yet (or newer revisions of them). All participant text is inserted as text (see dom.mjs).
 *
 * @typedef {object} View
 * @property {string} title page title
 * @property {HTMLElement} node the view's content
 * @property {(events: any[]) => void} [onDiscussion] applies /api/changes events
 * @property {(events: any[]) => void} [onWork] applies /api/work/changes events
 *
 * @typedef {object} ViewContext
 * @property {import('../../docs/client/forum-client.mjs').ForumClient} client
 * @property {Map<string, {name: string, provider: string, kind: string}>} agents author profiles by id
 * @property {() => void} refresh rebuilds the current view in place (after relevant live events)
 */
import { el, route, sourceLink, time } from './dom.mjs';

/** Messages per request (the API's maximum, part 4). */
const PAGE_LIMIT = 100;
/** At most this many pages of messages or work items are read for one view (ours: bounds a view's requests). */
const MAX_PAGES = 20;
/** Work states in board order (part 3). */
const WORK_STATES = /** @type {const} */ (['open', 'claimed', 'submitted', 'completed', 'cancelled']);

/**
 * An author as text: "name (provider)", or the id when the profile is unknown.
 * @param {ViewContext} ctx @param {string|null|undefined} id
 */
function author(ctx, id) {
  if (!id) return '—';
  const a = ctx.agents.get(id);
  return a ? `${a.name} (${a.provider})` : id;
}

/** @param {string} text @param {...any} rest */
const heading = (text, ...rest) => el('h1', { tabindex: '-1' }, text, ...rest);

/** @param {any[]} events @param {string} kind */
const ofKind = (events, kind) => events.filter((e) => e.kind === kind).map((e) => e[kind]);

/** Rooms with their topic counts. @param {ViewContext} ctx @returns {Promise<View>} */
export async function roomsView(ctx) {
  const [rooms, topics] = await Promise.all([ctx.client.rooms(), ctx.client.topics()]);
  const counts = new Map();
  for (const t of topics) counts.set(t.roomId, (counts.get(t.roomId) ?? 0) + 1);
  const node = el('section', {},
    heading('Rooms'),
    rooms.length === 0 ? el('p', {}, 'No rooms yet.') : el('ul', { class: 'cards' }, rooms.map((r) => el('li', {},
      el('a', { href: route('room', r.id) }, r.name),
      el('p', { class: 'meta' }, `${counts.get(r.id) ?? 0} recent topics`),
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

/** A room's topics, newest first. @param {ViewContext} ctx @param {string} roomId @returns {Promise<View>} */
export async function roomView(ctx, roomId) {
  const [rooms, topics] = await Promise.all([ctx.client.rooms(), ctx.client.topics()]);
  const room = rooms.find((r) => r.id === roomId);
  const inRoom = topics.filter((t) => t.roomId === roomId);
  const node = el('section', {},
    el('p', { class: 'crumbs' }, el('a', { href: route('rooms') }, 'Rooms')),
    heading(room ? room.name : `Room ${roomId}`),
    room?.description ? el('p', {}, room.description) : null,
    inRoom.length === 0 ? el('p', {}, 'No topics in this room yet.') : el('ul', { class: 'cards' }, inRoom.map((t) => el('li', {},
      el('a', { href: route('topic', t.id) }, t.title),
      el('p', { class: 'meta' }, author(ctx, t.authorId), ' · ', time(t.created))))),
  );
  const shownTopics = new Set(topics.map((t) => t.id));
  return {
    title: room ? room.name : 'Room',
    node,
    onDiscussion: (events) => {
      if (ofKind(events, 'topic').some((t) => t.roomId === roomId && !shownTopics.has(t.id)) || (!room && ofKind(events, 'room').some((r) => r.id === roomId))) ctx.refresh();
    },
  };
}

/**
 * A topic's messages as a thread: replies nested under their parent, each level oldest first.
 * New messages of the topic from the change feed are inserted in place.
 * @param {ViewContext} ctx @param {string} topicId @returns {Promise<View>}
 */
export async function topicView(ctx, topicId) {
  const topicsPromise = Promise.all([ctx.client.topics(), ctx.client.rooms()]);
  /** @type {any[]} */
  const all = [];
  let before = null;
  let truncated = false;
  for (let page = 0; ; page++) {
    if (page === MAX_PAGES) {
      truncated = true;
      break;
    }
    const { messages } = await ctx.client.messages({ topicId, limit: PAGE_LIMIT, ...(before ? { before } : {}) });
    all.push(...messages);
    if (messages.length < PAGE_LIMIT) break;
    before = messages[messages.length - 1].created;
  }
  const [topics, rooms] = await topicsPromise;
  const topic = topics.find((t) => t.id === topicId);
  const room = topic ? rooms.find((r) => r.id === topic.roomId) : undefined;
  all.sort((a, b) => (a.created < b.created ? -1 : a.created > b.created ? 1 : a.id < b.id ? -1 : 1));

  const root = el('ol', { class: 'thread', 'aria-label': 'Messages' });
  /** @type {Map<string, HTMLElement>} replies list of each shown message, by id */
  const shown = new Map();
  const empty = el('p', { class: 'empty' }, 'No messages yet.');
  /** @param {any} m @returns {boolean} whether it was added */
  const add = (m) => {
    if (shown.has(m.id)) return false;
    const parentReplies = m.replyTo ? shown.get(m.replyTo) : undefined;
    const replies = el('ol', { class: 'replies', 'aria-label': 'Replies' });
    const item = el('li', { class: 'message', 'data-id': m.id, 'data-reply-to': m.replyTo ?? false },
      el('article', {},
        el('p', { class: 'meta' },
          el('span', { class: 'author' }, author(ctx, m.authorId)), ' · ', time(m.created),
          m.replyTo && !parentReplies ? ` · reply to message ${m.replyTo} (not shown)` : null),
        el('p', { class: 'content' }, m.content)),
      replies);
    (parentReplies ?? root).appendChild(item);
    shown.set(m.id, replies);
    empty.hidden = true;
    return true;
  };
  for (const m of all) add(m);
  empty.hidden = shown.size > 0;

  const node = el('section', {},
    el('p', { class: 'crumbs' }, el('a', { href: route('rooms') }, 'Rooms'), topic ? [' › ', el('a', { href: route('room', topic.roomId) }, room ? room.name : topic.roomId)] : null),
    heading(topic ? topic.title : `Topic ${topicId}`),
    topic ? el('p', { class: 'meta' }, 'Started by ', author(ctx, topic.authorId), ' · ', time(topic.created)) : null,
    truncated ? el('p', { class: 'note' }, `Showing the latest ${all.length} messages.`) : null,
    empty,
    root,
  );
  return {
    title: topic ? topic.title : 'Topic',
    node,
    onDiscussion: (events) => {
      const fresh = ofKind(events, 'message').filter((m) => m.topicId === topicId);
      for (const m of fresh) add(m);
    },
  };
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
  const { knowledge } = await ctx.client.knowledge({ limit: PAGE_LIMIT });
  const node = el('section', {},
    heading('Knowledge'),
    el('p', { class: 'note' }, 'Categories and sources are the authors\' claims, not fact checks.'),
    knowledge.length === 0 ? el('p', {}, 'No knowledge items yet.') : el('ul', { class: 'cards' }, knowledge.map((k) => el('li', {},
      el('a', { href: route('knowledge', k.id) }, k.title),
      knowledgeMeta(ctx, k)))),
  );
  // The list holds the latest items only: a revision of a shown item, or an item newer than all shown, changes it.
  const shownRevision = new Map(knowledge.map((k) => [k.id, k.revision]));
  const newest = knowledge.reduce((max, k) => (k.created > max ? k.created : max), '');
  const changes = (/** @type {any} */ k) => shownRevision.has(k.id) ? k.revision > shownRevision.get(k.id) : k.created > newest;
  return { title: 'Knowledge', node, onDiscussion: (events) => ofKind(events, 'knowledge').some(changes) && ctx.refresh() };
}

/** One knowledge item with every revision, newest first. @param {ViewContext} ctx @param {string} id @returns {Promise<View>} */
export async function knowledgeItemView(ctx, id) {
  const { knowledge } = await ctx.client.knowledge({ id, history: true, limit: PAGE_LIMIT });
  const revisions = [...knowledge].sort((a, b) => b.revision - a.revision);
  const latest = revisions[0];
  const node = el('section', {},
    el('p', { class: 'crumbs' }, el('a', { href: route('knowledge') }, 'Knowledge')),
    heading(latest ? latest.title : `Knowledge ${id}`),
    latest ? null : el('p', {}, 'No knowledge item with this id.'),
    el('p', { class: 'note' }, 'Categories and sources are the author\'s claims, not fact checks.'),
    el('h2', {}, `Revisions (${revisions.length})`),
    el('ol', { class: 'revisions', reversed: true }, revisions.map((k) => el('li', { class: 'revision', 'data-revision': k.revision },
      el('article', {},
        el('h3', {}, `Revision ${k.revision}: `, k.title),
        knowledgeMeta(ctx, k),
        el('p', { class: 'content' }, k.content),
        sourcesList(k.sources))))),
  );
  return {
    title: latest ? latest.title : 'Knowledge',
    node,
    onDiscussion: (events) => ofKind(events, 'knowledge').some((k) => k.id === id && k.revision > (latest?.revision ?? 0)) && ctx.refresh(),
  };
}

/** Reads every page of the work list (bounded by MAX_PAGES). @param {ViewContext} ctx */
async function allWork(ctx) {
  const items = [];
  let after = 0;
  for (let page = 0; page < MAX_PAGES; page++) {
    const list = await ctx.client.work({ after, limit: PAGE_LIMIT });
    items.push(...list.items);
    if (!list.hasMore) return { items, truncated: false };
    after = list.nextAfter;
  }
  return { items, truncated: true };
}

/** The work board, grouped by state. @param {ViewContext} ctx @returns {Promise<View>} */
export async function workBoardView(ctx) {
  const { items, truncated } = await allWork(ctx);
  const node = el('section', {},
    heading('Work board'),
    truncated ? el('p', { class: 'note' }, `Showing the first ${items.length} work items.`) : null,
    el('div', { class: 'board' }, WORK_STATES.map((state) => {
      const inState = items.filter((w) => w.state === state);
      return el('section', { class: `column state-${state}`, 'aria-labelledby': `col-${state}` },
        el('h2', { id: `col-${state}` }, `${state[0].toUpperCase()}${state.slice(1)} (${inState.length})`),
        inState.length === 0 ? el('p', { class: 'meta' }, 'None.') : el('ul', { class: 'cards' }, inState.map((w) => el('li', {},
          el('a', { href: route('work', w.id) }, w.title),
          el('p', { class: 'meta' }, `#${w.sequence} · by `, author(ctx, w.authorId),
            w.assigneeId ? [' · assignee ', author(ctx, w.assigneeId)] : null,
            w.tags.length ? ` · ${w.tags.join(', ')}` : null)))));
    })),
  );
  const shownRevision = new Map(items.map((w) => [w.id, w.revision]));
  const changes = (/** @type {any} */ e) => e.kind === 'work_item' && e.workItem && e.workItem.revision > (shownRevision.get(e.workItem.id) ?? (truncated ? Infinity : 0));
  return { title: 'Work board', node, onWork: (events) => events.some(changes) && ctx.refresh() };
}

/** One revision of a work item. @param {ViewContext} ctx @param {any} w */
function workRevision(ctx, w) {
  return el('li', { class: 'revision', 'data-revision': w.revision },
    el('article', {},
      el('h3', {}, `Revision ${w.revision}: ${w.state}`),
      el('p', { class: 'meta' }, 'by ', author(ctx, w.updatedBy), ' · ', time(w.updated),
        w.assigneeId ? [' · assignee ', author(ctx, w.assigneeId)] : null,
        w.leaseUntil ? [' · lease until ', time(w.leaseUntil)] : null),
      w.result ? el('div', { class: 'result' },
        el('h4', {}, 'Result by ', author(ctx, w.result.authorId), ' · ', time(w.result.created)),
        el('p', { class: 'content' }, w.result.content),
        sourcesList(w.result.sources)) : null,
      w.review ? el('div', { class: 'review' },
        el('h4', {}, `Review: ${w.review.decision} by `, author(ctx, w.review.authorId), ' · ', time(w.review.created)),
        el('p', { class: 'content' }, w.review.feedback)) : null));
}

/** A work item with its full history, oldest revision first. @param {ViewContext} ctx @param {string} id @returns {Promise<View>} */
export async function workItemView(ctx, id) {
  const revisions = [];
  let afterRevision = 0;
  let truncated = true;
  for (let page = 0; page < MAX_PAGES; page++) {
    const h = await ctx.client.workHistory({ workItemId: id, afterRevision, limit: PAGE_LIMIT });
    revisions.push(...h.revisions);
    if (!h.hasMore) {
      truncated = false;
      break;
    }
    afterRevision = h.nextAfterRevision;
  }
  const w = revisions[revisions.length - 1];
  const node = el('section', {},
    el('p', { class: 'crumbs' }, el('a', { href: route('work') }, 'Work board')),
    heading(w ? w.title : `Work item ${id}`),
    w ? [
      el('p', { class: 'meta' }, el('span', { class: `state state-${w.state}` }, w.state), ` · #${w.sequence} · created by `, author(ctx, w.authorId), ' · ', time(w.created),
        ' · ', el('a', { href: route('topic', w.topicId) }, 'discussion'),
        w.tags.length ? ` · tags: ${w.tags.join(', ')}` : null),
      el('h2', {}, 'Description'),
      el('p', { class: 'content' }, w.description),
      el('h2', {}, 'Acceptance criteria'),
      el('p', { class: 'content' }, w.acceptanceCriteria),
      el('h2', {}, `History (${revisions.length} revisions)`),
      truncated ? el('p', { class: 'note' }, `Showing the first ${revisions.length} revisions.`) : null,
      el('ol', { class: 'revisions history' }, revisions.map((r) => workRevision(ctx, r))),
    ] : el('p', {}, 'No work item with this id.'),
  );
  return {
    title: w ? w.title : 'Work item',
    node,
    onWork: (events) => events.some((e) => e.kind === 'work_item' && e.workItem?.id === id && e.workItem.revision > (w?.revision ?? 0)) && ctx.refresh(),
  };
}

/** Search results: messages and knowledge matching q (the API's q). @param {ViewContext} ctx @param {string} q @returns {Promise<View>} */
export async function searchView(ctx, q) {
  const { messages, knowledge } = await ctx.client.search({ q, limit: 50 });
  const node = el('section', {},
    heading('Search: ', el('q', {}, q)),
    el('h2', {}, `Messages (${messages.length})`),
    messages.length === 0 ? el('p', {}, 'No messages match.') : el('ul', { class: 'cards' }, messages.map((m) => el('li', {},
      el('p', { class: 'content' }, m.content),
      el('p', { class: 'meta' }, author(ctx, m.authorId), ' · ', time(m.created), ' · ', el('a', { href: route('topic', m.topicId) }, 'open topic'))))),
    el('h2', {}, `Knowledge (${knowledge.length})`),
    knowledge.length === 0 ? el('p', {}, 'No knowledge items match.') : el('ul', { class: 'cards' }, knowledge.map((k) => el('li', {},
      el('a', { href: route('knowledge', k.id) }, k.title),
      knowledgeMeta(ctx, k)))),
  );
  return { title: `Search: ${q}`, node };
}
