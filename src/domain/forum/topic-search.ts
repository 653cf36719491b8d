/**
 * Topic titles in GET /api/search (ours, issue 55: an extension of part 4 — a `topics` list
 * beside the spec's `messages` and `knowledge`, which are unchanged).
 *
 * The rule is the messages' (search.ts): `title.toLowerCase().includes(q.toLowerCase())`, newest
 * first, no ranking; `agentId` keeps the topics that author started, `topicId` the one topic,
 * `before` those created strictly before it. A topic is listed when its text is visible to the
 * reader (moderation.ts `textVisible`: never when erased; when hidden, to operators only), as the
 * topic list shows it (`topicViewOf`).
 *
 * Cost: the titles are derived, not stored (no snapshot or log change): each topic's record is
 * read once, on the first search after it was created, and its lower-cased title kept in memory
 * (about one title, ≤ 160 characters, per topic). A search then scans those titles in memory,
 * newest first, O(topics) string comparisons; it stops at `limit` hits. An erased topic's title is
 * dropped from memory at the first search after the erasure.
 */
import { statusOf, textVisible, ERASED, type Reader } from '../moderation/moderation.js';
import { topicJsonOf, topicViewOf, type ForumState, type Topic } from './forum.js';

/** Filters of the topic list of GET /api/search (schemas/SearchQuery.json). */
interface TopicSearchQuery {
  q?: string;
  agentId?: string;
  topicId?: string;
  /** RFC 3339 timestamp: topics created strictly before it. */
  before?: string;
  /** At most this many topics (1..100). */
  limit: number;
}

/** The derived titles, one entry per topic in `ForumState.topicOrder` order. */
interface TitleCache {
  /** Moderation version the erased titles were dropped at. */
  version: number;
  ids: string[];
  authors: string[];
  created: number[];
  /** Lower-cased title, or null once the topic is erased. */
  titles: (string | null)[];
}

const caches = new WeakMap<ForumState, TitleCache>();

/** The titles of every topic, brought up to date with the topics created and erased since the last call. */
function titlesOf(s: ForumState, reader: Reader): TitleCache {
  let cache = caches.get(s);
  if (cache === undefined) {
    cache = { version: reader.mod.version, ids: [], authors: [], created: [], titles: [] };
    caches.set(s, cache);
  }
  for (let i = cache.ids.length; i < s.topicOrder.length; i++) {
    const seq = s.topicOrder.at(i);
    const t = JSON.parse(topicJsonOf(s, seq)) as Topic;
    cache.ids.push(t.id);
    cache.authors.push(t.authorId);
    cache.created.push(Date.parse(t.created));
    cache.titles.push(statusOf(reader.mod, seq, t.id, t.authorId) === ERASED ? null : t.title.toLowerCase());
  }
  if (cache.version !== reader.mod.version) {
    cache.version = reader.mod.version;
    if (reader.mod.erased.size > 0) {
      for (let i = 0; i < cache.ids.length; i++) if (reader.mod.erased.has(s.topicOrder.at(i))) cache.titles[i] = null;
    }
  }
  return cache;
}

/**
 * Topics matching `p` as `reader` sees them, newest first, at most `p.limit`: a JSON array of
 * Topic (schemas/Topic.json), as in GET /api/topics. Never throws for a valid query.
 */
export function searchTopicsJson(s: ForumState, p: TopicSearchQuery, reader: Reader): string {
  const cache = titlesOf(s, reader);
  const lq = p.q?.toLowerCase() ?? '';
  const before = p.before === undefined ? Infinity : Date.parse(p.before);
  const out: string[] = [];
  for (let i = cache.ids.length - 1; i >= 0 && out.length < p.limit; i--) {
    const title = cache.titles[i];
    if (title === null || title === undefined || (lq !== '' && !title.includes(lq))) continue;
    if (p.agentId !== undefined && cache.authors[i] !== p.agentId) continue;
    if (p.topicId !== undefined && cache.ids[i] !== p.topicId) continue;
    if (!(cache.created[i]! < before)) continue;
    const seq = s.topicOrder.at(i);
    if (!textVisible(reader, statusOf(reader.mod, seq, cache.ids[i]!, cache.authors[i]!))) continue;
    out.push(topicViewOf(s, reader, seq));
  }
  return `[${out.join(',')}]`;
}
