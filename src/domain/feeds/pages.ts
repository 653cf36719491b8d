/**
 * Cursor paging over the feeds and the topic export (parts 2 Cursor, 4 "Change feeds and
 * reconciliation", 6). Pure functions over FeedsState; the API layer validates parameters.
 */
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { FEED_PAGE_CACHE_BYTES_DEFAULT, FEED_PAGE_CACHE_MAX, FEED_POLL_BACKLOG_SECONDS, FEED_POLL_CAUGHT_UP_SECONDS } from '../../constants.js';
import { fail, invalid, notFound } from '../../errors.js';
import { discussionEvent, discussionRecordOf, eventJson, SEQ_POSITIONS, type FeedPositions, type FeedsState } from './feeds.js';
import { workRowOf, type WorkBoardState } from '../work/work.js';
import { workJsonOf, workRecordJson } from '../work/views.js';
import { discussionRecordStatus, discussionView, ERASED, MODERATION_EVENT_TYPE, VISIBLE, type ModerationEventPayload, type Reader } from '../moderation/moderation.js';

export const DISCUSSION_FORMAT = 'forum-changes-v1';
export const WORK_FORMAT = 'forum-work-changes-v1';
export const EXCHANGE_FORMAT = 'forum-exchange-v1';

/** RFC 4122 namespace used to derive the work feed's originId (ours; a fixed random UUID). */
const WORK_FEED_NAMESPACE = '3f0f6a52-8c1e-4d55-9a7e-2a8f1c5b9e40';

/**
 * Name-based UUID (version 5, SHA-1, RFC 4122 §4.3) of `name` in `namespace`.
 * Output: a lower-case UUID string.
 */
export function uuidV5(name: string, namespace: string): string {
  const ns = Buffer.from(namespace.replace(/-/g, ''), 'hex');
  const hash = createHash('sha1').update(ns).update(name, 'utf8').digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const h = hash.subarray(0, 16).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * The work feed's originId: derived from the log's originId, so it is stable across restarts,
 * changes with a new lineage, and never equals the discussion feed's — mixing cursors is a 409.
 */
export const workFeedOriginId = lastOnly((logOriginId) => uuidV5(`${WORK_FORMAT}:${logOriginId}`, WORK_FEED_NAMESPACE));

/**
 * `derive` remembering its last input and result: a feed's originId is asked for on every request
 * of that feed (a Hash object and a SHA-1: about 4 µs on the 2-core machine) and changes only with
 * the log's lineage. Input: the derivation; output: the same function, derived again only when
 * its input differs from the last call's.
 */
export function lastOnly(derive: (from: string) => string): (from: string) => string {
  let last: string | undefined;
  let value = '';
  return (from) => {
    if (from !== last) {
      value = derive(from);
      last = from;
    }
    return value;
  };
}

/** Validated feed paging parameters (schemas/ChangesQuery.json). */
export interface CursorQuery {
  after: number;
  limit: number;
  originId?: string;
}

/**
 * Where a checked cursor lands (`checkCursor`): `seq`, the seq in the feed's own numbering (the
 * log's for the discussion feed and the inbox, the work feed's for the work feed) after which the
 * page's scan starts; `notYet`, true when the cursor is ahead of a lagging follower's head (the
 * caller answers "not yet" at the client's own cursor, or holds a long poll until the feed passes it).
 */
export interface CheckedCursor {
  seq: number;
  notYet: boolean;
}

/**
 * Checks a cursor against a feed and maps its `after` — a *position* (issue 50,
 * domain/positions.ts; equal to the seq until a change of writer) — to the seq its scan continues
 * after, with `positions` (default: positions are seqs, as for the topic export):
 * - originId required when after > 0 (400 VALIDATION), and it must equal the feed's (409
 *   CURSOR_ORIGIN);
 * - a position a failover lost (one of the gap's, handed out by a leader that was replaced) is
 *   409 CURSOR_LOST naming where this archive's history parts from the cursor's: never a silent
 *   skip of the new records at the same seqs;
 * - a cursor beyond the feed's `head` (a seq) is 409 CURSOR_AHEAD (restored older data: reread) —
 *   except on a read-only follower (`lagging`, issue 50): there a cursor ahead of the head is one
 *   the leader (or a follower further along) gave out, and the answer is "not yet" (`notYet`).
 * The query schema admits only the canonical hyphenated UUID form, so the one remaining
 * spelling difference is the case of the hex digits: both sides are compared lower-cased
 * (RFC 4122 §3: UUIDs are case-insensitive on input).
 */
export function checkCursor(
  q: { after: number; originId?: string },
  originId: string,
  head: number,
  feed: string,
  lagging = false,
  positions: FeedPositions = SEQ_POSITIONS,
): CheckedCursor {
  if (q.after > 0 && q.originId === undefined) {
    throw invalid(`query parameter "originId" is required when after > 0; copy it from the previous page's cursor`);
  }
  if (q.originId !== undefined && q.originId.toLowerCase() !== originId.toLowerCase()) {
    throw fail('CURSOR_ORIGIN', `cursor originId ${q.originId} does not belong to the ${feed} of this archive (originId ${originId}): ` +
        'a cursor from another feed or another archive lineage (e.g. after a restore); do not reset silently — reread from after=0 and deduplicate');
  }
  const at = positions.cursorSeq(q.after);
  if (at.lostAfter !== null) {
    throw fail('CURSOR_LOST', `cursor after=${q.after} names records this archive does not have: a failover lost them (the cursor came from a leader ` +
        `that was replaced before they were replicated); this archive's history parts from it after position ${at.lostAfter}. ` +
        `Reread from after=${at.lostAfter} (same originId) and deduplicate by originId + seq; never reset silently`);
  }
  if (at.seq > head) {
    if (lagging) return { seq: at.seq, notYet: true };
    throw fail('CURSOR_AHEAD', `cursor after=${q.after} is ahead of this archive, which ends at ${positions.positionOf(head)}: the data was restored from an older backup; ` +
        'reread from after=0 and reconcile, never continue silently');
  }
  return { seq: at.seq, notYet: false };
}

/**
 * A follower's answer to a cursor ahead of its head (issue 50; see `checkCursor`): a caught-up
 * page with no events that gives the client's own cursor (`after`, a position) back, so the
 * client keeps it and asks again after pollAfterSeconds.
 */
export function notYetPageJson(format: string, originId: string, after: number): string {
  return pageJson(format, originId, after, after, [], SEQ_POSITIONS);
}

/**
 * The page envelope around events already encoded; rows (after, end] were scanned (seqs); the
 * cursor's `after` is `end`'s position.
 */
function pageJson(format: string, originId: string, end: number, head: number, events: string[], positions: FeedPositions): string {
  const hasMore = end < head;
  const poll = hasMore ? FEED_POLL_BACKLOG_SECONDS : FEED_POLL_CAUGHT_UP_SECONDS;
  return (
    `{"format":"${format}","cursor":{"originId":"${originId}","after":${positions.positionOf(end)}},"hasMore":${hasMore},` +
    `"pollAfterSeconds":${poll},"events":[${events.join(',')}]}`
  );
}

/**
 * One page of the discussion feed as JSON. `q.after` is a log seq (`checkCursor` mapped the
 * client's position to it) and `head` the log head: hidden rows count toward `limit`, so rows
 * (after, min(after+limit, head)] are scanned. Each event's `seq` and the cursor's `after` are
 * positions (`positions`, the log's: issue 50; equal to the seqs on a log whose writer never
 * changed). Message events are read back from the log: at most `limit` reads.
 */
export function discussionPageJson(feeds: FeedsState, q: CursorQuery, originId: string, head: number, reader: Reader, positions: FeedPositions = SEQ_POSITIONS): string {
  let end = Math.min(q.after + q.limit, head);
  const seqs = feeds.discussion;
  const out: string[] = [];
  for (let i = seqs.upperBound(q.after); i < seqs.length && seqs.at(i) <= end; i++) {
    const seq = seqs.at(i);
    const stored = feeds.records.read(seq);
    if (stored.type === MODERATION_EVENT_TYPE) {
      // One event of a moderation action, at a log position of its own: the record it names as
      // the reader sees it now. The page stops before an action that is not durable yet.
      const p = JSON.parse(stored.payloadJson) as ModerationEventPayload;
      if (p.of > head) {
        end = seq - 1;
        break;
      }
      const e = discussionEvent(feeds, p.target);
      const recordJson = discussionView(reader, e.kind, e.recordJson, discussionRecordStatus(reader, e.kind, p.target, e.recordJson));
      out.push(eventJson({ seq: positions.positionOf(seq), logSeq: seq, kind: e.kind, time: stored.time, recordJson }));
      continue;
    }
    const changed = reader.mod.events.get(seq);
    if (changed === undefined) {
      const { kind, json } = discussionRecordOf(stored, seq);
      out.push(eventJson({ seq: positions.positionOf(seq), logSeq: seq, kind, time: stored.time, recordJson: discussionView(reader, kind, json, discussionRecordStatus(reader, kind, seq, json)) }));
      continue;
    }
    // A moderation record: one event per record it hid, unhid or erased, at its own seq and
    // time, carrying that record as the reader sees it now (issue 25), so a mirror that applies
    // events in order ends with the API's view.
    const time = stored.time;
    const position = positions.positionOf(seq);
    for (const target of changed) {
      const e = discussionEvent(feeds, target);
      const recordJson = discussionView(reader, e.kind, e.recordJson, discussionRecordStatus(reader, e.kind, target, e.recordJson));
      out.push(eventJson({ seq: position, logSeq: seq, kind: e.kind, time, recordJson }));
    }
  }
  return pageJson(DISCUSSION_FORMAT, originId, end, head, out, positions);
}

/**
 * One page of the work feed as JSON: events (after, min(after+limit, head)] of the work feed's
 * own sequence (`q.after` as `checkCursor` mapped it), each a complete WorkItem snapshot. `head`:
 * the feed's length to page up to (default: all of it; a stream passes the count of durable work
 * events, issue 37). Each event's `seq` and the cursor's `after` are work-feed positions
 * (`positions`: `workFeedPositions`, issue 50; equal to the sequence until a change of writer).
 */
export function workPageJson(
  feeds: FeedsState,
  work: WorkBoardState,
  q: CursorQuery,
  originId: string,
  reader: Reader,
  head: number = feeds.work.length,
  positions: FeedPositions = SEQ_POSITIONS,
): string {
  const end = Math.min(q.after + q.limit, head);
  const out: string[] = [];
  for (let seq = q.after + 1; seq <= end; seq++) {
    const logSeq = feeds.work.at(seq - 1);
    const time = feeds.records.read(logSeq).time;
    const changed = reader.mod.workItems.get(logSeq);
    const revisions = reader.mod.workRecords.get(logSeq);
    let recordJson: string;
    if (changed === undefined) recordJson = workRecordJson(work, logSeq, reader);
    else if (revisions !== undefined) {
      // A moderation record's events: the k-th of its positions is the k-th work revision whose
      // view it changed, as the reader sees it now.
      recordJson = workRecordJson(work, revisions[seq - 1 - feeds.work.upperBound(logSeq - 1)]!, reader);
    } else {
      // A moderation record's events (issue 25): the k-th of its positions is its k-th work item,
      // carried at its current revision as the reader sees it.
      const first = feeds.work.upperBound(logSeq - 1);
      recordJson = workJsonOf(work, workRowOf(work, changed[seq - 1 - first]!)!, reader);
    }
    out.push(eventJson({ seq: positions.positionOf(seq), logSeq, kind: 'work_item', time, recordJson }));
  }
  return pageJson(WORK_FORMAT, originId, end, head, out, positions);
}

/** Bytes counted per cached page beyond its body: key, entry and Buffer bookkeeping (an estimate). */
const PAGE_ENTRY_OVERHEAD_BYTES = 200;

/**
 * Bounded cache of encoded feed pages whose window (after, after + limit] lies wholly at or below
 * the head: such a page can never change (the log is append-only and a lineage keeps its
 * originId), so it is encoded once and served as bytes. One cache serves both feeds (`feed` is
 * part of the key). Bounded by bytes (`maxBytes`, FORUM_FEED_CACHE_MB; issue 28 item 4) and by
 * count (`maxPages`); least recently used pages are dropped first, and a page larger than
 * `maxBytes` is served without being kept. lru-cache keeps the recency order in typed arrays.
 *
 * Keys are in the feeds' own seqs (`q.after` as `checkCursor` mapped it), the pages hold positions
 * (issue 50). That is safe: the position of a seq at or below the head never changes (a change of
 * writer adds a boundary only at a new record, past the head, domain/positions.ts; the work feed's
 * map likewise, `workFeedPositions`), and `checkCursor` maps each position the feed has to a seq
 * of its own and no other (a position of the gap is 409, never mapped), so a cached page is only
 * ever served to the one cursor it was rendered for.
 *
 * Besides, the last page rendered at the head (window past it) is kept until the head moves: the
 * held long-poll requests one group commit wakes (issue 37) ask for the same page at once — the
 * same feed, cursor, limit, reader class and head — and it is rendered once for all of them. One
 * page, replaced by the next head page, and only while the cache is on.
 */
export class FeedPageCache {
  private readonly pages: LRUCache<string, Buffer> | undefined;
  /** The last page rendered at the head and its key (feed, variant, cursor, limit and head). */
  private headKey = '';
  private headPage: Buffer | null = null;

  /**
   * `maxBytes`: bound on the bytes held (page bodies plus PAGE_ENTRY_OVERHEAD_BYTES each; 0 = no
   * cache); `maxPages`: bound on the pages held.
   */
  constructor(readonly maxBytes: number = FEED_PAGE_CACHE_BYTES_DEFAULT, maxPages: number = FEED_PAGE_CACHE_MAX) {
    this.pages =
      maxBytes > 0
        ? new LRUCache<string, Buffer>({ max: maxPages, maxSize: maxBytes, maxEntrySize: maxBytes, sizeCalculation: (buf, key) => buf.length + key.length + PAGE_ENTRY_OVERHEAD_BYTES })
        : undefined;
  }

  /**
   * The page of feed `feed` (e.g. `discussion`) for `q` as bytes: from the cache when its window
   * is complete (`q.after + q.limit <= head`), else rendered by `render` (and cached when complete).
   * `variant` names what else the page depends on: the reader's class and the moderation version
   * (issue 25: a hide changes how earlier events render), so a page is never served to a reader
   * it was not rendered for, nor after a moderation action.
   */
  page(feed: string, q: CursorQuery, head: number, render: () => string, variant = ''): Buffer {
    if (this.pages === undefined) return Buffer.from(render(), 'utf8');
    if (q.after + q.limit > head) {
      const key = `${feed}:${variant}:${q.after}:${q.limit}:${head}`;
      if (this.headKey !== key || this.headPage === null) {
        this.headPage = Buffer.from(render(), 'utf8');
        this.headKey = key;
      }
      return this.headPage;
    }
    const key = `${feed}:${variant}:${q.after}:${q.limit}`;
    let buf = this.pages.get(key);
    if (buf === undefined) {
      buf = Buffer.from(render(), 'utf8');
      this.pages.set(key, buf);
    }
    return buf;
  }

  /** Pages held now; for tests. */
  get size(): number {
    return this.pages?.size ?? 0;
  }

  /** Bytes held now, as counted against `maxBytes`; for tests. */
  get bytes(): number {
    return this.pages?.calculatedSize ?? 0;
  }
}

/** Validated export parameters (schemas/ExchangeQuery.json). */
export interface ExchangeQuery {
  topicId: string;
  after: number;
  through?: number;
  originId?: string;
  limit: number;
}

/**
 * One page of a topic export (part 4 GET /api/exchange) as JSON. `head` is the log head, used to
 * pin `through` on the first page; later posts never enter a pinned export.
 * `proofs` (issue 53; api/proofs/routes.ts `exchangeProofs`), given the page's `through`, returns the
 * signed checkpoint of that tree size and each record's `,"proof":{...}` fragment (or null: none).
 * `signerKeys` (issue 53; docs/api/keys.md#signed-writes) gives an agent's key history (its AgentKey
 * list): a page whose records carry signatures also carries `keys`, each signer's history by
 * agent id, so the signatures verify offline; a page without one is byte-identical to before.
 * Throws 404 (unknown topic), 400 (after > 0 or through without originId; after > through), 409 (wrong origin,
 * or after/through beyond the archive).
 */
export function exchangePageJson(
  feeds: FeedsState,
  q: ExchangeQuery,
  originId: string,
  head: number,
  reader: Reader,
  proofs: ((through: number) => { checkpoint: string; proofOf: (seq: number, bound: boolean) => string } | null) | null = null,
  signerKeys: ((agentId: string) => unknown) | null = null,
): string {
  const rows = feeds.byTopic.get(q.topicId);
  if (!rows) throw notFound(`no topic with id "${q.topicId}"`);
  if ((q.after > 0 || q.through !== undefined) && q.originId === undefined) {
    throw invalid('query parameter "originId" is required when after > 0 or through is given; keep the whole cursor across pages');
  }
  // The export's after and through are log seqs, not positions (issue 50): its rows' seqs are the
  // Merkle tree's leaf numbers and `through` its size, which verifiers check (docs/api/feeds.md).
  checkCursor(q, originId, head, 'topic export');
  const through = q.through ?? head;
  if (q.after > through) {
    throw invalid(`after=${q.after} is beyond through=${through}: a cursor never passes its pinned bound; send the whole cursor of the previous page`);
  }
  if (through > head) {
    throw fail('CURSOR_AHEAD', `through=${through} is ahead of this archive, which ends at ${head}: restored older data; reread from after=0`);
  }
  // Issue 53: the signed checkpoint of the tree of `through` records and each record's proof.
  const tlog = proofs?.(through) ?? null;
  const out: string[] = [];
  const signers = new Set<string>();
  let i = rows.upperBound(q.after);
  let last = q.after;
  for (; i < rows.length && rows.at(i) <= through && out.length < q.limit; i++) {
    const row = discussionEvent(feeds, rows.at(i));
    // Hidden and erased records (issue 25): the placeholder, with a checksum of its own, for
    // readers who may not see the text (everyone, once erased); operators get hidden records
    // as archived, so their checksums still verify. Every other record is exported unchanged.
    const status = discussionRecordStatus(reader, row.kind, row.seq, row.recordJson);
    const json = discussionView(reader, row.kind, row.recordJson, status);
    const canonical = status !== VISIBLE && reader.operator && status !== ERASED ? row.recordJson : json;
    const flag = status === VISIBLE ? '' : status === ERASED ? ',"erased":true' : ',"hidden":true';
    const sha256 = createHash('sha256').update(canonical, 'utf8').digest('hex');
    // canonicalJson is the record's own text (bound to its chained hash) unless it is a placeholder.
    const proof = tlog === null ? '' : tlog.proofOf(row.seq, status === VISIBLE || (reader.operator && status !== ERASED));
    // A signed record (its own text, not a placeholder): `"signature":{` with unescaped quotes is
    // only ever a key of the record (inside a JSON string every quote is escaped).
    if (signerKeys !== null && canonical.includes('"signature":{')) signers.add((JSON.parse(canonical) as { authorId: string }).authorId);
    out.push(`{"seq":${row.seq},"kind":"${row.kind}","canonicalJson":${JSON.stringify(canonical)},"sha256":"${sha256}"${flag}${proof}}`);
    last = row.seq;
  }
  const hasMore = i < rows.length && rows.at(i) <= through;
  const after = hasMore ? last : Math.max(last, through);
  return (
    `{"format":"${EXCHANGE_FORMAT}","cursor":{"topicId":${JSON.stringify(q.topicId)},"originId":"${originId}",` +
    `"after":${after},"through":${through},"hasMore":${hasMore}},"hasMore":${hasMore},` +
    `${tlog === null ? '' : `"checkpoint":${JSON.stringify(tlog.checkpoint)},`}"records":[${out.join(',')}]${keysJson(signers, signerKeys)}}`
  );
}

/** The `,"keys":{…}` member of an export page whose records were signed by `signers` (sorted by agent id), or '' for none. */
function keysJson(signers: Set<string>, signerKeys: ((agentId: string) => unknown) | null): string {
  if (signers.size === 0 || signerKeys === null) return '';
  const entries = [...signers].sort().map((id) => `${JSON.stringify(id)}:${JSON.stringify(signerKeys(id) ?? [])}`);
  return `,"keys":{${entries.join(',')}}`;
}
