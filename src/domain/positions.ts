/**
 * Record positions (issue 50, "failover without silent skips"; docs/operate/replication.md#positions).
 *
 * The log's seq runs 1, 2, 3, … without gaps: replay, record locations, chunks, segments and the
 * Merkle tree all depend on that. What clients see — generated ids (`msg_0000000042`), the change
 * feeds' `event.seq` and cursor `after` — is a record's *position*: its seq plus an offset that is
 * 0 for every record of a log that never changed writers, so on such a log position = seq and
 * every id, cursor and receipt stays what it always was.
 *
 * The offset changes only at a `replication.epoch` record that carries `positionBase`: a server
 * that takes the writer epoch from another writer (a promotion, a takeover, a leader started on a
 * restored copy) cannot know how many records the previous writer acknowledged after the bucket's
 * head (async mode loses those), so it gives its epoch record the position `positionBase`, at least
 * POSITION_JUMP above the previous record's. The lost records' ids and positions then lie in the
 * gap: no new record is ever given one of them (no id names two records), an id from the lost
 * branch is 404, and a feed cursor from it is 409 CURSOR_LOST naming where this archive's history
 * parts from it, instead of silently skipping the new records at the same seqs.
 *
 * Boundaries are few (one per change of writer), so every lookup is a short scan from the newest;
 * on a log with none, each is one comparison.
 */
import { POSITION_JUMP } from '../constants.js';

/** Where a feed cursor's `after` lands in the log. */
export interface CursorSeq {
  /** The greatest seq whose position is at most the cursor's (0 before the first record). */
  seq: number;
  /**
   * Set when the position lies in a gap (records a failover lost): the last position this log
   * holds before the gap; null for a position this log has, or one beyond its head.
   */
  lostAfter: number | null;
}

/** The seq → position map of one log, rebuilt from its epoch records (and kept in the state snapshot). */
export class Positions {
  /** First seq of each stretch after a jump, ascending. */
  private readonly seqs: number[] = [];
  /** Its position − seq, ascending. */
  private readonly deltas: number[] = [];

  /** The offset of the stretch holding `seq` (index of its boundary, −1 before the first). */
  private stretchOfSeq(seq: number): number {
    let i = this.seqs.length - 1;
    while (i >= 0 && this.seqs[i]! > seq) i--;
    return i;
  }

  /** The position of the record at `seq` (also of a seq past the head: the newest offset goes on). */
  positionOf(seq: number): number {
    const n = this.seqs.length;
    if (n === 0) return seq;
    if (seq >= this.seqs[n - 1]!) return seq + this.deltas[n - 1]!;
    const i = this.stretchOfSeq(seq);
    return i < 0 ? seq : seq + this.deltas[i]!;
  }

  /**
   * The seq of the record at `position`, or 0 when no record of this log can have it (a gap: a
   * failover's lost records; or below 1). A position past the head maps past the head: the caller
   * compares with it.
   */
  seqAt(position: number): number {
    const c = this.cursorSeq(position);
    return c.lostAfter !== null || position < 1 ? 0 : c.seq;
  }

  /** Where a cursor `after` = `position` lands (see CursorSeq). Input: a position ≥ 0. */
  cursorSeq(position: number): CursorSeq {
    const n = this.seqs.length;
    if (n === 0) return { seq: position, lostAfter: null };
    // The newest stretch whose first position is at most `position`.
    let i = n - 1;
    while (i >= 0 && this.seqs[i]! + this.deltas[i]! > position) i--;
    const delta = i < 0 ? 0 : this.deltas[i]!;
    if (i === n - 1) return { seq: position - delta, lostAfter: null };
    // Inside stretch i (or before the first), unless past its last record: then in the gap before stretch i + 1.
    const lastSeq = this.seqs[i + 1]! - 1;
    if (position - delta <= lastSeq) return { seq: position - delta, lostAfter: null };
    return { seq: lastSeq, lostAfter: lastSeq + delta };
  }

  /**
   * Notes an epoch record at `seq` whose position is `positionBase` (state apply). Throws Error
   * when it is not above the previous record's position (a log no writer of ours made).
   */
  rebase(seq: number, positionBase: number): void {
    const before = this.positionOf(seq - 1);
    if (!Number.isSafeInteger(positionBase) || positionBase <= before) {
      throw new Error(`replication.epoch record ${seq}: positionBase ${positionBase} is not above the previous record's position ${before}`);
    }
    this.seqs.push(seq);
    this.deltas.push(positionBase - seq);
  }

  /** Whether any record's position differs from its seq. */
  get rebased(): boolean {
    return this.seqs.length > 0;
  }

  /** The boundaries as [seq, delta] pairs (state snapshot). */
  pack(): Array<[number, number]> {
    return this.seqs.map((s, i) => [s, this.deltas[i]!]);
  }

  /** Restores `pack`'s pairs into an empty map. */
  unpack(pairs: Array<[number, number]> | undefined): void {
    for (const [s, d] of pairs ?? []) {
      this.seqs.push(s);
      this.deltas.push(d);
    }
  }
}

/**
 * The `positionBase` of an epoch record taken from another writer, given the position of the last
 * record before it: the next multiple of POSITION_JUMP at least POSITION_JUMP above it, so the
 * previous writer's lost records (fewer than POSITION_JUMP) lie in the gap and ids stay readable
 * (`msg_2000000001`).
 */
export function nextPositionBase(lastPosition: number): number {
  return (Math.floor(lastPosition / POSITION_JUMP) + 2) * POSITION_JUMP;
}
