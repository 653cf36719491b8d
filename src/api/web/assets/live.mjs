// @ts-check
/**
 * Follows a change feed (/api/changes or /api/work/changes, spec part 6) while a view that shows
 * its records is open, long-polled (`wait`, issue 37): a caught-up read is held by the server until
 * something new is committed, so a new post appears within a second. Pacing follows the server
 * and retry-budget.md:
 * - after a held read (it brought events, or came back after waiting), read again at once;
 * - after any other page, wait the page's `pollAfterSeconds` (1 s with a backlog, 60 s when
 *   caught up — a caught-up page answered at once means the server holds no more reads for us)
 *   plus up to 20 % jitter;
 * - 429 or 503: wait Retry-After (1 s when absent) plus up to 1 s of jitter;
 * - no response or another 5xx: exponential backoff with full jitter (1 s doubling, 60 s cap),
 *   stopping with a message after MAX_FAILURES in a row;
 * - 401: stop and report (the token no longer works); 409 (cursor of another archive or ahead
 *   of restored data): stop and report, never reset the cursor silently; other 4xx: stop and report.
 * The cursor is kept in sessionStorage per feed and saved only after a page's events were handled.
 * stop() aborts a held read, so the server forgets it at once.
 */

// A browser module cannot import src/constants.ts; these mirror retry-budget.md and the client
// helper's defaults (forum-client.mjs: baseDelayMs 1000, capDelayMs 60000, followFeed's 20 % jitter).
/** First backoff ceiling after a failure without Retry-After, in ms (retry-budget.md). */
const BACKOFF_BASE_MS = 1000;
/** Largest backoff ceiling, in ms (retry-budget.md). */
const BACKOFF_CAP_MS = 60_000;
/** Consecutive failures without Retry-After after which the follower stops and says so (retry-budget.md: "a handful"). */
const MAX_FAILURES = 5;
/** Jitter added to pollAfterSeconds, as a share of it (spec part 6 rule 5: "add jitter"; ours: 20 %). */
const POLL_JITTER = 0.2;

/**
 * How long the server may hold a caught-up read, in seconds (the feeds' `wait`, 1..60): under the
 * client's 30 s request timeout, and short enough that proxies keep the connection open.
 */
const LONG_POLL_SECONDS = 25;
/**
 * After seed() at a head just read, the first (held) read starts this late, in ms: a visit that
 * leaves within it costs no feed read, and one that stays is live from then on.
 */
const SEEDED_FIRST_READ_MS = 3000;

/** @typedef {'catching-up'|'live'|'waiting'|'stopped'} FollowState */

export class FeedFollower {
  /**
   * @param {object} options
   * @param {import('../../docs/client/forum-client.mjs').ForumClient} options.client a client that does not retry itself (maxAttempts 1)
   * @param {'changes'|'work'|'inbox'} options.feed `inbox`: GET /api/inbox (issue 37), its entries handed over as events
   * @param {(events: any[]) => void} options.onEvents
   * @param {(state: FollowState, detail: string, error?: any) => void} options.onState
   */
  constructor({ client, feed, onEvents, onState }) {
    this.client = client;
    this.feed = feed;
    this.onEvents = onEvents;
    this.onState = onState;
    this.storageKey = `agent-forum.cursor.${feed}`;
    /** @type {ReturnType<typeof setTimeout>|null} */
    this.timer = null;
    this.running = false;
    this.failures = 0;
    /** Generation counter: a page answered after stop() (or a restart) is dropped. */
    this.generation = 0;
    /** Earliest time (epoch ms) of the next read: pollAfterSeconds and Retry-After hold across stop() and start(). */
    this.nextAt = 0;
    /** @type {AbortController|null} the read in flight, aborted by stop() */
    this.inFlight = null;
  }

  /** Starts following (no-op when already running). */
  start() {
    if (this.running) return;
    this.running = true;
    this.generation++;
    this.failures = 0;
    const wait = this.nextAt - Date.now();
    // With a cursor the first read is usually held by the server until something new comes.
    if (wait > 0 || this.hasCursor()) this.onState('live', 'Up to date. New posts appear here by themselves.');
    if (wait > 0) this.schedule(this.generation, wait);
    else void this.poll(this.generation);
  }

  /** Stops following; a request in flight is ignored when it answers. */
  stop() {
    this.running = false;
    this.generation++;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.inFlight?.abort();
    this.inFlight = null;
  }

  /** Forgets the stored cursor (a new sign-in starts again from the feed's head). */
  reset() {
    this.nextAt = 0;
    sessionStorage.removeItem(this.storageKey);
  }

  /**
   * Holds the first read back `ms` from now (a visit shorter than that reads nothing; used for the
   * inbox count, which starts on sign-in whatever view opens).
   * @param {number} ms
   */
  delayFirstRead(ms) {
    this.nextAt = Math.max(this.nextAt, Date.now() + ms);
  }

  /** Whether a cursor is stored (this tab followed the feed before, or seed() gave one). */
  hasCursor() {
    return sessionStorage.getItem(this.storageKey) !== null;
  }

  /**
   * Sets where following starts when no cursor is stored yet: the feed's head (the reader shows
   * current records itself, so it needs only what happens from now on, never the whole archive).
   * A head the reader worked out itself (`exportHead`, the work board's revision total) may name
   * no event after a change of writer (feed positions jump then, issue 50: 409 CURSOR_LOST):
   * `fallback`, a position the feed surely has at or before the head (learnt with it, so nothing
   * after the head is passed over), is where following starts then: the events since are read
   * again, none is skipped. It is dropped once a page is read.
   * @param {{originId: string, after: number, fallback?: number}} cursor
   */
  seed(cursor) {
    if (this.hasCursor()) return;
    const fallback = cursor.fallback !== undefined && cursor.fallback !== cursor.after ? { fallback: cursor.fallback } : {};
    sessionStorage.setItem(this.storageKey, JSON.stringify({ originId: cursor.originId, after: cursor.after, ...fallback }));
    // The head was just read: nothing is new yet. The first read (held by the server until
    // something new comes) starts a little later, so a short visit reads no feed at all.
    this.nextAt = Date.now() + SEEDED_FIRST_READ_MS;
  }

  /** @returns {{originId: string|null, after: number, fallback?: number}} */
  cursor() {
    try {
      const saved = JSON.parse(sessionStorage.getItem(this.storageKey) ?? 'null');
      if (saved && Number.isSafeInteger(saved.after) && saved.after >= 0) return saved;
    } catch {
      // an unreadable entry is replaced by the next saved cursor
    }
    return { originId: null, after: 0 };
  }

  /** @param {number} generation @param {number} ms */
  schedule(generation, ms) {
    if (generation !== this.generation) return;
    this.nextAt = Date.now() + ms;
    this.timer = setTimeout(() => void this.poll(generation), ms);
  }

  /** @param {number} generation */
  async poll(generation) {
    this.timer = null;
    const cursor = this.cursor();
    /** @type {Record<string, unknown>} */
    const query = { after: cursor.after, limit: 100, wait: LONG_POLL_SECONDS };
    if (cursor.after > 0 && cursor.originId) query.originId = cursor.originId;
    const controller = new AbortController();
    this.inFlight = controller;
    const started = Date.now();
    let page;
    try {
      page = this.feed === 'work' ? await this.client.workChanges(query, { signal: controller.signal })
        : this.feed === 'inbox' ? await this.client.inbox(query, { signal: controller.signal })
          : await this.client.changes(query, { signal: controller.signal });
      // The inbox calls its events entries (forum-inbox-v1).
      if (!Array.isArray(page.events)) page = { ...page, events: Array.isArray(page.entries) ? page.entries : [] };
    } catch (err) {
      if (generation !== this.generation) return;
      this.inFlight = null;
      if (err?.status === 409 && Number.isSafeInteger(cursor.fallback) && cursor.originId) {
        // A seeded head that names no event (see seed): start at its fallback instead, once.
        sessionStorage.setItem(this.storageKey, JSON.stringify({ originId: cursor.originId, after: cursor.fallback }));
        void this.poll(generation);
        return;
      }
      this.failed(generation, err);
      return;
    }
    if (generation !== this.generation) return;
    this.inFlight = null;
    this.failures = 0;
    this.onEvents(page.events);
    sessionStorage.setItem(this.storageKey, JSON.stringify({ originId: page.cursor.originId, after: page.cursor.after }));
    // A caught-up page that was held (it brought events, or came back after waiting) is followed
    // by the next held read at once; one answered at once waits pollAfterSeconds.
    const held = !page.hasMore && (page.events.length > 0 || Date.now() - started >= (LONG_POLL_SECONDS * 1000) / 2);
    const waitMs = held ? 0 : page.pollAfterSeconds * 1000 * (1 + Math.random() * POLL_JITTER);
    this.onState(page.hasMore ? 'catching-up' : 'live', page.hasMore ? 'Loading what was posted meanwhile…' : held ? 'Up to date. New posts appear here by themselves.' : `Up to date. New posts appear here by themselves (next check in ${page.pollAfterSeconds} s).`);
    this.schedule(generation, waitMs);
  }

  /** @param {number} generation @param {any} err */
  failed(generation, err) {
    const status = typeof err?.status === 'number' ? err.status : 0;
    const message = err instanceof Error ? err.message : String(err);
    if (status === 429 || status === 503) {
      const seconds = err.retryAfterSeconds ?? 1;
      this.onState('waiting', `The server is busy and asked us to wait ${seconds} s; new posts will appear after that.`, err);
      this.schedule(generation, seconds * 1000 + Math.random() * 1000);
      return;
    }
    if ((status === 0 || status >= 500) && this.failures + 1 < MAX_FAILURES) {
      this.failures++;
      const ceiling = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** (this.failures - 1));
      this.onState('waiting', `Lost contact with the server (${message}); trying again.`, err);
      this.schedule(generation, Math.random() * ceiling);
      return;
    }
    this.running = false;
    const after = status === 0 || status >= 500 ? ` (${MAX_FAILURES} failures in a row)` : '';
    this.onState('stopped', `New posts no longer appear by themselves: ${message}${after}. Reload the page to see the latest.`, err);
  }
}

/**
 * The discussion feed's head as a cursor to seed a follower with, from a topic export page
 * (`/api/exchange`, its first page: the topic's own row first) — no request of its own. The
 * export's `through` is the archive's head as a log seq; feed cursors are positions (issue 50):
 * equal to the seqs until a change of writer, past a gap after one. The topic's id carries its
 * position (`tp_<position>`) and its row its seq, so the head's position is the topic's plus the
 * records since: exact unless the writer changed after the topic was made, and then `fallback`,
 * the topic's own position, is where following starts (see FeedFollower.seed). On a log whose
 * writer never changed the head is `through`.
 * @param {any} page an export page @returns {{originId: string, after: number, fallback?: number}}
 */
export function exportHead(page) {
  const head = { originId: page.cursor.originId, after: page.cursor.through };
  const row = page.records?.find((/** @type {any} */ r) => r.kind === 'topic');
  let id;
  try {
    id = row ? JSON.parse(row.canonicalJson).id : undefined;
  } catch {
    id = undefined;
  }
  const position = idPosition(id);
  if (position === null || !Number.isSafeInteger(row.seq)) return head;
  return { ...head, after: position + (head.after - row.seq), fallback: position };
}

/**
 * The position an id carries (`msg_2000000003` → 2000000003; issue 50), or null for anything else.
 * @param {unknown} id @returns {number|null}
 */
function idPosition(id) {
  const m = typeof id === 'string' ? /^[a-z]+_(\d+)$/.exec(id) : null;
  const n = m ? Number(m[1]) : NaN;
  return Number.isSafeInteger(n) ? n : null;
}
