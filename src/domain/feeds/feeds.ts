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

export interface FeedEvent {
  /** Feed position: log seq (discussion) or work-feed sequence (work). */
  seq: number;
  /** Log seq of the record (equals `seq` on the discussion feed). */
  logSeq: number;
  /** Pre-serialised event JSON, built once at apply time. */
  json: string;
}

export interface FeedsState {
  discussion: FeedEvent[];
  work: FeedEvent[];
}

export function createFeedsState(): FeedsState {
  return { discussion: [], work: [] };
}

const RECORD_KEY: Record<DiscussionKind, string> = {
  room: 'room',
  topic: 'topic',
  message: 'message',
  knowledge: 'knowledge',
};

/** Adds a discussion event for log record `seq`; `recordJson` is the record's public JSON. */
export function addDiscussionEvent(
  feeds: FeedsState,
  seq: number,
  kind: DiscussionKind,
  time: string,
  recordJson: string,
): void {
  const json = `{"seq":${seq},"kind":"${kind}","time":${JSON.stringify(time)},"${RECORD_KEY[kind]}":${recordJson}}`;
  feeds.discussion.push({ seq, logSeq: seq, json });
}

/** Adds a `work_item` event (a complete WorkItem snapshot) for log record `logSeq`. */
export function addWorkEvent(feeds: FeedsState, logSeq: number, time: string, snapshotJson: string): void {
  const seq = feeds.work.length + 1;
  const json = `{"seq":${seq},"kind":"work_item","time":${JSON.stringify(time)},"workItem":${snapshotJson}}`;
  feeds.work.push({ seq, logSeq, json });
}
