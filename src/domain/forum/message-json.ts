/**
 * Reading a message from its stored canonical JSON without parsing all of it: the fields the
 * index needs (`readMessageFields`), and the case-insensitive `q` search over its content
 * (part 4 GET /api/messages `q`, GET /api/search) without a lower-cased copy.
 *
 * Canonical message JSON (fast-json-stable-stringify: sorted keys, no whitespace) is
 *
 *     {"authorId":"…","clientId":"…","content":"…","created":"…","id":"…","replyTo":null|"…","topicId":"…"}
 *
 * Inside a JSON string every `"` is escaped, so a text such as `","created":"` (a quote after a
 * comma) can only be the structure between two fields, never part of a value: the readers below
 * find fields by such texts. JSON of any other shape is handed back to JSON.parse.
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

const AUTHOR_KEY = '{"authorId":"';
const CLIENT_ID_KEY = '","clientId":"';
/** The JSON text before the content's string (its opening quote included). */
const CONTENT_KEY = ',"content":"';
const ID_KEY = '","id":"';
const REPLY_TO_KEY = '","replyTo":';
const TOPIC_ID_KEY = ',"topicId":"';

/** The fields of a message the forum index keeps (part 2 Message), read from its canonical JSON. */
export interface MessageFields {
  id: string;
  topicId: string;
  authorId: string;
  replyTo: string | null;
  clientId: string;
  created: string;
  /** The content, only when it lower-cases beyond A–Z (`foldsAsAscii` false), for its lower-cased copy. */
  content: string | undefined;
}

/**
 * Reads the index fields of message JSON `json` by locating the field boundaries of the canonical
 * shape, without JSON.parse (replay reads a million of these). Ids, times and the clientId are
 * sliced out; a value that holds a quote or backslash (an escaped clientId, or JSON of another
 * shape) sends the whole JSON to JSON.parse instead, so the result is always the parsed fields.
 * Throws SyntaxError only for JSON that is not valid.
 */
export function readMessageFields(json: string): MessageFields {
  if (!json.startsWith(AUTHOR_KEY) || !json.endsWith('"}')) return fieldsOfParsed(json);
  const clientAt = json.indexOf(CLIENT_ID_KEY, AUTHOR_KEY.length);
  const contentAt = clientAt === -1 ? -1 : json.indexOf(CONTENT_KEY, clientAt);
  const createdAt = contentAt === -1 ? -1 : json.indexOf(AFTER_CONTENT, contentAt);
  const idAt = createdAt === -1 ? -1 : json.indexOf(ID_KEY, createdAt);
  const replyAt = idAt === -1 ? -1 : json.indexOf(REPLY_TO_KEY, idAt);
  const topicAt = replyAt === -1 ? -1 : json.indexOf(TOPIC_ID_KEY, replyAt);
  if (topicAt === -1 || json.charCodeAt(contentAt - 1) !== 0x22) return fieldsOfParsed(json);
  const authorId = json.slice(AUTHOR_KEY.length, clientAt);
  const clientId = json.slice(clientAt + CLIENT_ID_KEY.length, contentAt - 1);
  const created = json.slice(createdAt + AFTER_CONTENT.length, idAt);
  const id = json.slice(idAt + ID_KEY.length, replyAt);
  const replyRaw = json.slice(replyAt + REPLY_TO_KEY.length, topicAt);
  const topicId = json.slice(topicAt + TOPIC_ID_KEY.length, json.length - 2);
  const replyTo = replyRaw === 'null' ? null : replyRaw.length > 2 && replyRaw.startsWith('"') && replyRaw.endsWith('"') ? replyRaw.slice(1, -1) : undefined;
  if (
    replyTo === undefined ||
    QUOTE_OR_BACKSLASH.test(authorId) ||
    QUOTE_OR_BACKSLASH.test(clientId) ||
    QUOTE_OR_BACKSLASH.test(created) ||
    QUOTE_OR_BACKSLASH.test(id) ||
    (replyTo !== null && QUOTE_OR_BACKSLASH.test(replyTo)) ||
    QUOTE_OR_BACKSLASH.test(topicId)
  ) {
    return fieldsOfParsed(json);
  }
  return { id, topicId, authorId, replyTo, clientId, created, content: foldsAsAscii(json) ? undefined : fieldsOfParsed(json).content };
}

/**
 * The `created` time of canonical message JSON `json` (ISO 8601), read without parsing the rest
 * (the `before` filter's binary search). JSON of another shape is parsed.
 */
export function createdOf(json: string): string {
  const at = json.indexOf(AFTER_CONTENT, json.indexOf(CONTENT_KEY));
  const end = at === -1 ? -1 : json.indexOf('"', at + AFTER_CONTENT.length);
  return end === -1 ? (JSON.parse(json) as { created: string }).created : json.slice(at + AFTER_CONTENT.length, end);
}

/** A quote or backslash in a sliced value: escaped text, or JSON of another shape. */
const QUOTE_OR_BACKSLASH = /["\\]/;

/** The fields of message JSON `json` through JSON.parse (any shape). */
function fieldsOfParsed(json: string): MessageFields {
  const m = JSON.parse(json) as MessageFields & { content: string };
  return {
    id: m.id,
    topicId: m.topicId,
    authorId: m.authorId,
    replyTo: m.replyTo,
    clientId: m.clientId,
    created: m.created,
    content: foldsAsAscii(json) ? undefined : m.content,
  };
}

/** The JSON text right after the content's string (the next sorted key is `created`). */
const AFTER_CONTENT = '","created":"';
import { Q_ANCHOR_HITS_PER_MESSAGE_MAX } from '../../constants.js';

/** Runs of characters outside ASCII. */
const NON_ASCII = /[^\x00-\x7f]+/g;

/**
 * True when `json`'s non-ASCII characters are all unchanged by `toLowerCase()`, so lower-casing
 * the message's content only folds A–Z and `q` can be searched in `json` itself (see module doc).
 * Input: a message's canonical JSON. Conservative: non-ASCII text in other fields counts too.
 */
export function foldsAsAscii(json: string): boolean {
  if (Buffer.byteLength(json, 'utf8') === json.length) return true; // all ASCII (native count, 4× a regex scan)
  const runs = json.match(NON_ASCII);
  if (runs === null) return true;
  const text = runs.join('');
  return text.toLowerCase() === text;
}

/**
 * How often each character of `pattern` occurs in the contents of the canonical message JSONs in
 * `sample` (A–Z counted as a–z): counts[i] for pattern[i]. One pass over the sample with a
 * 64 KiB table for UTF-16 code units (a sample of 256 messages is under a millisecond).
 */
function countPatternChars(pattern: string, sample: readonly string[]): number[] {
  const table = new Uint32Array(0x10000);
  for (const json of sample) {
    const keyAt = json.indexOf(CONTENT_KEY);
    const end = keyAt === -1 ? -1 : json.indexOf(AFTER_CONTENT, keyAt);
    for (let i = keyAt + CONTENT_KEY.length; i < end; i++) {
      const c = json.charCodeAt(i);
      table[c >= 65 && c <= 90 ? c + 32 : c]!++;
    }
  }
  return Array.from(pattern, (_, i) => table[pattern.charCodeAt(i)]!);
}

/**
 * A compiled query: `matches(json)` answers whether the message with canonical JSON `json`
 * (one for which `foldsAsAscii(json)` held) has content containing `lq`.
 *
 * Two ways to find candidates, chosen per query from a sample of the messages to be searched:
 * when the query's rarest character occurs at most Q_ANCHOR_HITS_PER_MESSAGE_MAX times per
 * sampled message, each message is scanned natively (`indexOf`) for that character in both
 * cases and the query is compared at each hit; otherwise (common letters only) one
 * case-insensitive RegExp scans each message. A non-ASCII query always uses the first way (the
 * RegExp would also fold non-ASCII letters such as σ/ς, which the rule does not).
 *
 * `lq` must be well-formed Unicode: a lone surrogate in it would be compared with the `\udXXX`
 * escape JSON.stringify writes, not with half of a pair. Queries arrive well-formed: URL
 * decoding of the query string turns a lone surrogate into U+FFFD, and request bodies refuse one.
 */
export class ContentMatcher {
  /** The escaped lower-cased query as it appears inside a JSON string. */
  private readonly pattern: string;
  /** Index in `pattern` of the anchor (its rarest character in the sample), in lower and upper case. */
  private readonly anchorAt: number;
  private readonly anchorLower: string;
  private readonly anchorUpper: string;
  /**
   * When the RegExp way is chosen: the pattern as a case-insensitive RegExp, which V8 runs natively (with
   * its own skip tables) and which folds exactly A–Z for ASCII patterns (ES2024 §22.2.7.3
   * Canonicalize never maps a non-ASCII character to an ASCII one). `probe` answers "anywhere in
   * the JSON?" without building a match; `from` finds matches from a given offset.
   */
  private readonly probe: RegExp | null;
  private readonly from: RegExp | null;

  /**
   * Input: the lower-cased query `lq` (non-empty) and a sample of the canonical message JSONs to
   * be searched (the newest Q_SAMPLE_MESSAGES candidates), which decides how to scan.
   */
  constructor(
    readonly lq: string,
    sample: readonly string[],
  ) {
    this.pattern = JSON.stringify(lq).slice(1, -1);
    const counts = countPatternChars(this.pattern, sample);
    let at = 0;
    for (let i = 1; i < counts.length; i++) if (counts[i]! < counts[at]!) at = i;
    const rare = counts[at]! <= sample.length * Q_ANCHOR_HITS_PER_MESSAGE_MAX;
    const useRegExp = !rare && /^[\x00-\x7f]*$/.test(this.pattern);
    const source = this.pattern.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    this.probe = useRegExp ? new RegExp(source, 'i') : null;
    this.from = useRegExp ? new RegExp(source, 'gi') : null;
    this.anchorAt = at;
    this.anchorLower = this.pattern[at]!;
    this.anchorUpper = this.anchorLower >= 'a' && this.anchorLower <= 'z' ? this.anchorLower.toUpperCase() : this.anchorLower;
  }

  /** Whether the content in canonical message JSON `json` contains the query, ignoring case. */
  matches(json: string): boolean {
    if (this.probe !== null) {
      if (!this.probe.test(json)) return false; // the common case: one native scan
    } else if (json.indexOf(this.anchorLower) === -1 && (this.anchorUpper === this.anchorLower || json.indexOf(this.anchorUpper) === -1)) {
      // The rare anchor is nowhere in the JSON, the common case for a rare or absent query: two
      // native scans instead of locating the content first and scanning it twice. When the
      // anchor does occur (in a key or id it is found early), the content scan below decides.
      return false;
    }
    const keyAt = json.indexOf(CONTENT_KEY);
    if (keyAt === -1) return this.matchesParsed(json);
    const start = keyAt + CONTENT_KEY.length;
    const end = json.indexOf(AFTER_CONTENT, start);
    if (end === -1) return this.matchesParsed(json);
    if (this.from !== null) return this.scanRegExp(json, start, end, this.from);
    if (this.scan(json, start, end, this.anchorLower)) return true;
    return this.anchorUpper !== this.anchorLower && this.scan(json, start, end, this.anchorUpper);
  }

  /** Tries every match of `re` (global) in the content `json[start, end)`. */
  private scanRegExp(json: string, start: number, end: number, re: RegExp): boolean {
    const m = this.pattern.length;
    re.lastIndex = start;
    for (let hit = re.exec(json); hit !== null && hit.index + m <= end; hit = re.exec(json)) {
      if (isUnitBoundary(json, start, hit.index)) return true;
      re.lastIndex = hit.index + 1;
    }
    return false;
  }

  /** Tries every occurrence of `anchor` in the content `json[start, end)`. */
  private scan(json: string, start: number, end: number, anchor: string): boolean {
    const m = this.pattern.length;
    for (let i = json.indexOf(anchor, start + this.anchorAt); i !== -1; i = json.indexOf(anchor, i + 1)) {
      const at = i - this.anchorAt;
      if (at + m > end) return false; // past the content: later hits are too
      if (!this.equalsFolded(json, at)) continue;
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
