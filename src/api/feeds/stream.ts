/**
 * Change feeds as Server-Sent Events (issue 37 "optionally the same stream as Server-Sent Events
 * — same rules"; WHATWG HTML "Server-sent events"). A request to /api/changes, /api/work/changes
 * or /api/inbox with `Accept: text/event-stream` gets `200 text/event-stream` and stays open for
 * its `wait` (FEED_STREAM_WAIT_DEFAULT_SECONDS when absent). Each time the feed has events past
 * the stream's cursor it writes one event per page: `id:` the page's cursor as
 * `<originId>:<after>`, `data:` the page JSON byte for byte as GET with the previous cursor
 * answers it (feed pages come from the shared FeedPageCache, so streams at one cursor write one
 * Buffer), and advances its cursor; the pages follow one another as below.
 *
 * The same rules as a polling client (part 4 rule 5, part 8): after a page with `hasMore` (a
 * backlog) the next page is written no sooner than that page's `pollAfterSeconds` (1) later, as a
 * client following the feed would send its next request; a page that catches the stream up is
 * followed by the next one as soon as the feed has an event past it, as a held request would be
 * answered. The opening request counts once against the change-read limit and pays for the first
 * page; every later page counts one change read of the caller, as the next request of a long poll
 * would, and a page the limit refuses waits, unwritten, until the window lets it through (an open
 * stream gets no 429). So a stream reads no faster than the long poll of the same caller would:
 * a follower of a busy feed is paced by the feed's rules, not by how fast the server can copy
 * bytes, and 1,000 of them cannot take the writers' share of the machine (issue 37).
 *
 * Cost per stream: this object, its response and one entry in FeedWaiters (which holds it in the
 * long poll's bounds and sweep); no timer and no page of its own (a paused stream is resumed by
 * the sweep). A reader that does not read is not written to while its response holds more than
 * FEED_STREAM_BUFFER_BYTES_MAX bytes, whether it is caught up or catching up; it resumes from its
 * cursor on 'drain'. A moderation action drops the connection of a stream with bytes still queued
 * (`dropQueued`), so a page rendered before an erasure is not delivered after it.
 */
import type { ServerResponse } from 'node:http';
import { FEED_STREAM_BUFFER_BYTES_MAX, FEED_STREAM_KEEPALIVE_MS, FEED_STREAM_RETRY_MS } from '../../constants.js';
import { invalid } from '../../errors.js';
import { logger } from '../../logger.js';
import type { HeldStream } from './long-poll.js';

/** What a stream reads its pages from: one feed, for one caller. */
export interface StreamSource {
  /**
   * The event of the page at cursor `after` (a seq of the feed's own) as GET with that cursor
   * would answer it now (only durable records; see `eventOf`), with its cursor's `after`; null
   * when the feed has nothing past `after` to send.
   */
  next(after: number): StreamEvent | null;
  /**
   * Counts one change read of the caller for a page after the first (part 8); output: 0 when
   * counted (write it now), else the ms until the limit's window lets one more through (nothing
   * counted). Absent: pages are not counted (rate limits off).
   */
  take?(): number;
}

/** One page as a whole stream event: its bytes, its cursor and its pacing. */
export interface StreamEvent {
  readonly bytes: Buffer;
  /**
   * The page cursor's `after` in the feed's own seqs (the stream's cursor): the id carries the
   * position (issue 50), which equals it until a change of writer.
   */
  readonly after: number;
  /** The page's `hasMore`: a backlog, so the next page waits `pollAfterMs`. */
  readonly hasMore: boolean;
  /** The page's `pollAfterSeconds`, in ms. */
  readonly pollAfterMs: number;
}

const KEEPALIVE = ': keep-alive\n\n';
/**
 * A page's cursor, `hasMore` and `pollAfterSeconds` as the page renders them
 * (`"cursor":{"originId":"…","after":N},"hasMore":B,"pollAfterSeconds":S`), near its start.
 */
const PAGE_HEAD = /"cursor":\{"originId":"([^"]*)","after":(\d+)\},"hasMore":(true|false),"pollAfterSeconds":(\d+)/;
/** The event of each page Buffer: streams at one cursor share the page, so they share its event. */
const events = new WeakMap<Buffer, StreamEvent>();

/**
 * The stream event of page `page` (a feed or inbox page as its GET answers it): `id:
 * <originId>:<after>` from the page's own cursor (a position, issue 50), then `data: ` and the
 * page, then the blank line that ends an event; its `after` is the cursor's seq, `seqOf(position)`
 * (the feed's map; the position itself by default). Built once per page Buffer and shared by every
 * stream that sends it (the page cache hands the same Buffer to every stream at one cursor, and a
 * page's position maps to the same seq for good). Pages are one line of JSON (no raw line break),
 * so one `data:` line carries it whole.
 */
export function eventOf(page: Buffer, seqOf: (position: number) => number = (position) => position): StreamEvent {
  let ev = events.get(page);
  if (ev === undefined) {
    const m = PAGE_HEAD.exec(page.toString('latin1', 0, Math.min(page.length, 256)));
    if (m === null) throw new Error('a feed page without its cursor, hasMore and pollAfterSeconds');
    const position = Number(m[2]);
    ev = {
      bytes: Buffer.concat([Buffer.from(`id: ${m[1]}:${position}\ndata: `, 'latin1'), page, Buffer.from('\n\n')]),
      after: seqOf(position),
      hasMore: m[3] === 'true',
      pollAfterMs: Number(m[4]) * 1000,
    };
    events.set(page, ev);
  }
  return ev;
}

/** A `Last-Event-ID` value: the `<originId>:<after>` of a stream event's id. */
const EVENT_ID = /^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}):(0|[1-9][0-9]{0,15})$/;

/**
 * The cursor in a `Last-Event-ID` header (a stream event's id, `<originId>:<after>`), or
 * undefined when the header is absent or empty. Throws 400 VALIDATION when it is malformed.
 */
export function lastEventCursor(header: string | string[] | undefined): { originId: string; after: number } | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value.trim() === '') return undefined;
  const m = EVENT_ID.exec(value.trim());
  if (m === null || !Number.isSafeInteger(Number(m[2]))) {
    throw invalid(`Last-Event-ID ${JSON.stringify(value.slice(0, 80))} is not a stream event id: send the id of the last event you processed, <originId>:<after>, as it was sent`);
  }
  return { originId: m[1]!, after: Number(m[2]) };
}

/** One open event stream (a held request of FeedWaiters). */
export class FeedStream implements HeldStream {
  private res: ServerResponse | null = null;
  private lastWriteMs: number;
  private blocked = false;
  private ended = false;
  /** No page before this time (clock ms): a backlog page's pollAfterSeconds, or the change-read limit. */
  private notBeforeMs = 0;
  /** Pages written so far (the first is paid for by the opening request). */
  private pages = 0;

  /**
   * Input: the page source, the cursor to start after (a seq of the feed's own, issue 50), and the clock (ms). The stream
   * writes nothing until `start` hands it the response.
   */
  constructor(
    private readonly source: StreamSource,
    public after: number,
    private readonly nowMs: () => number,
  ) {
    this.lastWriteMs = nowMs();
  }

  /**
   * Starts writing on `res`, whose head (200, text/event-stream) the server has written: the
   * `retry:` field (FEED_STREAM_RETRY_MS), then every page past the cursor. A stream ended before
   * it started (shutdown, its connection closed) just ends the response.
   */
  start(res: ServerResponse): void {
    this.res = res;
    if (this.ended) {
      if (!res.writableEnded) res.end();
      return;
    }
    res.write(`retry: ${FEED_STREAM_RETRY_MS}\n\n`);
    this.pump();
  }

  /**
   * Writes the pages past the cursor the rules allow now, advancing the cursor: one event per
   * page, stopping after a page with `hasMore` (the next one waits its `pollAfterSeconds`), at a
   * page the change-read limit refuses (it waits for the window), and while the response holds
   * more than FEED_STREAM_BUFFER_BYTES_MAX unsent bytes (checked before every page; it goes on
   * at 'drain'), so it never holds more than that plus one page. A page that
   * cannot be rendered (an unexpected error) drops the connection. Output: whether it wrote an event.
   */
  pump(): boolean {
    const res = this.res;
    if (res === null || this.ended || this.blocked) return false;
    if (this.notBeforeMs !== 0) {
      if (this.nowMs() < this.notBeforeMs) return false;
      this.notBeforeMs = 0;
    }
    let wrote = false;
    try {
      for (;;) {
        // Checked before every page, whatever brought the stream here (a commit's round, the
        // sweep after a backlog page's pause, 'drain'): a reader that does not read holds at most
        // FEED_STREAM_BUFFER_BYTES_MAX plus the one page that crossed it (issue 51: the check
        // used to follow only caught-up pages, so a stream catching up over a backlog queued a
        // page a second in server memory, 16 MiB in 12 s).
        if (res.writableLength > FEED_STREAM_BUFFER_BYTES_MAX) {
          this.blocked = true;
          res.once('drain', () => {
            this.blocked = false;
            this.pump();
          });
          return wrote;
        }
        const next = this.source.next(this.after);
        if (next === null || next.after <= this.after) return wrote;
        if (this.pages > 0 && this.source.take !== undefined) {
          const waitMs = this.source.take();
          if (waitMs > 0) {
            this.notBeforeMs = this.nowMs() + waitMs;
            return wrote;
          }
        }
        res.write(next.bytes);
        wrote = true;
        this.pages++;
        this.after = next.after;
        this.lastWriteMs = this.nowMs();
        if (next.hasMore) {
          this.notBeforeMs = this.lastWriteMs + next.pollAfterMs;
          return wrote;
        }
      }
    } catch (err) {
      logger.error('stream_error', 'a feed stream could not render its next page; its connection is closed', { err: err instanceof Error ? err : String(err) });
      res.destroy();
      return wrote;
    }
  }

  /**
   * The sweep's call (`nowMs`: the clock): a paused stream (a backlog page's pollAfterSeconds, or
   * the change-read limit) whose time has come writes what it may; one that wrote nothing for
   * FEED_STREAM_KEEPALIVE_MS writes `: keep-alive` (proxies).
   */
  tick(nowMs: number): void {
    if (this.notBeforeMs !== 0 && nowMs >= this.notBeforeMs) this.pump();
    this.keepAlive(nowMs);
  }

  /** Writes `: keep-alive` when nothing was written for FEED_STREAM_KEEPALIVE_MS (proxies). */
  private keepAlive(nowMs: number): void {
    if (this.res === null || this.ended || this.blocked || nowMs - this.lastWriteMs < FEED_STREAM_KEEPALIVE_MS) return;
    this.lastWriteMs = nowMs;
    this.res.write(KEEPALIVE);
  }

  /** Bytes written to the response that its connection has not taken yet (the slow-reader bound's measure). */
  get queuedBytes(): number {
    return this.res === null || this.ended ? 0 : this.res.writableLength;
  }

  /**
   * After a moderation action (hide, erase, purge; issue 51): a stream with bytes still queued
   * in the server for its connection drops its connection, so pages rendered before the action
   * are never delivered from that queue (a reader that had stopped reading would otherwise get
   * erased content when it resumes). Its client reconnects with Last-Event-ID, the last event it
   * processed, and gets the pages rendered as they read now. Bytes the operating system has
   * already taken for the connection are out of the server's reach, as they are for a fast
   * reader. Output: whether it dropped the connection.
   */
  dropQueued(): boolean {
    if (this.res === null || this.ended || this.res.writableLength === 0) return false;
    this.res.destroy();
    return true;
  }

  /** Ends the response (its wait is over, or shutdown); the connection stays usable. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.res !== null && !this.res.writableEnded) this.res.end();
  }
}
