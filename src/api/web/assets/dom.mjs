// @ts-check
/**
 * DOM helpers of the web reader. Participant text is untrusted: everything here builds elements
 * and inserts text as Text nodes; nothing ever assigns HTML (no innerHTML, no insertAdjacentHTML).
 */

/**
 * Creates an element. `attrs`: attribute name → string value (`null`/`undefined`/`false` skip it),
 * except `on`, an object of event name → listener. Children: strings (inserted as text), nodes,
 * arrays of either, or null/undefined/false (skipped).
 * @param {string} tag
 * @param {Record<string, any>} [attrs]
 * @param {...any} children
 * @returns {HTMLElement}
 */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === 'on') {
      for (const [event, listener] of Object.entries(value)) node.addEventListener(event, listener);
    } else if (value !== null && value !== undefined && value !== false) {
      node.setAttribute(name, value === true ? '' : String(value));
    }
  }
  append(node, children);
  return node;
}

/**
 * Appends children (see el) to a node.
 * @param {Node} node @param {any[]} children
 */
export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.appendChild(typeof child === 'string' || typeof child === 'number' ? document.createTextNode(String(child)) : child);
  }
}

/**
 * Replaces a node's children.
 * @param {Node} node @param {...any} children
 */
export function replaceChildren(node, ...children) {
  while (node.firstChild) node.removeChild(node.firstChild);
  append(node, children);
}

/**
 * A link to a participant-supplied source: clickable only for an http(s) URL, with
 * rel="noopener noreferrer nofollow"; its text is the URL itself, never a label. Anything else is
 * shown as plain text.
 * @param {string} url
 */
export function sourceLink(url) {
  let parsed = null;
  try {
    parsed = new URL(url);
  } catch {
    parsed = null;
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) return el('span', { class: 'source' }, url);
  return el('a', { class: 'source', href: parsed.href, rel: 'noopener noreferrer nofollow ugc', referrerpolicy: 'no-referrer' }, url);
}

/** Units for relative times, largest first: [name, seconds]. */
const TIME_UNITS = /** @type {const} */ ([['year', 31_536_000], ['month', 2_592_000], ['week', 604_800], ['day', 86_400], ['hour', 3_600], ['minute', 60], ['second', 1]]);

/**
 * A wait the server asked for (Retry-After, seconds) in words: "40 seconds", "about 54 minutes".
 * @param {number | null | undefined} seconds
 * @returns {string}
 */
export function waitText(seconds) {
  if (!(typeof seconds === 'number' && seconds > 0)) return 'a little while';
  if (seconds < 90) return `${Math.ceil(seconds)} seconds`;
  if (seconds < 90 * 60) return `about ${Math.ceil(seconds / 60)} minutes`;
  return `about ${Math.round(seconds / 3600)} hours`;
}

/**
 * A failed API call in plain words, never raw JSON (the moderation views and the operator
 * console). Input: the client's error (`status`, `retryAfterSeconds`, its message = the server's
 * `error`). Output: one sentence; a 423 keeps the server's message, which names the operator's
 * reason and the end of the write stop when given.
 * @param {any} err
 * @returns {string}
 */
export function explain(err) {
  const status = err?.status;
  const message = err instanceof Error ? err.message : String(err);
  if (status === 401) return 'Your token is no longer accepted (HTTP 401). Sign in again.';
  if (status === 403) return `Only operators can do this (HTTP 403): ${message}`;
  if (status === 429) return `The server is busy and asks to wait ${waitText(err.retryAfterSeconds)}; try again then.`;
  if (status === 423) return `Writes are stopped for now (HTTP 423): ${message}`;
  if (status === 0) return 'The server could not be reached; try again.';
  return `Not done: ${message}`;
}

/**
 * A time relative to now in plain words: "3 minutes ago", "in 2 hours", "just now".
 * @param {number} ms the time, epoch milliseconds
 * @param {number} [now]
 */
export function relativeTime(ms, now = Date.now()) {
  const seconds = Math.round((ms - now) / 1000);
  if (Math.abs(seconds) < 45) return 'just now';
  const [unit, size] = TIME_UNITS.find(([, size]) => Math.abs(seconds) >= size) ?? TIME_UNITS[TIME_UNITS.length - 1];
  return new Intl.RelativeTimeFormat('en', { numeric: 'always' }).format(Math.round(seconds / size), unit);
}

/**
 * The absolute UTC time of an ISO timestamp, e.g. "2026-11-25 12:03:07 UTC".
 * @param {string} iso
 */
export function utc(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/**
 * A timestamp as a <time datetime> showing the time relative to now, with the absolute UTC time as
 * its tooltip (title).
 * @param {string|null|undefined} iso
 */
export function time(iso) {
  if (!iso) return el('span', {}, '—');
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return el('span', {}, iso);
  return el('time', { datetime: iso, title: utc(iso) }, relativeTime(d.getTime()));
}

/**
 * Hash link to a reader route, e.g. route('topic', id) → "#/topic/<id>".
 * @param {...string} parts
 */
export function route(...parts) {
  return '#/' + parts.map((p) => encodeURIComponent(p)).join('/');
}

/** Characters before the first match kept in a search excerpt. */
const MATCH_CONTEXT_CHARS = 80;

/**
 * Untrusted text with every case-insensitive occurrence of `q` in a <mark> (search hits): an
 * array of Text-node strings and <mark> elements built with el(), never HTML. `maxChars` cuts the
 * text to an excerpt around the first match, with "…" where it was cut.
 * @param {string} text @param {string} q @param {number} [maxChars]
 * @returns {Array<string|HTMLElement>}
 */
export function highlighted(text, q, maxChars = Infinity) {
  const needle = q.trim();
  let shown = text;
  let prefix = '';
  let suffix = '';
  const pattern = needle ? new RegExp(needle.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'giu') : null;
  if (text.length > maxChars) {
    const first = pattern ? text.search(pattern) : -1;
    const start = first > MATCH_CONTEXT_CHARS ? first - MATCH_CONTEXT_CHARS : 0;
    shown = text.slice(start, start + maxChars);
    prefix = start > 0 ? '…' : '';
    suffix = start + maxChars < text.length ? '…' : '';
  }
  if (!pattern) return [prefix + shown + suffix];
  /** @type {Array<string|HTMLElement>} */
  const parts = [prefix];
  let at = 0;
  for (const match of shown.matchAll(pattern)) {
    const i = match.index ?? 0;
    if (match[0].length === 0) break;
    parts.push(shown.slice(at, i), el('mark', {}, match[0]));
    at = i + match[0].length;
  }
  parts.push(shown.slice(at), suffix);
  return parts.filter((p) => p !== '');
}

/** How far the server's clock is ahead of this browser's, in ms (0 until a response with a Date header was seen). */
let serverClockOffsetMs = 0;

/**
 * `fetch` that notes the server's clock from each response's Date header (RFC 9110 §6.6.1, one
 * second resolution), so time windows compared with the server's timestamps (`created`) do not
 * depend on this browser's clock, which may be minutes off. Same input, output and errors as fetch.
 * @param {RequestInfo | URL} input @param {RequestInit} [init]
 * @returns {Promise<Response>}
 */
export async function fetchNotingServerClock(input, init) {
  const res = await fetch(input, init);
  const date = Date.parse(res.headers.get('date') ?? '');
  if (Number.isFinite(date)) serverClockOffsetMs = date - Date.now();
  return res;
}

/** The server's time now, epoch ms: this browser's clock corrected by the last Date header seen. */
export function serverNow() {
  return Date.now() + serverClockOffsetMs;
}
