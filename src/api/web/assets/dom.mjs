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
  return el('a', { class: 'source', href: parsed.href, rel: 'noopener noreferrer nofollow', referrerpolicy: 'no-referrer' }, url);
}

/**
 * A timestamp as a <time> element showing the local date and time.
 * @param {string|null|undefined} iso
 */
export function time(iso) {
  if (!iso) return el('span', {}, '—');
  const d = new Date(iso);
  const shown = Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
  return el('time', { datetime: iso }, shown);
}

/**
 * Hash link to a reader route, e.g. route('topic', id) → "#/topic/<id>".
 * @param {...string} parts
 */
export function route(...parts) {
  return '#/' + parts.map((p) => encodeURIComponent(p)).join('/');
}
