/**
 * Packing the in-memory index into a state snapshot and back (issue 17 "Restart in seconds";
 * the file and its checks are store/snapshot.ts).
 *
 * The packed form holds exactly what replaying the log derives — nothing a request changed
 * (an agent's `lastActive` from reads is left out and restored from its latest record, as a
 * replay would) — so a state unpacked from a snapshot and a state replayed from the log answer
 * byte-identical responses. Typed arrays are trimmed to their used length and copied out of the
 * body on load; objects that several indexes share (an agent entry, a knowledge revision) are
 * packed once and the indexes rebuilt, their repeated ids shared again as a replay shares them.
 * Serialisation is `v8.serialize` (structured clone: typed arrays, Maps, plain objects).
 */
import { deserialize, serialize } from 'node:v8';
import { RowHashTable, U32List, type RecordLocations, type RecordSource } from '../store/records.js';
import type { AgentEntry } from './agents/agents.js';
import type { KnowledgeEntry } from './knowledge/knowledge.js';
import { internWorkEntry, type WorkEntry } from './work/work.js';
import { createState, type State } from './state.js';

/** Map of string keys to U32Lists, packed. */
type PackedLists = Array<[string, Uint32Array]>;

function packLists(map: Map<string, U32List>): PackedLists {
  return [...map].map(([k, list]) => [k, list.toArray()]);
}

function unpackLists(packed: PackedLists): Map<string, U32List> {
  return new Map(packed.map(([k, a]) => [k, U32List.of(owned(a))]));
}

/**
 * `a` in a buffer of its own. `v8.deserialize` returns typed arrays as views into the snapshot
 * body; keeping any view would keep the whole body (hundreds of MB at 10M records) alive.
 */
function owned(a: Uint32Array): Uint32Array {
  return a.slice();
}

/**
 * The state and the record locations as one serialised buffer. Input: the state (its records
 * must be the log's segments) and the locations of every record it includes. Output: bytes.
 */
export function packState(state: State, locations: RecordLocations): Buffer {
  const { forum, feeds, knowledge } = state;
  const packed = {
    locations: locations.pack(),
    agents: {
      order: state.agents.order.map((e) => ({ profile: e.profile, disabled: e.disabled, lastRecordMs: e.lastRecordMs })),
      participants: state.agents.participants,
    },
    settings: state.settings,
    forum: {
      roomOrder: forum.roomOrder,
      topicIds: [...forum.topics.keys()],
      topicOrder: forum.topicOrder.toArray(),
      rows: {
        seq: forum.rows.seq.toArray(),
        topic: forum.rows.topic.toArray(),
        author: forum.rows.author.toArray(),
        replyTo: forum.rows.replyTo.toArray(),
      },
      byTopic: packLists(forum.byTopic),
      byAuthor: packLists(forum.byAuthor),
      byClientId: forum.byClientId.pack(),
      names: forum.names,
    },
    knowledge: { order: knowledge.order },
    feeds: { discussion: feeds.discussion.toArray(), byTopic: packLists(feeds.byTopic), work: feeds.work.toArray() },
    work: {
      order: state.work.order,
      byClientId: state.work.byClientId.pack(),
    },
    opportunities: state.opportunities,
  };
  return serialize(packed);
}

type Packed = {
  locations: Parameters<RecordLocations['restore']>[0];
  agents: { order: Array<Pick<AgentEntry, 'profile' | 'disabled' | 'lastRecordMs'>>; participants: number };
  settings: State['settings'];
  forum: {
    roomOrder: State['forum']['roomOrder'];
    topicIds: string[];
    topicOrder: Uint32Array;
    rows: { seq: Uint32Array; topic: Uint32Array; author: Uint32Array; replyTo: Uint32Array };
    byTopic: PackedLists;
    byAuthor: PackedLists;
    byClientId: Parameters<typeof RowHashTable.unpack>[0];
    names: string[];
  };
  knowledge: { order: KnowledgeEntry[] };
  feeds: { discussion: Uint32Array; byTopic: PackedLists; work: Uint32Array };
  work: { order: WorkEntry[]; byClientId: Parameters<typeof RowHashTable.unpack>[0] };
  opportunities: State['opportunities'];
};

/** A row hash table from packed data, in buffers of its own (see `owned`). */
function unpackTable(p: Parameters<typeof RowHashTable.unpack>[0]): RowHashTable {
  return RowHashTable.unpack({ slots: owned(p.slots), keys: owned(p.keys), count: p.count });
}

/**
 * The state packed by `packState`, reading record text from `records`; the locations are
 * restored into `locations` (which must be empty). Throws Error for data that does not unpack
 * (the caller then replays the log instead).
 */
export function unpackState(body: Buffer, records: RecordSource, locations: RecordLocations): State {
  const p = deserialize(body) as Packed;
  const state = createState(records);
  locations.restore({ ...p.locations, offsets: owned(p.locations.offsets), lengths: owned(p.locations.lengths) });

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
  if (p.forum.topicIds.length !== p.forum.topicOrder.length) throw new Error('damaged topic index');
  forum.topicOrder = U32List.of(owned(p.forum.topicOrder));
  p.forum.topicIds.forEach((id, i) => forum.topics.set(id, p.forum.topicOrder[i]!));
  const rows = p.forum.rows;
  const n = rows.seq.length;
  if (rows.topic.length !== n || rows.author.length !== n || rows.replyTo.length !== n) throw new Error('damaged message rows');
  forum.rows = {
    seq: U32List.of(owned(rows.seq)),
    topic: U32List.of(owned(rows.topic)),
    author: U32List.of(owned(rows.author)),
    replyTo: U32List.of(owned(rows.replyTo)),
  };
  forum.byTopic = unpackLists(p.forum.byTopic);
  forum.byAuthor = unpackLists(p.forum.byAuthor);
  forum.byClientId = unpackTable(p.forum.byClientId);
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

  state.feeds.discussion = U32List.of(owned(p.feeds.discussion));
  state.feeds.byTopic = unpackLists(p.feeds.byTopic);
  state.feeds.work = U32List.of(owned(p.feeds.work));
  for (const e of p.work.order) {
    if (!Array.isArray(e.revSeqs) || e.revSeqs.length !== e.revision) throw new Error('damaged work entry');
    internWorkEntry(state.work, e);
    state.work.items.set(e.id, e);
    state.work.order.push(e);
  }
  state.work.byClientId = unpackTable(p.work.byClientId);
  state.opportunities = p.opportunities;
  return state;
}
