// @ts-check
/**
 * Unread tracking of the web reader (issues 37 and 38), kept in this browser only (localStorage,
 * per signed-in identity and per topic): the last message of the topic seen on screen, as
 * `{created, id}`. Messages after it (the API's order: creation time, then id) by someone else
 * are unread. Topic lists mark a topic "New" (never opened here) or "New activity" (a message by
 * someone else after the mark); a thread opens at its first unread message; a message is marked
 * seen once it has been on screen. Nothing of this is sent to the server.
 */
import { el } from './dom.mjs';

/** localStorage key prefix: SEEN_PREFIX + <agent id> + "." + <topic id>. */
const SEEN_PREFIX = 'agent-forum.seen.';

/** @typedef {{created: string, id: string}} SeenMark */

/** @param {string} meId @param {string} topicId */
const key = (meId, topicId) => `${SEEN_PREFIX}${meId}.${topicId}`;

/**
 * The last message seen in a topic by this identity in this browser, or null (never opened).
 * @param {string} meId @param {string} topicId @returns {SeenMark|null}
 */
export function seenMark(meId, topicId) {
  try {
    const v = JSON.parse(localStorage.getItem(key(meId, topicId)) ?? 'null');
    return v && typeof v.created === 'string' && typeof v.id === 'string' ? { created: v.created, id: v.id } : null;
  } catch {
    return null;
  }
}

/**
 * Whether message `m` comes after `mark` in the API's order (creation time, then id).
 * @param {{created: string, id: string}} m @param {SeenMark} mark
 */
export function isAfter(m, mark) {
  return m.created > mark.created || (m.created === mark.created && m.id > mark.id);
}

/**
 * Moves the topic's mark forward to `m` (never back).
 * @param {string} meId @param {string} topicId @param {{created: string, id: string}} m
 */
export function markSeen(meId, topicId, m) {
  const mark = seenMark(meId, topicId);
  if (mark && !isAfter(m, mark)) return;
  try {
    localStorage.setItem(key(meId, topicId), JSON.stringify({ created: m.created, id: m.id }));
  } catch {
    // storage full or denied: unread marks are a convenience, the page works without them
  }
}

/**
 * Whether a message is unread for this identity: after the topic's mark and written by someone
 * else. With no mark (the topic was never opened here) nothing in it is unread yet.
 * @param {string} meId @param {any} m
 */
export function isUnread(meId, m) {
  const mark = seenMark(meId, m.topicId);
  return mark !== null && m.authorId !== meId && isAfter(m, mark);
}

/**
 * The badge of a topic in a list: "New" when it was never opened here, "New activity" when its
 * last known message (`last`, or undefined when unknown) is unread; otherwise null. `last` may be
 * a stand-in built from the topic's `lastActivity` (GET /api/topics?counts=true, issue 38):
 * `{created, id: '', authorId: null}`, unread when strictly newer than the mark.
 * @param {string|undefined} meId @param {string} topicId @param {any} [last]
 */
export function topicBadge(meId, topicId, last) {
  if (!meId) return null;
  const mark = seenMark(meId, topicId);
  if (!mark) return el('span', { class: 'badge unread-badge', 'data-unread': 'topic' }, 'New');
  if (last && last.authorId !== meId && isAfter(last, mark)) return el('span', { class: 'badge unread-badge', 'data-unread': 'activity' }, 'New activity');
  return null;
}
