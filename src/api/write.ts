/**
 * The write-route helper: every write route is now → decide → commit → answer, in one
 * synchronous run (so concurrent writes are serialised and a decision is never taken on a stale
 * state). The HTTP layer awaits the group commit that covers the record before the answer is
 * sent (src/http/server.ts), so nothing is acknowledged before it is durable.
 */
import type { RequestContext, Reply } from '../http/router.js';
import type { DecisionContext } from '../domain/decision.js';
import type { RecordType } from '../domain/record-types.js';
import { requireWriteSignature } from '../domain/agents/keys.js';
import { writesStopped } from '../domain/admin/settings.js';
import { writeStopped } from '../http/errors.js';
import type { SignedWriteKind, WriteSignature } from '../domain/agents/signing.js';

/**
 * What a write decided: the stored answer of an identical earlier request (idempotent retries,
 * nothing committed), or one record to commit and how to answer once it is applied.
 */
export type WriteDecision = { replay: Reply } | { type: RecordType; payload: unknown; answer: () => Reply };

/**
 * The decision context of the authenticated caller at this instant (time from the app's clock).
 * Throws Error on a route without a caller: write routes are Bearer routes (a programmer error).
 */
export function decisionContext({ app, agent }: Pick<RequestContext, 'app' | 'agent'>): DecisionContext {
  if (agent === null) throw new Error('a write decision needs an authenticated caller (auth: bearer)');
  const nowMs = app.now();
  return { authorId: agent.profile.id, isOperator: agent.profile.role === 'operator', position: app.nextPosition(), nowMs, created: new Date(nowMs).toISOString() };
}

/**
 * Runs one write: takes the decision context, lets `decide` decide (it throws ServiceError to
 * refuse), commits the decided record at the context's time and returns its answer, or returns
 * the replayed answer when nothing is to be written.
 */
export function runWrite(ctx: Pick<RequestContext, 'app' | 'agent'>, decide: (d: DecisionContext) => WriteDecision): Reply {
  const d = decisionContext(ctx);
  const decision = decide(d);
  if ('replay' in decision) return decision.replay;
  ctx.app.commit(decision.type, decision.payload, d.nowMs);
  return decision.answer();
}

/**
 * `record` (the Topic, Message or Knowledge a write of `kind` is about to publish) with the
 * caller's `signature` checked and added as its last field (issue 53; docs/api/keys.md#signed-writes),
 * or `record` itself for an unsigned write (its answer byte-identical to before). Call it in the
 * decision, before the record is committed. Throws 400 VALIDATION (agents/keys.ts
 * requireWriteSignature) for a key that is not the caller's active key or a signature that does
 * not verify.
 */
export function withSignature<T extends { authorId: string }>(
  ctx: Pick<RequestContext, 'app'>,
  kind: SignedWriteKind,
  record: T,
  signature: WriteSignature | undefined,
): T & { signature?: WriteSignature } {
  if (signature === undefined) return record;
  const { app } = ctx;
  return { ...record, signature: requireWriteSignature(app.state.agents, record.authorId, kind, app.log.originId, record, signature) };
}

/**
 * Throws 423 WRITE_STOP (part 7) when the operator's write stop holds now. The HTTP layer checks
 * it before every POST's handler (src/http/server.ts `runRoute`); a write handler that awaits
 * before it decides (the device-code routes hash the code with scrypt) calls this again right
 * after its await, so a stop that began meanwhile still refuses the write and nothing is appended.
 */
export function requireWritesRunning({ app }: Pick<RequestContext, 'app'>): void {
  const s = app.state.settings;
  if (writesStopped(s, app.now())) throw writeStopped({ reason: s.writeStopReason, untilMs: s.writeStopUntilMs });
}
