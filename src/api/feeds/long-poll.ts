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
 * them a request is answered at once, as without `wait`). After each group commit `notify`
 * compares each feed's last event with the one it saw before: only a feed that gained an event
 * has its held requests looked at, one comparison each; held inbox requests are kept per agent,
 * so only the agents whose inbox gained an entry are looked at.
 *
 * Streams (Server-Sent Events, src/api/feeds/stream.ts) are held requests too: they share the
 * bounds, the sweep (their deadline and keep-alive comments) and `releaseAll`, and are counted in
 * `size`. After a group commit they are not answered but written to: at most once per
 * FEED_STREAM_FLUSH_MS (one shared timer; leading edge), each stream of a feed that gained an
 * event past its cursor writes the pages its rules allow (`pump`); a stream paused by them (a
 * backlog page's pollAfterSeconds, the change-read limit) is resumed by the sweep.
 */
import type { Socket } from 'node:net';
import { FEED_STREAM_FLUSH_MS, FEED_WAITERS_MAX, FEED_WAITERS_PER_AGENT_MAX, FEED_WAIT_SWEEP_MS } from '../../constants.js';
import { holdConnection } from '../../http/server.js';
import type { Reply } from '../../http/router.js';

/**
 * The two feeds (part 6) and the per-agent inbox (issue 37): their cursors and positions are
 * independent.
 */
export type FeedName = 'discussion' | 'work' | 'inbox';

/** One held request. */
interface Waiter {
  feed: FeedName;
  /** The request's cursor position: it is answered once the feed's last event is past it. */
  after: number;
  /** When the wait ends, in the clock's ms. */
  deadlineMs: number;
  agentId: string;
  /** Answers the request now (renders its page; a stream: ends it) and forgets it. */
  answer: () => void;
  /** Set for a stream: what the flush and the sweep call. */
  stream?: HeldStream;
}

/** What FeedWaiters needs of an open stream (src/api/feeds/stream.ts). */
export interface HeldStream {
  /** The stream's cursor position now (it advances as pages are written). */
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
  private streams = 0;
  /** The flush window's one timer (null: quiet, the next commit is written at once). */
  private flushTimer: NodeJS.Timeout | null = null;
  /** A commit arrived within the current window: flush at its end. */
  private flushPending = false;
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

  /**
   * Holds a caught-up request of `agentId` on `feed` at cursor `after` for up to `waitSeconds`
   * (s). `render` builds its reply when it is answered; its error (a ServiceError) rejects.
   * Output: the promise of that reply, or null when a bound (FEED_WAITERS_MAX,
   * FEED_WAITERS_PER_AGENT_MAX) is reached — the caller then answers at once. A request whose
   * connection closes is answered (into nothing) and forgotten at once.
   */
  hold(feed: FeedName, after: number, waitSeconds: number, agentId: string, socket: Socket, render: () => Reply): Promise<Reply> | null {
    if (this.refusal(agentId) !== null) return null;
    return new Promise<Reply>((resolve, reject) => {
      this.add(feed, after, waitSeconds, agentId, socket, () => {
        try {
          resolve(render());
        } catch (err) {
          reject(err as Error);
        }
      });
    });
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

  /** Holds a request or stream; `done` runs once when it is answered, ended or its connection closes. */
  private add(feed: FeedName, after: number, waitSeconds: number, agentId: string, socket: Socket, done: () => void, stream?: HeldStream): void {
    const release = holdConnection(socket);
    const waiter: Waiter = {
      feed,
      after,
      agentId,
      deadlineMs: this.nowMs() + waitSeconds * 1000,
      stream,
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
  }

  /**
   * After a group commit: answers the held requests of every feed that gained an event past their
   * cursor; an inbox request only when its own agent's inbox did.
   */
  notify(): void {
    for (const feed of ['discussion', 'work', 'inbox'] as const) {
      const last = this.lastEvent(feed);
      if (last === this.seen[feed]) continue;
      this.seen[feed] = last;
      if (feed === 'inbox') {
        for (const [agentId, waiters] of this.inboxByAgent) {
          const mine = this.lastEvent(feed, agentId);
          for (const w of [...waiters]) if (mine > w.after) w.answer();
        }
      } else {
        for (const w of [...this.byFeed[feed]]) if (last > w.after) w.answer();
      }
    }
    if (this.streams > 0) this.requestFlush();
  }

  /**
   * Coalesces stream writes (FEED_STREAM_FLUSH_MS, leading edge): the first commit of a quiet
   * period is written at once and, when any stream wrote an event, opens a window; commits within
   * it are written together when it ends, which opens the next window; a window without commits
   * closes it. A commit that gave no stream an event to write (most commits, for inbox streams;
   * one whose entry is not durable yet) opens no window, so the next one that does is written at
   * once.
   */
  private requestFlush(): void {
    if (this.flushTimer !== null) {
      this.flushPending = true;
      return;
    }
    if (this.flushStreams() > 0) this.flushTimer = setTimeout(() => this.windowEnd(), FEED_STREAM_FLUSH_MS).unref();
  }

  private windowEnd(): void {
    this.flushTimer = null;
    if (!this.flushPending) return;
    this.flushPending = false;
    this.requestFlush();
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
    if (w.stream !== undefined) this.streams--;
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

  /** Answers every held request and ends every stream now (shutdown: nobody waits for a server that is going away). */
  releaseAll(): void {
    for (const w of this.held) w.answer();
    this.stopSweep();
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    this.flushPending = false;
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
