/**
 * Long-polled change feeds (issue 37): a request to /api/changes, /api/work/changes or /api/inbox with
 * `wait=SECONDS` (1..FEED_WAIT_SECONDS_MAX) whose page would be caught up — no event past its
 * cursor and `hasMore` false — is held until the feed has an event past the cursor, the wait
 * ends, or the server shuts down. Then the usual page is rendered from the request's own cursor,
 * so a held request answers exactly what the same request sent at that moment would.
 *
 * Cost: no timer per request (one sweep every FEED_WAIT_SWEEP_MS while anything is held, none
 * otherwise); per held request one set entry, a close listener on its socket and its request
 * context; at most FEED_WAITERS_MAX in total and FEED_WAITERS_PER_AGENT_MAX per agent (past
 * them a request is answered at once, as without `wait`).
 *
 * Delivery rounds: after a group commit `notify` runs a round — each feed's last event is compared
 * with the one the last round saw, and only a feed that gained an event has its held requests
 * looked at, one comparison each (held inbox requests are kept per agent, so only the agents
 * whose inbox gained an entry are) — or, within a delivery window, leaves it to the round at the
 * window's end. A round that delivered anything opens a window of FEED_STREAM_FLUSH_MS, longer
 * when the last round was costly (FEED_DELIVERY_SHARE_PERCENT of the main thread at most, its
 * answers and its followers' next requests counted), and a
 * request with `wait` that arrives during a window with its cursor not caught up is held until the
 * window's round too (`holdForRound`). So 1,000 followers of a moving feed are answered once per
 * window each, in bigger pages when there are more of them, and the writers keep their share.
 *
 * Streams (Server-Sent Events, src/api/feeds/stream.ts) are held requests too: they share the
 * bounds, the sweep (their deadline and keep-alive comments) and `releaseAll`, and are counted in
 * `size`. They are not answered but written to, in the same delivery rounds: each stream of a
 * feed that gained an event past its cursor writes the pages its rules allow (`pump`); a stream
 * paused by them (a backlog page's pollAfterSeconds, the change-read limit) is resumed by the sweep.
 *
 * Watchers (MCP `subscriptions/listen` streams, src/api/mcp/listen.ts) are streams too, in the same
 * bounds: a watcher follows several feeds at once, so it is not indexed by feed but asked at every
 * delivery round whether anything it follows moved (`pump`, a few comparisons).
 */
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { FEED_DELIVERY_SHARE_PERCENT, FEED_STREAM_FLUSH_MS, FEED_WAITERS_MAX, FEED_WAITERS_PER_AGENT_MAX, FEED_WAIT_SWEEP_MS } from '../../constants.js';
import { holdConnection } from '../../http/connections.js';
import type { Reply } from '../../http/router.js';

/**
 * The two feeds (part 6) and the per-agent inbox (issue 37): their cursors and positions are
 * independent.
 */
export type FeedName = 'discussion' | 'work' | 'inbox';

/** One held request. */
interface Waiter {
  feed: FeedName;
  /**
   * The request's cursor as a seq of the feed's own (the log's; the work feed's sequence), not the
   * client's position (issue 50): it is answered once the feed's last event is past it.
   */
  after: number;
  /** When the wait ends, in the clock's ms. */
  deadlineMs: number;
  agentId: string;
  /** Answers the request now (renders its page; a stream: ends it) and forgets it. */
  answer: () => void;
  /** Set for a stream: what the flush and the sweep call. */
  stream?: HeldStream;
  /** A stream that watches every feed (an MCP `subscriptions/listen` stream): pumped at every delivery round. */
  watch?: true;
}

/** What FeedWaiters needs of an open stream (src/api/feeds/stream.ts). */
export interface HeldStream {
  /** The stream's cursor now, as a seq of the feed's own like Waiter.after (it advances as pages are written). */
  readonly after: number;
  /** Writes the pages past the cursor that the client can take now; whether it wrote any. */
  pump(): boolean;
  /**
   * The sweep's call (`nowMs`: the clock): a stream paused by its feed's rules (a backlog page's
   * pollAfterSeconds, the change-read limit) writes once its time has come; a quiet one writes a
   * keep-alive comment.
   */
  tick(nowMs: number): void;
  /** Ends the response (deadline, shutdown) or lets go of a closed one. */
  end(): void;
  /** Bytes written to the response that its connection has not taken yet. */
  readonly queuedBytes: number;
  /** Drops the connection when bytes are still queued for it (a moderation action); whether it did. */
  dropQueued(): boolean;
}

/** Why `FeedWaiters.openStream` refused: the caller's bound or the total one. */
export type StreamRefusal = 'agent' | 'total';

/** The held feed requests of one app. */
export class FeedWaiters {
  private readonly held = new Set<Waiter>();
  /** The held requests of the two feeds, and of the inbox per agent: `notify` looks only at these. */
  private readonly byFeed: Record<'discussion' | 'work', Set<Waiter>> = { discussion: new Set(), work: new Set() };
  private readonly inboxByAgent = new Map<string, Set<Waiter>>();
  private readonly perAgent = new Map<string, number>();
  private sweep: NodeJS.Timeout | null = null;
  /** Open streams, by feed and (inbox) per agent: the flush looks only at these. */
  private readonly streamsByFeed: Record<'discussion' | 'work', Set<Waiter>> = { discussion: new Set(), work: new Set() };
  private readonly inboxStreamsByAgent = new Map<string, Set<Waiter>>();
  /** Open watchers (streams over several feeds): every round pumps each. */
  private readonly watchers = new Set<Waiter>();
  private streams = 0;
  /** The delivery window's one timer (null: quiet, the next commit is delivered at once). */
  private roundTimer: NodeJS.Timeout | null = null;
  /** A commit arrived within the current window: a round at its end. */
  private roundPending = false;
  /** The last delivery round's own work, in ms (real time): its window is sized by it. */
  private lastRoundMs = 0;
  /**
   * What was charged during the current window, in ms (`charge`): the writing of the last round's
   * answers and the followers' requests (with `wait`, not caught up) that arrived meanwhile. The
   * next window is sized by it too, so that a round's share counts what its answers cost and
   * brought back.
   */
  private followMs = 0;
  /** All the rounds' own work and all that was charged to them, in ms (`deliveryMs`). */
  private measuredMs = 0;
  /** Requests held during a window although their cursor was not caught up (`holdForRound`): the next round answers them all. */
  private readonly late = new Set<Waiter>();
  /** The inboxes' last entry when the inbox streams were last looked at (-1: never). */
  private inboxFlushed = -1;
  /**
   * An inbox stream may have an entry past its cursor that it did not write at the last look
   * (not durable yet, paced, a slow reader) or one opened since: the next flush looks at them all
   * even if no inbox gained an entry.
   */
  private inboxPending = false;
  /** Each feed's last event position as `notify` last saw it. */
  private readonly seen: Record<FeedName, number>;

  /**
   * Input: the clock (ms) and `lastEvent(feed, agentId?)`, the position of the feed's last event
   * (the discussion feed: its last event's log seq; the work feed: its event count; the inbox:
   * the log seq of the last entry of `agentId`'s inbox, or of any inbox without `agentId`; 0 when
   * empty).
   */
  constructor(
    private readonly nowMs: () => number,
    private readonly lastEvent: (feed: FeedName, agentId?: string) => number,
  ) {
    this.seen = { discussion: lastEvent('discussion'), work: lastEvent('work'), inbox: lastEvent('inbox') };
  }

  /** Requests held now. */
  get size(): number {
    return this.held.size;
  }

  /** Requests and streams of `agentId` held now (GET /api/limits; at most FEED_WAITERS_PER_AGENT_MAX). */
  heldBy(agentId: string): number {
    return this.perAgent.get(agentId) ?? 0;
  }

  /**
   * Holds a caught-up request of `agentId` on `feed` at cursor `after` for up to `waitSeconds`
   * (s). `render` builds its reply when it is answered; its error (a ServiceError) rejects.
   * Output: the promise of that reply, or null when a bound (FEED_WAITERS_MAX,
   * FEED_WAITERS_PER_AGENT_MAX) is reached — the caller then answers at once. A request whose
   * connection closes is answered (into nothing) and forgotten at once.
   */
  hold(feed: FeedName, after: number, waitSeconds: number, agentId: string, socket: Socket, render: () => Reply, late = false): Promise<Reply> | null {
    if (this.refusal(agentId) !== null) return null;
    return new Promise<Reply>((resolve, reject) => {
      const w = this.add(feed, after, waitSeconds, agentId, socket, () => {
        try {
          resolve(render());
        } catch (err) {
          reject(err as Error);
        }
      });
      if (late) this.late.add(w);
    });
  }

  /**
   * A request with `wait` whose cursor is not caught up, arriving while a delivery window is open:
   * held like a caught-up one and answered by the round at the window's end (with the page the
   * same request would get then), so that followers who keep asking while the feed moves are
   * answered once per window rather than at once each time. With no window open the request is
   * the first of the feed's followers to ask since the last window: it opens one (`openWindow`) and
   * is answered at once, and the followers who ask after it wait for that window's round — without
   * this, followers that are never caught up (a feed moving faster than they read) would never be
   * held and each would be answered as fast as it asks. Output: its reply's promise, or null when
   * no window was open or a bound is reached (the caller answers at once).
   */
  holdForRound(feed: FeedName, after: number, waitSeconds: number, agentId: string, socket: Socket, render: () => Reply): Promise<Reply> | null {
    if (this.roundTimer === null) {
      this.openWindow();
      return null;
    }
    return this.hold(feed, after, waitSeconds, agentId, socket, render, true);
  }

  /**
   * Charges `ms` of main-thread time to the delivery rounds when it is spent during a delivery
   * window: a request with `wait` whose cursor was not caught up, from its parsed head to its hold
   * or answer (the followers of a moving feed asking again: 1,000 followers cost about as much
   * again as their answers), or the writing of a held request's answer to its socket (a round
   * releases its answers; they are sent just after it, in the window it opened). The next window
   * is sized by them. Outside a window nothing is a round's and nothing is counted.
   */
  charge(ms: number): void {
    if (this.roundTimer === null) return;
    this.followMs += ms;
    this.measuredMs += ms;
  }

  /**
   * The delivery rounds' measured main-thread time since this server started, in ms: their own
   * work and what was charged to them — what the windows are sized by (the metric
   * forum_feed_delivery_seconds_total).
   */
  get deliveryMs(): number {
    return this.measuredMs;
  }

  /**
   * Which bound a new held request or stream of `agentId` would pass: 'total' (FEED_WAITERS_MAX),
   * 'agent' (FEED_WAITERS_PER_AGENT_MAX), or null when it fits.
   */
  refusal(agentId: string): StreamRefusal | null {
    if (this.held.size >= FEED_WAITERS_MAX) return 'total';
    return (this.perAgent.get(agentId) ?? 0) >= FEED_WAITERS_PER_AGENT_MAX ? 'agent' : null;
  }

  /**
   * Opens stream `stream` of `agentId` on `feed` for up to `waitSeconds` (s), counted in the same
   * bounds as held requests. Output: null when opened (it is ended at its deadline, at
   * `releaseAll`, and forgotten when its connection closes), or which bound refused it.
   */
  openStream(feed: FeedName, waitSeconds: number, agentId: string, socket: Socket, stream: HeldStream): StreamRefusal | null {
    const refused = this.refusal(agentId);
    if (refused !== null) return refused;
    this.add(feed, stream.after, waitSeconds, agentId, socket, () => stream.end(), stream);
    return null;
  }

  /**
   * Opens watcher `stream` of `agentId` (a stream that follows several feeds) for up to `waitSeconds` (s), counted in the same
   * bounds as held requests and streams. Output: `{ release }` when opened — `release()` ends it and
   * frees its slot at once (the stream ended by itself); it is also ended at its deadline, at
   * `releaseAll`, and when its connection closes — or which bound refused it.
   */
  openWatcher(waitSeconds: number, agentId: string, socket: Socket, stream: HeldStream): { release: () => void } | StreamRefusal {
    const refused = this.refusal(agentId);
    if (refused !== null) return refused;
    const w = this.add('discussion', stream.after, waitSeconds, agentId, socket, () => stream.end(), stream, true);
    return { release: w.answer };
  }

  /** Holds a request or stream; `done` runs once when it is answered, ended or its connection closes. */
  private add(feed: FeedName, after: number, waitSeconds: number, agentId: string, socket: Socket, done: () => void, stream?: HeldStream, watch?: true): Waiter {
    const release = holdConnection(socket);
    const waiter: Waiter = {
      feed,
      after,
      agentId,
      deadlineMs: this.nowMs() + waitSeconds * 1000,
      stream,
      ...(watch === true ? { watch } : {}),
      answer: () => {
        if (!this.held.delete(waiter)) return;
        this.unindex(waiter);
        socket.off('close', waiter.answer);
        release();
        const left = this.perAgent.get(agentId)! - 1;
        if (left === 0) this.perAgent.delete(agentId);
        else this.perAgent.set(agentId, left);
        done();
      },
    };
    this.held.add(waiter);
    this.index(waiter);
    this.perAgent.set(agentId, (this.perAgent.get(agentId) ?? 0) + 1);
    socket.once('close', waiter.answer);
    this.sweep ??= setInterval(() => this.expire(), FEED_WAIT_SWEEP_MS).unref();
    return waiter;
  }

  /**
   * After a group commit: a delivery round now when no window is open, else one at the window's
   * end (FEED_STREAM_FLUSH_MS, leading edge; see `round`).
   */
  notify(): void {
    if (this.roundTimer !== null) {
      this.roundPending = true;
      return;
    }
    this.round();
  }

  /**
   * One delivery round: answers the held requests of every feed that gained an event past their
   * cursor (an inbox request: when its own agent's inbox did; a feed with requests held while not
   * caught up: all of them), then lets the streams write (`flushStreams`). A round that delivered
   * anything opens a window of FEED_STREAM_FLUSH_MS, or of the round's cost times
   * (100 − FEED_DELIVERY_SHARE_PERCENT) / FEED_DELIVERY_SHARE_PERCENT when that is longer; commits
   * within it are delivered together by the round at its end, which opens the next window; a
   * window without commits (or late-held requests) closes. A round that delivered nothing (most
   * commits, for inbox requests; one whose entry is not durable yet) opens none, so the next
   * commit that does is delivered at once. The round's cost: its own work (answers rendered,
   * streams written), measured here, plus what was `charge`d since the last window opened — the
   * writing of the last round's answers to their sockets, and the requests of followers not caught
   * up. Nothing else the event loop does around a round counts (before, the time to its next check
   * phase did, so a group commit's write acknowledgements and the requests read in the same turn
   * lengthened the inbox's windows: delivery p99 over a second at a 5 % share).
   */
  private round(): void {
    const t0 = performance.now();
    const delivered = this.answerHeld() + (this.streams > 0 ? this.flushStreams() : 0);
    if (delivered === 0) return;
    this.lastRoundMs = performance.now() - t0;
    this.measuredMs += this.lastRoundMs;
    this.openWindow();
  }

  /**
   * Opens a delivery window: FEED_STREAM_FLUSH_MS, or the last round's cost (its answers and the
   * requests charged since: ms) times (100 − FEED_DELIVERY_SHARE_PERCENT) /
   * FEED_DELIVERY_SHARE_PERCENT when that is longer.
   */
  private openWindow(): void {
    const windowMs = Math.max(FEED_STREAM_FLUSH_MS, ((this.lastRoundMs + this.followMs) * (100 - FEED_DELIVERY_SHARE_PERCENT)) / FEED_DELIVERY_SHARE_PERCENT);
    this.followMs = 0;
    this.roundTimer = setTimeout(() => this.windowEnd(), windowMs).unref();
  }

  private windowEnd(): void {
    this.roundTimer = null;
    if (!this.roundPending && this.late.size === 0) {
      this.followMs = 0;
      return;
    }
    this.roundPending = false;
    this.round();
  }

  /**
   * Answers the requests held late (all of them) and the held requests whose feed has an event
   * past their cursor; output: how many.
   */
  private answerHeld(): number {
    let answered = this.late.size;
    for (const w of [...this.late]) w.answer();
    for (const feed of ['discussion', 'work', 'inbox'] as const) {
      const last = this.lastEvent(feed);
      if (last === this.seen[feed]) continue;
      this.seen[feed] = last;
      if (feed === 'inbox') {
        for (const [agentId, waiters] of [...this.inboxByAgent]) {
          const mine = this.lastEvent(feed, agentId);
          for (const w of [...waiters]) {
            if (mine > w.after) {
              w.answer();
              answered++;
            }
          }
        }
      } else {
        for (const w of [...this.byFeed[feed]]) {
          if (last > w.after) {
            w.answer();
            answered++;
          }
        }
      }
    }
    return answered;
  }

  /**
   * Lets every stream whose feed (an inbox stream: its agent's inbox) has an event past its cursor
   * write. Output: how many streams wrote an event (a stream whose next event is not durable yet,
   * or whose reader is behind, writes none). The inbox streams are looked at only when some inbox
   * gained an entry since the last look or a stream was left with one to write (most commits
   * concern no inbox, and 1,000 inbox streams would otherwise be compared after every commit).
   */
  private flushStreams(): number {
    let wrote = 0;
    for (const w of [...this.watchers]) if (w.stream!.pump()) wrote++;
    for (const feed of ['discussion', 'work'] as const) {
      const set = this.streamsByFeed[feed];
      if (set.size === 0) continue;
      const last = this.lastEvent(feed);
      for (const w of [...set]) if (last > w.stream!.after && w.stream!.pump()) wrote++;
    }
    if (this.inboxStreamsByAgent.size === 0) return wrote;
    const lastInbox = this.lastEvent('inbox');
    if (lastInbox === this.inboxFlushed && !this.inboxPending) return wrote;
    this.inboxFlushed = lastInbox;
    let pending = false;
    for (const [agentId, set] of [...this.inboxStreamsByAgent]) {
      const mine = this.lastEvent('inbox', agentId);
      for (const w of [...set]) {
        if (mine <= w.stream!.after) continue;
        if (w.stream!.pump()) wrote++;
        if (mine > w.stream!.after) pending = true;
      }
    }
    this.inboxPending = pending;
    return wrote;
  }

  private index(w: Waiter): void {
    if (w.stream !== undefined) this.streams++;
    if (w.watch === true) {
      this.watchers.add(w);
      return;
    }
    if (w.feed !== 'inbox') {
      (w.stream === undefined ? this.byFeed : this.streamsByFeed)[w.feed].add(w);
      return;
    }
    const byAgent = w.stream === undefined ? this.inboxByAgent : this.inboxStreamsByAgent;
    if (w.stream !== undefined) this.inboxPending = true;
    let set = byAgent.get(w.agentId);
    if (set === undefined) byAgent.set(w.agentId, (set = new Set()));
    set.add(w);
  }

  private unindex(w: Waiter): void {
    this.late.delete(w);
    if (w.stream !== undefined) this.streams--;
    if (w.watch === true) {
      this.watchers.delete(w);
      return;
    }
    if (w.feed !== 'inbox') {
      (w.stream === undefined ? this.byFeed : this.streamsByFeed)[w.feed].delete(w);
      return;
    }
    const byAgent = w.stream === undefined ? this.inboxByAgent : this.inboxStreamsByAgent;
    const set = byAgent.get(w.agentId);
    if (set === undefined) return;
    set.delete(w);
    if (set.size === 0) byAgent.delete(w.agentId);
  }

  /**
   * After a moderation action (issue 51): every open stream with bytes still queued for its
   * connection drops it (`HeldStream.dropQueued`), so nothing rendered before the action is
   * delivered from the server's queue. Output: how many were dropped.
   */
  moderated(): number {
    let dropped = 0;
    for (const w of [...this.held]) if (w.stream?.dropQueued() === true) dropped++;
    return dropped;
  }

  /** The most bytes one open stream holds queued for its connection now (the gauge forum_feed_stream_queued_bytes_max). */
  get streamQueuedBytesMax(): number {
    if (this.streams === 0) return 0;
    let most = 0;
    for (const w of this.held) if (w.stream !== undefined && w.stream.queuedBytes > most) most = w.stream.queuedBytes;
    return most;
  }

  /** Answers every held request and ends every stream now (shutdown: nobody waits for a server that is going away). */
  releaseAll(): void {
    for (const w of this.held) w.answer();
    this.stopSweep();
    if (this.roundTimer !== null) clearTimeout(this.roundTimer);
    this.roundTimer = null;
    this.roundPending = false;
  }

  /**
   * The sweep: answers the requests and ends the streams whose wait has ended, resumes the streams
   * whose pause is over and lets quiet ones send their keep-alive comment; stops itself when
   * nothing is held.
   */
  private expire(): void {
    const now = this.nowMs();
    for (const w of this.held) {
      if (w.deadlineMs <= now) w.answer();
      else w.stream?.tick(now);
    }
    if (this.held.size === 0) this.stopSweep();
  }

  private stopSweep(): void {
    if (this.sweep !== null) clearInterval(this.sweep);
    this.sweep = null;
  }
}
