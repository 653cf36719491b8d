/**
 * Generated ids: `<prefix>_<log seq, zero-padded>` (ours). The seq is unique in the log, so ids
 * are unique without randomness, and padding makes string order equal creation order, which is
 * the tie-break of "newest first by creation time and id" (part 4).
 */
import { ID_SEQ_DIGITS } from '../constants.js';

/** Builds an id such as `msg_0000000042` from a prefix and a log seq. */
export function makeId(prefix: string, seq: number): string {
  return `${prefix}_${String(seq).padStart(ID_SEQ_DIGITS, '0')}`;
}
