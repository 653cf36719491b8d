/**
 * Knowledge library with revisions (parts 2 "Knowledge", 4 "Knowledge and search", 5 item 8, 6).
 *
 * Every revision is one `knowledge.publish` record whose payload is the complete Knowledge
 * record; a revision keeps the item id and raises `revision` by one. Nothing is overwritten:
 * every revision stays in the log, in the index, in the discussion feed and in the topic export.
 *
 * The index keeps, per revision, only what filters need, as typed columns (issue 30: log seq,
 * item number, revision, interned author and topic, the item's previous revision; ids derived
 * from seqs); the public JSON is the record's stored canonical JSON (sorted keys),
 * read back from the log when a response needs it (issue 17: text is not kept in memory), so
 * live writes and replay answer byte-identical JSON. `q` reads each candidate back and checks
 * its lower-cased title and content, newest first, through the one indexed scan
 * (domain/indexed-scan.ts).
 */
import { Positions } from '../positions.js';
import type { WriteSignature } from '../agents/signing.js';
import type { DecisionContext } from '../decision.js';
import type { LogRecord } from '../../store/log.js';
import { ID_SEQ_DIGITS, KNOWLEDGE_EVIDENCE_SOURCES_MIN, type KNOWLEDGE_CATEGORIES } from '../../constants.js';
import { fail, invalid, notFound } from '../../errors.js';
import { addDiscussionEvent, type FeedsState } from '../feeds/feeds.js';
import type { ForumState } from '../forum/forum.js';
import { idHasSeq, makeId } from '../ids.js';
import { U32List } from '../../containers/u32-list.js';
import { packLists, unpackLists, type PackedArrays, type PackedLists } from '../packing.js';
import type { RecordSource } from '../../store/records.js';
import { indexedScan, type CandidateIndex } from '../indexed-scan.js';
import { discussionView, statusOf, textVisible, type ModerationStatus, type Reader } from '../moderation/moderation.js';
import { nameId, pushTo } from '../columns.js';

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
  /** Ours (issue 53): the author's signature, on a signed write only (domain/agents/signing.ts). */
  signature?: WriteSignature;
}

/**
 * Knowledge revisions in log (= creation) order as columns, one row per revision (issue 30: 24
 * bytes a revision, no objects, no text): its log seq, its item's number, its revision number,
 * interned author and topic (topic + 1, 0 for none) and the row of the item's previous revision
 * (+ 1, 0 for revision 1), so an item's revisions are a chain of rows.
 */
export interface KnowledgeRows {
  seq: U32List;
  item: U32List;
  revision: U32List;
  author: U32List;
  topic: U32List;
  prev: U32List;
}

/** A revision's row index in `KnowledgeRows` (0-based, log order). */
export type KnowledgeRow = number;

/**
 * Knowledge revisions as row columns, with per-item, per-author and per-topic indexes of rows.
 * An item is numbered in order of its first publication; its id is `kn_<seq of revision 1>` (how
 * decideKnowledge names it), so no id is held — except for ids of another form (hand-made logs),
 * kept in `otherIds`.
 */
export interface KnowledgeState {
  /** Every revision, in log order (columns; see KnowledgeRows). */
  rows: KnowledgeRows;
  /** Item number → row of its first revision. */
  itemFirst: U32List;
  /** Item number → row of its latest revision. */
  itemLast: U32List;
  /** Author id → every revision by that author (rows, ascending). */
  byAuthor: Map<string, U32List>;
  /**
   * Topic id → every revision attached to that topic (rows, ascending). A revision is filed under
   * its own topicId, so an item whose revision moves it to another topic appears under both,
   * each revision once.
   */
  byTopic: Map<string, U32List>;
  /** Interned author and topic ids: `names[n]` is the id numbered n in the row columns. */
  names: string[];
  nameIds: Map<string, number>;
  /** Item ids not of the form `kn_<seq of revision 1>` → item number, and back (empty for logs this service wrote). */
  otherIds: Map<string, number>;
  otherIdOf: Map<number, string>;
  /** Where revisions' JSON is read back from. */
  records: RecordSource;
  /** The log's seq → position map (ids carry positions; domain/positions.ts), shared by every area. */
  positions: Positions;
}

/** An empty knowledge index whose revisions' JSON is read from `records`. */
export function createKnowledgeState(records: RecordSource, positions: Positions = new Positions()): KnowledgeState {
  return {
    rows: { seq: new U32List(256), item: new U32List(256), revision: new U32List(256), author: new U32List(256), topic: new U32List(256), prev: new U32List(256) },
    itemFirst: new U32List(256),
    itemLast: new U32List(256),
    byAuthor: new Map(),
    byTopic: new Map(),
    names: [],
    nameIds: new Map(),
    otherIds: new Map(),
    otherIdOf: new Map(),
    records,
    positions,
  };
}


/** A knowledge id's position: `kn_` and at least ID_SEQ_DIGITS digits (ids.ts). */
const KNOWLEDGE_ID = new RegExp(`^kn_(\\d{${ID_SEQ_DIGITS},})$`);

/** The row with log seq `seq`, or undefined (another record). */
function rowOfSeq(s: KnowledgeState, seq: number): KnowledgeRow | undefined {
  const at = s.rows.seq.upperBound(seq) - 1;
  return at >= 0 && s.rows.seq.at(at) === seq ? at : undefined;
}

/**
 * The number of the item with id `id`, or undefined: the seq the id carries names its first
 * revision's row (a binary search of the seq column), so no id → item map is kept.
 */
function itemOf(s: KnowledgeState, id: string): number | undefined {
  const other = s.otherIds.get(id);
  if (other !== undefined) return other;
  const m = KNOWLEDGE_ID.exec(id);
  if (m === null) return undefined;
  const seq = s.positions.seqAt(Number(m[1]));
  if (seq === 0) return undefined;
  const row = rowOfSeq(s, seq);
  if (row === undefined || s.rows.revision.at(row) !== 1) return undefined;
  const item = s.rows.item.at(row);
  return s.otherIdOf.has(item) || !idHasSeq(id, 'kn', s.positions.positionOf(s.rows.seq.at(row))) ? undefined : item;
}

/** The id of item number `item`. */
function itemIdOf(s: KnowledgeState, item: number): string {
  return s.otherIdOf.get(item) ?? makeId('kn', s.positions.positionOf(s.rows.seq.at(s.itemFirst.at(item))));
}

/** The rows of every revision of item `id`, ascending (index i holds revision i + 1), or undefined for an unknown id. */
export function knowledgeRevisionsOf(s: KnowledgeState, id: string): KnowledgeRow[] | undefined {
  const item = itemOf(s, id);
  if (item === undefined) return undefined;
  const out: KnowledgeRow[] = [];
  for (let row = s.itemLast.at(item) + 1; row !== 0; row = s.rows.prev.at(row - 1)) out.push(row - 1);
  return out.reverse();
}

/** The row of the latest revision of item `id`, or undefined for an unknown id. */
export function knowledgeLatestOf(s: KnowledgeState, id: string): KnowledgeRow | undefined {
  const item = itemOf(s, id);
  return item === undefined ? undefined : s.itemLast.at(item);
}

/**
 * The author of knowledge item `id` (who published its revision 1, the only agent who may revise
 * it: part 5 item 8), or undefined for an unknown id. A binary search of the seq column.
 */
export function knowledgeAuthorOf(s: KnowledgeState, id: string): string | undefined {
  const item = itemOf(s, id);
  return item === undefined ? undefined : s.names[s.rows.author.at(s.itemFirst.at(item))];
}

/** The rows of every revision by `authorId`, ascending (empty for an unknown author). */
export function knowledgeRowsByAuthor(s: KnowledgeState, authorId: string): readonly KnowledgeRow[] {
  const list = s.byAuthor.get(authorId);
  return list === undefined ? [] : Array.from(list.toArray());
}

/** One revision's indexed fields, no text (tests and rare paths; lists read the columns). */
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

/** The fields of revision row `row`. */
export function knowledgeEntryOf(s: KnowledgeState, row: KnowledgeRow): KnowledgeEntry {
  const topic = s.rows.topic.at(row);
  return {
    id: knowledgeIdOf(s, row),
    revision: s.rows.revision.at(row),
    authorId: s.names[s.rows.author.at(row)]!,
    topicId: topic === 0 ? null : s.names[topic - 1]!,
    seq: s.rows.seq.at(row),
    latest: isLatest(s, row),
  };
}

/** The item id of revision row `row`. */
export function knowledgeIdOf(s: KnowledgeState, row: KnowledgeRow): string {
  return itemIdOf(s, s.rows.item.at(row));
}

/** Whether row `row` is its item's latest revision. */
function isLatest(s: KnowledgeState, row: KnowledgeRow): boolean {
  return s.itemLast.at(s.rows.item.at(row)) === row;
}

/** The log seq of revision row `row`. */
export function knowledgeSeqOf(s: KnowledgeState, row: KnowledgeRow): number {
  return s.rows.seq.at(row);
}

/** The public JSON of a revision: its record's canonical payload JSON, as stored. */
export function knowledgeJsonOf(s: KnowledgeState, row: KnowledgeRow): string {
  return s.records.read(s.rows.seq.at(row)).payloadJson;
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
 * Input: the validated body; ctx.authorId (caller), ctx.position (position the record will get, for new
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
  ctx: Pick<DecisionContext, 'authorId' | 'position' | 'created'>,
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
    const item = itemOf(s, input.previousId);
    if (item === undefined) throw notFound(`no knowledge item with id "${input.previousId}" (previousId)`);
    const originalAuthorId = s.names[s.rows.author.at(s.itemFirst.at(item))]!;
    if (originalAuthorId !== ctx.authorId) {
      throw fail('NOT_AUTHOR', `knowledge item "${input.previousId}" belongs to another author; only its original author may publish revisions`);
    }
    const current = s.rows.revision.at(s.itemLast.at(item));
    if (input.expectedRevision !== current) {
      throw fail('REVISION_CONFLICT', `expectedRevision ${input.expectedRevision} is stale: knowledge item "${input.previousId}" is at revision ${current}; reread it and revise the current revision`);
    }
    id = input.previousId;
    revision = current + 1;
  } else {
    id = makeId('kn', ctx.position);
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
  const existing = itemOf(s, knowledge.id);
  const expected = existing === undefined ? 1 : s.rows.revision.at(s.itemLast.at(existing)) + 1;
  if (knowledge.revision !== expected) {
    throw new Error(`knowledge.publish at seq ${record.seq}: item "${knowledge.id}" revision ${knowledge.revision}, expected ${expected}`);
  }
  const row = s.rows.seq.length;
  let item: number;
  let prev = 0;
  if (existing === undefined) {
    item = s.itemFirst.length;
    s.itemFirst.push(row);
    s.itemLast.push(row);
    if (!idHasSeq(knowledge.id, 'kn', s.positions.positionOf(record.seq))) {
      s.otherIds.set(knowledge.id, item);
      s.otherIdOf.set(item, knowledge.id);
    }
  } else {
    item = existing;
    prev = s.itemLast.at(item) + 1;
    s.itemLast.set(item, row);
  }
  s.rows.seq.push(record.seq);
  s.rows.item.push(item);
  s.rows.revision.push(knowledge.revision);
  s.rows.author.push(nameId(s, knowledge.authorId));
  s.rows.topic.push(knowledge.topicId === null ? 0 : nameId(s, knowledge.topicId) + 1);
  s.rows.prev.push(prev);
  pushTo(s.byAuthor, knowledge.authorId, row);
  if (knowledge.topicId !== null) pushTo(s.byTopic, knowledge.topicId, row);
  addDiscussionEvent(feeds, record.seq, 'knowledge', knowledge.topicId);
  return true;
}

// ---- snapshot ----

/** The knowledge index as a state snapshot keeps it: each column and list an array of its own (by index). */
export interface PackedKnowledge {
  rows: { seq: number; item: number; revision: number; author: number; topic: number; prev: number };
  itemFirst: number;
  itemLast: number;
  names: string[];
  otherIds: Array<[string, number]>;
  byAuthor: PackedLists;
  byTopic: PackedLists;
}

/** Packs the knowledge index; its arrays go to `arrays`. */
export function packKnowledge(s: KnowledgeState, arrays: PackedArrays): PackedKnowledge {
  const r = s.rows;
  return {
    rows: {
      seq: arrays.putList(r.seq),
      item: arrays.putList(r.item),
      revision: arrays.putList(r.revision),
      author: arrays.putList(r.author),
      topic: arrays.putList(r.topic),
      prev: arrays.putList(r.prev),
    },
    itemFirst: arrays.putList(s.itemFirst),
    itemLast: arrays.putList(s.itemLast),
    names: s.names,
    otherIds: [...s.otherIds],
    byAuthor: packLists(s.byAuthor, arrays),
    byTopic: packLists(s.byTopic, arrays),
  };
}

/**
 * Fills the empty index `s` from `p`, as replaying the log would have built it. Throws Error for
 * columns of unequal lengths (damaged data; the caller then replays the log).
 */
export function unpackKnowledge(s: KnowledgeState, p: PackedKnowledge, arrays: PackedArrays): void {
  const rows: KnowledgeRows = {
    seq: arrays.takeList(p.rows.seq),
    item: arrays.takeList(p.rows.item),
    revision: arrays.takeList(p.rows.revision),
    author: arrays.takeList(p.rows.author),
    topic: arrays.takeList(p.rows.topic),
    prev: arrays.takeList(p.rows.prev),
  };
  const n = rows.seq.length;
  const itemFirst = arrays.takeList(p.itemFirst);
  const itemLast = arrays.takeList(p.itemLast);
  if (Object.values(rows).some((c) => c.length !== n) || itemFirst.length !== itemLast.length || !Array.isArray(p.names)) {
    throw new Error('damaged knowledge index');
  }
  s.rows = rows;
  s.itemFirst = itemFirst;
  s.itemLast = itemLast;
  s.names = p.names;
  s.nameIds = new Map(p.names.map((name, i) => [name, i]));
  s.otherIds = new Map(p.otherIds);
  s.otherIdOf = new Map(p.otherIds.map(([id, item]) => [item, id]));
  s.byAuthor = unpackLists(p.byAuthor, arrays);
  s.byTopic = unpackLists(p.byTopic, arrays);
}

// ---- queries ----

/** GET /api/knowledge query (schemas/KnowledgeQuery.json), also the knowledge half of /api/search. */
export interface KnowledgeQuery {
  q?: string;
  agentId?: string;
  id?: string;
  /** Ours (issue 38): the knowledge of this topic (see queryKnowledge). */
  topicId?: string;
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
 * `topicId` (ours, issue 38): with history=true the revisions that name that topic; with
 * history=false the items any of whose revisions named it, each by its latest revision (a
 * revision replaces every field, so a later one may name no topic) — the knowledge of a topic as
 * the reader shows it. O(revisions filed under the topic) to gather them.
 * Starts from the smallest index a filter names (`id`, `agentId`, `topicId`) and stops at `limit`. Unknown
 * ids give an empty result.
 */
export async function queryKnowledge(s: KnowledgeState, query: KnowledgeQuery, index: CandidateIndex | null, reader: Reader): Promise<KnowledgeRow[]> {
  // Candidates: positions 0..count-1 of every row, one item's revisions or one author's rows.
  let count = s.rows.seq.length;
  let at = (i: number): KnowledgeRow => i;
  let itemNo: number | undefined;
  if (query.id !== undefined) {
    const revisions = knowledgeRevisionsOf(s, query.id) ?? [];
    itemNo = itemOf(s, query.id);
    count = revisions.length;
    at = (i) => revisions[i]!;
  }
  const authorNo = query.agentId === undefined ? undefined : s.nameIds.get(query.agentId);
  if (query.agentId !== undefined) {
    const byAuthor = s.byAuthor.get(query.agentId);
    const length = byAuthor?.length ?? 0;
    if (length < count) {
      count = length;
      at = (i) => byAuthor!.at(i);
    }
  }
  // rows.topic holds the topic's name number + 1 (0: no topic); -1: a topic no knowledge names.
  const topicNo = query.topicId === undefined ? undefined : (s.nameIds.get(query.topicId) ?? -2) + 1;
  // history=false: the items any revision attached to the topic (item numbers), by their latest rows.
  let attached: Set<number> | undefined;
  if (query.topicId !== undefined) {
    const byTopic = s.byTopic.get(query.topicId);
    let rows: { length: number; at(i: number): KnowledgeRow } = byTopic ?? { length: 0, at: () => 0 };
    if (!query.history) {
      attached = new Set();
      const latest: KnowledgeRow[] = [];
      for (let i = 0; i < rows.length; i++) {
        const item = s.rows.item.at(rows.at(i));
        if (attached.has(item)) continue;
        attached.add(item);
        latest.push(s.itemLast.at(item));
      }
      latest.sort((x, y) => x - y);
      rows = { length: latest.length, at: (i) => latest[i]! };
    }
    if (rows.length < count) {
      count = rows.length;
      at = (i) => rows.at(i);
    }
  }
  const passes = (row: KnowledgeRow): boolean =>
    (query.history || isLatest(s, row)) &&
    (topicNo === undefined || (attached === undefined ? s.rows.topic.at(row) === topicNo : attached.has(s.rows.item.at(row)))) &&
    (query.id === undefined || s.rows.item.at(row) === itemNo) &&
    (query.agentId === undefined || s.rows.author.at(row) === authorNo);
  const lq = query.q === undefined || query.q === '' ? undefined : query.q.toLowerCase();
  if (lq === undefined) {
    const out: KnowledgeRow[] = [];
    for (let i = count - 1; i >= 0 && out.length < query.limit; i--) {
      const row = at(i);
      if (passes(row)) out.push(row);
    }
    return out;
  }
  return indexedScan(index, lq, {
    lowest: 0,
    from: count,
    at,
    seqOf: (row) => s.rows.seq.at(row),
    bySeq: (seq) => rowOfSeq(s, seq),
    // Search never finds text the reader may not see (issue 25).
    filter: (row) => passes(row) && textVisible(reader, knowledgeStatusOf(s, reader, row)),
    matches: (row) => {
      const k = JSON.parse(knowledgeJsonOf(s, row)) as Knowledge;
      return k.title.toLowerCase().includes(lq) || k.content.toLowerCase().includes(lq);
    },
    limit: query.limit,
  });
}

/** The moderation status of a revision (issue 25): the revision, its item or its author hidden. */
export function knowledgeStatusOf(s: KnowledgeState, reader: Reader, row: KnowledgeRow): ModerationStatus {
  // With nothing hidden the id and author are not consulted: no id is built per candidate.
  if (reader.mod.hidden.size === 0) return statusOf(reader.mod, s.rows.seq.at(row), null, null);
  return statusOf(reader.mod, s.rows.seq.at(row), knowledgeIdOf(s, row), s.names[s.rows.author.at(row)]!);
}

/** A revision's JSON as `reader` sees it (a placeholder when hidden or erased; issue 25). */
export function knowledgeViewOf(s: KnowledgeState, reader: Reader, row: KnowledgeRow): string {
  return discussionView(reader, 'knowledge', knowledgeJsonOf(s, row), knowledgeStatusOf(s, reader, row));
}

/** `[json,json,...]` of revisions as `reader` sees them (string joins of stored JSON). */
export function entriesJson(s: KnowledgeState, rows: readonly KnowledgeRow[], reader: Reader): string {
  return `[${rows.map((row) => knowledgeViewOf(s, reader, row)).join(',')}]`;
}
