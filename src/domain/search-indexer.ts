/**
 * Keeps the n-gram search indexes (store/search/index.ts) in step with the log (issue 17 "Search
 * that does not scan"): which records are documents, how a start matches the indexes' shards
 * against the log, and how the documents they lack are added — in slices, after the server is
 * already serving, so a missing or stale index never delays a start.
 *
 * Documents: a message's lower-cased content; a knowledge revision's lower-cased title and
 * content (two texts: a match never spans them). Their ids are their log seqs. Each kind has its
 * own index (issue 30): a knowledge search never decodes or walks message documents, and a
 * message search never walks knowledge revisions, whatever the mix of the log (a few knowledge
 * revisions among millions of messages cost a combined index a walk over every message
 * candidate between two knowledge hits).
 *
 * Until an index covers the log head, searches scan the newest candidates it does not cover and
 * ask it for the rest (domain/indexed-scan.ts `indexedScan`), so answers never depend on how
 * far it has got.
 */
import { join } from 'node:path';
import { NgramIndex, NgramIndexDamagedError, type NgramIndexOptions } from '../store/search/index.js';
import type { SegmentRecords } from '../store/records.js';
import { RecordDamagedError } from '../store/errors.js';
import type { LogRecord } from '../store/log.js';
import type { State } from './state.js';
import type { CandidateIndex } from './indexed-scan.js';
import { SliceTimer } from './slices.js';
import { upperBound } from '../containers/binary-search.js';

/** The kinds of document, each with its own n-gram index. */
type DocumentKind = 'messages' | 'knowledge';

/**
 * Folder of the knowledge index's shard files, inside the search index folder (the message
 * index's shard files stay in the search index folder itself).
 */
const KNOWLEDGE_INDEX_DIR = 'knowledge';

/** The kind of document record type `type` is, or null (no document). */
function kindOf(type: string): DocumentKind | null {
  if (type === 'message.create') return 'messages';
  if (type === 'knowledge.publish') return 'knowledge';
  return null;
}

/** The texts record `type` with payload JSON `payloadJson` contributes to the index, or null. */
export function documentTexts(type: string, payloadJson: string): string[] | null {
  if (type === 'message.create') return [(JSON.parse(payloadJson) as { content: string }).content.toLowerCase()];
  if (type === 'knowledge.publish') {
    const k = JSON.parse(payloadJson) as { title: string; content: string };
    return [k.title.toLowerCase(), k.content.toLowerCase()];
  }
  return null;
}

/** The message index and the knowledge index, one per document kind. */
export interface SearchIndexes {
  messages: NgramIndex;
  knowledge: NgramIndex;
}

/**
 * Opens (creating) the two indexes under the search index folder `dir`: messages in `dir` itself,
 * knowledge revisions in `dir`/knowledge (NgramIndex.open: damage is dropped and reported, never
 * thrown). Shards in `dir` written when both kinds shared one index stay valid: a message search
 * rejects their knowledge documents by seq, as it rejects any other candidate that is no message.
 * Throws only when a folder cannot be created or listed.
 */
export function openSearchIndexes(dir: string, opts: NgramIndexOptions): SearchIndexes {
  return { messages: NgramIndex.open(dir, opts), knowledge: NgramIndex.open(join(dir, KNOWLEDGE_INDEX_DIR), opts) };
}

/** See the module doc. One per open app. */
export class SearchIndexer {
  /** What message searches are handed (queryMessages). */
  readonly messages: CandidateIndex;
  /** What knowledge searches are handed (queryKnowledge). */
  readonly knowledge: CandidateIndex;
  /** True once every document up to the log head is in its index; live commits then add theirs. */
  private caughtUp = false;
  private catchingUp: Promise<void> | null = null;
  /** Set when shards were dropped during a catch-up: it restarts from the indexes' new ends. */
  private rewound = false;
  private closed = false;

  /**
   * Input: the open indexes (openSearchIndexes) and their documents per shard, the state (its
   * message rows and knowledge revisions name the documents), the records (to read documents back
   * and the stored hash of a seq), the log head and durable head (functions), and a logger for
   * what happened to the index (`info` for progress, `warn` for a shard dropped, rebuilt or not
   * written).
   */
  constructor(
    private readonly indexes: SearchIndexes,
    private readonly shardDocsMax: number,
    private readonly state: State,
    private readonly records: SegmentRecords,
    private readonly head: () => { seq: number; durableSeq: number },
    private readonly log: (level: 'info' | 'warn', line: string) => void,
  ) {
    this.messages = this.view('messages');
    this.knowledge = this.view('knowledge');
  }

  /**
   * Matches each index's persisted shards against the log, oldest first: a shard is kept only
   * while its last seq is in the log and that record carries the shard's recorded chained hash;
   * from the first one that does not, every shard is dropped (its documents are added again).
   * Shards holding one of `erasedSeqs` (records erased while the server was down) are dropped
   * first.
   */
  validate(erasedSeqs: readonly number[] = []): void {
    const { seq: headSeq } = this.head();
    for (const kind of ['messages', 'knowledge'] as const) {
      const index = this.indexes[kind];
      if (erasedSeqs.length > 0) index.truncateFrom(Math.min(...erasedSeqs));
      for (const shard of index.shards()) {
        let stored: string | null = null;
        try {
          stored = shard.lastSeq <= headSeq ? this.records.storedHashOf(shard.lastSeq) : null;
        } catch {
          stored = null;
        }
        if (stored !== shard.lastHash) {
          this.log('warn', `search index: ${kind} shard ${shard.firstSeq}..${shard.lastSeq} does not match the log; it and the shards after it are rebuilt`);
          index.truncateFrom(shard.firstSeq);
          break;
        }
      }
    }
  }

  /** The CandidateIndex of one kind: a damaged shard restarts the catch-up from it and rethrows. */
  private view(kind: DocumentKind): CandidateIndex {
    const index = this.indexes[kind];
    const self = this;
    return {
      get throughSeq() {
        return index.throughSeq;
      },
      *candidates(lq: string, opts: { beforeSeq?: number }): Generator<number, void, undefined> {
        try {
          yield* index.candidates(lq, opts);
        } catch (err) {
          if (err instanceof NgramIndexDamagedError) {
            self.log('warn', `search index: ${err.message}; rebuilding from seq ${err.firstSeq}`);
            self.caughtUp = false;
            index.truncateFrom(err.firstSeq);
            self.rewound = true;
            void self.startCatchUp().catch((e: Error) => self.log('warn', `search index: catching up after the rebuild failed (${e.message}); searches scan`));
          }
          throw err;
        }
      },
    };
  }

  /**
   * Records `seqs` are being erased (the erasure contract): in each index the shards from the one
   * holding the lowest of them on are dropped and their documents added again from the log,
   * without them.
   */
  erased(seqs: readonly number[]): void {
    if (seqs.length === 0) return;
    this.caughtUp = false;
    const from = Math.min(...seqs);
    this.indexes.messages.truncateFrom(from);
    this.indexes.knowledge.truncateFrom(from);
    this.rewound = true;
    void this.startCatchUp().catch((err: Error) => this.log('warn', `search index: catching up after an erasure failed (${err.message})`));
  }

  /** After a commit (apply done): adds the record's document when the indexes are caught up. */
  committed(record: LogRecord, payloadJson: string): void {
    if (!this.caughtUp) return;
    const kind = kindOf(record.type);
    if (kind === null) return;
    this.indexes[kind].add(record.seq, documentTexts(record.type, payloadJson)!);
  }

  /** After a group commit: lets each index seal a full live shard (its records are on disk now). */
  durable(seq: number, hash: string): void {
    if (!this.caughtUp) return;
    for (const index of [this.indexes.messages, this.indexes.knowledge]) {
      index.durable(seq, hash).catch((err: Error) => this.log('warn', `search index: a shard was not written (${err.message}); it stays in memory`));
    }
  }

  /** Starts adding the documents the indexes lack, in slices; resolves when they cover the head. */
  startCatchUp(): Promise<void> {
    this.catchingUp ??= this.catchUp().finally(() => {
      this.catchingUp = null;
    });
    return this.catchingUp;
  }

  /** Resolves when the indexes cover every document up to the head (tests, benchmarks). */
  whenCaughtUp(): Promise<void> {
    return this.caughtUp ? Promise.resolve() : this.startCatchUp();
  }

  private async catchUp(): Promise<void> {
    const { forum, knowledge } = this.state;
    const { messages: mIndex, knowledge: kIndex } = this.indexes;
    const slice = new SliceTimer();
    // Two ascending seq lists merged, each from its own index's end: message rows and knowledge revisions.
    let m = forum.rows.seq.upperBound(mIndex.throughSeq);
    let k = firstKnowledgeAfter(knowledge.order, kIndex.throughSeq);
    let added = 0;
    this.rewound = false;
    for (;;) {
      if (this.closed) return;
      if (this.rewound) {
        this.rewound = false;
        m = forum.rows.seq.upperBound(mIndex.throughSeq);
        k = firstKnowledgeAfter(knowledge.order, kIndex.throughSeq);
      }
      const mSeq = m < forum.rows.seq.length ? forum.rows.seq.at(m) : Infinity;
      const kSeq = k < knowledge.order.length ? knowledge.order[k]!.seq : Infinity;
      const seq = Math.min(mSeq, kSeq);
      if (seq === Infinity) break;
      const index = seq === mSeq ? mIndex : kIndex;
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
      if (texts !== null) index.add(seq, texts);
      added++;
      this.sealIfFull(index, seq);
      if ((added & 63) === 0 && slice.due()) await slice.next();
    }
    // Synchronously after the last document: from here on every commit adds its own.
    this.caughtUp = true;
    this.log('info', `search index: covers the log (${added} documents added at this start)`);
  }

  /** A full live shard of `index` is sealed on `seq` (its last document) once that record is on disk. */
  private sealIfFull(index: NgramIndex, seq: number): void {
    if (index.liveDocs < this.shardDocsMax || seq > this.head().durableSeq) return;
    let hash: string | null = null;
    try {
      hash = this.records.storedHashOf(seq);
    } catch (err) {
      // A damaged record: the live shard is not sealed on it (it stays in memory).
      if (!(err instanceof RecordDamagedError)) throw err;
    }
    if (hash !== null) void index.durable(seq, hash).catch((err: Error) => this.log('warn', `search index: a shard was not written (${err.message})`));
  }

  /** Waits for shard writes in flight, then closes the indexes' files. */
  async close(): Promise<void> {
    this.closed = true;
    for (const index of [this.indexes.messages, this.indexes.knowledge]) {
      await index.flush();
      index.close();
    }
  }
}

/** First index in `order` (ascending by seq) whose seq is greater than `seq`. */
function firstKnowledgeAfter(order: readonly { seq: number }[], seq: number): number {
  return upperBound(order.length, (i) => order[i]!.seq, seq);
}
