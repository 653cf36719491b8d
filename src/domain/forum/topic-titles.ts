/**
 * The topics' lower-cased titles, kept for the topic-title search (ours, issue 55; topic-search.ts)
 * in a compact form: each full run of TOPIC_TITLE_CHUNK titles is one string, the titles joined by
 * SEP, with each title's start offset in a Uint32 list; the newest titles (fewer than a chunk)
 * are a plain array until their chunk is full. About 1 byte a character (2 for a title outside
 * Latin-1, which makes its whole chunk 2 bytes a character) plus 5 bytes a topic, not a string
 * object each. Positions are the topics' positions in `ForumState.topicOrder`.
 *
 * A search asks a chunk for the positions whose title contains a lower-cased query: one native
 * `indexOf` pass over the chunk, each hit mapped to its title by a binary search of the offsets,
 * the pass resuming at the next title (a query without SEP cannot span two titles). An erased
 * title's characters are overwritten with SEP (same length, so offsets hold): the text leaves
 * memory and the snapshot, and a query without SEP never matches it.
 */
import { TOPIC_TITLE_CHUNK } from '../../constants.js';
import { U32List } from '../../containers/u32-list.js';
import type { PackedArrays } from '../packing.js';

/** Separator of the titles in a chunk. A title may contain it; a query that does is checked title by title. */
const SEP = '\u0000';

/** TopicTitles as a state snapshot keeps it (the offsets as an array index). */
export interface PackedTopicTitles {
  chunks: string[];
  open: string[];
  starts: number;
}

/** See the module doc. */
export class TopicTitles {
  private chunks: string[] = [];
  private open: string[] = [];
  /** Start offset of every title in a full chunk, in its chunk (chunks.length × TOPIC_TITLE_CHUNK entries). */
  private starts = new U32List(64);

  /** How many titles are kept (= topics). */
  get length(): number {
    return this.chunks.length * TOPIC_TITLE_CHUNK + this.open.length;
  }

  /** How many chunks a search walks: the full ones, then one for the newest titles (0-based; the last is `open`). */
  get chunkCount(): number {
    return this.chunks.length + 1;
  }

  /** Appends the next topic's title, already lower-cased. A full run of titles becomes a chunk (O(TOPIC_TITLE_CHUNK), bounded). */
  push(lowerTitle: string): void {
    this.open.push(lowerTitle);
    if (this.open.length < TOPIC_TITLE_CHUNK) return;
    let at = 0;
    for (const t of this.open) {
      this.starts.push(at);
      at += t.length + 1;
    }
    this.chunks.push(this.open.join(SEP));
    this.open = [];
  }

  /** Forgets the text of the title at position `pos` (an erasure). Out-of-range positions are ignored. */
  erase(pos: number): void {
    const c = Math.floor(pos / TOPIC_TITLE_CHUNK);
    if (pos < 0 || pos >= this.length) return;
    if (c === this.chunks.length) {
      this.open[pos - c * TOPIC_TITLE_CHUNK] = '';
      return;
    }
    const chunk = this.chunks[c]!;
    const [start, end] = this.bounds(c, pos);
    // Flattened into one string again, so no piece of the old chunk (its text) stays referenced.
    const next = chunk.slice(0, start) + SEP.repeat(end - start) + chunk.slice(end);
    this.chunks[c] = flat(next);
  }

  /**
   * The positions in chunk `c` (see chunkCount) whose title contains `lq` (lower-cased, not
   * empty), ascending. O(characters of the chunk), plus O(log TOPIC_TITLE_CHUNK) a hit.
   */
  matchesIn(c: number, lq: string): number[] {
    const base = c * TOPIC_TITLE_CHUNK;
    const out: number[] = [];
    if (c === this.chunks.length) {
      this.open.forEach((t, i) => {
        if (t.includes(lq)) out.push(base + i);
      });
      return out;
    }
    const chunk = this.chunks[c]!;
    if (lq.includes(SEP)) {
      for (let pos = base; pos < base + TOPIC_TITLE_CHUNK; pos++) {
        const [start, end] = this.bounds(c, pos);
        if (chunk.slice(start, end).includes(lq)) out.push(pos);
      }
      return out;
    }
    const last = base + TOPIC_TITLE_CHUNK;
    let from = 0;
    for (;;) {
      const hit = chunk.indexOf(lq, from);
      if (hit < 0) return out;
      const pos = this.posIn(base, last, hit);
      out.push(pos);
      if (pos + 1 >= last) return out;
      from = this.starts.at(pos + 1);
    }
  }

  /** The position in [base, last) whose title holds offset `hit` of its chunk (binary search of the offsets). */
  private posIn(base: number, last: number, hit: number): number {
    let lo = base;
    let hi = last;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.starts.at(mid) <= hit) lo = mid + 1;
      else hi = mid;
    }
    return lo - 1;
  }

  /** [start, end) of the title at `pos` in full chunk `c`. */
  private bounds(c: number, pos: number): [number, number] {
    const start = this.starts.at(pos);
    const end = (pos + 1) % TOPIC_TITLE_CHUNK === 0 ? this.chunks[c]!.length : this.starts.at(pos + 1) - 1;
    return [start, end];
  }

  /** Packs the titles; the offsets go to `arrays`. */
  pack(arrays: PackedArrays): PackedTopicTitles {
    return { chunks: this.chunks, open: this.open, starts: arrays.putList(this.starts) };
  }

  /** The titles packed by `pack`. Throws Error for data that does not fit together. */
  static unpack(p: PackedTopicTitles, arrays: PackedArrays): TopicTitles {
    const t = new TopicTitles();
    const starts = arrays.takeList(p.starts);
    if (!Array.isArray(p.chunks) || !Array.isArray(p.open) || p.open.length >= TOPIC_TITLE_CHUNK || starts.length !== p.chunks.length * TOPIC_TITLE_CHUNK) {
      throw new Error('damaged topic titles');
    }
    t.chunks = p.chunks;
    t.open = p.open;
    t.starts = starts;
    return t;
  }
}

/** `s` as one flat string (a concatenation is otherwise a tree of its parts until first read). */
function flat(s: string): string {
  // Reading a character makes V8 flatten the string in place.
  s.charCodeAt(0);
  return s;
}
