/**
 * Feed indexes filled by every area's apply function (part 6).
 *
 * - Discussion feed (`forum-changes-v1`): one event per visible log record, keyed by the
 *   record's log `seq`; hidden records (agents, admin, work) have no event, so a page that scans
 *   only hidden rows is empty with hasMore true. The feed is a list of seqs (4 bytes an event):
 *   each event is rebuilt from its record, read back from the log (issue 17: no record text is
 *   kept in memory for it). The record's payload is the event's record JSON, except for the
 *   discussion topic a `work.create` record carries, which is serialised canonically from it.
 * - Work feed (`forum-work-changes-v1`): one `work_item` event per work revision with its own
 *   sequence from 1 (the array index + 1) and the log seq it came from.
 *
 * Event shape (ours, part 6 rule 9): `{"seq", "kind", "time", "<kind>": <record>}` where the
 * record key is `room`, `topic`, `message`, `knowledge` or `workItem`.
 *
 * Positions (issue 50): the indexes here hold seqs — the log's, and the work feed's own sequence —
 * and what clients see at the edges (an event's `seq`, a cursor's `after`) are positions: the
 * log's (domain/positions.ts) for the discussion feed and the inbox, and the work feed's
 * (`workFeedPositions`) for the work feed. Both equal the seqs until a change of writer.
 */
import stableStringify from 'fast-json-stable-stringify';
import { U32List } from '../../containers/u32-list.js';
import type { RecordSource, StoredRecord } from '../../store/records.js';
import { packLists, unpackLists, type PackedArrays, type PackedLists } from '../packing.js';
import { RECORD_TYPE_ENTRIES, type DiscussionKind } from '../record-types.js';
import { nextPositionBase, Positions, type CursorSeq } from '../positions.js';

export type { DiscussionKind };

/** One event of either feed (part 6). */
export interface FeedEvent {
  /** What the event's `seq` says: its position (issue 50; the page functions map the seq to it). */
  seq: number;
  /** Log seq of the record (equals `seq` on the discussion feed). */
  logSeq: number;
  kind: DiscussionKind | 'work_item';
  /** Record time (ISO 8601, `Z`), kept as the string it was read as, so pages only concatenate. */
  time: string;
  /** The record's JSON (canonical for discussion records), shared with the area's index. */
  recordJson: string;
}

const EVENT_RECORD_KEY: Record<FeedEvent['kind'], string> = {
  room: 'room',
  topic: 'topic',
  message: 'message',
  knowledge: 'knowledge',
  work_item: 'workItem',
};

/** The JSON of one event: `{"seq","kind","time","<record key>": <record>}`. */
export function eventJson(e: FeedEvent): string {
  return `{"seq":${e.seq},"kind":"${e.kind}","time":"${e.time}","${EVENT_RECORD_KEY[e.kind]}":${e.recordJson}}`;
}

/** Both feeds in feed order, and the per-topic export index. */
export interface FeedsState {
  /** Log seqs of the discussion feed's events, ascending. */
  discussion: U32List;
  /** Where discussion events are read from. */
  records: RecordSource;
  /** Log seqs of the work feed's events (one per work revision); feed seq = index + 1. */
  work: U32List;
  /** Per-topic export index: topicId → log seqs of its rows in log order (the topic first). */
  byTopic: Map<string, U32List>;
}

/** Empty feeds whose message events are read from `records`. */
export function createFeedsState(records: RecordSource): FeedsState {
  return { discussion: new U32List(1024), records, work: new U32List(256), byTopic: new Map() };
}

/** Discussion event kinds of the record types that carry one as their payload (record-types.ts `feedKind`). */
const KIND_OF_TYPE: ReadonlyMap<string, DiscussionKind> = new Map(
  RECORD_TYPE_ENTRIES.flatMap(([type, info]) => (info.feedKind === null ? [] : [[type, info.feedKind] as const])),
);

/**
 * The discussion event of log record `seq` (which must be in the feed), rebuilt from its stored
 * record: its canonical payload JSON and time, byte-identical to the event built at append time.
 * Throws Error for a seq that has no discussion event (a broken invariant).
 */
export function discussionEvent(feeds: FeedsState, seq: number): FeedEvent {
  const r = feeds.records.read(seq);
  const { kind, json } = discussionRecordOf(r, seq);
  return { seq, logSeq: seq, kind, time: r.time, recordJson: json };
}

/**
 * The discussion record a stored record carries: its payload for rooms, topics, messages and
 * knowledge; the canonical JSON of the discussion topic inside a `work.create`. Throws Error for
 * a record that carries none (a broken invariant).
 */
export function discussionRecordOf(r: StoredRecord, seq: number): { kind: DiscussionKind; json: string } {
  const kind = KIND_OF_TYPE.get(r.type);
  if (kind !== undefined) return { kind, json: r.payloadJson };
  if (r.type === 'work.create') {
    const topic = (JSON.parse(r.payloadJson) as { topic: unknown }).topic;
    if (topic !== null) return { kind: 'topic', json: stableStringify(topic) };
  }
  throw new Error(`record ${seq} (${r.type}) has no discussion event`);
}

/** Every discussion event in feed order (tests and tools; reads every message back). */
export function discussionEvents(feeds: FeedsState): FeedEvent[] {
  const out: FeedEvent[] = [];
  for (let i = 0; i < feeds.discussion.length; i++) out.push(discussionEvent(feeds, feeds.discussion.at(i)));
  return out;
}

/**
 * Adds the discussion event of log record `seq` (its JSON is read back from the record when
 * served). `topicId` is the topic the record belongs to (a topic's own id; a message's or
 * knowledge item's topicId; null for rooms and unattached knowledge), which feeds the topic
 * export index.
 */
export function addDiscussionEvent(feeds: FeedsState, seq: number, kind: DiscussionKind, topicId: string | null): void {
  feeds.discussion.push(seq);
  if (topicId !== null && kind !== 'room') {
    const rows = feeds.byTopic.get(topicId);
    if (rows) rows.push(seq);
    else if (kind === 'topic') {
      const list = new U32List(4);
      list.push(seq);
      feeds.byTopic.set(topicId, list);
    }
  }
}

/**
 * Adds the events of moderation record `seq` (issue 25): one discussion-feed position whose
 * events re-emit each discussion record the action changed (when `discussion`), and `workItems`
 * work-feed events, one per work item it changed. Each event carries the record as the reader
 * sees it, under the existing kinds.
 */
export function addModerationEvents(feeds: FeedsState, seq: number, discussion: boolean, workItems: number): void {
  if (discussion) feeds.discussion.push(seq);
  for (let i = 0; i < workItems; i++) feeds.work.push(seq);
}

/**
 * Adds the events of moderation record `seq` whose `count` discussion events have log positions
 * of their own, `from` .. `from + count - 1` (its `moderation.event` records, appended just before
 * it), and `workItems` work-feed events at `seq`.
 */
export function addModerationEventsAt(feeds: FeedsState, from: number, count: number, workItems: number, seq: number): void {
  for (let i = 0; i < count; i++) feeds.discussion.push(from + i);
  for (let i = 0; i < workItems; i++) feeds.work.push(seq);
}

/** Adds the `work_item` event of log record `logSeq` (its snapshot is rebuilt from the record when served). */
export function addWorkEvent(feeds: FeedsState, logSeq: number): void {
  feeds.work.push(logSeq);
}

/** The feed indexes as a state snapshot keeps them: typed arrays by index into the body's arrays. */
export interface PackedFeeds {
  discussion: number;
  byTopic: PackedLists;
  work: number;
}

/** Packs the feed indexes; their arrays go to `arrays`. */
export function packFeeds(feeds: FeedsState, arrays: PackedArrays): PackedFeeds {
  return { discussion: arrays.putList(feeds.discussion), byTopic: packLists(feeds.byTopic, arrays), work: arrays.putList(feeds.work) };
}

/** Fills the empty feeds `feeds` from `p`. Throws Error for damaged data. */
export function unpackFeeds(feeds: FeedsState, p: PackedFeeds, arrays: PackedArrays): void {
  feeds.discussion = arrays.takeList(p.discussion);
  feeds.byTopic = unpackLists(p.byTopic, arrays);
  feeds.work = arrays.takeList(p.work);
}

/**
 * How a feed's seqs and its client-visible positions map (issue 50): `positionOf(seq)` for the
 * events and cursors a page hands out, `cursorSeq(after)` for a cursor a client sends. The class
 * Positions (domain/positions.ts) is one.
 */
export interface FeedPositions {
  positionOf(seq: number): number;
  cursorSeq(position: number): CursorSeq;
}

/** Positions that are the seqs themselves (a log whose writer never changed; the topic export). */
export const SEQ_POSITIONS: FeedPositions = {
  positionOf: (seq) => seq,
  cursorSeq: (position) => ({ seq: position, lostAfter: null }),
};

/**
 * The work feed's positions (issue 50), derived from the log's `positions` and the work feed's
 * log seqs `work` (FeedsState.work). The work feed numbers its events 1, 2, … (one per revision,
 * not one per record), so the log's offsets cannot be used as they are; it gets jumps of its own
 * at the same changes of writer: at each epoch record with a `positionBase` (log seq `s`), the
 * work events before it keep their positions and the first one after it gets
 * `nextPositionBase(last) + 1`, where `last` is the position of the last work event before `s`,
 * or the previous jump's base when that is higher (a writer that wrote no work event may still
 * have lost some). So a work position a lost branch gave out (the old writer went on from `last`)
 * lies in the gap, and a cursor holding one is 409 CURSOR_LOST naming `last`, as on the
 * discussion feed. A jump with no work event before the next one is merged into that one (an
 * empty stretch holds no event a cursor could stop at). Deterministic from the log: every replica
 * derives the same map, and no position at or below the feed's head ever changes (a jump is noted
 * at a new record, so it only moves work events still to come).
 * Output: the map over work-feed sequences; on a log whose writer never changed SEQ_POSITIONS
 * (nothing allocated). Cost: one binary search per change of writer (a few).
 */
export function workFeedPositions(work: U32List, positions: Positions): FeedPositions {
  if (!positions.rebased) return SEQ_POSITIONS;
  const out = new Positions();
  // [first work seq after the jump, position of that work event], merged when equal first seqs.
  const jumps: Array<[number, number]> = [];
  // Position − sequence of the newest stretch so far (its first event is at `base + 1`).
  let delta = 0;
  for (const [seq] of positions.pack()) {
    // Work events before the epoch record; the last one's position — or, when the newest stretch
    // has none, that stretch's base (the events before it are older, and before + delta = base).
    const before = work.upperBound(seq - 1);
    const base = nextPositionBase(before + delta);
    const first = before + 1;
    if (jumps.length > 0 && jumps[jumps.length - 1]![0] === first) jumps.pop();
    jumps.push([first, base + 1]);
    delta = base + 1 - first;
  }
  for (const [first, position] of jumps) out.rebase(first, position);
  return out;
}
