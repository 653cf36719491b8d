/**
 * `q` search over messages (part 4 GET /api/messages `q`, GET /api/search; issues 17 and 21).
 *
 * The rule is `content.toLowerCase().includes(q.toLowerCase())`, newest first, no ranking. Each
 * candidate is checked on its stored canonical JSON: the content's JSON string literal is cut out
 * and parsed on its own, lower-cased and searched with `includes` — linear in the message's length
 * whatever it contains (escapes, surrogates, repeated characters), with no per-hit rescans.
 *
 * No request holds the event loop: the scan runs in slices of SEARCH_SLICE_MS, one slice per turn
 * of the event loop across all scans (domain/slices.ts), and it stops at `limit` hits.
 */
import { SliceTimer } from '../slices.js';
import { messageJsonOf, type ForumState, type MessageRow, type MessageSearch } from './forum.js';

/** The JSON text before the content's string literal (canonical Message JSON, sorted keys). */
const CONTENT_KEY = ',"content":';
/** The JSON text right after the content's string literal. */
const AFTER_CONTENT = ',"created":"';

/**
 * Whether the content of canonical Message JSON `json` contains `lq` (already lower-cased) after
 * lower-casing. Inside a JSON string every `"` is escaped, so the first `,"created":"` after the
 * content key ends the content literal. JSON of another shape is parsed whole. O(length of json).
 */
export function contentIncludes(json: string, lq: string): boolean {
  const keyAt = json.indexOf(CONTENT_KEY);
  const end = keyAt === -1 ? -1 : json.indexOf(AFTER_CONTENT, keyAt);
  const content =
    end === -1
      ? (JSON.parse(json) as { content?: unknown }).content
      : (JSON.parse(json.slice(keyAt + CONTENT_KEY.length, end)) as unknown);
  return typeof content === 'string' && content.toLowerCase().includes(lq);
}

/**
 * The search without an index: candidates are read newest first and checked one by one, in
 * slices of at most SEARCH_SLICE_MS (domain/slices.ts). Cost: one record read (cached or one
 * positional read) and one linear check per candidate passed.
 */
export const scanSearch: MessageSearch = {
  async find(s: ForumState, lq, c): Promise<MessageRow[]> {
    const out: MessageRow[] = [];
    const slice = new SliceTimer();
    let n = 0;
    for (let i = c.from - 1; i >= c.lowest && out.length < c.limit; i--) {
      const row = c.row(i);
      if (!c.filter(row)) continue;
      if (contentIncludes(messageJsonOf(s, row), lq)) out.push(row);
      if ((++n & 15) === 0 && slice.due()) await slice.next();
    }
    return out;
  },
};
