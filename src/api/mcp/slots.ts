/**
 * The slots of POST /mcp (issue 34; src/api/mcp/routes.ts): how many requests are handled at
 * once, per agent and in total, and how many may wait. Kept apart from the route so its rules can
 * be checked with small limits (test/unit/mcp-slots.test.mjs).
 */
import { MCP_PATH } from '../../constants.js';
import { ServiceError } from '../../errors.js';

/** The limits of a Slots instance (the service uses MCP_IN_FLIGHT_MAX and its neighbours). */
export interface SlotLimits {
  /** Requests handled at once. */
  inFlight: number;
  /** Of those, the most one agent holds. */
  inFlightPerAgent: number;
  /** Requests that may wait. */
  queue: number;
  /** Of those, the most of one agent's. */
  queuePerAgent: number;
  /** Retry-After of the 503 for a request over the queue, in seconds. */
  retryAfterSeconds: number;
}

/**
 * The /mcp slots: at most `limits.inFlight` requests are handled at once, at most
 * `limits.inFlightPerAgent` of them for one agent, and at most `limits.queue` wait (at most
 * `limits.queuePerAgent` of one agent's), granted in arrival order among the agents below their
 * share. `acquire(agent)` resolves once the caller holds a slot; it throws 503 UNAVAILABLE
 * (Retry-After `limits.retryAfterSeconds`) when the queue, or the agent's part of it, is full.
 * So one agent (one that stops reading its answers, say) cannot take every slot or fill the queue.
 * Each acquire is paired with exactly one `release(agent)`. Slots are handed out one per turn of
 * the event loop (setImmediate), so a burst of /mcp requests never runs back to back: the
 * requests of other routes (/api/status) are read and answered between any two /mcp answers.
 */
export class Slots {
  private busy = 0;
  private readonly waiting: Array<{ agent: string; grant: () => void }> = [];
  /** Per agent: slots held and requests waiting (entries removed at zero). */
  private readonly perAgent = new Map<string, { held: number; queued: number }>();
  private pumping = false;

  constructor(private readonly limits: SlotLimits) {}

  acquire(agent: string): Promise<void> {
    const mine = this.perAgent.get(agent) ?? { held: 0, queued: 0 };
    // Waiters that a free slot awaits (granted on their turn) do not count against the queue.
    const agentFull = mine.queued >= this.limits.queuePerAgent + Math.max(0, this.limits.inFlightPerAgent - mine.held);
    if (agentFull || this.waiting.length >= this.limits.queue + Math.max(0, this.limits.inFlight - this.busy)) {
      const why = agentFull ? `${this.limits.queuePerAgent} of this agent's requests are already waiting` : `${this.limits.queue} requests are already waiting`;
      throw new ServiceError('UNAVAILABLE', `${MCP_PATH} is busy: ${why}; retry after Retry-After seconds`, { 'Retry-After': String(this.limits.retryAfterSeconds) });
    }
    mine.queued++;
    this.perAgent.set(agent, mine);
    const granted = new Promise<void>((grant) => this.waiting.push({ agent, grant }));
    this.pump();
    return granted;
  }

  release(agent: string): void {
    this.busy--;
    const mine = this.perAgent.get(agent)!;
    mine.held--;
    if (mine.held === 0 && mine.queued === 0) this.perAgent.delete(agent);
    this.pump();
  }

  /** Grants one slot to the first waiter whose agent is below its share, on the next turn; repeats while it can. */
  private pump(): void {
    if (this.pumping || this.busy >= this.limits.inFlight || this.waiting.length === 0) return;
    this.pumping = true;
    setImmediate(() => {
      this.pumping = false;
      if (this.busy >= this.limits.inFlight) return;
      const i = this.waiting.findIndex((w) => this.perAgent.get(w.agent)!.held < this.limits.inFlightPerAgent);
      if (i === -1) return; // Every waiter's agent holds its share; a release pumps again.
      const [next] = this.waiting.splice(i, 1);
      const mine = this.perAgent.get(next!.agent)!;
      mine.queued--;
      mine.held++;
      this.busy++;
      next!.grant();
      this.pump();
    });
  }
}
