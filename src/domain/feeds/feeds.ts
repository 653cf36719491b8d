/**
 * Feed indexes filled by every area's apply function (part 6).
 *
 * - Discussion feed (`forum-changes-v1`): one pre-serialised event per visible log record, keyed
 *   by the record's log `seq`; hidden records (agents, admin, work) have no event, so a page that
 *   scans only hidden rows is empty with hasMore true.
 * - Work feed (`forum-work-changes-v1`): one `work_item` event per work revision with its own
 *   sequence from 1 (the array index + 1) and the log seq it came from.
 *
 * Event shape (ours, part 6 rule 9): `{"seq", "kind", "time", "<kind>": <record>}` where the
 * record key is `room`, `topic`, `message`, `knowledge` or `workItem`.
 */
export type DiscussionKind = 'room' | 'topic' | 'message' | 'knowledge';

/** One event of either feed (part 6). */
export interface FeedEvent {
  /** Feed position: log seq (discussion) or work-feed sequence (work). */
  seq: number;
  /** Log seq of the record (equals `seq` on the discussion feed). */
  logSeq: number;
  kind: DiscussionKind | 'work_item';
  /** Record time (ISO 8601, `Z`), kept as the string it was read as, so pages only concatenate. */
  time: string;
  /**
   * The record's JSON, shared with the area's index (not a copy): the event text is assembled
   * around it per page (`eventJson`), so the feed adds no second copy of every record.
   */
  recordJson: string;
  /**
   * SHA-256 hex of recordJson's UTF-8 bytes, for events that are also export rows: computed on
   * first export and kept (undefined until then, and always on the work feed).
   */
  sha256: string | undefined;
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

/**
 * One row of a topic's export (part 4 GET /api/exchange): the discussion event of a topic,
 * message or knowledge record itself (the same object, not a copy). Its `recordJson` is the
 * record's canonical JSON (sorted keys, no whitespace), exported as `canonicalJson`.
 */
export type ExportRow = FeedEvent & { kind: 'topic' | 'message' | 'knowledge' };

/** Both feeds in feed order, and the per-topic export index. */
export interface FeedsState {
  discussion: FeedEvent[];
  work: FeedEvent[];
  /** Per-topic export index: topicId → rows in log order (the topic first). */
  byTopic: Map<string, ExportRow[]>;
}

/** Empty feeds. */
export function createFeedsState(): FeedsState {
  return { discussion: [], work: [], byTopic: new Map() };
}

/**
 * Adds a discussion event for log record `seq`. `recordJson` is the record's canonical JSON;
 * `topicId` is the topic the record belongs to (a topic's own id; a message's or knowledge
 * item's topicId; null for rooms and unattached knowledge), which feeds the topic export index.
 */
export function addDiscussionEvent(
  feeds: FeedsState,
  seq: number,
  kind: DiscussionKind,
  time: string,
  recordJson: string,
  topicId: string | null,
): void {
  pushDiscussionEvent(feeds, { seq, logSeq: seq, kind, time, recordJson, sha256: undefined }, topicId);
}

/**
 * Adds discussion event `event`, an object the caller also keeps in its own index (a message's
 * index entry is its feed event and export row: one object per message). `topicId` as above.
 */
export function pushDiscussionEvent(feeds: FeedsState, event: FeedEvent, topicId: string | null): void {
  const kind = event.kind;
  feeds.discussion.push(event);
  if (topicId !== null && kind !== 'room') {
    const row = event as ExportRow;
    const rows = feeds.byTopic.get(topicId);
    if (rows) rows.push(row);
    else if (kind === 'topic') feeds.byTopic.set(topicId, [row]);
  }
}

/** Adds a `work_item` event (a complete WorkItem snapshot) for log record `logSeq`. */
export function addWorkEvent(feeds: FeedsState, logSeq: number, time: string, snapshotJson: string): void {
  feeds.work.push({ seq: feeds.work.length + 1, logSeq, kind: 'work_item', time, recordJson: snapshotJson, sha256: undefined });
}
