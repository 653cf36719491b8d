// @ts-check
/**
 * A safe markdown subset for participant posts (issue 27): paragraphs, emphasis, strike-through,
 * inline code and code blocks, lists, quotes, line breaks and links. Parsing is marked's lexer
 * (served from our origin as /web/marked.esm.js, straight from node_modules); rendering is ours and
 * builds elements through `h` (dom.mjs `el` in the page), so participant text only ever becomes
 * Text nodes and attribute values — sanitised by construction, never an HTML string:
 * - raw HTML (block or inline) is shown as the literal text the author wrote;
 * - only the tags in ALLOWED_TAGS are ever created; headings become bold paragraphs (a post must
 *   not add to the page's outline), tables stay plain text, images become a link to their URL;
 * - a link is a link only when its target parses as an absolute http: or https: URL, and then it
 *   carries rel="nofollow ugc noopener noreferrer"; anything else (javascript:, data:, relative)
 *   keeps its text and loses the link.
 * The module has no import of its own so the unit tests can run it with Node and a fake `h`.
 */

/** Elements the renderer can create; nothing else, whatever the input. */
export const ALLOWED_TAGS = Object.freeze(['p', 'strong', 'em', 'del', 'code', 'pre', 'ul', 'ol', 'li', 'blockquote', 'a', 'br', 'hr']);
/** rel of every participant link (not endorsed, user-generated, no opener, no referrer). */
export const LINK_REL = 'nofollow ugc noopener noreferrer';
/** Deepest nesting of quotes and lists rendered as structure; deeper content is flattened into its parent (bounds recursion and width). */
export const MAX_MARKDOWN_DEPTH = 6;

/**
 * The link target when it is safe to follow: an absolute http(s) URL, normalised by URL; else null.
 * @param {unknown} href
 * @returns {string|null}
 */
export function safeHref(href) {
  if (typeof href !== 'string') return null;
  let url;
  try {
    url = new URL(href.trim());
  } catch {
    return null;
  }
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
}

/**
 * Creates a renderer. `lex(text)` returns marked block tokens (e.g. `(s) => Lexer.lex(s, {gfm: true, breaks: true})`);
 * `h(tag, attrs, ...children)` creates an element from a tag, string attributes and children
 * (strings become text).
 * @param {(text: string) => any[]} lex
 * @param {(tag: string, attrs: Record<string, string>, ...children: any[]) => any} h
 * @returns {(text: string) => any[]} the nodes of one post
 */
export function createMarkdownRenderer(lex, h) {
  /** @param {string} tag @param {Record<string, string>} attrs @param {...any} children */
  const make = (tag, attrs, ...children) => {
    if (!ALLOWED_TAGS.includes(tag)) throw new Error(`markdown renderer: ${tag} is not allowed`);
    return h(tag, attrs, ...children);
  };

  /** Inline tokens → nodes. @param {any[]|undefined} tokens @param {string} fallback @returns {any[]} */
  const inline = (tokens, fallback) => {
    if (!Array.isArray(tokens)) return [fallback];
    return tokens.map((t) => {
      switch (t.type) {
        case 'strong': return make('strong', {}, ...inline(t.tokens, t.text));
        case 'em': return make('em', {}, ...inline(t.tokens, t.text));
        case 'del': return make('del', {}, ...inline(t.tokens, t.text));
        case 'codespan': return make('code', {}, String(t.text));
        case 'br': return make('br', {});
        case 'link': {
          const href = safeHref(t.href);
          const label = inline(t.tokens, t.text);
          return href ? make('a', { href, rel: LINK_REL }, ...label) : label;
        }
        case 'image': {
          const href = safeHref(t.href);
          const label = `[image: ${t.text || t.href}]`;
          return href ? make('a', { href, rel: LINK_REL }, label) : label;
        }
        case 'text': return t.tokens ? inline(t.tokens, t.text) : String(t.raw ?? t.text ?? '');
        case 'escape': return String(t.text ?? '');
        // html, and anything unknown: exactly what the author typed.
        default: return String(t.raw ?? t.text ?? '');
      }
    }).flat();
  };

  /** Block tokens → nodes. @param {any[]} tokens @param {number} depth @returns {any[]} */
  const blocks = (tokens, depth) => tokens.map((t) => {
    switch (t.type) {
      case 'space': return null;
      case 'paragraph': return make('p', {}, ...inline(t.tokens, t.text));
      case 'heading': return make('p', {}, make('strong', {}, ...inline(t.tokens, t.text)));
      case 'code': return make('pre', {}, make('code', {}, String(t.text)));
      case 'hr': return make('hr', {});
      case 'blockquote':
        return depth >= MAX_MARKDOWN_DEPTH ? make('p', {}, String(t.text)) : make('blockquote', {}, ...blocks(t.tokens ?? [], depth + 1));
      case 'list': {
        if (depth >= MAX_MARKDOWN_DEPTH) return make('p', {}, String(t.raw));
        const start = Number(t.start);
        const attrs = t.ordered && Number.isSafeInteger(start) && start !== 1 ? { start: String(start) } : {};
        return make(t.ordered ? 'ol' : 'ul', attrs, ...t.items.map((/** @type {any} */ item) => make('li', {},
          item.task ? (item.checked ? '[x] ' : '[ ] ') : null,
          ...blocks(item.tokens ?? [], depth + 1))));
      }
      // A loose "text" block inside a list item.
      case 'text': return t.tokens ? inline(t.tokens, t.text) : String(t.text);
      // html, table, def and anything unknown: the author's text, as a paragraph of text.
      default: return make('p', {}, String(t.raw ?? t.text ?? ''));
    }
  }).flat().filter((n) => n !== null && n !== undefined);

  return (text) => blocks(lex(String(text)), 0);
}
