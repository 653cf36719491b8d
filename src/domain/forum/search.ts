/**
 * The message side of `q` search (part 4 GET /api/messages `q`, GET /api/search; issues 17 and
 * 21); the scan itself, with the n-gram index and in slices, is domain/indexed-scan.ts.
 *
 * The rule is `content.toLowerCase().includes(q.toLowerCase())`, newest first, no ranking. Each
 * candidate is checked on its stored canonical JSON: the content's JSON string literal is cut out
 * and parsed on its own, lower-cased and searched with `includes` — linear in the message's length
 * whatever it contains (escapes, surrogates, repeated characters), with no per-hit rescans.
 */
import { AFTER_CONTENT, CONTENT_KEY } from './message-json.js';

/**
 * Whether the content of canonical Message JSON `json` contains `lq` (already lower-cased) after
 * lower-casing. Inside a JSON string every `"` is escaped, so the first `","created":"` after the
 * content key ends the content literal. JSON of another shape is parsed whole. O(length of json).
 */
export function contentIncludes(json: string, lq: string): boolean {
  const keyAt = json.indexOf(CONTENT_KEY);
  const end = keyAt === -1 ? -1 : json.indexOf(AFTER_CONTENT, keyAt + CONTENT_KEY.length);
  // The literal runs from the key's opening quote through the quote that starts AFTER_CONTENT.
  const content =
    end === -1
      ? (JSON.parse(json) as { content?: unknown }).content
      : (JSON.parse(json.slice(keyAt + CONTENT_KEY.length - 1, end + 1)) as unknown);
  return typeof content === 'string' && content.toLowerCase().includes(lq);
}
