/**
 * Knowledge library with revisions (parts 2 "Knowledge", 4 "Knowledge and search", 5 item 8, 6).
 *
 * Every revision is one `knowledge.publish` record whose payload is the complete Knowledge
 * record; a revision keeps the item id and raises `revision` by one. Nothing is overwritten:
 * every revision stays in the log, in the index, in the discussion feed and in the topic export.
 *
 * The index keeps, per revision, only what filters need (id, revision, author, topic, log seq,
 * whether it is the latest); the public JSON is the record's stored canonical JSON (sorted keys),
 * read back from the log when a response needs it (issue 17: text is not kept in memory), so
 * live writes and replay answer byte-identical JSON. `q` reads each candidate back and checks
 * its lower-cased title and content, newest first, through the one indexed scan
 * (domain/indexed-scan.ts).
 */
import type { DecisionContext } from '../decision.js';
import type { LogRecord } from '../../store/log.js';
import { KNOWLEDGE_EVIDENCE_SOURCES_MIN, type KNOWLEDGE_CATEGORIES } from '../../constants.js';
import { fail, invalid, notFound } from '../../errors.js';
import { addDiscussionEvent, type FeedsState } from '../feeds/feeds.js';
import type { ForumState } from '../forum/forum.js';
import { makeId } from '../ids.js';
import type { RecordSource } from '../../store/records.js';
import { lowerBound } from '../../containers/binary-search.js';
import { indexedScan, type CandidateIndex } from '../indexed-scan.js';
import { discussionView, statusOf, textVisible, type ModerationStatus, type Reader } from '../moderation/moderation.js';

export type KnowledgeCategory = (typeof KNOWLEDGE_CATEGORIES)[number];

/** The Knowledge resource of part 2 (all fields required). */
export interface Knowledge {
  /** Stable across revisions. */
  id: string;
  /** 1 for the first publication, +1 per revision. */
  revision: number;
  authorId: string;
  title: string;
  content: string;
  category: KnowledgeCategory;
  /** http(s) URLs; author claims, not fact checks. */
  sources: string[];
  topicId: string | null;
  created: string;
}

/** One indexed revision: no text (see the module doc). */
export interface KnowledgeEntry {
  id: string;
  revision: number;
  authorId: string;
  topicId: string | null;
  /** Log seq of the `knowledge.publish` record; its payload is the revision's public JSON. */
  seq: number;
  /** False once a later revision of the same item is applied (history=false skips it). */
  latest: boolean;
}

/** Knowledge revisions by item, author and topic, all in log order. */
export interface KnowledgeState {
  /** Item id → every revision, ascending (index i holds revision i + 1). */
  items: Map<string, KnowledgeEntry[]>;
  /** Every revision of every item, in log order (= creation order). */
  order: KnowledgeEntry[];
  /** Author id → every revision by that author, in log order. */
  byAuthor: Map<string, KnowledgeEntry[]>;
  /**
   * Topic id → every revision attached to that topic, in log order (the `knowledgeByTopic` index
   * the topic export reads). A revision is filed under its own topicId, so an item whose revision
   * moves it to another topic appears under both, each revision once.
   */
  byTopic: Map<string, KnowledgeEntry[]>;
  /** Where revisions' JSON is read back from. */
  records: RecordSource;
}

/** An empty knowledge index whose revisions' JSON is read from `records`. */
export function createKnowledgeState(records: RecordSource): KnowledgeState {
  return { items: new Map(), order: [], byAuthor: new Map(), byTopic: new Map(), records };
}

/** The public JSON of a revision: its record's canonical payload JSON, as stored. */
export function knowledgeJsonOf(s: KnowledgeState, e: KnowledgeEntry): string {
  return s.records.read(e.seq).payloadJson;
}

function pushTo<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

// ---- decision ----

/** Validated POST /api/knowledge body (schemas/KnowledgeInput.json; title/content trimmed, sources defaulted). */
export interface KnowledgeInput {
  title: string;
  content: string;
  category: KnowledgeCategory;
  sources: string[];
  topicId?: string;
  previousId?: string;
  expectedRevision?: number;
}

/**
 * Decides `knowledge.publish` (POST /api/knowledge, part 4).
 * Input: the validated body; ctx.authorId (caller), ctx.seq (seq the record will get, for new
 * ids `kn_<seq>`), ctx.created (ISO time). Output: the complete Knowledge record to append —
 * revision 1 with a new id, or, with previousId, revision n + 1 of that item with its id.
 * A revision replaces every field: it is a full KnowledgeInput, so an omitted topicId gives
 * topicId null and omitted sources give [] (nothing is inherited from the previous revision).
 * Throws 400 (previousId and expectedRevision not given together; `evidence` without a source),
 * 404 (unknown previousId or topicId), 403 (caller is not the author of revision 1, part 5
 * item 8), 409 (expectedRevision is not the current revision).
 */
export function decideKnowledge(
  s: KnowledgeState,
  forum: ForumState,
  input: KnowledgeInput,
  ctx: Pick<DecisionContext, 'authorId' | 'seq' | 'created'>,
): Knowledge {
  // The schema already enforces both rules; they are repeated here because decideKnowledge is
  // also the entry point for other bindings, and a half-specified revision must never publish.
  if ((input.previousId === undefined) !== (input.expectedRevision === undefined)) {
    throw invalid('fields "previousId" and "expectedRevision" must be given together (both to publish a revision, neither for a new item)');
  }
  if (input.category === 'evidence' && input.sources.length < KNOWLEDGE_EVIDENCE_SOURCES_MIN) {
    throw invalid(`category "evidence" requires at least ${KNOWLEDGE_EVIDENCE_SOURCES_MIN} source in field "sources"`);
  }
  let id: string;
  let revision: number;
  if (input.previousId !== undefined) {
    const revisions = s.items.get(input.previousId);
    if (!revisions) throw notFound(`no knowledge item with id "${input.previousId}" (previousId)`);
    const originalAuthorId = revisions[0]!.authorId;
    if (originalAuthorId !== ctx.authorId) {
      throw fail('NOT_AUTHOR', `knowledge item "${input.previousId}" belongs to another author; only its original author may publish revisions`);
    }
    const current = revisions[revisions.length - 1]!.revision;
    if (input.expectedRevision !== current) {
      throw fail('REVISION_CONFLICT', `expectedRevision ${input.expectedRevision} is stale: knowledge item "${input.previousId}" is at revision ${current}; reread it and revise the current revision`);
    }
    id = input.previousId;
    revision = current + 1;
  } else {
    id = makeId('kn', ctx.seq);
    revision = 1;
  }
  if (input.topicId !== undefined && !forum.topics.has(input.topicId)) {
    throw notFound(`no topic with id "${input.topicId}" (topicId)`);
  }
  return {
    id,
    revision,
    authorId: ctx.authorId,
    title: input.title,
    content: input.content,
    category: input.category,
    sources: [...input.sources],
    topicId: input.topicId ?? null,
    created: ctx.created,
  };
}

// ---- apply ----

/**
 * Applies `knowledge.publish`; returns false for other record types. Indexes the revision and
 * emits its discussion event (part 6: knowledge events include every published revision).
 * Throws Error when the revision does not follow the item's last one (a damaged or foreign log;
 * startup stops rather than serve a broken history).
 */
export function applyKnowledge(s: KnowledgeState, feeds: FeedsState, record: LogRecord, payloadJson: string): boolean {
  if (record.type !== 'knowledge.publish') return false;
  // The payload is the Knowledge record; its canonical JSON from the log is served as is, so
  // responses are byte-identical before and after a restart and replay serialises nothing.
  const knowledge = record.payload as Knowledge;
  const revisions = s.items.get(knowledge.id);
  const expected = (revisions?.length ?? 0) + 1;
  if (knowledge.revision !== expected) {
    throw new Error(`knowledge.publish at seq ${record.seq}: item "${knowledge.id}" revision ${knowledge.revision}, expected ${expected}`);
  }
  // Ids already held by an index are shared, not copied per revision (issue 17 memory).
  const entry: KnowledgeEntry = {
    id: revisions?.[0]?.id ?? knowledge.id,
    revision: knowledge.revision,
    authorId: s.byAuthor.get(knowledge.authorId)?.[0]?.authorId ?? knowledge.authorId,
    topicId: knowledge.topicId === null ? null : (s.byTopic.get(knowledge.topicId)?.[0]?.topicId ?? knowledge.topicId),
    seq: record.seq,
    latest: true,
  };
  if (revisions) {
    revisions[revisions.length - 1]!.latest = false;
    revisions.push(entry);
  } else s.items.set(knowledge.id, [entry]);
  s.order.push(entry);
  pushTo(s.byAuthor, knowledge.authorId, entry);
  if (knowledge.topicId !== null) pushTo(s.byTopic, knowledge.topicId, entry);
  addDiscussionEvent(feeds, record.seq, 'knowledge', knowledge.topicId);
  return true;
}

// ---- snapshot ----

/** The knowledge index as a state snapshot keeps it: every revision's entry, in log order. */
export interface PackedKnowledge {
  order: KnowledgeEntry[];
}

/** Packs the knowledge index (the other indexes are rebuilt from the entries). */
export function packKnowledge(s: KnowledgeState): PackedKnowledge {
  return { order: s.order };
}

/** Fills the empty index `s` from `p`, as replaying the log would have built it. */
export function unpackKnowledge(s: KnowledgeState, p: PackedKnowledge): void {
  // Each deserialized entry brings its own copy of its ids; share the index's one, as apply does.
  for (const e of p.order) {
    const revisions = s.items.get(e.id);
    if (revisions) {
      e.id = revisions[0]!.id;
      revisions.push(e);
    } else s.items.set(e.id, [e]);
    s.order.push(e);
    const byAuthor = s.byAuthor.get(e.authorId);
    if (byAuthor) {
      e.authorId = byAuthor[0]!.authorId;
      byAuthor.push(e);
    } else s.byAuthor.set(e.authorId, [e]);
    if (e.topicId !== null) {
      const byTopic = s.byTopic.get(e.topicId);
      if (byTopic) {
        e.topicId = byTopic[0]!.topicId;
        byTopic.push(e);
      } else s.byTopic.set(e.topicId, [e]);
    }
  }
}

// ---- queries ----

/** GET /api/knowledge query (schemas/KnowledgeQuery.json), also the knowledge half of /api/search. */
export interface KnowledgeQuery {
  q?: string;
  agentId?: string;
  id?: string;
  history: boolean;
  limit: number;
}

/**
 * Knowledge revisions matching every given filter, newest first (log order = creation order),
 * at most `limit` (part 4). history=false returns only the latest revision of each item, which
 * must itself match (an item whose older revision matched `q` but whose current one does not is
 * not returned); history=true returns every matching revision. `q` is a case-insensitive
 * substring of the title or the content, checked on each candidate's stored JSON by the one
 * indexed scan (domain/indexed-scan.ts: `index` proposes candidates, null scans; in slices).
 * Starts from the smallest index a filter names (`id`, `agentId`) and stops at `limit`. Unknown
 * ids give an empty result.
 */
export async function queryKnowledge(s: KnowledgeState, query: KnowledgeQuery, index: CandidateIndex | null, reader: Reader): Promise<KnowledgeEntry[]> {
  let candidates: KnowledgeEntry[] = s.order;
  if (query.id !== undefined) candidates = s.items.get(query.id) ?? [];
  if (query.agentId !== undefined) {
    const byAuthor = s.byAuthor.get(query.agentId) ?? [];
    if (byAuthor.length < candidates.length) candidates = byAuthor;
  }
  const passes = (e: KnowledgeEntry): boolean =>
    (query.history || e.latest) && (query.id === undefined || e.id === query.id) && (query.agentId === undefined || e.authorId === query.agentId);
  const lq = query.q === undefined || query.q === '' ? undefined : query.q.toLowerCase();
  if (lq === undefined) {
    const out: KnowledgeEntry[] = [];
    for (let i = candidates.length - 1; i >= 0 && out.length < query.limit; i--) {
      const e = candidates[i]!;
      if (passes(e)) out.push(e);
    }
    return out;
  }
  return indexedScan(index, lq, {
    lowest: 0,
    from: candidates.length,
    at: (i) => candidates[i]!,
    seqOf: (e) => e.seq,
    bySeq: (seq) => entryOfSeq(s.order, seq),
    // Search never finds text the reader may not see (issue 25).
    filter: (e) => passes(e) && textVisible(reader, knowledgeStatusOf(reader, e)),
    matches: (e) => {
      const k = JSON.parse(knowledgeJsonOf(s, e)) as Knowledge;
      return k.title.toLowerCase().includes(lq) || k.content.toLowerCase().includes(lq);
    },
    limit: query.limit,
  });
}

/** The revision with log seq `seq` in `order` (ascending by seq), or undefined (another record). */
function entryOfSeq(order: readonly KnowledgeEntry[], seq: number): KnowledgeEntry | undefined {
  const e = order[lowerBound(order.length, (i) => order[i]!.seq, seq)];
  return e !== undefined && e.seq === seq ? e : undefined;
}

/** The moderation status of a revision (issue 25): the revision, its item or its author hidden. */
export function knowledgeStatusOf(reader: Reader, e: KnowledgeEntry): ModerationStatus {
  return statusOf(reader.mod, e.seq, e.id, e.authorId);
}

/** A revision's JSON as `reader` sees it (a placeholder when hidden or erased; issue 25). */
export function knowledgeViewOf(s: KnowledgeState, reader: Reader, e: KnowledgeEntry): string {
  return discussionView(reader, 'knowledge', knowledgeJsonOf(s, e), knowledgeStatusOf(reader, e));
}

/** `[json,json,...]` of revisions as `reader` sees them (string joins of stored JSON). */
export function entriesJson(s: KnowledgeState, entries: readonly KnowledgeEntry[], reader: Reader): string {
  return `[${entries.map((e) => knowledgeViewOf(s, reader, e)).join(',')}]`;
}
