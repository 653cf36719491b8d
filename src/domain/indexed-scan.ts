/**
 * The one `q` scan behind every text search (messages and knowledge; part 4 GET /api/messages,
 * GET /api/knowledge, GET /api/search; issues 17, 21 and 29).
 *
 * The rule stays the caller's (`text.toLowerCase()` contains `q.toLowerCase()`, newest first, no
 * ranking); this module decides which candidates are read and when the scan yields. A small
 * candidate set (at most SEARCH_SCAN_CANDIDATES_MAX positions: one topic, one author, one item) or
 * a search without an index is scanned newest first. Otherwise the newest candidates the n-gram
 * index does not cover yet (seq > throughSeq: being added after a start) are scanned first, then
 * the index's candidate seqs are taken newest first within the candidates' seq range, filtered by
 * the other filters (no reads) and each re-checked against its text (the index proposes a
 * superset). Everything runs in slices of SEARCH_SLICE_MS (domain/slices.ts) and stops at `limit`
 * hits. A shard found damaged while read is being rebuilt: that query scans instead.
 */
import { SEARCH_SCAN_CANDIDATES_MAX } from '../constants.js';
import { NgramIndexDamagedError } from '../store/search/index.js';
import { SliceTimer } from './slices.js';

/**
 * What a search needs of the n-gram index (store/search/index.ts, kept in step by
 * domain/search-indexer.ts): the highest seq it covers, and candidate seqs for a lower-cased
 * query, newest first — a superset of the documents whose text contains `lq`, below `beforeSeq`.
 */
export interface CandidateIndex {
  readonly throughSeq: number;
  candidates(lq: string, opts: { beforeSeq?: number }): Iterable<number>;
}

/**
 * One search's candidates: positions [lowest, from) of a list ascending by log seq (every message,
 * one topic's or author's rows, every knowledge revision, …), scanned newest first, and how to
 * judge one. Every item that passes `filter` lies in the list, so index hits are bounded by it.
 */
export interface ScanCandidates<T> {
  lowest: number;
  from: number;
  /** The item at position i. */
  at(i: number): T;
  /** The log seq of an item (its document id in the index). */
  seqOf(item: T): number;
  /** The item with log seq `seq` (an index hit), or undefined when that record is no such item. */
  bySeq(seq: number): T | undefined;
  /** The other filters, moderation included (no record reads). */
  filter(item: T): boolean;
  /** Whether the item's text contains the query (reads the record back; linear in its length). */
  matches(item: T): boolean;
  /** At most this many items are returned. */
  limit: number;
}

/**
 * The items among `c`'s candidates that pass its filter and match, newest first, at most
 * `c.limit` (see the module doc). `index` null (no index open) scans. `lq` is the lower-cased
 * query the index is asked for; `c.matches` is the check that decides.
 */
export async function indexedScan<T>(index: CandidateIndex | null, lq: string, c: ScanCandidates<T>): Promise<T[]> {
  if (index === null || c.from - c.lowest <= SEARCH_SCAN_CANDIDATES_MAX) return scan(c);
  const out: T[] = [];
  const slice = await SliceTimer.start();
  const through = index.throughSeq;
  let i = c.from - 1;
  let n = 0;
  for (; i >= c.lowest && out.length < c.limit; i--) {
    const item = c.at(i);
    if (c.seqOf(item) <= through) break;
    if (c.filter(item) && c.matches(item)) out.push(item);
    if ((++n & 15) === 0 && slice.due()) await slice.next();
  }
  if (out.length >= c.limit || i < c.lowest) return out;
  const maxSeq = c.seqOf(c.at(i));
  const minSeq = c.seqOf(c.at(c.lowest));
  try {
    for (const seq of index.candidates(lq, { beforeSeq: maxSeq + 1 })) {
      if (seq < minSeq) break;
      const item = c.bySeq(seq);
      if (item !== undefined && c.filter(item) && c.matches(item)) {
        out.push(item);
        if (out.length >= c.limit) break;
      }
      if ((++n & 15) === 0 && slice.due()) await slice.next();
    }
  } catch (err) {
    // A shard found damaged while read (being rebuilt now): this query scans instead.
    if (!(err instanceof NgramIndexDamagedError)) throw err;
    return scan(c);
  }
  return out;
}

/** Positions [c.lowest, c.from) newest first, one by one, in slices. */
async function scan<T>(c: ScanCandidates<T>): Promise<T[]> {
  const out: T[] = [];
  const slice = await SliceTimer.start();
  let n = 0;
  for (let i = c.from - 1; i >= c.lowest && out.length < c.limit; i--) {
    const item = c.at(i);
    if (c.filter(item) && c.matches(item)) out.push(item);
    if ((++n & 15) === 0 && slice.due()) await slice.next();
  }
  return out;
}
