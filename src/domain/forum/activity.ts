/**
 * Per-topic activity for the reader (ours, issue 38: GET /api/topics?counts=true): how many
 * messages of a topic the caller can read and when the newest of them was posted.
 *
 * The rule, as for message text (moderation.ts `textVisible`): an erased message is never
 * counted; a hidden one (its record, its topic or its author hidden) is counted for operators
 * only. `lastActivity` is the `created` of the newest counted message, or the topic's own
 * `created` when none is counted.
 *
 * Cost: the topic's message list (`byTopic`, maintained on apply and kept in the snapshot) gives
 * the total in O(1). The moderated messages are subtracted from a per-topic tally that is derived,
 * not stored: rebuilt from the moderation index when a moderation record changes it
 * (`ModerationState.version`; O(moderated messages)), and brought up to date with only the
 * messages applied since the last request. The newest counted message is remembered per topic
 * and re-examined only when the topic gains messages or moderation changes, so a request costs
 * O(1) per listed topic once warm.
 */
import { ERASED, HIDDEN, itemKey, seqKey, agentKey, type Reader } from '../moderation/moderation.js';
import { createdOf } from './message-json.js';
import { topicJsonOf, topicViewOf, messageJsonOf, messageRowAtSeq, messageStatusOf, messageTopicOf, type Topic, type ForumState, type MessageRow } from './forum.js';
import type { U32List } from '../../containers/u32-list.js';
import { TOPICS_LIST_MAX } from '../../constants.js';

/** A topic's activity as one reader class sees it. */
export interface TopicActivity {
  messageCount: number;
  /** Timestamp of the newest counted message, or the topic's `created`. */
  lastActivity: string;
}

/** Newest counted message per topic, for one reader class: the byTopic length it was found at and its row (-1: none). */
interface Last {
  length: number;
  /** Its `created`, or null for none. */
  created: string | null;
}

/** The derived tally (see the module doc); one per forum state, replaced when moderation changes. */
interface ActivityCache {
  version: number;
  /** Message rows looked at so far (rows past it are examined on the next request). */
  seen: number;
  /** Topic id → its erased messages (not counted for anyone). */
  erased: Map<string, number>;
  /** Topic id → its hidden (not erased) messages (counted for operators only). */
  hidden: Map<string, number>;
  lastOperator: Map<string, Last>;
  lastOther: Map<string, Last>;
}

const caches = new WeakMap<ForumState, ActivityCache>();

function bump(m: Map<string, number>, key: string): void {
  m.set(key, (m.get(key) ?? 0) + 1);
}

function tally(s: ForumState, reader: Reader, cache: ActivityCache, row: MessageRow): void {
  const status = messageStatusOf(s, { mod: reader.mod, operator: false }, row);
  if (status === ERASED) bump(cache.erased, messageTopicOf(s, row));
  else if (status === HIDDEN) bump(cache.hidden, messageTopicOf(s, row));
}

/** The cache for the current moderation version, rebuilt (from the moderation index only) when stale. */
function cacheOf(s: ForumState, reader: Reader): ActivityCache {
  const mod = reader.mod;
  let cache = caches.get(s);
  if (cache === undefined || cache.version !== mod.version) {
    cache = { version: mod.version, seen: s.rows.seq.length, erased: new Map(), hidden: new Map(), lastOperator: new Map(), lastOther: new Map() };
    caches.set(s, cache);
    // Every message that can be hidden or erased is named by one of these keys.
    const rows = new Set<MessageRow>();
    const addSeq = (seq: number): void => {
      const row = messageRowAtSeq(s, seq);
      if (row !== undefined) rows.add(row);
    };
    for (const seq of mod.erased.keys()) addSeq(seq);
    const addAll = (list: U32List | undefined): void => {
      for (let i = 0; i < (list?.length ?? 0); i++) rows.add(list!.at(i));
    };
    for (const key of mod.hidden) {
      const name = key.slice(2);
      if (key === seqKey(Number(name))) addSeq(Number(name));
      else if (key === itemKey(name)) addAll(s.byTopic.get(name));
      else if (key === agentKey(name)) addAll(s.byAuthor.get(name));
    }
    for (const row of rows) if (row < cache.seen) tally(s, reader, cache, row);
  }
  // Messages applied since: only those a moderation key can reach need a look.
  if (cache.seen < s.rows.seq.length && (mod.hidden.size > 0 || mod.erased.size > 0)) {
    for (let row = cache.seen; row < s.rows.seq.length; row++) tally(s, reader, cache, row);
  }
  cache.seen = s.rows.seq.length;
  return cache;
}

/**
 * The activity of topic `topicId` (created at `topicCreated`) as `reader` sees it (see the module
 * doc for the rule). O(1) once warm; reads the newest counted message's record only when the topic changed.
 */
export function topicActivityOf(s: ForumState, reader: Reader, topicId: string, topicCreated: string): TopicActivity {
  const cache = cacheOf(s, reader);
  const list = s.byTopic.get(topicId);
  const total = list?.length ?? 0;
  const erased = cache.erased.get(topicId) ?? 0;
  const hidden = cache.hidden.get(topicId) ?? 0;
  const messageCount = total - erased - (reader.operator ? 0 : hidden);
  if (list === undefined || messageCount === 0) return { messageCount, lastActivity: topicCreated };
  const lasts = reader.operator ? cache.lastOperator : cache.lastOther;
  let last = lasts.get(topicId);
  if (last === undefined || last.length !== total) {
    // Walk back from the newest message to the first one counted, down to what was found before.
    const floor = last === undefined ? 0 : last.length;
    let created = last === undefined ? null : last.created;
    const unmoderated = erased === 0 && (hidden === 0 || reader.operator);
    for (let i = total - 1; i >= floor; i--) {
      const candidate = list.at(i);
      const status = unmoderated ? 0 : messageStatusOf(s, reader, candidate);
      if (status !== ERASED && (status !== HIDDEN || reader.operator)) {
        created = createdOf(messageJsonOf(s, candidate));
        break;
      }
    }
    last = { length: total, created };
    lasts.set(topicId, last);
  }
  return { messageCount, lastActivity: last.created ?? topicCreated };
}

/**
 * GET /api/topics?counts=true (ours, issue 38): the topics as `reader` sees them, newest first, at
 * most TOPICS_LIST_MAX (part 4), each with `messageCount` and `lastActivity` (topicActivityOf)
 * added after its spec fields. Output: a JSON array.
 */
export function listTopicsWithActivityJson(s: ForumState, reader: Reader): string {
  const out: string[] = [];
  for (let i = s.topicOrder.length - 1; i >= 0 && out.length < TOPICS_LIST_MAX; i--) {
    const seq = s.topicOrder.at(i);
    const topic = JSON.parse(topicJsonOf(s, seq)) as Topic;
    const a = topicActivityOf(s, reader, topic.id, topic.created);
    const view = topicViewOf(s, reader, seq);
    out.push(`${view.slice(0, -1)},"lastActivity":${JSON.stringify(a.lastActivity)},"messageCount":${a.messageCount}}`);
  }
  return `[${out.join(',')}]`;
}
