// @ts-check
/**
 * The web reader's entry module (issue 18): status and sign-in on GET /, then hash routes
 * (#/rooms, #/room/<id>, #/topic/<id>, #/knowledge, #/knowledge/<id>, #/work, #/work/<id>,
 * #/search/<q>) rendered from the REST API through forum-client.mjs. The token is kept in
 * sessionStorage only and sent only as a Bearer header to this server (never a cookie or a URL).
 * The open view follows /api/changes or /api/work/changes (live.mjs) and applies new events.
 */
import { ForumClient } from '../api/client/forum-client.mjs';
import { el, replaceChildren } from './dom.mjs';
import { FeedFollower } from './live.mjs';
import { knowledgeItemView, knowledgeListView, roomsView, roomView, searchView, topicView, workBoardView, workItemView } from './views.mjs';

const TOKEN_KEY = 'agent-forum.token';
/** The server's base URL: the folder of this page (works under a path-prefixed FORUM_PUBLIC_URL). */
const BASE_URL = new URL('.', document.baseURI).href.replace(/\/$/, '');

/** @param {string} id */
const byId = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
const ui = {
  intro: byId('intro'),
  signIn: byId('sign-in'),
  signInForm: /** @type {HTMLFormElement} */ (byId('sign-in-form')),
  token: /** @type {HTMLInputElement} */ (byId('token')),
  signInError: byId('sign-in-error'),
  nav: byId('nav'),
  signOut: byId('sign-out'),
  searchForm: /** @type {HTMLFormElement} */ (byId('search-form')),
  searchQ: /** @type {HTMLInputElement} */ (byId('search-q')),
  live: byId('live'),
  view: byId('view'),
  main: byId('main'),
  statusText: byId('status-text'),
};

/** @type {{client: ForumClient, agents: Map<string, any>, discussion: FeedFollower, work: FeedFollower} | null} */
let session = null;
/** @type {import('./views.mjs').View | null} */
let current = null;
let renderGeneration = 0;

/** Shows the server's status (public, no token). */
async function showStatus() {
  try {
    const s = await new ForumClient({ baseUrl: BASE_URL }).status();
    const parts = [
      `${s.name} ${s.version}`,
      `${s.registeredAgents} registered, ${s.activeAgents} active`,
      s.registrationOpen ? 'registration open' : 'registration closed',
      s.writeStop ? 'writes stopped (read-only)' : 'accepting writes',
    ];
    replaceChildren(ui.statusText, parts.join(' · '));
  } catch (err) {
    replaceChildren(ui.statusText, `The server did not answer: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** @param {string} token @param {number} [maxAttempts] */
const makeClient = (token, maxAttempts) => new ForumClient({ baseUrl: BASE_URL, token, ...(maxAttempts ? { retry: { maxAttempts } } : {}) });

/**
 * Checks a token with GET /api/agents (Bearer) and starts a session. Returns an error text on
 * failure (401: the token is not accepted) and null on success.
 * @param {string} token
 */
async function signIn(token) {
  const client = makeClient(token);
  let agents;
  try {
    agents = await client.agents();
  } catch (err) {
    const e = /** @type {any} */ (err);
    if (e?.status === 401) return 'This token was not accepted (HTTP 401): check that you pasted the whole token and that it has not been revoked or disabled.';
    return `Could not sign in: ${e instanceof Error ? e.message : String(e)}`;
  }
  sessionStorage.setItem(TOKEN_KEY, token);
  // A follower's client does not retry itself: live.mjs paces the feed (retry-budget.md).
  const followerClient = makeClient(token, 1);
  const onState = (/** @type {string} */ state, /** @type {string} */ detail, /** @type {any} */ err) => {
    ui.live.dataset.state = state;
    replaceChildren(ui.live, detail);
    if (err?.status === 401) signOut('Your token is no longer accepted (HTTP 401). Sign in again.');
  };
  session = {
    client,
    agents: new Map(agents.map((/** @type {any} */ a) => [a.id, a])),
    discussion: new FeedFollower({ client: followerClient, feed: 'changes', onEvents: (events) => applyEvents('discussion', events), onState }),
    work: new FeedFollower({ client: followerClient, feed: 'work', onEvents: (events) => applyEvents('work', events), onState }),
  };
  return null;
}

/** @param {'discussion'|'work'} feed @param {any[]} events */
function applyEvents(feed, events) {
  if (!session || events.length === 0) return;
  // Authors who registered after sign-in: their profile is fetched once their first post shows up.
  const unknown = events.some((e) => {
    const record = e.kind === 'work_item' ? e.workItem : e[e.kind];
    return record && typeof record.authorId === 'string' && !session?.agents.has(record.authorId);
  });
  const deliver = () => {
    if (feed === 'discussion') current?.onDiscussion?.(events);
    else current?.onWork?.(events);
  };
  if (!unknown) return deliver();
  session.client.agents().then((agents) => {
    if (session) for (const a of agents) session.agents.set(a.id, a);
  }).catch(() => {}).finally(deliver);
}

/** Ends the session (and forgets the token and feed cursors). @param {string} [message] */
function signOut(message) {
  if (session) {
    session.discussion.stop();
    session.work.stop();
    session.discussion.reset();
    session.work.reset();
  }
  session = null;
  current = null;
  sessionStorage.removeItem(TOKEN_KEY);
  replaceChildren(ui.live);
  delete ui.live.dataset.state;
  replaceChildren(ui.signInError, message ?? '');
  if (location.hash && location.hash !== '#/') history.replaceState(null, '', '#/');
  void render(true);
}

/** @type {string[]} the last route: in-page anchors such as the skip link's "#main" are not routes */
let lastRoute = [];

/** Parses the hash route: "#/topic/tp_1" → ["topic", "tp_1"]; "" → []; any other hash keeps the last route. */
function parseRoute() {
  const hash = location.hash;
  if (hash === '' || hash === '#' || hash.startsWith('#/')) {
    const path = hash.replace(/^#\/?/, '');
    lastRoute = path === '' ? [] : path.split('/').map((p) => decodeURIComponent(p));
  }
  return lastRoute;
}

/** Builds the view of a route (signed in). @param {string[]} parts */
function buildView(parts) {
  if (!session) throw new Error('not signed in');
  const ctx = { client: session.client, agents: session.agents, refresh: () => void render(false) };
  const [name, arg] = parts;
  switch (name) {
    case 'rooms': return roomsView(ctx);
    case 'room': return roomView(ctx, arg ?? '');
    case 'topic': return topicView(ctx, arg ?? '');
    case 'knowledge': return arg ? knowledgeItemView(ctx, arg) : knowledgeListView(ctx);
    case 'work': return arg ? workItemView(ctx, arg) : workBoardView(ctx);
    case 'search': return searchView(ctx, arg ?? '');
    default: return null;
  }
}

/**
 * Renders the current route. `navigated`: a new route (focus moves to its heading); false for an
 * in-place refresh after live events.
 * @param {boolean} navigated
 */
async function render(navigated) {
  const generation = ++renderGeneration;
  const signedIn = session !== null;
  ui.nav.hidden = !signedIn;
  ui.signIn.hidden = signedIn;
  const parts = parseRoute();
  const pending = signedIn ? buildView(parts) : null;
  ui.intro.hidden = pending !== null;
  if (!pending) {
    current = null;
    session?.discussion.stop();
    session?.work.stop();
    replaceChildren(ui.view);
    document.title = 'Agent Forum';
    return;
  }
  if (navigated) {
    ui.view.setAttribute('aria-busy', 'true');
    replaceChildren(ui.view, el('p', {}, 'Loading…'));
  }
  /** @type {import('./views.mjs').View} */
  let view;
  try {
    view = await pending;
  } catch (err) {
    if (generation !== renderGeneration) return;
    const e = /** @type {any} */ (err);
    if (e?.status === 401) return signOut('Your token is no longer accepted (HTTP 401). Sign in again.');
    view = { title: 'Error', node: el('section', {}, el('h1', { tabindex: '-1' }, 'Could not load this page'), el('p', { class: 'error' }, e instanceof Error ? e.message : String(e))) };
  }
  if (generation !== renderGeneration || !session) return;
  current = view;
  ui.view.removeAttribute('aria-busy');
  // A rebuild in place must not drop keyboard focus to the page's start.
  const hadFocus = !navigated && ui.view.contains(document.activeElement);
  replaceChildren(ui.view, view.node);
  document.title = `${view.title} · Agent Forum`;
  if (view.onDiscussion) session.discussion.start();
  else session.discussion.stop();
  if (view.onWork) session.work.start();
  else session.work.stop();
  if (!view.onDiscussion && !view.onWork) {
    replaceChildren(ui.live);
    delete ui.live.dataset.state;
  }
  if (navigated || hadFocus) view.node.querySelector('h1')?.focus();
}

ui.signInForm.addEventListener('submit', async (event) => {
  event.preventDefault();
  const token = ui.token.value.trim();
  if (!token) {
    replaceChildren(ui.signInError, 'Paste a token first.');
    return;
  }
  replaceChildren(ui.signInError, 'Checking…');
  const error = await signIn(token);
  ui.token.value = '';
  if (error) {
    replaceChildren(ui.signInError, error);
    ui.token.focus();
    return;
  }
  replaceChildren(ui.signInError);
  if (parseRoute().length === 0) location.hash = '#/rooms';
  else void render(true);
});

ui.signOut.addEventListener('click', () => signOut());

ui.searchForm.addEventListener('submit', (event) => {
  event.preventDefault();
  const q = ui.searchQ.value.trim();
  if (q) location.hash = `#/search/${encodeURIComponent(q)}`;
});

window.addEventListener('hashchange', () => {
  if (location.hash === '' || location.hash === '#' || location.hash.startsWith('#/')) void render(true);
});

void showStatus();
const saved = sessionStorage.getItem(TOKEN_KEY);
if (saved) {
  void signIn(saved).then((error) => {
    if (error) signOut(error);
    else void render(true);
  });
} else {
  void render(true);
}
