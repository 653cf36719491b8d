/**
 * A search index build worker (issue 30, "build the search index in workers too"): during a whole
 * rebuild, builds complete n-gram shard files for a contiguous run of segments off the event loop.
 * The owner (domain/search-indexer.ts `SearchIndexer`) splits the log's durable segments between
 * workers, adopts their files in seq order (checking each one's MAC and its (lastSeq, lastHash)
 * against the log) and adds the records appended since itself.
 *
 * The worker reads its segment files directly and checks every line with the one record codec
 * (record-format.ts `parseLine`: framing, seq continuity, hash chain from `prevHash`). Records of
 * seq fromSeq..toSeq are documents as the job's `documents` table (the domain's rule, handed down
 * as data; documents.ts extracts the texts) says, one index per kind, from each kind's `startAt` on; tombstones and the seqs in `erased` (erasures not yet
 * rewritten into tombstones) are no documents. Each kind's shard is filled by a SortedShardBuilder
 * (build.ts, issue 39: postings appended and sorted at the seal, the same file bytes as the live
 * shard's encoder in shard.ts). Every `shardDocsMax` documents of a kind, the shard is sealed on
 * that document's seq, encoded and written
 * temp → fsync → rename into `outDir[kind]` (fsutil.ts `writeFileAtomic`). At the end, the partial
 * shard of each kind is sealed on toSeq (any record: its chained hash is known), so that the next
 * worker's shards, which start at toSeq + 1, follow it, and the owner is left only the records
 * appended since the build began.
 *
 * workerData: BuildJob. Messages to the owner: `{type:'shard', kind, path, firstSeq, lastSeq}` per
 * file written, in seq order per kind; `{type:'done'}` at the end. A damaged line or a failed
 * write ends the worker with an error (the owner then adds the rest on its own thread).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseLine } from '../record-format.js';
import { writeFileAtomic } from '../fsutil.js';
import { SortedShardBuilder } from './build.js';
import { shardFileName } from './shard.js';
import { documentTextsOf, type DocumentRule } from './documents.js';

/** One worker's share of a rebuild (see the module doc); K names the kinds of document. */
export interface BuildJob<K extends string = string> {
  /** Segment files to read, in seq order: their paths and first seqs. */
  segments: { path: string; firstSeq: number }[];
  /** Chained hash of the record before the first segment's first record (64 zeros before seq 1). */
  prevHash: string;
  /** Records fromSeq..toSeq are indexed (the segments may hold records before and after). */
  fromSeq: number;
  toSeq: number;
  /** Per kind, the first seq its index still lacks (its throughSeq + 1). */
  startAt: Record<K, number>;
  /** Record type → the kind of document and its text fields (records of other types are none). */
  documents: ReadonlyMap<string, DocumentRule<K>>;
  shardDocsMax: number;
  /** The derived-file key the shard files are authenticated with. */
  key: Uint8Array;
  outDir: Record<K, string>;
  /** Seqs being erased whose lines may not be tombstones yet. */
  erased: number[];
}

/** A message from a build worker to its owner. */
export type BuildMessage<K extends string = string> = { type: 'shard'; kind: K; path: string; firstSeq: number; lastSeq: number } | { type: 'done' };

async function run<K extends string>(job: BuildJob<K>): Promise<void> {
  const key = Buffer.from(job.key);
  const erased = new Set(job.erased);
  const kinds = Object.keys(job.outDir) as K[];
  /** Per kind: the shard being filled (null between shards) and the first seq of the next one. */
  const builds = new Map<K, { shard: SortedShardBuilder | null; nextFirstSeq: number }>(kinds.map((kind) => [kind, { shard: null, nextFirstSeq: Math.max(job.fromSeq, job.startAt[kind]) }]));
  for (const dir of Object.values<string>(job.outDir)) mkdirSync(dir, { recursive: true });

  const seal = async (kind: K, seq: number, hash: string): Promise<void> => {
    const b = builds.get(kind)!;
    const shard = b.shard!;
    b.shard = null;
    b.nextFirstSeq = seq + 1;
    const path = join(job.outDir[kind], shardFileName(shard.firstSeq, seq));
    await writeFileAtomic(path, shard.encode(seq, hash, key));
    parentPort!.postMessage({ type: 'shard', kind, path, firstSeq: shard.firstSeq, lastSeq: seq } satisfies BuildMessage);
  };

  let prevHash = job.prevHash;
  let lastHash = '';
  let seq = job.segments[0]?.firstSeq ?? job.fromSeq;
  segments: for (const segment of job.segments) {
    if (segment.firstSeq !== seq) throw new Error(`build worker: segment ${segment.path} starts at ${segment.firstSeq}, expected ${seq}`);
    const buf = readFileSync(segment.path);
    let pos = 0;
    while (pos < buf.length) {
      if (seq > job.toSeq) break segments;
      const nl = buf.indexOf(0x0a, pos);
      if (nl < 0) throw new Error(`build worker: record ${seq} in ${segment.path} has no newline`);
      const parsed = parseLine(buf, pos, nl, prevHash, seq, segment.path, false, String);
      prevHash = parsed.hash;
      lastHash = parsed.hash;
      pos = nl + 1;
      const rule = seq >= job.fromSeq && !parsed.erased && !erased.has(seq) ? job.documents.get(parsed.record.type) : undefined;
      if (rule !== undefined && seq >= job.startAt[rule.kind]) {
        const kind = rule.kind;
        const b = builds.get(kind)!;
        b.shard ??= new SortedShardBuilder(b.nextFirstSeq, job.shardDocsMax);
        b.shard.add(seq, documentTextsOf(rule.fields, parsed.payloadJson));
        if (b.shard.docs >= job.shardDocsMax) await seal(kind, seq, parsed.hash);
      }
      seq++;
    }
  }
  if (seq <= job.toSeq) throw new Error(`build worker: the segments end at record ${seq - 1}, before ${job.toSeq}`);
  for (const kind of kinds) {
    if (builds.get(kind)!.shard !== null) await seal(kind, job.toSeq, lastHash);
  }
  parentPort!.postMessage({ type: 'done' } satisfies BuildMessage);
}

await run(workerData as BuildJob);
