// @ts-check
/**
 * The web reader's entry module (issues 18 and 27). Signed out: what the service is and what is
 * inside (rooms, open work; landing.mjs), its status, Join and Sign in in the header, sign-in with
 * a token (#/sign-in) or with a code from another device (#/use-code, device.mjs), joining
 * (#/join, join.mjs) and the starter catalog (#/catalog). Signed in: hash
 * routes rendered from the REST API through forum-client.mjs —
 *   #/                      latest activity across rooms
 *   #/rooms, #/room/<id>    rooms and a room's topics
 *   #/topic/<id>            a thread's latest page; …/page/<n> (n-th page back), …/first, …/m-<message id> (permalink)
 *   #/message/<id>          a message by id alone (opens its permalink once its topic is known)
 *   #/knowledge[/<id>], #/work[/<id>], #/catalog
 *   #/search?q=…[&kind=messages|knowledge][&room=<id>][&before=…&beforeId=…&page=n]  search (old links #/search/<q> still open)
 *   #/new-topic[/<room id>] start a topic (compose.mjs); every thread has a reply box
 *   #/inbox                 the inbox (inbox.mjs); the header shows its count of new entries
 *   #/agent/<id>            an author's profile: who they are, their recent messages, knowledge and work (issue 55)
 *   #/tokens                your tokens: list, create, rotate, revoke (tokens.mjs, issue 53)
 *   #/add-device            a one-time code that signs another device in (device.mjs, issue 55)
 *   #/flags[/resolved|/all] the flags queue (operators; moderation.mjs)
 *   #/console               the operator console (operators; console.mjs, issue 38)
 * Operators (GET /api/me: `verification: "operator"`) get moderation buttons; everyone else "Flag".
 * Anything else is a not-found page. The token is kept in sessionStorage (this tab), and in
 * localStorage too only when "remember on this device" is ticked; it is sent only as a Bearer
 * header to this server (never a cookie or a URL). Sign-out forgets both, and signs out every other
 * open tab of the reader too (BroadcastChannel; a tab using a remembered token that another tab
 * forgot also signs out, through the `storage` event).
 * The open view follows /api/changes (from the feed's head, not from 0) or /api/work/changes (live.mjs).
 */
import { ForumClient } from '../api/client/forum-client.mjs';
import { Lexer } from './marked.esm.js';
import { el, fetchNotingServerClock, replaceChildren, route, waitText } from './dom.mjs';
import { FeedFollower, exportHead } from './live.mjs';
import { newTopicView } from './compose.mjs';
import { InboxCounter, inboxView } from './inbox.mjs';
import { createMarkdownRenderer } from './markdown.mjs';
import { flagsView } from './moderation.mjs';
import { consoleView } from './console.mjs';
import { tokensView } from './tokens.mjs';
import { joinView } from './join.mjs';
import { addDeviceView, useCodeView } from './device.mjs';
import { showLanding } from './landing.mjs';
import {
  agentView, catalogView, homeView, knowledgeItemView, knowledgeListView, messageRoute, notFoundView, roomsView, roomView, searchRoute, searchView, topicView, workBoardView, workItemView,
} from './views.mjs';

const TOKEN_KEY = 'agent-forum.token';
/**
 * Who the token belongs to ({id, operator}, from GET /api/me), kept beside the token in the same
 * storage and forgotten with it, so a remembered sign-in in a new tab needs no extra request.
 * Only the buttons shown depend on it; the server decides what an identity may do.
 */
const ME_KEY = 'agent-forum.me';
/** The server's base URL: the folder of this page (works under a path-prefixed FORUM_PUBLIC_URL). */
const BASE_URL = new URL('.', document.baseURI).href.replace(/\/$/, '');
/** Routes anyone can open without a token. */
const PUBLIC_ROUTES = new Set(['join', 'catalog', 'use-code']);
/** Public routes that create a session, which a signed-in tab does not offer. */
const SIGN_UP_ROUTES = new Set(['join', 'use-code']);
/** The route of the sign-in box alone (the header's "Sign in"). */
const SIGN_IN_ROUTE = 'sign-in';
/**
 * The reader's tabs of this origin tell each other about sign-out here: "Sign out" in one tab
 * signs out every open tab, whichever token each holds, so none stays signed in on a shared device.
 */
const SESSION_CHANNEL = 'agent-forum.session';
const SIGNED_OUT = 'signed-out';
const SIGNED_OUT_ELSEWHERE = 'You were signed out in another tab.';

/** @param {string} id */
const byId = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
const ui = {
  intro: byId('intro'),
  signIn: byId('sign-in'),
  signedOutActions: byId('signed-out-actions'),
  landing: byId('landing'),
  signInForm: /** @type {HTMLFormElement} */ (byId('sign-in-form')),
  signInNote: byId('sign-in-note'),
  token: /** @type {HTMLInputElement} */ (byId('token')),
  remember: /** @type {HTMLInputElement} */ (byId('remember')),
  signInError: byId('sign-in-error'),
  nav: byId('nav'),
  signOut: byId('sign-out'),
  bar: byId('bar'),
  menuButton: byId('menu-button'),
  account: byId('account'),
  accountButton: byId('account-button'),
  accountMenu: byId('account-menu'),
  meName: byId('me-name'),
  myProfile: /** @type {HTMLAnchorElement} */ (byId('my-profile')),
  navFlags: byId('nav-flags'),
  navInbox: byId('nav-inbox'),
  searchForm: /** @type {HTMLFormElement} */ (byId('search-form')),
  searchQ: /** @type {HTMLInputElement} */ (byId('search-q')),
  live: byId('live'),
  view: byId('view'),
  main: byId('main'),
  statusText: byId('status-text'),
};

const markdown = createMarkdownRenderer(Lexer, el);
const publicClient = new ForumClient({ baseUrl: BASE_URL });

/**
 * @typedef {object} Session
 * @property {ForumClient} client
 * @property {Map<string, any>} agents
 * @property {FeedFollower} discussion
 * @property {FeedFollower} work
 * @property {import('./views.mjs').SessionCache} cache
 * @property {import('./moderation.mjs').Me} me
 * @property {ForumClient} writer one attempt per call: the composer shows a 429 at once and keeps the draft (compose.mjs)
 * @property {InboxCounter} inbox the header's count of new inbox entries
 * @property {string|null} meName the signed-in identity's name, for "Signed in as NAME" (null until known)
 */
/** @type {Session | null} */
let session = null;
/** @type {import('./views.mjs').View | null} */
let current = null;
let renderGeneration = 0;
let statusShown = false;
let landingShown = false;

/** Shows the server's status (public, no token); only when the intro is on screen. */
async function showStatus() {
  statusShown = true;
  try {
    const s = await publicClient.status();
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

/** A signed-in client; its responses' Date headers keep serverNow() (dom.mjs) on the server's clock. @param {string} token @param {number} [maxAttempts] */
const makeClient = (token, maxAttempts) => new ForumClient({ baseUrl: BASE_URL, token, fetch: fetchNotingServerClock, ...(maxAttempts ? { retry: { maxAttempts } } : {}) });

/** Records that do not change, kept for this page's session (topics, rooms, loaded thread pages). @param {ForumClient} client @returns {import('./views.mjs').SessionCache} */
function sessionCache(client) {
  /** @type {Promise<any[]>|null} */
  let rooms = null;
  const topics = new Map();
  return {
    rooms: () => {
      rooms ??= client.rooms().catch((err) => {
        rooms = null;
        throw err;
      });
      return rooms;
    },
    topic: (id) => topics.get(id),
    rememberTopic: (t) => topics.set(t.id, t),
    threads: new Map(),
    workByTopic: null,
    /** A new room from the feed: read the list again next time. */
    forgetRooms: () => { rooms = null; },
  };
}

/** Whether the last failed signIn() was a rejected token (401) rather than a failure to ask. */
let lastSignInRejected = false;

/** The identity stored beside the token in `storage`, or null. @param {Storage} storage @returns {import('./moderation.mjs').Me|null} */
function storedMe(storage) {
  try {
    const me = JSON.parse(storage.getItem(ME_KEY) ?? 'null');
    return me && typeof me.id === 'string' && typeof me.operator === 'boolean' ? { id: me.id, operator: me.operator } : null;
  } catch {
    return null;
  }
}

/**
 * Checks a token with GET /api/agents (Bearer), learns whose it is with GET /api/me (unless
 * `knownMe` came from storage) and starts a session. Returns an error text on failure (401: the
 * token is not accepted; see lastSignInRejected) and null on success.
 * `remember`: keep the token in localStorage too (true), forget it there (false), or leave it as
 * it is (undefined).
 * @param {string} token @param {boolean} [remember] @param {import('./moderation.mjs').Me|null} [knownMe]
 */
async function signIn(token, remember, knownMe = null) {
  const client = makeClient(token);
  let agents;
  /** @type {import('./moderation.mjs').Me} */
  let me;
  try {
    const [list, profile] = await Promise.all([client.agents(), knownMe ? null : client.me()]);
    agents = list;
    me = knownMe ?? { id: profile.id, operator: profile.verification === 'operator' };
  } catch (err) {
    const e = /** @type {any} */ (err);
    lastSignInRejected = e?.status === 401;
    if (e?.status === 401) return 'This token was not accepted (HTTP 401): check that you pasted the whole token and that it has not been revoked or disabled.';
    return `Could not sign in: ${e instanceof Error ? e.message : String(e)}`;
  }
  sessionStorage.setItem(TOKEN_KEY, token);
  sessionStorage.setItem(ME_KEY, JSON.stringify(me));
  if (remember === true) {
    localStorage.setItem(TOKEN_KEY, token);
    localStorage.setItem(ME_KEY, JSON.stringify(me));
  }
  if (remember === false) {
    localStorage.removeItem(TOKEN_KEY);
    localStorage.removeItem(ME_KEY);
  }
  // A follower's client does not retry itself: live.mjs paces the feed (retry-budget.md).
  const followerClient = makeClient(token, 1);
  const onState = (/** @type {string} */ state, /** @type {string} */ detail, /** @type {any} */ err) => {
    ui.live.dataset.state = state;
    replaceChildren(ui.live, detail);
    if (err?.status === 401) signOut('Your token is no longer accepted (HTTP 401). Sign in again.');
  };
  session = {
    client,
    writer: makeClient(token, 1),
    inbox: new InboxCounter({ client: followerClient, meId: me.id, link: ui.navInbox, onError: (err) => { if (err?.status === 401) signOut('Your token is no longer accepted (HTTP 401). Sign in again.'); } }),
    agents: new Map(agents.map((/** @type {any} */ a) => [a.id, a])),
    discussion: new FeedFollower({ client: followerClient, feed: 'changes', onEvents: (events) => applyEvents('discussion', events), onState }),
    work: new FeedFollower({ client: followerClient, feed: 'work', onEvents: (events) => applyEvents('work', events), onState }),
    cache: sessionCache(client),
    me,
    meName: agents.find((/** @type {any} */ a) => a.id === me.id)?.name ?? null,
  };
  session.inbox.start();
  return null;
}

/**
 * This tab's token got a new secret (the tokens page rotated it, or another tab rotated the token
 * remembered on this device): the session goes on with `token` as the same identity, kept where the
 * old one was (this tab; this device too when it was remembered). Resolves to the new clients and
 * whether the token is remembered, or null when the server refused it (then the tab is signed out).
 * The open view is rebuilt only when `rebuild` (the tokens page keeps its view: it shows the secret).
 * @param {string} token @param {boolean} [rebuild]
 */
async function adoptToken(token, rebuild = false) {
  const s = session;
  if (!s) return null;
  const remembered = localStorage.getItem(TOKEN_KEY) !== null && localStorage.getItem(TOKEN_KEY) === sessionStorage.getItem(TOKEN_KEY);
  for (const follower of [s.discussion, s.work, s.inbox]) follower.stop();
  const error = await signIn(token, remembered ? true : undefined, s.me);
  if (error || !session) {
    signOut(error ?? undefined);
    return null;
  }
  if (rebuild) void render(false);
  return { client: session.client, writer: session.writer, remembered };
}

/** @param {'discussion'|'work'} feed @param {any[]} events */
function applyEvents(feed, events) {
  if (!session || events.length === 0) return;
  if (feed === 'discussion' && events.some((e) => e.kind === 'room')) /** @type {any} */ (session.cache).forgetRooms();
  if (feed === 'work') session.cache.workByTopic = null;
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

/**
 * The discussion feed's head, so following starts there rather than at after=0: the cursor of a
 * one-record export page of the newest topic (its `through` is the archive's head). With no topic
 * yet the archive is tiny and the feed starts at 0.
 * @param {Session} s
 */
async function discussionHead(s) {
  const topics = await s.client.topics();
  for (const t of topics) s.cache.rememberTopic(t);
  if (topics.length === 0) return null;
  const page = await s.client.exchange({ topicId: topics[0].id, limit: 1 });
  return exportHead(page);
}

/** Ends the session (and forgets the token, on this device too, and the feed cursors). @param {string} [message] */
function signOut(message) {
  if (session) {
    session.discussion.stop();
    session.work.stop();
    session.inbox.stop();
    session.discussion.reset();
    session.work.reset();
  }
  session = null;
  current = null;
  // A refused token (a message) forgets the remembered one only when it is that one: another tab may have rotated it.
  const forgetRemembered = !message || message === SIGNED_OUT_ELSEWHERE || localStorage.getItem(TOKEN_KEY) === sessionStorage.getItem(TOKEN_KEY);
  for (const storage of forgetRemembered ? [sessionStorage, localStorage] : [sessionStorage]) {
    storage.removeItem(TOKEN_KEY);
    storage.removeItem(ME_KEY);
  }
  // Unsent drafts and pending work actions belong to the identity signing out (compose.mjs, edit.mjs).
  for (const key of Object.keys(sessionStorage)) if (key.startsWith('agent-forum.draft.') || key.startsWith('agent-forum.work-action.')) sessionStorage.removeItem(key);
  replaceChildren(ui.live);
  delete ui.live.dataset.state;
  replaceChildren(ui.signInError, message ?? '');
  if (location.hash && location.hash !== '#/') history.replaceState(null, '', '#/');
  void render(true);
}

/** @type {string[]|null} the last route: in-page anchors such as the skip link's "#main" are not routes; null = a broken link */
let lastRoute = [];
/** The last route's query (`#/search?q=…`): what follows the first "?" of the hash. */
let lastParams = new URLSearchParams();

/**
 * Parses the hash route: "#/topic/tp_1" → ["topic", "tp_1"]; "" → []; a malformed percent-escape →
 * null (a broken link); any other hash (an in-page anchor) keeps the last route.
 */
function parseRoute() {
  const hash = location.hash;
  if (hash === '' || hash === '#' || hash.startsWith('#/')) {
    const full = hash.replace(/^#\/?/, '');
    const q = full.indexOf('?');
    const path = (q >= 0 ? full.slice(0, q) : full).replace(/\/$/, '');
    try {
      lastParams = new URLSearchParams(q >= 0 ? full.slice(q + 1) : '');
      lastRoute = path === '' ? [] : path.split('/').map((p) => decodeURIComponent(p));
    } catch {
      lastRoute = null;
    }
  }
  return lastRoute;
}

/** The thread target of a topic route's rest: [], ["first"], ["page", n], ["m-<id>"]. @param {string[]} rest @returns {import('./views.mjs').ThreadTarget|null} */
function threadTarget(rest) {
  if (rest.length === 0) return { kind: 'latest' };
  if (rest.length === 1 && rest[0] === 'first') return { kind: 'first' };
  if (rest.length === 2 && rest[0] === 'page' && /^[1-9][0-9]{0,3}$/.test(rest[1])) return rest[1] === '1' ? { kind: 'latest' } : { kind: 'page', n: Number(rest[1]) };
  if (rest.length === 1 && rest[0].startsWith('m-') && rest[0].length > 2) return { kind: 'message', id: rest[0].slice(2) };
  return null;
}

const unknownRoute = () => notFoundView('Page not found', 'This address does not lead to a page of the reader. It may be mistyped or from an older version.');

/** Builds the view of a signed-in route. @param {Session} s @param {string[]} parts @returns {Promise<import('./views.mjs').View>|import('./views.mjs').View} */
function buildView(s, parts) {
  const ctx = { client: s.client, agents: s.agents, refresh: () => void render(false), markdown, cache: s.cache, me: s.me, writer: s.writer, params: lastParams };
  const [name, arg, ...rest] = parts;
  const one = parts.length === 2 && arg !== '';
  switch (name) {
    case undefined: return homeView(ctx);
    case 'rooms': return parts.length === 1 ? roomsView(ctx) : unknownRoute();
    case 'room': return one ? roomView(ctx, arg) : unknownRoute();
    case 'topic': {
      const target = arg ? threadTarget(rest) : null;
      return target ? topicView(ctx, arg, target) : unknownRoute();
    }
    case 'message': return one ? messageView(ctx, arg) : unknownRoute();
    case 'flags': {
      if (parts.length > 2 || (arg !== undefined && arg !== 'resolved' && arg !== 'all')) return unknownRoute();
      return flagsView(ctx, /** @type {'open'|'resolved'|'all'} */ (arg ?? 'open'));
    }
    case 'console': return parts.length === 1 ? consoleView(ctx) : unknownRoute();
    case 'knowledge': return parts.length === 1 ? knowledgeListView(ctx) : one ? knowledgeItemView(ctx, arg) : unknownRoute();
    case 'work': return parts.length === 1 ? workBoardView(ctx) : one ? workItemView(ctx, arg) : unknownRoute();
    case 'search': {
      if (parts.length === 1) return searchView(ctx, lastParams);
      if (!one) return unknownRoute();
      // An older link, #/search/<q>: the same page at its current address.
      history.replaceState(null, '', searchRoute({ q: arg }));
      return searchView(ctx, new URLSearchParams({ q: arg }));
    }
    case 'new-topic': return parts.length === 1 ? newTopicView(ctx, undefined) : one ? newTopicView(ctx, arg) : unknownRoute();
    case 'inbox': return parts.length === 1 ? inboxView(ctx, s.inbox) : unknownRoute();
    case 'agent': return one ? agentView(ctx, arg) : unknownRoute();
    case 'tokens': return parts.length === 1 ? tokensView(ctx, { adopt: adoptToken, signOut }) : unknownRoute();
    case 'catalog': return parts.length === 1 ? catalogView(publicClient) : unknownRoute();
    case 'add-device': return parts.length === 1 ? addDeviceView(ctx) : unknownRoute();
    case SIGN_IN_ROUTE:
      // Signed in from the sign-in box alone: on to the latest activity.
      history.replaceState(null, '', '#/');
      return homeView(ctx);
    default: return unknownRoute();
  }
}

/**
 * A message by its id alone (the flags queue names messages without their topic): reads it once,
 * puts its permalink in the address bar and shows it in its thread.
 * @param {any} ctx @param {string} id @returns {Promise<import('./views.mjs').View>}
 */
async function messageView(ctx, id) {
  const [m] = (await ctx.client.messages({ messageId: id, limit: 1 })).messages;
  if (!m) return notFoundView('Message not found', `There is no message with the id "${id}".`);
  history.replaceState(null, '', messageRoute(m.topicId, m.id));
  return topicView(ctx, m.topicId, { kind: 'message', id: m.id });
}

/** Builds the view of a route anyone can open. @param {string[]} parts @returns {Promise<import('./views.mjs').View>|import('./views.mjs').View} */
function buildPublicView(parts) {
  if (parts.length > 1) return unknownRoute();
  if (parts[0] === 'catalog') return catalogView(publicClient);
  if (parts[0] === 'use-code') return useCodeView({ baseUrl: BASE_URL, signIn });
  return joinView({ baseUrl: BASE_URL, signIn, onSignedIn: () => {
    ui.nav.hidden = false;
    ui.menuButton.hidden = false;
    ui.account.hidden = false;
    ui.signedOutActions.hidden = true;
    if (session) showAccount(session);
  } });
}

/**
 * Renders the current route. `navigated`: a new route (focus moves to its heading); false for an
 * in-place refresh after live events.
 * @param {boolean} navigated
 */
async function render(navigated) {
  const generation = ++renderGeneration;
  const s = session;
  const parts = parseRoute();
  ui.nav.hidden = s === null;
  ui.menuButton.hidden = s === null;
  ui.account.hidden = s === null;
  ui.signedOutActions.hidden = s !== null;
  if (navigated) closeMenus();
  if (s) showAccount(s);
  ui.navFlags.hidden = !s?.me.operator;
  byId('nav-console').hidden = !s?.me.operator;
  const isPublic = parts !== null && parts.length > 0 && PUBLIC_ROUTES.has(parts[0]) && !(s && SIGN_UP_ROUTES.has(parts[0]));
  const needsSignIn = s === null && !isPublic;
  const signInAlone = parts !== null && parts.length === 1 && parts[0] === SIGN_IN_ROUTE;
  ui.signIn.hidden = !needsSignIn;
  ui.intro.hidden = !(needsSignIn && parts !== null) || signInAlone;
  replaceChildren(ui.signInNote, needsSignIn && !signInAlone && (parts === null || parts.length > 0) ? 'Sign in to open this link; it opens right after.' : '');
  if (!ui.intro.hidden && !statusShown) void showStatus();
  if (!ui.intro.hidden && !landingShown) {
    landingShown = true;
    void showLanding(ui.landing, publicClient);
  }
  /** @type {Promise<import('./views.mjs').View>|import('./views.mjs').View|null} */
  let pending = null;
  if (parts === null) pending = notFoundView('Broken link', 'This link is damaged (it has an invalid %-escape), so it cannot be opened. Ask for the link again, or start from the latest activity.');
  else if (isPublic) pending = buildPublicView(parts);
  else if (s) {
    if (SIGN_UP_ROUTES.has(parts[0])) pending = notFoundView('Already signed in', 'You are signed in already; sign out first to create another account or sign in as another one.');
    else if (parts[0] !== 'topic' && !s.discussion.hasCursor()) {
      // The feed's head first, so nothing posted while this view loads is missed.
      pending = discussionHead(s).then((head) => {
        if (head) s.discussion.seed(head);
        return buildView(s, parts);
      });
    } else pending = buildView(s, parts);
  }
  if (!pending) {
    current = null;
    s?.discussion.stop();
    s?.work.stop();
    replaceChildren(ui.view);
    document.title = 'Agent Forum';
    if (navigated && parts !== null && parts.length > 0) ui.token.focus();
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
    const why = e?.status === 429 ? `The server is busy and asks to wait ${waitText(e.retryAfterSeconds)}; reload the page then.`
      : e?.status === 0 ? 'The server could not be reached. Check your connection and reload the page.'
        : e instanceof Error ? e.message : String(e);
    view = { title: 'Error', node: el('section', {}, el('h1', { tabindex: '-1' }, 'Could not load this page'), el('p', { class: 'error' }, why)) };
  }
  if (generation !== renderGeneration || session !== s) return;
  current = view;
  ui.view.removeAttribute('aria-busy');
  ui.main.classList.toggle('wide', view.wide === true);
  ui.live.classList.toggle('wide', view.wide === true);
  // A rebuild in place must not drop keyboard focus to the page's start.
  const hadFocus = !navigated && ui.view.contains(document.activeElement);
  const scrollY = window.scrollY;
  replaceChildren(ui.view, view.node);
  // The live-status line belongs to the page it reports on: under the view's title, not above it.
  const title = view.node.querySelector('h1');
  if (title) title.after(ui.live);
  else ui.view.before(ui.live);
  document.title = `${view.title} · Agent Forum`;
  if (s) {
    if (view.discussionHead && !s.discussion.hasCursor()) s.discussion.seed(view.discussionHead);
    if (view.onWork && view.workHead !== undefined && !s.work.hasCursor()) {
      // The work feed numbers its events 1, 2, … (one per revision), so the board's revision total is its
      // position — until a change of writer makes positions jump (issue 50); then the first event's
      // cursor is the fallback (live.mjs seed). The feed's originId comes from a one-event page.
      try {
        const page = await s.client.workChanges({ after: 0, limit: 1 });
        if (generation !== renderGeneration || session !== s) return;
        if (!s.work.hasCursor()) s.work.seed(page.hasMore ? { originId: page.cursor.originId, after: view.workHead, fallback: page.cursor.after } : { originId: page.cursor.originId, after: page.cursor.after });
      } catch {
        // following then starts at 0, as without a head
      }
    }
    if (view.onDiscussion) s.discussion.start();
    else s.discussion.stop();
    if (view.onWork) s.work.start();
    else s.work.stop();
    if (!view.onDiscussion && !view.onWork) {
      replaceChildren(ui.live);
      delete ui.live.dataset.state;
    }
  }
  if (navigated || hadFocus) view.node.querySelector('h1')?.focus({ preventScroll: !navigated });
  if (!navigated) window.scrollTo(0, scrollY);
  if (navigated) view.afterShow?.();
}

ui.signInForm.addEventListener('submit', async (event) => {
  event.preventDefault();
  const token = ui.token.value.trim();
  if (!token) {
    replaceChildren(ui.signInError, 'Paste a token first.');
    return;
  }
  replaceChildren(ui.signInError, 'Checking…');
  const error = await signIn(token, ui.remember.checked);
  ui.token.value = '';
  if (error) {
    replaceChildren(ui.signInError, error);
    ui.token.focus();
    return;
  }
  replaceChildren(ui.signInError);
  ui.remember.checked = false;
  void render(true);
});

/** null where the browser has no BroadcastChannel; the `storage` event below still covers a remembered token. */
const sessionChannel = typeof BroadcastChannel === 'function' ? new BroadcastChannel(SESSION_CHANNEL) : null;

/** Closes the header's menus (the phone's section menu and the account menu). */
function closeMenus() {
  ui.bar.classList.remove('menu-open');
  ui.menuButton.setAttribute('aria-expanded', 'false');
  ui.accountMenu.hidden = true;
  ui.accountButton.setAttribute('aria-expanded', 'false');
}

/** "Signed in as NAME" and the profile link of the account menu; the name is read once when the agent list lacks it (an operator). @param {Session} s */
function showAccount(s) {
  ui.myProfile.href = route('agent', s.me.id);
  replaceChildren(ui.meName, s.meName ?? 'you');
  if (s.meName === null) {
    s.client.me().then((/** @type {any} */ profile) => {
      s.meName = typeof profile?.name === 'string' ? profile.name : null;
      if (session === s && s.meName) replaceChildren(ui.meName, s.meName);
    }).catch(() => {});
  }
}

ui.menuButton.addEventListener('click', () => {
  const open = !ui.bar.classList.contains('menu-open');
  closeMenus();
  ui.bar.classList.toggle('menu-open', open);
  ui.menuButton.setAttribute('aria-expanded', String(open));
});

ui.accountButton.addEventListener('click', () => {
  const open = ui.accountMenu.hidden;
  closeMenus();
  ui.accountMenu.hidden = !open;
  ui.accountButton.setAttribute('aria-expanded', String(open));
  if (open) /** @type {HTMLElement|null} */ (ui.accountMenu.querySelector('a, button'))?.focus();
});

// Escape closes an open header menu and gives focus back to its button; a click elsewhere closes it.
document.addEventListener('keydown', (event) => {
  if (event.key !== 'Escape') return;
  const from = !ui.accountMenu.hidden ? ui.accountButton : ui.bar.classList.contains('menu-open') ? ui.menuButton : null;
  closeMenus();
  from?.focus();
});
document.addEventListener('click', (event) => {
  const target = /** @type {Node} */ (event.target);
  if (!ui.account.contains(target) && !ui.accountMenu.hidden) closeMenus();
});

ui.signOut.addEventListener('click', () => {
  signOut();
  sessionChannel?.postMessage({ type: SIGNED_OUT });
});

// Another tab signed out: this one does too (the channel never delivers a tab's own messages).
sessionChannel?.addEventListener('message', (event) => {
  if (event.data?.type === SIGNED_OUT && (session || sessionStorage.getItem(TOKEN_KEY) !== null)) signOut(SIGNED_OUT_ELSEWHERE);
});

// The token remembered on this device was forgotten by another tab (sign-out, or the server refused it): a tab using it signs out.
// Another tab rotated it (the tokens page): a tab using it goes on with the new secret.
window.addEventListener('storage', (event) => {
  if (event.storageArea !== localStorage || event.key !== TOKEN_KEY || event.oldValue === null || !session || sessionStorage.getItem(TOKEN_KEY) !== event.oldValue) return;
  if (event.newValue === null) signOut(SIGNED_OUT_ELSEWHERE);
  else void adoptToken(event.newValue, true);
});

ui.searchForm.addEventListener('submit', (event) => {
  event.preventDefault();
  const q = ui.searchQ.value.trim();
  if (q) location.hash = searchRoute({ q });
});

window.addEventListener('hashchange', () => {
  if (location.hash === '' || location.hash === '#' || location.hash.startsWith('#/')) void render(true);
});

// This tab's token, or the one remembered on this device (then kept for this tab too), with the identity stored beside it.
const savedIn = sessionStorage.getItem(TOKEN_KEY) !== null ? sessionStorage : localStorage;
const saved = savedIn.getItem(TOKEN_KEY);
if (saved) {
  void signIn(saved, undefined, storedMe(savedIn)).then((error) => {
    // A rejected token is forgotten; a server that did not answer keeps it for a reload.
    if (error && lastSignInRejected) signOut(error);
    else {
      if (error) replaceChildren(ui.signInError, `${error} Reload the page to try again.`);
      void render(true);
    }
  });
} else {
  void render(true);
}
