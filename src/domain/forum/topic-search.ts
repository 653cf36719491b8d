/**
 * Topic titles in GET /api/search (ours, issue 55: an extension of part 4 — a `topics` list
 * beside the spec's `messages` and `knowledge`, which are unchanged).
 *
 * The rule is the messages' (search.ts): `title.toLowerCase().includes(q.toLowerCase())`, newest
 * first, no ranking; `agentId` keeps the topics that author started, `topicId` the one topic,
 * `before` those created strictly before it (clock.ts `exclusiveBoundMs`, as for messages). A
 * topic is listed when its text is visible to the reader (moderation.ts `textVisible`: never when
 * erased; when hidden, to operators only), as the topic list shows it (`topicViewOf`).
 *
 * Cost: each topic's lower-cased title and its author are kept in the forum state when its record
 * is applied (forum.ts `indexTopic`; the titles joined in chunks of TOPIC_TITLE_CHUNK,
 * topic-titles.ts; in the state snapshot since agent-forum-state-v10), so a search never reads a
 * record back to match. It walks the chunks newest first, one native substring search over each
 * (no n-gram index: titles are short and already in memory), and stops at `limit` hits; between
 * chunks it yields when its slice of SEARCH_SLICE_MS is spent (domain/slices.ts), so no turn of
 * the event loop does more than about one chunk. Only the hits' JSON is read back (to answer),
 * and `before` finds its bound by a binary search on creation time (O(log topics) record reads).
 * A search with fewer than `limit` hits reads every title: O(characters of all titles), native
 * and in slices. An erased topic's title leaves memory with the erasure (erased-fields.ts).
 */
import { lowerBound } from '../../containers/binary-search.js';
import { exclusiveBoundMs } from '../../clock.js';
import { statusOf, textVisible, type Reader } from '../moderation/moderation.js';
import { TOPIC_TITLE_CHUNK } from '../../constants.js';
import { SliceTimer } from '../slices.js';
import { topicIdAt, topicJsonOf, topicViewOf, type ForumState, type Topic } from './forum.js';

/** Filters of the topic list of GET /api/search (schemas/SearchQuery.json). */
export interface TopicSearchQuery {
  q?: string;
  agentId?: string;
  topicId?: string;
  /** RFC 3339 timestamp: topics created strictly before it. */
  before?: string;
  /** At most this many topics (1..100). */
  limit: number;
}

/** A topic's position in `ForumState.topicOrder` (0-based, creation order). */
type TopicPos = number;

/** The creation time (ms) of the topic at position `i` (its JSON read back: the `before` search). */
function createdMsAt(s: ForumState, i: TopicPos): number {
  return Date.parse((JSON.parse(topicJsonOf(s, s.topicOrder.at(i))) as Topic).created);
}

/**
 * The positions of the topics matching `p` as `reader` sees them, newest first, at most
 * `p.limit` (see the module doc). Unknown `agentId` or `topicId` give none. Never throws for a
 * valid query.
 */
export async function searchTopics(s: ForumState, p: TopicSearchQuery, reader: Reader): Promise<TopicPos[]> {
  const order = s.topicOrder;
  let lowest = 0;
  let from = order.length;
  if (p.topicId !== undefined) {
    const seq = s.topics.get(p.topicId);
    if (seq === undefined) return [];
    lowest = order.upperBound(seq) - 1;
    from = lowest + 1;
  }
  const authorNo = p.agentId === undefined ? -1 : s.nameIds.get(p.agentId);
  if (authorNo === undefined) return [];
  if (p.before !== undefined) {
    const bound = exclusiveBoundMs(p.before);
    from = lowest + lowerBound(from - lowest, (i) => createdMsAt(s, lowest + i), bound);
  }
  const lq = p.q?.toLowerCase() ?? '';
  const titles = s.topicTitles;
  const moderated = reader.mod.hidden.size > 0 || reader.mod.erased.size > 0;
  const keep = (i: TopicPos): boolean => {
    if (authorNo !== -1 && s.topicAuthors.at(i) !== authorNo) return false;
    if (!moderated) return true;
    const seq = order.at(i);
    return textVisible(reader, statusOf(reader.mod, seq, topicIdAt(s, seq), s.names[s.topicAuthors.at(i)]!));
  };
  const out: TopicPos[] = [];
  if (from <= lowest) return out;
  const slice = await SliceTimer.start();
  for (let c = Math.floor((from - 1) / TOPIC_TITLE_CHUNK); c >= 0 && out.length < p.limit; c--) {
    const base = c * TOPIC_TITLE_CHUNK;
    if (base + TOPIC_TITLE_CHUNK <= lowest) break;
    if (lq === '') {
      for (let i = Math.min(from, base + TOPIC_TITLE_CHUNK) - 1; i >= Math.max(lowest, base) && out.length < p.limit; i--) if (keep(i)) out.push(i);
    } else {
      const hits = titles.matchesIn(c, lq);
      for (let h = hits.length - 1; h >= 0 && out.length < p.limit; h--) {
        const i = hits[h]!;
        if (i < from && i >= lowest && keep(i)) out.push(i);
      }
    }
    if (slice.due()) await slice.next();
  }
  return out;
}

/** The JSON array of the topics at `positions`, as `reader` sees them (as GET /api/topics). */
export function topicsJson(s: ForumState, positions: readonly TopicPos[], reader: Reader): string {
  return `[${positions.map((i) => topicViewOf(s, reader, s.topicOrder.at(i))).join(',')}]`;
}
