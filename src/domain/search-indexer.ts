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
 * When more than a shard's worth of documents is missing (a start without an index, a rebuild),
 * build worker threads (store/search/build-worker.ts) write complete shard files from the segment
 * files and this thread adopts them in seq order (issue 30); the rest is added here, in slices.
 *
 * Until an index covers the log head, searches scan the newest candidates it does not cover and
 * ask it for the rest (domain/indexed-scan.ts `indexedScan`), so answers never depend on how
 * far it has got.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { NgramIndex, NgramIndexDamagedError, type NgramIndexOptions } from '../store/search/index.js';
import type { SegmentRecords } from '../store/records.js';
import { RecordDamagedError } from '../store/errors.js';
import type { LogRecord } from '../store/log.js';
import type { State } from './state.js';
import type { CandidateIndex } from './indexed-scan.js';
import { SliceTimer } from './slices.js';
import { listSegments } from '../store/segment.js';
import { GENESIS_HASH } from '../store/record-format.js';
import type { BuildJob, BuildMessage } from '../store/search/build-worker.js';
import { documentTextsOf, type DocumentRule } from '../store/search/documents.js';

/** The kinds of document, each with its own n-gram index. */
export type DocumentKind = 'messages' | 'knowledge';

/**
 * Folder of the knowledge index's shard files, inside the search index folder (the message
 * index's shard files stay in the search index folder itself).
 */
const KNOWLEDGE_INDEX_DIR = 'knowledge';
/** Folder inside the search index folder where build workers write shard files before adoption. */
const BUILD_DIR = 'build';

/**
 * Which records are documents: record type → the kind of document (its index) and the payload
 * fields that are its texts (a message's content; a knowledge revision's title and content, two
 * texts, so a match never spans them). Handed to the build workers as data.
 */
const DOCUMENTS: ReadonlyMap<string, DocumentRule<DocumentKind>> = new Map([
  ['message.create', { kind: 'messages', fields: ['content'] }],
  ['knowledge.publish', { kind: 'knowledge', fields: ['title', 'content'] }],
]);

/**
 * A committed document waiting for its group commit to be indexed (issue 39): its seq, its rule
 * and its payload (the object the record was built from: its texts are read from it, the payload
 * JSON is not parsed again).
 */
interface QueuedDocument {
  seq: number;
  rule: DocumentRule<DocumentKind>;
  payload: unknown;
}

/** The texts record `type` with payload JSON `payloadJson` contributes to the index, or null. */
export function documentTexts(type: string, payloadJson: string): string[] | null {
  const rule = DOCUMENTS.get(type);
  return rule === undefined ? null : documentTextsOf(rule.fields, payloadJson);
}

/** The message index and the knowledge index, one per document kind. */
export interface SearchIndexes {
  messages: NgramIndex;
  knowledge: NgramIndex;
  /** The derived-file key their shard files are authenticated with (build workers write with it). */
  key: Buffer;
}

/**
 * Opens (creating) the two indexes under the search index folder `dir`: messages in `dir` itself,
 * knowledge revisions in `dir`/knowledge (NgramIndex.open: damage is dropped and reported, never
 * thrown). Shards in `dir` written when both kinds shared one index stay valid: a message search
 * rejects their knowledge documents by seq, as it rejects any other candidate that is no message.
 * Throws only when a folder cannot be created or listed.
 */
export function openSearchIndexes(dir: string, opts: NgramIndexOptions): SearchIndexes {
  // Files a build worker wrote and nobody adopted (a stop or crash during a build).
  rmSync(join(dir, BUILD_DIR), { recursive: true, force: true });
  return { messages: NgramIndex.open(dir, opts), knowledge: NgramIndex.open(join(dir, KNOWLEDGE_INDEX_DIR), opts), key: opts.key };
}

/**
 * Where and how build workers run (issue 30): the log's folder (they read its segments), the
 * search index folder (they write under its build folder) and how many (0: none).
 */
export interface BuildOptions {
  logDir: string;
  searchDir: string;
  workers: number;
}

/** See the module doc. One per open app. */
export class SearchIndexer {
  /** What message searches are handed (queryMessages). */
  readonly messages: CandidateIndex;
  /** What knowledge searches are handed (queryKnowledge). */
  readonly knowledge: CandidateIndex;
  /** True once every document up to the log head is in its index; later commits then queue theirs (`committed`). */
  private caughtUp = false;
  private catchingUp: Promise<void> | null = null;
  /** Set when shards were dropped during a catch-up: it restarts from the indexes' new ends. */
  private rewound = false;
  private closed = false;
  /** Stops the worker build under way (rewind, close), or null. */
  private cancelBuild: (() => void) | null = null;
  /** Shard files adopted from build workers since open (tests, benchmarks). */
  shardsFromWorkers = 0;
  /**
   * Documents committed while caught up and not yet in their index (issue 39): added once per
   * group commit, after its answers are sent, instead of one by one on each request's path.
   * Until then searches scan them as any document above the index's throughSeq.
   */
  private queued: QueuedDocument[] = [];
  /** The durable head (seq, chained hash) a scheduled drain lets the indexes seal on, or null. */
  private durableAt: { seq: number; hash: string } | null = null;
  private drainScheduled = false;

  /**
   * Input: the open indexes (openSearchIndexes) and their documents per shard, the state (its
   * message rows and knowledge revisions name the documents), the records (to read documents back
   * and the stored hash of a seq), the log head and durable head (functions), and a logger for
   * what happened to the index (`info` for progress, `warn` for a shard dropped, rebuilt or not
   * written), and where build workers run (null: the catch-up runs on this thread only).
   */
  constructor(
    private readonly indexes: SearchIndexes,
    private readonly shardDocsMax: number,
    private readonly state: State,
    private readonly records: SegmentRecords,
    private readonly head: () => { seq: number; durableSeq: number },
    private readonly log: (level: 'info' | 'warn', line: string) => void,
    private readonly build: BuildOptions | null = null,
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
            self.rewind(index, err.firstSeq);
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
    const from = Math.min(...seqs);
    this.rewind(this.indexes.messages, from);
    this.rewind(this.indexes.knowledge, from);
    void this.startCatchUp().catch((err: Error) => this.log('warn', `search index: catching up after an erasure failed (${err.message})`));
  }

  /**
   * Drops `index`'s shards from the one holding `seq` on; the catch-up (and a worker build under
   * way, which is stopped: its files may hold those records) restarts from the index's new end.
   */
  private rewind(index: NgramIndex, seq: number): void {
    this.caughtUp = false;
    // The catch-up adds them again from the state's rows (an erased one is no document).
    this.queued = [];
    index.truncateFrom(seq);
    this.rewound = true;
    const cancel = this.cancelBuild;
    if (cancel !== null) {
      this.cancelBuild = null;
      this.log('info', `search index: records from seq ${seq} on are indexed again; the build in worker threads restarts`);
      cancel();
    }
  }

  /**
   * After a commit (apply done): when the indexes are caught up, queues the record's document; it
   * is added at the group commit that makes it durable (`durable`), after the answers are sent.
   * `payloadJson` is read only when the record carries no payload object.
   */
  committed(record: LogRecord, payloadJson: string): void {
    if (!this.caughtUp) return;
    const rule = DOCUMENTS.get(record.type);
    if (rule === undefined) return;
    this.queued.push({ seq: record.seq, rule, payload: typeof record.payload === 'object' && record.payload !== null ? record.payload : JSON.parse(payloadJson) });
  }

  /**
   * After a group commit (records up to `seq`, chained hash `hash`, on disk): on a later turn of
   * the event loop — after the answers the commit released are written — adds the queued
   * documents to their indexes, then lets each index seal a full live shard. Several group commits
   * before that turn are drained once.
   */
  durable(seq: number, hash: string): void {
    if (!this.caughtUp) return;
    this.durableAt = { seq, hash };
    if (this.drainScheduled) return;
    this.drainScheduled = true;
    setImmediate(() => {
      this.drainScheduled = false;
      this.drain();
    });
  }

  /** Adds the queued documents that are durable, then lets each index seal on the durable head. */
  private drain(): void {
    const at = this.durableAt;
    this.durableAt = null;
    if (!this.caughtUp || this.closed || at === null) return;
    this.addQueued(at.seq);
    for (const index of [this.indexes.messages, this.indexes.knowledge]) {
      index.durable(at.seq, at.hash).catch((err: Error) => this.log('warn', `search index: a shard was not written (${err.message}); it stays in memory`));
    }
  }

  /**
   * Adds the queued documents up to seq `throughSeq` (default: all) to their indexes, in seq
   * order, sealing each full live shard that is durable; later ones stay queued.
   */
  private addQueued(throughSeq = Infinity): void {
    const queued = this.queued;
    let n = 0;
    while (n < queued.length && queued[n]!.seq <= throughSeq) n++;
    this.queued = n === queued.length ? [] : queued.slice(n);
    for (let i = 0; i < n; i++) {
      const d = queued[i]!;
      const index = this.indexes[d.rule.kind];
      // Never expected (a rewind empties the queue); add() would throw outside any request.
      if (d.seq <= index.throughSeq) continue;
      const payload = d.payload as Record<string, string>;
      index.add(d.seq, d.rule.fields.map((f) => payload[f]!.toLowerCase()));
      // Shards keep their size when one drain adds more than a shard's worth (as in the catch-up).
      this.sealIfFull(index, d.seq);
    }
  }

  /** Starts adding the documents the indexes lack, in slices; resolves when they cover the head. */
  startCatchUp(): Promise<void> {
    this.catchingUp ??= this.catchUp().finally(() => {
      this.catchingUp = null;
    });
    return this.catchingUp;
  }

  /**
   * Resolves when the indexes cover every document up to the head (tests, benchmarks): once
   * caught up, the documents still queued for their group commit are added now.
   */
  whenCaughtUp(): Promise<void> {
    if (!this.caughtUp) return this.startCatchUp();
    this.addQueued();
    return Promise.resolve();
  }

  private async catchUp(): Promise<void> {
    const { forum, knowledge } = this.state;
    const { messages: mIndex, knowledge: kIndex } = this.indexes;
    if (this.build !== null && this.build.workers > 0) {
      // A rewind during the build stops it; the build starts again from the indexes' new ends.
      do {
        this.rewound = false;
        await this.buildInWorkers(this.build);
      } while (this.rewound && !this.closed);
    }
    const slice = new SliceTimer();
    // Two ascending seq lists merged, each from its own index's end: message rows and knowledge revisions.
    let m = forum.rows.seq.upperBound(mIndex.throughSeq);
    let k = knowledge.rows.seq.upperBound(kIndex.throughSeq);
    let added = 0;
    this.rewound = false;
    for (;;) {
      if (this.closed) return;
      if (this.rewound) {
        this.rewound = false;
        m = forum.rows.seq.upperBound(mIndex.throughSeq);
        k = knowledge.rows.seq.upperBound(kIndex.throughSeq);
      }
      const mSeq = m < forum.rows.seq.length ? forum.rows.seq.at(m) : Infinity;
      const kSeq = k < knowledge.rows.seq.length ? knowledge.rows.seq.at(k) : Infinity;
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

  /**
   * When more than a shard's worth of documents is missing: splits the durable segments from the
   * lowest seq an index lacks into `opts.workers` contiguous runs of about equal bytes, one build
   * worker each (store/search/build-worker.ts), and adopts their shard files per kind in seq
   * order as they arrive: each must follow its index's end, pass NgramIndex.adoptFile's checks
   * (MAC included) and carry the log's chained hash of its lastSeq, else the build stops there.
   * Searches meanwhile scan what the indexes do not cover yet. Resolves when every worker has
   * ended, failed (logged; the catch-up adds the rest on this thread) or been stopped by a rewind;
   * files not adopted are deleted.
   */
  private async buildInWorkers(opts: BuildOptions): Promise<void> {
    const { forum, knowledge } = this.state;
    const { messages: mIndex, knowledge: kIndex } = this.indexes;
    const missing =
      forum.rows.seq.length - forum.rows.seq.upperBound(mIndex.throughSeq) + (knowledge.rows.seq.length - knowledge.rows.seq.upperBound(kIndex.throughSeq));
    const durableSeq = this.head().durableSeq;
    const startAt = { messages: mIndex.throughSeq + 1, knowledge: kIndex.throughSeq + 1 };
    const fromSeq = Math.min(startAt.messages, startAt.knowledge);
    if (missing < this.shardDocsMax || fromSeq > durableSeq) return;
    const all = listSegments(opts.logDir);
    const segments = all.filter((seg, i) => seg.firstSeq <= durableSeq && (i + 1 === all.length || all[i + 1]!.firstSeq > fromSeq));
    const runs = splitBySize(segments, opts.workers);
    const buildDir = join(opts.searchDir, BUILD_DIR);
    rmSync(buildDir, { recursive: true, force: true });
    const jobs: BuildJob<DocumentKind>[] = [];
    try {
      for (let r = 0; r < runs.length; r++) {
        const first = runs[r]![0]!.firstSeq;
        const prevHash = first === 1 ? GENESIS_HASH : this.records.storedHashOf(first - 1);
        // Not located (cannot happen for a durable seq): no worker build.
        if (prevHash === null) return;
        jobs.push({
          segments: runs[r]!.map((seg) => ({ path: join(opts.logDir, seg.name), firstSeq: seg.firstSeq })),
          prevHash,
          fromSeq: r === 0 ? fromSeq : first,
          toSeq: r + 1 < runs.length ? runs[r + 1]![0]!.firstSeq - 1 : durableSeq,
          startAt,
          documents: DOCUMENTS,
          shardDocsMax: this.shardDocsMax,
          key: this.indexes.key,
          outDir: { messages: join(buildDir, 'messages'), knowledge: join(buildDir, 'knowledge') },
          erased: [...this.records.locations.vouched.keys()],
        });
      }
    } catch (err) {
      // A damaged record before a run: no worker build (the catch-up reads record by record).
      if (err instanceof RecordDamagedError) return;
      throw err;
    }
    const started = performance.now();
    const pending: Record<DocumentKind, Extract<BuildMessage<DocumentKind>, { type: 'shard' }>[]> = { messages: [], knowledge: [] };
    let adopted = 0;
    let stopped = false;
    const workers: Worker[] = [];
    let running = jobs.length;
    let finished!: () => void;
    const done = new Promise<void>((resolve) => (finished = resolve));
    const stop = (why: string | null): void => {
      if (stopped) return;
      stopped = true;
      if (why !== null) this.log('warn', `search index: the build in worker threads stopped (${why}); the rest is added on the main thread`);
      // Files not adopted may hold records erased since (the erasure contract): gone now, and
      // again once the workers have stopped (a write in flight may still land).
      rmSync(buildDir, { recursive: true, force: true });
      void Promise.all(workers.map((w) => w.terminate())).finally(() => {
        rmSync(buildDir, { recursive: true, force: true });
        finished();
      });
    };
    /** Adopts every file of `kind` that follows its index's end, in seq order. */
    const adoptReady = (kind: DocumentKind): void => {
      const index = this.indexes[kind];
      for (;;) {
        if (stopped) return;
        const at = pending[kind].findIndex((m) => m.firstSeq === index.throughSeq + 1);
        if (at < 0) return;
        const m = pending[kind].splice(at, 1)[0]!;
        let meta;
        try {
          meta = index.adoptFile(m.path);
        } catch (err) {
          stop(`${kind} shard ${m.firstSeq}..${m.lastSeq} not adopted: ${(err as Error).message}`);
          return;
        }
        let stored: string | null = null;
        try {
          stored = this.records.storedHashOf(meta.lastSeq);
        } catch {
          stored = null;
        }
        if (stored !== meta.lastHash) {
          index.truncateFrom(meta.firstSeq);
          stop(`${kind} shard ${meta.firstSeq}..${meta.lastSeq} does not match the log`);
          return;
        }
        adopted++;
        this.shardsFromWorkers++;
      }
    };
    this.cancelBuild = () => stop(null);
    for (const job of jobs) {
      const worker = new Worker(new URL('../store/search/build-worker.js', import.meta.url), { workerData: job });
      workers.push(worker);
      worker.on('message', (m: BuildMessage<DocumentKind>) => {
        if (stopped) return;
        if (m.type === 'shard') {
          pending[m.kind].push(m);
          adoptReady(m.kind);
        } else if (--running === 0) {
          this.log('info', `search index: ${adopted} shard files built in ${jobs.length} worker thread(s) in ${((performance.now() - started) / 1000).toFixed(1)} s`);
          stop(null);
        }
      });
      worker.on('error', (err) => stop(err.message));
    }
    await done;
    this.cancelBuild = null;
  }

  /** Waits for shard writes in flight, then closes the indexes' files. */
  async close(): Promise<void> {
    this.closed = true;
    this.cancelBuild?.();
    for (const index of [this.indexes.messages, this.indexes.knowledge]) {
      await index.flush();
      index.close();
    }
  }
}

/** `segments` (in seq order) cut into at most `parts` contiguous runs of about equal bytes. */
function splitBySize<T extends { sizeBytes: number }>(segments: readonly T[], parts: number): T[][] {
  const total = segments.reduce((sum, seg) => sum + seg.sizeBytes, 0);
  const runs: T[][] = [];
  let run: T[] = [];
  let bytes = 0;
  for (const seg of segments) {
    run.push(seg);
    bytes += seg.sizeBytes;
    if (runs.length + 1 < parts && bytes >= (total * (runs.length + 1)) / parts) {
      runs.push(run);
      run = [];
    }
  }
  if (run.length > 0) runs.push(run);
  return runs;
}
