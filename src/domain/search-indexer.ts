/**
 * Keeps the n-gram search index (store/search/index.ts) in step with the log (issue 17 "Search
 * that does not scan"): which records are documents, how a start matches the index's shards
 * against the log, and how the documents it lacks are added — in slices, after the server is
 * already serving, so a missing or stale index never delays a start.
 *
 * Documents: a message's lower-cased content; a knowledge revision's lower-cased title and
 * content (two texts: a match never spans them). Their ids are their log seqs.
 *
 * Until the index covers the log head, searches scan the newest messages it does not cover and
 * ask it for the rest (domain/indexed-scan.ts `indexedScan`), so answers never depend on how
 * far it has got.
 */
import { type NgramIndex, NgramIndexDamagedError } from '../store/search/index.js';
import type { SegmentRecords } from '../store/records.js';
import { RecordDamagedError } from '../store/errors.js';
import type { LogRecord } from '../store/log.js';
import type { State } from './state.js';
import type { CandidateIndex } from './indexed-scan.js';
import { SliceTimer } from './slices.js';

/** The texts record `type` with payload JSON `payloadJson` contributes to the index, or null. */
export function documentTexts(type: string, payloadJson: string): string[] | null {
  if (type === 'message.create') return [(JSON.parse(payloadJson) as { content: string }).content.toLowerCase()];
  if (type === 'knowledge.publish') {
    const k = JSON.parse(payloadJson) as { title: string; content: string };
    return [k.title.toLowerCase(), k.content.toLowerCase()];
  }
  return null;
}

/** See the module doc. One per open app. */
export class SearchIndexer implements CandidateIndex {
  /** True once every document up to the log head is in the index; live commits then add theirs. */
  private caughtUp = false;
  private catchingUp: Promise<void> | null = null;
  /** Set when shards were dropped during a catch-up: it restarts from the index's new end. */
  private rewound = false;
  private closed = false;

  /**
   * Input: the open index and its documents per shard, the state (its message rows and knowledge revisions name the
   * documents), the records (to read documents back and the stored hash of a seq), the log head
   * and durable head (functions), and a logger for what happened to the index (`info` for progress,
   * `warn` for a shard dropped, rebuilt or not written).
   */
  constructor(
    private readonly index: NgramIndex,
    private readonly shardDocsMax: number,
    private readonly state: State,
    private readonly records: SegmentRecords,
    private readonly head: () => { seq: number; durableSeq: number },
    private readonly log: (level: 'info' | 'warn', line: string) => void,
  ) {}

  /**
   * Matches the persisted shards against the log, oldest first: a shard is kept only while its
   * last seq is in the log and that record carries the shard's recorded chained hash; from the
   * first one that does not, every shard is dropped (its documents are added again).
   */
  validate(): void {
    const { seq: headSeq } = this.head();
    for (const shard of this.index.shards()) {
      let stored: string | null = null;
      try {
        stored = shard.lastSeq <= headSeq ? this.records.storedHashOf(shard.lastSeq) : null;
      } catch {
        stored = null;
      }
      if (stored !== shard.lastHash) {
        this.log('warn', `search index: shard ${shard.firstSeq}..${shard.lastSeq} does not match the log; it and the shards after it are rebuilt`);
        this.index.truncateFrom(shard.firstSeq);
        return;
      }
    }
  }

  get throughSeq(): number {
    return this.index.throughSeq;
  }

  /** Candidates for `lq` (see CandidateIndex). A damaged shard restarts the catch-up from it and rethrows. */
  *candidates(lq: string, opts: { beforeSeq?: number }): Generator<number, void, undefined> {
    try {
      yield* this.index.candidates(lq, opts);
    } catch (err) {
      if (err instanceof NgramIndexDamagedError) {
        this.log('warn', `search index: ${err.message}; rebuilding from seq ${err.firstSeq}`);
        this.caughtUp = false;
        this.index.truncateFrom(err.firstSeq);
        void this.startCatchUp().catch((e: Error) => this.log('warn', `search index: catching up after the rebuild failed (${e.message}); searches scan`));
      }
      throw err;
    }
  }

  /**
   * Records `seqs` are being erased (the erasure contract): the shards from the one holding the
   * lowest of them on are dropped and their documents added again from the log, without them.
   */
  erased(seqs: readonly number[]): void {
    if (seqs.length === 0) return;
    this.caughtUp = false;
    this.index.truncateFrom(Math.min(...seqs));
    this.rewound = true;
    void this.startCatchUp().catch((err: Error) => this.log('warn', `search index: catching up after an erasure failed (${err.message})`));
  }

  /** After a commit (apply done): adds the record's document when the index is caught up. */
  committed(record: LogRecord, payloadJson: string): void {
    if (!this.caughtUp) return;
    const texts = documentTexts(record.type, payloadJson);
    if (texts !== null) this.index.add(record.seq, texts);
  }

  /** After a group commit: lets the index seal a full live shard (its records are on disk now). */
  durable(seq: number, hash: string): void {
    if (!this.caughtUp) return;
    this.index.durable(seq, hash).catch((err: Error) => this.log('warn', `search index: a shard was not written (${err.message}); it stays in memory`));
  }

  /** Starts adding the documents the index lacks, in slices; resolves when it covers the head. */
  startCatchUp(): Promise<void> {
    this.catchingUp ??= this.catchUp().finally(() => {
      this.catchingUp = null;
    });
    return this.catchingUp;
  }

  /** Resolves when the index covers every document up to the head (tests, benchmarks). */
  whenCaughtUp(): Promise<void> {
    return this.caughtUp ? Promise.resolve() : this.startCatchUp();
  }

  private async catchUp(): Promise<void> {
    const { forum, knowledge } = this.state;
    const slice = new SliceTimer();
    // Two ascending seq lists merged: message rows and knowledge revisions after throughSeq.
    let m = forum.rows.seq.upperBound(this.index.throughSeq);
    let k = knowledge.rows.seq.upperBound(this.index.throughSeq);
    let added = 0;
    this.rewound = false;
    for (;;) {
      if (this.closed) return;
      if (this.rewound) {
        this.rewound = false;
        m = forum.rows.seq.upperBound(this.index.throughSeq);
        k = knowledge.rows.seq.upperBound(this.index.throughSeq);
      }
      const mSeq = m < forum.rows.seq.length ? forum.rows.seq.at(m) : Infinity;
      const kSeq = k < knowledge.rows.seq.length ? knowledge.rows.seq.at(k) : Infinity;
      const seq = Math.min(mSeq, kSeq);
      if (seq === Infinity) break;
      if (seq === mSeq) m++;
      else k++;
      // An erased record (erasure contract) is no document, even before its line is rewritten.
      if (this.records.isErased(seq)) continue;
      let r;
      try {
        r = this.records.read(seq, false);
      } catch (err) {
        // A record the chain does not prove is no document (records.ts logged it once).
        if (err instanceof RecordDamagedError) continue;
        throw err;
      }
      const texts = documentTexts(r.type, r.payloadJson);
      if (texts !== null) this.index.add(seq, texts);
      added++;
      // A full live shard is sealed once its documents' records are on disk.
      if (this.index.liveDocs >= this.shardDocsMax && seq <= this.head().durableSeq) {
        let hash: string | null = null;
        try {
          hash = this.records.storedHashOf(seq);
        } catch (err) {
          // A damaged record: the live shard is not sealed on it (it stays in memory).
          if (!(err instanceof RecordDamagedError)) throw err;
        }
        if (hash !== null) void this.index.durable(seq, hash).catch((err: Error) => this.log('warn', `search index: a shard was not written (${err.message})`));
      }
      if ((added & 63) === 0 && slice.due()) await slice.next();
    }
    // Synchronously after the last document: from here on every commit adds its own.
    this.caughtUp = true;
    this.log('info', `search index: covers the log (${added} documents added at this start)`);
  }

  /** Waits for shard writes in flight, then closes the index's files. */
  async close(): Promise<void> {
    this.closed = true;
    await this.index.flush();
    this.index.close();
  }
}
