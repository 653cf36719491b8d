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
 * Hostile text renders in bounded time and cannot blank a page (issue 34): MARKDOWN_LIMITS bounds
 * what reaches marked (line-start nesting, emphasis delimiter runs per inline block), text beyond a
 * limit is shown as plain text, and any failure while rendering one text shows that text as plain
 * text, so each message is rendered on its own.
 * The module has no import of its own so the unit tests can run it with Node and a fake `h`.
 */

/** Elements the renderer can create; nothing else, whatever the input. */
export const ALLOWED_TAGS = Object.freeze(['p', 'strong', 'em', 'del', 'code', 'pre', 'ul', 'ol', 'li', 'blockquote', 'a', 'br', 'hr']);
/** rel of every participant link (not endorsed, user-generated, no opener, no referrer). */
export const LINK_REL = 'nofollow ugc noopener noreferrer';
/**
 * The reader's limits on participant markdown, in one place (issues 27 and 34; docs/api/web-reader.md):
 * - renderDepth: deepest nesting of quotes and lists rendered as structure; deeper content is
 *   flattened into its parent as text (bounds the page's width and the renderer's recursion).
 * - lineNesting: most container markers (`>`, and list markers `-`, `+`, `*`, `1.`, `1)`) that may
 *   open one line. marked's block lexer recurses once per marker, so `"> "` × 4,000 overflows its
 *   stack; a text with a deeper line is shown whole as plain text, never given to the lexer.
 * - delimiterRuns: most runs of `*`, `_` or `~`, and single `<`, outside `code spans` in one inline
 *   block (a paragraph, a heading, a list item's text). marked looks ahead for a closer from each of
 *   them, so its time grows faster than their count times the block's length (`"*a_"` × 2,666
 *   takes about a second); a block with more is shown as its plain text.
 * - delimiterWork: most delimiter work in one text, counted as the sum over its inline blocks of
 *   the square of each block's runs; a block that would go over it is shown as its plain text.
 *   With delimiterRuns it bounds a text's lexing to a few milliseconds, while a text of ordinary
 *   length and formatting never reaches it (a 100-item list with a bold word per item is 400).
 * - lineWork: most work on runs of consecutive non-blank lines outside fenced code, counted as the
 *   sum of the square of each run's line count. Inside a list item marked lexes such a run line by
 *   line, looking ahead to the run's end for each (`"- "` + `"a\n"` × 4,000 takes about 0.3 s); a
 *   text over it is shown whole as plain text. A 250-line poem is 62,500.
 * Everything else keeps its markdown.
 */
export const MARKDOWN_LIMITS = Object.freeze({ renderDepth: 6, lineNesting: 16, delimiterRuns: 32, delimiterWork: 4096, lineWork: 65536 });
/** Options of marked's lexer for posts: GitHub-flavoured, a single newline is a line break. */
export const LEX_OPTIONS = Object.freeze({ gfm: true, breaks: true });

/** A container marker at the start of what is left of a line: optional indentation, then `>` or a list marker. */
const LINE_MARKER = /^[ \t]*(?:>|(?:[-+*]|[0-9]{1,9}[.)])(?=[ \t]|$))/;
/** One inline delimiter run that makes marked look ahead. */
const DELIMITER_RUN = /\*+|_+|~+|</g;
/** A code span with single backticks (its content is opaque to marked's emphasis matching). */
const CODE_SPAN = /`[^`]*`/g;

/** The opening line of a fenced code block at the top level (marked's own rule). */
const FENCE_OPEN = /^ {0,3}(`{3,}(?=[^`\n]*$)|~{3,})/;
/** A line that may close a fence: the same character, at least as many times, nothing after but spaces. */
const FENCE_CLOSE = /^ {0,3}(`{3,}|~{3,}) *$/;

/**
 * Whether `text` (newlines normalised to \n) is over MARKDOWN_LIMITS.lineNesting (some line opens
 * with more container markers) or MARKDOWN_LIMITS.lineWork. Linear in the text's length.
 * @param {string} text @returns {boolean}
 */
export function blocksTooCostly(text) {
  let fence = '';
  let run = 0;
  let work = 0;
  for (const line of text.split('\n')) {
    if (fence !== '') {
      const close = FENCE_CLOSE.exec(line);
      if (close && close[1][0] === fence[0] && close[1].length >= fence.length) fence = '';
      continue;
    }
    const open = FENCE_OPEN.exec(line);
    if (open || line.trim() === '') {
      work += run * run;
      run = 0;
      if (open) fence = open[1];
      continue;
    }
    run++;
    let rest = line;
    for (let depth = 0; ; depth++) {
      const marker = LINE_MARKER.exec(rest);
      if (!marker) break;
      if (depth >= MARKDOWN_LIMITS.lineNesting) return true;
      rest = rest.slice(marker[0].length);
    }
  }
  return work + run * run > MARKDOWN_LIMITS.lineWork;
}

/**
 * The delimiter runs of an inline block outside its code spans, counted up to
 * MARKDOWN_LIMITS.delimiterRuns + 1 (any count above the limit is reported as that).
 * @param {string} src @returns {number}
 */
export function delimiterRuns(src) {
  const outsideCode = src.includes('`') ? src.replace(CODE_SPAN, '') : src;
  DELIMITER_RUN.lastIndex = 0;
  let runs = 0;
  while (runs <= MARKDOWN_LIMITS.delimiterRuns && DELIMITER_RUN.exec(outsideCode) !== null) runs++;
  return runs;
}

/**
 * marked's block and inline lexing (what `Lexer.lex` does), with MARKDOWN_LIMITS applied: null when
 * a line nests too deep or the line work is over its limit; an inline block over delimiterRuns, or over what is left of
 * delimiterWork, gets one `plain` token carrying its source instead of being lexed.
 * @param {any} Lexer marked's Lexer class
 * @param {string} text
 * @returns {any[]|null} block tokens, or null (show the text as plain text)
 */
function boundedLex(Lexer, text) {
  const src = text.replace(/\r\n|\r/g, '\n');
  if (blocksTooCostly(src)) return null;
  const lexer = new Lexer({ ...LEX_OPTIONS });
  const tokens = lexer.blockTokens(src, lexer.tokens);
  let work = 0;
  for (const queued of lexer.inlineQueue) {
    lexer.state.inRawBlock = false;
    const runs = delimiterRuns(queued.src);
    if (runs > MARKDOWN_LIMITS.delimiterRuns || work + runs * runs > MARKDOWN_LIMITS.delimiterWork) {
      queued.tokens.push({ type: 'plain', raw: queued.src, text: queued.src });
      continue;
    }
    work += runs * runs;
    lexer.inlineTokens(queued.src, queued.tokens);
  }
  lexer.inlineQueue = [];
  return tokens;
}

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
 * Creates a renderer. `Lexer` is marked's Lexer class (lexing uses LEX_OPTIONS and
 * MARKDOWN_LIMITS); `h(tag, attrs, ...children)` creates an element from a tag, string attributes
 * and children (strings become text). The renderer never throws: a text over a limit, or one whose
 * lexing or rendering fails (whatever the error), comes back as plain text — paragraphs at blank
 * lines, `br` at line breaks — so one post cannot stop a page from showing.
 * @param {any} Lexer
 * @param {(tag: string, attrs: Record<string, string>, ...children: any[]) => any} h
 * @returns {(text: string) => any[]} the nodes of one post
 */
export function createMarkdownRenderer(Lexer, h) {
  /** @param {string} tag @param {Record<string, string>} attrs @param {...any} children */
  const make = (tag, attrs, ...children) => {
    if (!ALLOWED_TAGS.includes(tag)) throw new Error(`markdown renderer: ${tag} is not allowed`);
    return h(tag, attrs, ...children);
  };

  /** Text with its line breaks as `br`. @param {string} text @returns {any[]} */
  const lines = (text) => text.split('\n').flatMap((line, i) => (i === 0 ? [line] : [make('br', {}), line]));

  /** A whole text as plain text: a paragraph per run of non-blank lines. @param {string} text @returns {any[]} */
  const plain = (text) => text.replace(/\r\n|\r/g, '\n').split(/\n[ \t]*\n/)
    .filter((para) => para.trim() !== '')
    .map((para) => make('p', {}, ...lines(para)));

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
        case 'plain': return lines(String(t.text));
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
        return depth >= MARKDOWN_LIMITS.renderDepth ? make('p', {}, String(t.text)) : make('blockquote', {}, ...blocks(t.tokens ?? [], depth + 1));
      case 'list': {
        if (depth >= MARKDOWN_LIMITS.renderDepth) return make('p', {}, String(t.raw));
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

  return (text) => {
    const source = String(text);
    try {
      const tokens = boundedLex(Lexer, source);
      return tokens ? blocks(tokens, 0) : plain(source);
    } catch {
      return plain(source);
    }
  };
}
