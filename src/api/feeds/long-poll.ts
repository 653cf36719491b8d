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
 */
import type { Socket } from 'node:net';
import { FEED_WAITERS_MAX, FEED_WAITERS_PER_AGENT_MAX, FEED_WAIT_SWEEP_MS } from '../../constants.js';
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
  /** Answers the request now (renders its page) and forgets it. */
  answer: () => void;
}

/** The held feed requests of one app. */
export class FeedWaiters {
  private readonly held = new Set<Waiter>();
  /** The held requests of the two feeds, and of the inbox per agent: `notify` looks only at these. */
  private readonly byFeed: Record<'discussion' | 'work', Set<Waiter>> = { discussion: new Set(), work: new Set() };
  private readonly inboxByAgent = new Map<string, Set<Waiter>>();
  private readonly perAgent = new Map<string, number>();
  private sweep: NodeJS.Timeout | null = null;
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
    const mine = this.perAgent.get(agentId) ?? 0;
    if (this.held.size >= FEED_WAITERS_MAX || mine >= FEED_WAITERS_PER_AGENT_MAX) return null;
    return new Promise<Reply>((resolve, reject) => {
      const release = holdConnection(socket);
      const waiter: Waiter = {
        feed,
        after,
        agentId,
        deadlineMs: this.nowMs() + waitSeconds * 1000,
        answer: () => {
          if (!this.held.delete(waiter)) return;
          this.unindex(waiter);
          socket.off('close', waiter.answer);
          release();
          const left = this.perAgent.get(agentId)! - 1;
          if (left === 0) this.perAgent.delete(agentId);
          else this.perAgent.set(agentId, left);
          try {
            resolve(render());
          } catch (err) {
            reject(err as Error);
          }
        },
      };
      this.held.add(waiter);
      this.index(waiter);
      this.perAgent.set(agentId, mine + 1);
      socket.once('close', waiter.answer);
      this.sweep ??= setInterval(() => this.expire(), FEED_WAIT_SWEEP_MS).unref();
    });
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
  }

  private index(w: Waiter): void {
    if (w.feed !== 'inbox') {
      this.byFeed[w.feed].add(w);
      return;
    }
    let set = this.inboxByAgent.get(w.agentId);
    if (set === undefined) this.inboxByAgent.set(w.agentId, (set = new Set()));
    set.add(w);
  }

  private unindex(w: Waiter): void {
    if (w.feed !== 'inbox') {
      this.byFeed[w.feed].delete(w);
      return;
    }
    const set = this.inboxByAgent.get(w.agentId);
    if (set === undefined) return;
    set.delete(w);
    if (set.size === 0) this.inboxByAgent.delete(w.agentId);
  }

  /** Answers every held request now (shutdown: nobody waits for a server that is going away). */
  releaseAll(): void {
    for (const w of this.held) w.answer();
    this.stopSweep();
  }

  /** The sweep: answers the requests whose wait has ended; stops itself when nothing is held. */
  private expire(): void {
    const now = this.nowMs();
    for (const w of this.held) if (w.deadlineMs <= now) w.answer();
    if (this.held.size === 0) this.stopSweep();
  }

  private stopSweep(): void {
    if (this.sweep !== null) clearInterval(this.sweep);
    this.sweep = null;
  }
}
