/**
 * Packing the in-memory index into a state snapshot and back (issue 17 "Restart in seconds";
 * the file and its checks are store/snapshot.ts).
 *
 * The packed form holds exactly what replaying the log derives — nothing a request changed
 * (an agent's `lastActive` from reads is left out and restored from its latest record, as a
 * replay would) — so a state unpacked from a snapshot and a state replayed from the log answer
 * byte-identical responses. Typed arrays are trimmed to their used length and stored as body
 * parts of their own (read back into buffers of their own); objects that several indexes share (an agent entry, a knowledge revision) are
 * packed once and the indexes rebuilt, their repeated ids shared again as a replay shares them.
 * The objects are serialised with `v8.serialize` (structured clone: Maps, plain objects).
 */
import { deserialize, serialize } from 'node:v8';
import { RowHashTable } from '../containers/row-hash-table.js';
import { U32List } from '../containers/u32-list.js';
import type { RecordLocations } from '../store/record-locations.js';
import type { RecordSource } from '../store/records.js';
import type { AgentEntry } from './agents/agents.js';
import type { KnowledgeEntry } from './knowledge/knowledge.js';
import { internWorkEntry, type WorkEntry } from './work/work.js';
import { createState, type State } from './state.js';
import type { SnapshotBody } from '../store/snapshot.js';
import { flagClientKey, type ErasedRecord, type FlagEntry, type ModerationAction } from './moderation/moderation.js';

/**
 * The Uint32Arrays of a packed state, stored as body parts of their own (store/snapshot.ts); the
 * packed objects refer to them by index. Packing appends; unpacking takes each once.
 */
class Arrays {
  constructor(readonly list: Uint32Array[] = []) {}

  /** Stores `a` (trimmed by the caller); returns its index. */
  put(a: Uint32Array): number {
    return this.list.push(a) - 1;
  }

  /** Array `i`. Throws Error for an index the body does not hold (damaged data). */
  take(i: number): Uint32Array {
    const a = Number.isInteger(i) ? this.list[i] : undefined;
    if (a === undefined) throw new Error(`the snapshot refers to array ${i}, which it does not hold`);
    return a;
  }
}

/** Map of string keys to U32Lists, packed: [key, array index]. */
type PackedLists = Array<[string, number]>;

function packLists(map: Map<string, U32List>, arrays: Arrays): PackedLists {
  return [...map].map(([k, list]) => [k, arrays.put(list.toArray())]);
}

function unpackLists(packed: PackedLists, arrays: Arrays): Map<string, U32List> {
  return new Map(packed.map(([k, i]) => [k, U32List.of(arrays.take(i))]));
}

/** A packed RowHashTable: its two arrays by index. */
type PackedTable = { slots: number; keys: number; count: number };

function packTable(t: RowHashTable, arrays: Arrays): PackedTable {
  const p = t.pack();
  return { slots: arrays.put(p.slots), keys: arrays.put(p.keys), count: p.count };
}

function unpackTable(p: PackedTable, arrays: Arrays): RowHashTable {
  return RowHashTable.unpack({ slots: arrays.take(p.slots), keys: arrays.take(p.keys), count: p.count });
}

/**
 * The state and the record locations as one serialised buffer. Input: the state (its records
 * must be the log's segments) and the locations of every record it includes. Output: bytes.
 */
export function packState(state: State, locations: RecordLocations): SnapshotBody {
  const { forum, feeds, knowledge } = state;
  const arrays = new Arrays();
  const loc = locations.pack();
  const packed: Packed = {
    locations: { offsets: arrays.put(loc.offsets), lengths: arrays.put(loc.lengths), segmentFirst: loc.segmentFirst, vouched: loc.vouched },
    agents: {
      order: state.agents.order.map((e) => ({ profile: e.profile, disabled: e.disabled, lastRecordMs: e.lastRecordMs })),
      participants: state.agents.participants,
    },
    settings: state.settings,
    forum: {
      roomOrder: forum.roomOrder,
      topicIds: [...forum.topics.keys()],
      topicOrder: arrays.put(forum.topicOrder.toArray()),
      rows: {
        seq: arrays.put(forum.rows.seq.toArray()),
        topic: arrays.put(forum.rows.topic.toArray()),
        author: arrays.put(forum.rows.author.toArray()),
        replyTo: arrays.put(forum.rows.replyTo.toArray()),
      },
      byTopic: packLists(forum.byTopic, arrays),
      byAuthor: packLists(forum.byAuthor, arrays),
      byClientId: packTable(forum.byClientId, arrays),
      names: forum.names,
    },
    knowledge: { order: knowledge.order },
    feeds: { discussion: arrays.put(feeds.discussion.toArray()), byTopic: packLists(feeds.byTopic, arrays), work: arrays.put(feeds.work.toArray()) },
    work: {
      order: state.work.order,
      byClientId: packTable(state.work.byClientId, arrays),
    },
    opportunities: state.opportunities,
    moderation: {
      hidden: [...state.moderation.hidden],
      permanent: [...state.moderation.permanent],
      erased: [...state.moderation.erased.values()],
      actions: state.moderation.actions,
      events: [...state.moderation.events],
      workItems: [...state.moderation.workItems],
      flags: state.moderation.flagOrder,
      version: state.moderation.version,
      topicsByAuthor: [...state.moderation.topicsByAuthor],
    },
  };
  return { objects: serialize(packed), arrays: arrays.list };
}

type Packed = {
  /** `vouched`: the erasure contract's seq → hash pairs (absent in snapshots from before erasure). */
  locations: { offsets: number; lengths: number; segmentFirst: number[]; vouched?: Array<[number, string]> };
  agents: { order: Array<Pick<AgentEntry, 'profile' | 'disabled' | 'lastRecordMs'>>; participants: number };
  settings: State['settings'];
  forum: {
    roomOrder: State['forum']['roomOrder'];
    topicIds: string[];
    topicOrder: number;
    rows: { seq: number; topic: number; author: number; replyTo: number };
    byTopic: PackedLists;
    byAuthor: PackedLists;
    byClientId: PackedTable;
    names: string[];
  };
  knowledge: { order: KnowledgeEntry[] };
  feeds: { discussion: number; byTopic: PackedLists; work: number };
  work: { order: WorkEntry[]; byClientId: PackedTable };
  opportunities: State['opportunities'];
  moderation: {
    hidden: string[];
    permanent: string[];
    erased: ErasedRecord[];
    actions: ModerationAction[];
    events: Array<[number, number[]]>;
    workItems: Array<[number, string[]]>;
    flags: FlagEntry[];
    version: number;
    topicsByAuthor: Array<[string, number[]]>;
  };
};

/**
 * The state packed by `packState`, reading record text from `records`; the locations are
 * restored into `locations` (which must be empty). Throws Error for data that does not unpack
 * (the caller then replays the log instead).
 */
export function unpackState(body: SnapshotBody, records: RecordSource, locations: RecordLocations): State {
  const p = deserialize(body.objects) as Packed;
  const arrays = new Arrays(body.arrays);
  const state = createState(records);
  locations.restore({ offsets: arrays.take(p.locations.offsets), lengths: arrays.take(p.locations.lengths), segmentFirst: p.locations.segmentFirst, vouched: p.locations.vouched });

  const agents = state.agents;
  for (const a of p.agents.order) {
    const e: AgentEntry = { profile: a.profile, disabled: a.disabled, lastActiveMs: a.lastRecordMs, lastRecordMs: a.lastRecordMs };
    agents.byId.set(e.profile.id, e);
    agents.byTokenHash.set(e.profile.tokenHash, e);
    agents.order.push(e);
  }
  agents.participants = p.agents.participants;
  Object.assign(state.settings, p.settings);

  const forum = state.forum;
  for (const r of p.forum.roomOrder) {
    forum.rooms.set(r.id, r);
    forum.roomOrder.push(r);
  }
  const topicOrder = arrays.take(p.forum.topicOrder);
  if (p.forum.topicIds.length !== topicOrder.length) throw new Error('damaged topic index');
  forum.topicOrder = U32List.of(topicOrder);
  p.forum.topicIds.forEach((id, i) => forum.topics.set(id, topicOrder[i]!));
  const rows = { seq: arrays.take(p.forum.rows.seq), topic: arrays.take(p.forum.rows.topic), author: arrays.take(p.forum.rows.author), replyTo: arrays.take(p.forum.rows.replyTo) };
  const n = rows.seq.length;
  if (rows.topic.length !== n || rows.author.length !== n || rows.replyTo.length !== n) throw new Error('damaged message rows');
  forum.rows = { seq: U32List.of(rows.seq), topic: U32List.of(rows.topic), author: U32List.of(rows.author), replyTo: U32List.of(rows.replyTo) };
  forum.byTopic = unpackLists(p.forum.byTopic, arrays);
  forum.byAuthor = unpackLists(p.forum.byAuthor, arrays);
  forum.byClientId = unpackTable(p.forum.byClientId, arrays);
  forum.names = p.forum.names;
  forum.nameIds = new Map(p.forum.names.map((name, i) => [name, i]));

  const knowledge = state.knowledge;
  // Each deserialized entry brings its own copy of its ids; share the index's one, as apply does.
  for (const e of p.knowledge.order) {
    const revisions = knowledge.items.get(e.id);
    if (revisions) {
      e.id = revisions[0]!.id;
      revisions.push(e);
    } else knowledge.items.set(e.id, [e]);
    knowledge.order.push(e);
    const byAuthor = knowledge.byAuthor.get(e.authorId);
    if (byAuthor) {
      e.authorId = byAuthor[0]!.authorId;
      byAuthor.push(e);
    } else knowledge.byAuthor.set(e.authorId, [e]);
    if (e.topicId !== null) {
      const byTopic = knowledge.byTopic.get(e.topicId);
      if (byTopic) {
        e.topicId = byTopic[0]!.topicId;
        byTopic.push(e);
      } else knowledge.byTopic.set(e.topicId, [e]);
    }
  }

  state.feeds.discussion = U32List.of(arrays.take(p.feeds.discussion));
  state.feeds.byTopic = unpackLists(p.feeds.byTopic, arrays);
  state.feeds.work = U32List.of(arrays.take(p.feeds.work));
  for (const e of p.work.order) {
    if (!Array.isArray(e.revSeqs) || e.revSeqs.length !== e.revision) throw new Error('damaged work entry');
    internWorkEntry(state.work, e);
    state.work.items.set(e.id, e);
    state.work.order.push(e);
  }
  state.work.byClientId = unpackTable(p.work.byClientId, arrays);
  state.opportunities = p.opportunities;
  // Filled in place: the areas read records through a view that holds this very object.
  const mod = state.moderation;
  for (const k of p.moderation.hidden) mod.hidden.add(k);
  for (const k of p.moderation.permanent) mod.permanent.add(k);
  for (const e of p.moderation.erased) mod.erased.set(e.seq, e);
  mod.actions.push(...p.moderation.actions);
  for (const [seq, list] of p.moderation.events) mod.events.set(seq, list);
  for (const [seq, list] of p.moderation.workItems) mod.workItems.set(seq, list);
  for (const f of p.moderation.flags) {
    mod.flags.set(f.flag.id, f);
    mod.flagOrder.push(f);
    mod.flagByClientId.set(flagClientKey(f.flag.authorId, f.flag.clientId), f.flag.id);
  }
  mod.version = p.moderation.version;
  for (const [author, seqs] of p.moderation.topicsByAuthor) mod.topicsByAuthor.set(author, seqs);
  return state;
}
