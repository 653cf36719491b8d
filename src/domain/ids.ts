/**
 * Generated ids: `<prefix>_<record position, zero-padded>` (ours). A position is the record's log
 * seq, offset past a gap after a change of writer (positions.ts, issue 50), so ids are unique
 * without randomness and never given to two records; padding makes string order equal creation
 * order among ids of ID_SEQ_DIGITS digits, which is the tie-break of "newest first by creation
 * time and id" (part 4). The functions below take the position (named `seq` where it is one).
 */
import { ID_SEQ_DIGITS } from '../constants.js';

/** Builds an id such as `msg_0000000042` from a prefix and a record position (positions.ts). */
export function makeId(prefix: string, seq: number): string {
  return `${prefix}_${String(seq).padStart(ID_SEQ_DIGITS, '0')}`;
}

/**
 * Whether `id` equals `makeId(prefix, seq)`, compared digit by digit without building the string
 * (replay checks a million message ids against their record seq).
 */
export function idHasSeq(id: string, prefix: string, seq: number): boolean {
  let width = 1;
  for (let t = seq; t >= 10; t = Math.floor(t / 10)) width++;
  const start = prefix.length + 1;
  if (id.length !== start + Math.max(width, ID_SEQ_DIGITS) || !id.startsWith(prefix) || id.charCodeAt(prefix.length) !== 0x5f) return false;
  let n = seq;
  for (let i = id.length - 1; i >= start; i--) {
    if (id.charCodeAt(i) - 48 !== n % 10) return false;
    n = Math.floor(n / 10);
  }
  return true;
}
