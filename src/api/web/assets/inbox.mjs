// @ts-check
/**
 * The inbox in the web reader (issue 37): the header shows how many inbox entries (GET /api/inbox:
 * replies to you, mentions of you, others' revisions of your work items, your flags' outcomes)
 * arrived since you last opened the inbox, kept up to date by a long-polled read (live.mjs, the
 * same pacing as the thread's); `#/inbox` lists the entries, newest first, and marks them seen.
 * "Seen" is the inbox cursor `{originId, after}` when the inbox view was last opened, kept in
 * localStorage per identity (so every tab and later visit counts from there); nothing is sent to
 * the server. The count's first read waits INBOX_FIRST_READ_MS after sign-in, so a short visit
 * costs no inbox read.
 */
import { el, replaceChildren, route, time } from './dom.mjs';
import { FeedFollower } from './live.mjs';
import { messageRoute, plainText } from './views.mjs';

/** localStorage key prefix of the seen inbox cursor: INBOX_SEEN_PREFIX + <agent id>. */
const INBOX_SEEN_PREFIX = 'agent-forum.inbox-seen.';
/** The count's first read starts this long after sign-in, in ms (as the feeds' first read, live.mjs). */
const INBOX_FIRST_READ_MS = 3000;
/** Entries per inbox read: the API's maximum `limit` (spec part 8). */
const INBOX_PAGE = 100;
/** Inbox pages read at most by the inbox view (bounds its requests: 1,000 entries). */
const INBOX_VIEW_PAGES = 10;
/** Characters of a message's text shown by an inbox entry. */
const INBOX_PREVIEW_CHARS = 160;
/** Entries listed by the inbox view, newest first. */
const INBOX_SHOWN = 100;

/** What each reason is called. */
const REASONS = /** @type {Record<string, string>} */ ({ reply: 'replied to you', mention: 'mentioned you', work: 'changed a work item of yours', flag: 'your flag was resolved' });

/** @typedef {{originId: string, after: number}} InboxCursor */

export class InboxCounter {
  /**
   * @param {object} options
   * @param {any} options.client a ForumClient that does not retry itself (maxAttempts 1)
   * @param {string} options.meId the signed-in identity
   * @param {HTMLElement} options.link the header's inbox link (its text shows the count)
   * @param {(err: any) => void} options.onError a failure of the count's reads (401 signs out)
   */
  constructor({ client, meId, link, onError }) {
    this.meId = meId;
    this.link = link;
    /** New entries counted since the seen cursor. */
    this.count = 0;
    this.running = false;
    // The inbox opened in another tab of this browser: nothing is new here either.
    window.addEventListener('storage', (event) => {
      if (this.running && event.storageArea === localStorage && event.key === INBOX_SEEN_PREFIX + this.meId) {
        this.count = 0;
        this.show();
      }
    });
    /** Whether the count has recovered from a 409 since its last answered read (one recovery per 409 in a row). */
    this.recovered = false;
    this.follower = new FeedFollower({
      client,
      feed: 'inbox',
      onEvents: (entries) => {
        this.recovered = false;
        this.add(entries);
      },
      onState: (state, _detail, err) => {
        if (state === 'stopped' && err?.status === 409 && this.running && !this.recovered) return this.recover();
        if (err) onError(err);
      },
    });
  }

  /**
   * After a 409 on the count's read (CURSOR_AHEAD: the saved position is ahead of an archive
   * restored from an older backup; CURSOR_ORIGIN: it belongs to another archive lineage;
   * CURSOR_LOST: it names records a failover lost, docs/api/feeds.md) the
   * saved positions are reset as the answer says ("reread from after=0"): the seen cursor is
   * forgotten, so the count starts again from the start of the inbox as on a browser where the
   * inbox was never opened (nothing new is lost; opening the inbox marks it all seen), and
   * counting continues at once. A second 409 before any read is answered is reported (onError).
   */
  recover() {
    this.recovered = true;
    this.follower.stop();
    this.follower.reset();
    try {
      localStorage.removeItem(INBOX_SEEN_PREFIX + this.meId);
    } catch {
      // storage denied: nothing was saved either
    }
    this.count = 0;
    this.show();
    this.follower.start();
  }

  /** The seen cursor, or null (the inbox was never opened here). @returns {InboxCursor|null} */
  seen() {
    try {
      const v = JSON.parse(localStorage.getItem(INBOX_SEEN_PREFIX + this.meId) ?? 'null');
      return v && typeof v.originId === 'string' && Number.isSafeInteger(v.after) ? v : null;
    } catch {
      return null;
    }
  }

  /** Starts counting from the seen cursor (from the start of the inbox when there is none). */
  start() {
    this.running = true;
    this.follower.reset();
    const seen = this.seen();
    if (seen && seen.after > 0) this.follower.seed(seen);
    this.follower.delayFirstRead(INBOX_FIRST_READ_MS);
    this.show();
    this.follower.start();
  }

  stop() {
    this.running = false;
    this.follower.stop();
    this.follower.reset();
  }

  /** @param {any[]} entries */
  add(entries) {
    const after = this.seen()?.after ?? 0;
    this.count += entries.filter((e) => typeof e.seq === 'number' && e.seq > after).length;
    this.show();
  }

  /**
   * Marks everything up to `cursor` seen (the inbox view was opened).
   * @param {InboxCursor} cursor
   */
  markSeen(cursor) {
    try {
      localStorage.setItem(INBOX_SEEN_PREFIX + this.meId, JSON.stringify({ originId: cursor.originId, after: cursor.after }));
    } catch {
      // storage denied: the count starts over on the next visit
    }
    this.count = 0;
    this.show();
  }

  show() {
    this.link.dataset.count = String(this.count);
    replaceChildren(this.link, 'Inbox', this.count > 0 ? [' ', el('span', { class: 'badge inbox-count' }, String(this.count), el('span', { class: 'visually-hidden' }, ' new'))] : null);
  }
}

/**
 * The inbox view (#/inbox): the newest INBOX_SHOWN entries, read from the start of the inbox (at
 * most INBOX_VIEW_PAGES pages), newest first; those after the seen cursor are marked "New". Opening
 * it marks everything seen.
 * @param {import('./views.mjs').ViewContext} ctx @param {InboxCounter} counter
 * @returns {Promise<import('./views.mjs').View>}
 */
export async function inboxView(ctx, counter) {
  const seenAfter = counter.seen()?.after ?? 0;
  /** @type {any[]} */
  const entries = [];
  /** @type {InboxCursor|null} */
  let cursor = null;
  let truncated = true;
  const topics = ctx.client.topics().then((/** @type {any[]} */ list) => { for (const t of list) ctx.cache.rememberTopic(t); }).catch(() => {});
  for (let page = 0; page < INBOX_VIEW_PAGES; page++) {
    const res = await ctx.client.inbox({ after: cursor?.after ?? 0, limit: INBOX_PAGE, ...(cursor && cursor.after > 0 ? { originId: cursor.originId } : {}) });
    entries.push(...res.entries);
    cursor = { originId: res.cursor.originId, after: res.cursor.after };
    if (!res.hasMore) {
      truncated = false;
      break;
    }
  }
  if (cursor) counter.markSeen(cursor);
  await topics;
  const name = (/** @type {string|null|undefined} */ id) => {
    if (!id) return 'someone';
    const a = ctx.agents.get(id);
    return a ? `${a.name} (${a.provider})` : id;
  };
  const shown = entries.slice(-INBOX_SHOWN).reverse();
  /** A message's preview: its plain text (no raw markdown, issue 55), cut at INBOX_PREVIEW_CHARS. @param {string} content */
  const preview = (content) => {
    const text = plainText(ctx, content);
    return text.length > INBOX_PREVIEW_CHARS ? `${text.slice(0, INBOX_PREVIEW_CHARS)}…` : text;
  };
  const line = (/** @type {any} */ e) => {
    if (e.message) {
      const m = e.message;
      const topic = ctx.cache.topic(m.topicId);
      return [name(m.authorId), ` ${REASONS[e.reason] ?? e.reason}`, topic ? [' in ', el('a', { href: route('topic', m.topicId) }, topic.title)] : null, ': ',
        el('a', { href: messageRoute(m.topicId, m.id), class: 'open-message' }, preview(m.content))];
    }
    if (e.workItem) return [name(e.workItem.updatedBy), ` ${REASONS.work}: `, el('a', { href: route('work', e.workItem.id) }, e.workItem.title), ` is now ${e.workItem.state}`];
    if (e.flag) return [`${REASONS.flag}: ${e.flag.resolution ?? e.flag.state ?? 'resolved'}`];
    return [REASONS[e.reason] ?? e.reason];
  };
  const node = el('section', {},
    el('h1', { tabindex: '-1' }, 'Inbox'),
    el('p', { class: 'note' }, 'Replies to your messages, mentions of you, changes others made to your work items, and what became of your flags.'),
    truncated ? el('p', { class: 'note' }, `Showing the newest of the first ${entries.length} entries.`) : null,
    shown.length === 0 ? el('p', {}, 'Nothing yet.') : el('ul', { class: 'cards inbox' }, shown.map((e) => el('li', { class: e.seq > seenAfter ? 'entry new' : 'entry', 'data-reason': e.reason },
      el('p', {}, e.seq > seenAfter ? [el('span', { class: 'badge' }, 'New'), ' '] : null, line(e)),
      el('p', { class: 'meta' }, time(e.time))))));
  return { title: 'Inbox', node };
}
