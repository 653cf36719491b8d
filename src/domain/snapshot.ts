/**
 * Packing the in-memory index into a state snapshot and back (issue 17 "Restart in seconds";
 * the file and its checks are store/snapshot.ts).
 *
 * The packed form holds exactly what replaying the log derives — nothing a request changed
 * (an agent's `lastActive` from reads is left out and restored from its latest record, as a
 * replay would) — so a state unpacked from a snapshot and a state replayed from the log answer
 * byte-identical responses. Typed arrays are trimmed to their used length; objects that several
 * indexes share (an agent entry, a knowledge revision) are packed once and the indexes rebuilt.
 * Serialisation is `v8.serialize` (structured clone: typed arrays, Maps, plain objects).
 */
import { deserialize, serialize } from 'node:v8';
import { RowHashTable, U32List, type RecordLocations, type RecordSource } from '../store/records.js';
import type { AgentEntry } from './agents/agents.js';
import type { KnowledgeEntry } from './knowledge/knowledge.js';
import type { WorkEntry } from './work/work.js';
import { createState, type State } from './state.js';

/** Map of string keys to U32Lists, packed. */
type PackedLists = Array<[string, Uint32Array]>;

function packLists(map: Map<string, U32List>): PackedLists {
  return [...map].map(([k, list]) => [k, list.toArray()]);
}

function unpackLists(packed: PackedLists): Map<string, U32List> {
  return new Map(packed.map(([k, a]) => [k, U32List.of(a)]));
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
      order: state.work.order.map((e) => ({ ...e, revSeqs: e.revSeqs.toArray() })),
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
  work: { order: Array<Omit<WorkEntry, 'revSeqs'> & { revSeqs: Uint32Array }>; byClientId: Parameters<typeof RowHashTable.unpack>[0] };
  opportunities: State['opportunities'];
};

/**
 * The state packed by `packState`, reading record text from `records`; the locations are
 * restored into `locations` (which must be empty). Throws Error for data that does not unpack
 * (the caller then replays the log instead).
 */
export function unpackState(body: Buffer, records: RecordSource, locations: RecordLocations): State {
  const p = deserialize(body) as Packed;
  const state = createState(records);
  locations.restore(p.locations);

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
  forum.topicOrder = U32List.of(p.forum.topicOrder);
  p.forum.topicIds.forEach((id, i) => forum.topics.set(id, p.forum.topicOrder[i]!));
  const rows = p.forum.rows;
  const n = rows.seq.length;
  if (rows.topic.length !== n || rows.author.length !== n || rows.replyTo.length !== n) throw new Error('damaged message rows');
  forum.rows = { seq: U32List.of(rows.seq), topic: U32List.of(rows.topic), author: U32List.of(rows.author), replyTo: U32List.of(rows.replyTo) };
  forum.byTopic = unpackLists(p.forum.byTopic);
  forum.byAuthor = unpackLists(p.forum.byAuthor);
  forum.byClientId = RowHashTable.unpack(p.forum.byClientId);
  forum.names = p.forum.names;
  forum.nameIds = new Map(p.forum.names.map((name, i) => [name, i]));

  const knowledge = state.knowledge;
  for (const e of p.knowledge.order) {
    const revisions = knowledge.items.get(e.id);
    if (revisions) revisions.push(e);
    else knowledge.items.set(e.id, [e]);
    knowledge.order.push(e);
    const byAuthor = knowledge.byAuthor.get(e.authorId);
    if (byAuthor) byAuthor.push(e);
    else knowledge.byAuthor.set(e.authorId, [e]);
    if (e.topicId !== null) {
      const byTopic = knowledge.byTopic.get(e.topicId);
      if (byTopic) byTopic.push(e);
      else knowledge.byTopic.set(e.topicId, [e]);
    }
  }

  state.feeds.discussion = U32List.of(p.feeds.discussion);
  state.feeds.byTopic = unpackLists(p.feeds.byTopic);
  state.feeds.work = U32List.of(p.feeds.work);
  for (const packed of p.work.order) {
    const e: WorkEntry = { ...packed, revSeqs: U32List.of(packed.revSeqs) };
    state.work.items.set(e.id, e);
    state.work.order.push(e);
  }
  state.work.byClientId = RowHashTable.unpack(p.work.byClientId);
  state.opportunities = p.opportunities;
  return state;
}
