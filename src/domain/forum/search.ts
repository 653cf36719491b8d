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
import { NgramIndexDamagedError } from '../../store/search/index.js';
import { SliceTimer } from '../slices.js';
import { messageJsonOf, type ForumState, type MessageRow, type MessageSearch } from './forum.js';
import { SEARCH_SCAN_CANDIDATES_MAX } from '../../constants.js';

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
    const slice = await SliceTimer.start();
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

/**
 * What an indexed search needs of the n-gram index (store/search/index.ts): the highest seq it
 * covers, and candidate seqs for a query, newest first — a superset of the documents whose text
 * contains `lq`, below `beforeSeq`.
 */
export interface CandidateIndex {
  readonly throughSeq: number;
  candidates(lq: string, opts: { beforeSeq?: number }): Iterable<number>;
}

/** Whether `err` is the search index's report of a damaged shard (store/search/index.ts). */
export function isIndexDamage(err: unknown): boolean {
  return err instanceof NgramIndexDamagedError;
}

/** The row of the message with log seq `seq`, or undefined (another record, e.g. knowledge). */
export function rowOfSeq(s: ForumState, seq: number): MessageRow | undefined {
  const at = s.rows.seq.upperBound(seq) - 1;
  return at >= 0 && s.rows.seq.at(at) === seq ? at : undefined;
}

/**
 * The search through the n-gram index (issue 17 "Search that does not scan"). A small candidate
 * set (at most SEARCH_SCAN_CANDIDATES_MAX positions: one topic, one author, a reply list) is simply
 * scanned. Otherwise the newest messages the index does not cover yet (seq > throughSeq: being
 * added after a start) are scanned first, then the index's candidates are taken newest first
 * within the query's seq range, filtered by the other filters (no reads) and each checked on its
 * stored JSON (the index gives a superset for queries of 3 or more characters). Everything runs
 * in slices (domain/slices.ts). `index()` may answer null (no index): then it scans.
 */
export function indexedSearch(index: () => CandidateIndex | null): MessageSearch {
  return {
    async find(s, lq, c) {
      const idx = index();
      if (idx === null || c.from - c.lowest <= SEARCH_SCAN_CANDIDATES_MAX) return scanSearch.find(s, lq, c);
      const out: MessageRow[] = [];
      const slice = await SliceTimer.start();
      const through = idx.throughSeq;
      let i = c.from - 1;
      let n = 0;
      for (; i >= c.lowest && out.length < c.limit; i--) {
        const row = c.row(i);
        if (s.rows.seq.at(row) <= through) break;
        if (c.filter(row) && contentIncludes(messageJsonOf(s, row), lq)) out.push(row);
        if ((++n & 15) === 0 && slice.due()) await slice.next();
      }
      if (out.length >= c.limit || i < c.lowest) return out;
      const maxSeq = s.rows.seq.at(c.row(i));
      const minSeq = s.rows.seq.at(c.row(c.lowest));
      try {
        for (const seq of idx.candidates(lq, { beforeSeq: maxSeq + 1 })) {
          if (seq < minSeq) break;
          const row = rowOfSeq(s, seq);
          if (row !== undefined && c.filter(row) && contentIncludes(messageJsonOf(s, row), lq)) {
            out.push(row);
            if (out.length >= c.limit) break;
          }
          if ((++n & 15) === 0 && slice.due()) await slice.next();
        }
      } catch (err) {
        // A shard found damaged while read (being rebuilt now): this query scans instead.
        if (!isIndexDamage(err)) throw err;
        return scanSearch.find(s, lq, c);
      }
      return out;
    },
  };
}
