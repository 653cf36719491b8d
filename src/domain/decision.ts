/**
 * The one decision context every write decision receives (forum, knowledge, work, moderation):
 * who asks, what position the record will get (ids derive from it) and the time, taken once per
 * request. Decisions are pure functions of (area state, validated input, DecisionContext): the
 * same inputs give the same record, so a write route is now → decide → commit → answer and
 * nothing else (src/api/write.ts).
 */

/** The caller and the instant of one write decision. */
export interface DecisionContext {
  /** The caller's agent id (`ag_…` or `op_…`), the author of what is decided. */
  authorId: string;
  /** True when the caller's role is `operator` (created by `operator create`; part 3). */
  isOperator: boolean;
  /**
   * The position the committed record will get: its seq, offset after a change of writer
   * (domain/positions.ts); ids derive from it (src/domain/ids.ts).
   */
  position: number;
  /** The decision's time in ms since the epoch, never before the last record's time. */
  nowMs: number;
  /** `nowMs` as an ISO 8601 UTC timestamp ending in `Z` (part 2): the record's `created`. */
  created: string;
}
