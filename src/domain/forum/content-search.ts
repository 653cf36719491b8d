/**
 * Case-insensitive `q` search over a message's stored canonical JSON, without keeping a
 * lower-cased copy of its content (part 4 GET /api/messages `q`, GET /api/search).
 *
 * The rule `q` implements is `content.toLowerCase().includes(q.toLowerCase())`. Keeping
 * `content.toLowerCase()` for every message costs about half a message's size again in memory,
 * so a message whose content lower-cases by folding A–Z alone (checked once, at apply time, by
 * `foldsAsAscii`) keeps no copy: its content is searched inside its JSON text, where the content
 * appears escaped (RFC 8259 §7). The search is exact, because:
 *  - escaping maps each character to a fixed unit (`"` → `\"`, newline → `\n`, U+0001 → `\u0001`,
 *    others as themselves), escape units are lower case, and folding A–Z commutes with escaping,
 *    so `fold(escape(content))` equals `escape(lower(content))`;
 *  - so `lower(content)` contains `lq` exactly when `escape(lq)` occurs in the folded escaped
 *    content at a unit boundary; a hit inside an escape unit (the `n` of `\n`) is rejected.
 * Messages whose content has other cased characters (`É`, `Σ`, the Kelvin sign) keep their
 * lower-cased content and are searched with `includes`, as before.
 */

/** The JSON text before the content's string in a canonical message (keys sorted: authorId, clientId, content, …). */
const CONTENT_KEY = ',"content":"';
/** The JSON text right after the content's string (the next sorted key is `created`). */
const AFTER_CONTENT = '","created":"';
/** Runs of characters outside ASCII. */
const NON_ASCII = /[^\x00-\x7f]+/g;

/**
 * True when `json`'s non-ASCII characters are all unchanged by `toLowerCase()`, so lower-casing
 * the message's content only folds A–Z and `q` can be searched in `json` itself (see module doc).
 * Input: a message's canonical JSON. Conservative: non-ASCII text in other fields counts too.
 */
export function foldsAsAscii(json: string): boolean {
  const runs = json.match(NON_ASCII);
  if (runs === null) return true;
  const text = runs.join('');
  return text.toLowerCase() === text;
}

/**
 * Letters by how rarely they occur in English text, rarest last; the search anchors on the
 * query's rarest character so the native `indexOf` scan stops as seldom as possible.
 */
const LETTERS_BY_FREQUENCY = 'etaoinshrdlcumwfgypbvkjxqz';

/** Rank of a character as an anchor: higher is rarer. A space is the commonest character in text. */
function anchorRank(ch: string): number {
  if (ch === ' ') return -1;
  const letter = LETTERS_BY_FREQUENCY.indexOf(ch);
  return letter === -1 ? LETTERS_BY_FREQUENCY.length : letter;
}

/**
 * A compiled query: `matches(json)` answers whether the message with canonical JSON `json`
 * (one for which `foldsAsAscii(json)` held) has content containing `lq`.
 */
export class ContentMatcher {
  /** The escaped lower-cased query as it appears inside a JSON string. */
  private readonly pattern: string;
  /** Index in `pattern` of the anchor character, and the anchor in lower and upper case. */
  private readonly anchorAt: number;
  private readonly anchorLower: string;
  private readonly anchorUpper: string;

  /** Input: the lower-cased query `lq` (non-empty). */
  constructor(readonly lq: string) {
    this.pattern = JSON.stringify(lq).slice(1, -1);
    let at = 0;
    for (let i = 1; i < this.pattern.length; i++) {
      if (anchorRank(this.pattern[i]!) > anchorRank(this.pattern[at]!)) at = i;
    }
    this.anchorAt = at;
    this.anchorLower = this.pattern[at]!;
    this.anchorUpper = this.anchorLower >= 'a' && this.anchorLower <= 'z' ? this.anchorLower.toUpperCase() : this.anchorLower;
  }

  /** Whether the content in canonical message JSON `json` contains the query, ignoring case. */
  matches(json: string): boolean {
    const keyAt = json.indexOf(CONTENT_KEY);
    if (keyAt === -1) return this.matchesParsed(json);
    const start = keyAt + CONTENT_KEY.length;
    if (this.scan(json, start, this.anchorLower)) return true;
    return this.anchorUpper !== this.anchorLower && this.scan(json, start, this.anchorUpper);
  }

  /** Tries every occurrence of `anchor` in the content that begins at `start`. */
  private scan(json: string, start: number, anchor: string): boolean {
    const m = this.pattern.length;
    let end = -1;
    for (let i = json.indexOf(anchor, start + this.anchorAt); i !== -1; i = json.indexOf(anchor, i + 1)) {
      const at = i - this.anchorAt;
      if (!this.equalsFolded(json, at)) continue;
      if (end === -1) end = json.indexOf(AFTER_CONTENT, start);
      if (at + m > end) return false; // past the content: later hits are too
      if (isUnitBoundary(json, start, at)) return true;
    }
    return false;
  }

  /** Whether `json[at, at + pattern.length)` with A–Z folded equals the pattern. */
  private equalsFolded(json: string, at: number): boolean {
    const p = this.pattern;
    for (let j = 0; j < p.length; j++) {
      let c = json.charCodeAt(at + j);
      if (c >= 65 && c <= 90) c += 32;
      if (c !== p.charCodeAt(j)) return false;
    }
    return true;
  }

  /** The plain rule on the parsed content (JSON not in the expected canonical shape). */
  private matchesParsed(json: string): boolean {
    const content = (JSON.parse(json) as { content?: unknown }).content;
    return typeof content === 'string' && content.toLowerCase().includes(this.lq);
  }
}

/**
 * Whether offset `at` of the escaped string text beginning at `start` falls between escape units
 * (not inside `\n` or `\u0001`). Only text with a backslash before `at` needs walking.
 */
function isUnitBoundary(json: string, start: number, at: number): boolean {
  let i = json.lastIndexOf('\\', at - 1);
  if (i < start) return true;
  i = start;
  while (i < at) i += json.charCodeAt(i) !== 0x5c ? 1 : json.charCodeAt(i + 1) === 0x75 ? 6 : 2;
  return i === at;
}
