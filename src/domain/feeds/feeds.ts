/**
 * Feed indexes filled by every area's apply function (part 6).
 *
 * - Discussion feed (`forum-changes-v1`): one event per visible log record, keyed by the
 *   record's log `seq`; hidden records (agents, admin, work) have no event, so a page that scans
 *   only hidden rows is empty with hasMore true. The feed is a list of seqs (4 bytes an event):
 *   a message's event is rebuilt from its record, read back from the log (issue 17: message text
 *   is not kept in memory); the few other events (rooms, topics, knowledge) are held as JSON.
 * - Work feed (`forum-work-changes-v1`): one `work_item` event per work revision with its own
 *   sequence from 1 (the array index + 1) and the log seq it came from.
 *
 * Event shape (ours, part 6 rule 9): `{"seq", "kind", "time", "<kind>": <record>}` where the
 * record key is `room`, `topic`, `message`, `knowledge` or `workItem`.
 */
import { U32List, type RecordSource } from '../../store/records.js';

export type DiscussionKind = 'room' | 'topic' | 'message' | 'knowledge';

/** One held event: a work feed event, or a discussion event that is not a message. */
export interface FeedEvent {
  /** Feed position: log seq (discussion) or work-feed sequence (work). */
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
  /** The discussion events that are not messages (rooms, topics, knowledge), by log seq. */
  held: Map<number, FeedEvent>;
  /** Where message events are read from. */
  records: RecordSource;
  work: FeedEvent[];
  /** Per-topic export index: topicId → log seqs of its rows in log order (the topic first). */
  byTopic: Map<string, U32List>;
}

/** Empty feeds whose message events are read from `records`. */
export function createFeedsState(records: RecordSource): FeedsState {
  return { discussion: new U32List(1024), held: new Map(), records, work: [], byTopic: new Map() };
}

/**
 * The discussion event of log record `seq` (which must be in the feed): held, or a message
 * rebuilt from its stored record (its canonical payload JSON and time, byte-identical to the
 * event built when it was appended).
 */
export function discussionEvent(feeds: FeedsState, seq: number): FeedEvent {
  const held = feeds.held.get(seq);
  if (held !== undefined) return held;
  const r = feeds.records.read(seq);
  return { seq, logSeq: seq, kind: 'message', time: r.time, recordJson: r.payloadJson };
}

/** Every discussion event in feed order (tests and tools; reads every message back). */
export function discussionEvents(feeds: FeedsState): FeedEvent[] {
  const out: FeedEvent[] = [];
  for (let i = 0; i < feeds.discussion.length; i++) out.push(discussionEvent(feeds, feeds.discussion.at(i)));
  return out;
}

/**
 * Adds a discussion event for log record `seq`. `recordJson` is the record's canonical JSON
 * (null for a message: read back from the log when needed); `topicId` is the topic the record
 * belongs to (a topic's own id; a message's or knowledge item's topicId; null for rooms and
 * unattached knowledge), which feeds the topic export index.
 */
export function addDiscussionEvent(
  feeds: FeedsState,
  seq: number,
  kind: DiscussionKind,
  time: string,
  recordJson: string | null,
  topicId: string | null,
): void {
  feeds.discussion.push(seq);
  if (kind !== 'message') feeds.held.set(seq, { seq, logSeq: seq, kind, time, recordJson: recordJson! });
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

/** Adds a `work_item` event (a complete WorkItem snapshot) for log record `logSeq`. */
export function addWorkEvent(feeds: FeedsState, logSeq: number, time: string, snapshotJson: string): void {
  feeds.work.push({ seq: feeds.work.length + 1, logSeq, kind: 'work_item', time, recordJson: snapshotJson });
}
