/**
 * Packing the in-memory index into a state snapshot and back (issue 17 "Restart in seconds";
 * the file and its checks are store/snapshot.ts). Each area packs and unpacks its own index beside
 * its `apply` (issue 29); this module only composes them with the record locations.
 *
 * The packed form holds exactly what replaying the log derives — nothing a request changed
 * (an agent's `lastActive` from reads is left out and restored from its latest record, as a
 * replay would) — so a state unpacked from a snapshot and a state replayed from the log answer
 * byte-identical responses. Typed arrays are trimmed to their used length and stored as body
 * parts of their own (read back into buffers of their own); objects that several indexes share
 * (an agent entry) are packed once and the indexes rebuilt, their repeated
 * ids shared again as a replay shares them. The objects are serialised with `v8.serialize`
 * (structured clone: Maps, plain objects).
 */
import { deserialize, serialize } from 'node:v8';
import type { RecordLocations } from '../store/record-locations.js';
import type { RecordSource } from '../store/records.js';
import type { SnapshotBody } from '../store/snapshot.js';
import { packAgents, unpackAgents, type PackedAgents } from './agents/apply.js';
import { packSettings, unpackSettings, type SettingsState } from './admin/settings.js';
import { packAdminActions, unpackAdminActions, type AdminAction } from './admin/actions.js';
import { packFeeds, unpackFeeds, type PackedFeeds } from './feeds/feeds.js';
import { packForum, unpackForum, type PackedForum } from './forum/forum.js';
import { packKnowledge, unpackKnowledge, type PackedKnowledge } from './knowledge/knowledge.js';
import { packModeration, unpackModeration, type PackedModeration } from './moderation/moderation.js';
import { packOpportunities, unpackOpportunities, type OpportunitiesState } from './opportunities/opportunities.js';
import { PackedArrays } from './packing.js';
import { packInbox, unpackInbox, type PackedInbox } from './inbox/inbox.js';
import { packWork, unpackWork, type PackedWork } from './work/apply.js';
import { createState, type State } from './state.js';

type Packed = {
  /** `vouched`: the erasure contract's seq → hash pairs (absent in snapshots from before erasure). */
  locations: { offsets: number; lengths: number; segmentFirst: number[]; vouched?: Array<[number, string]> };
  agents: PackedAgents;
  settings: SettingsState;
  /** Absent in snapshots from before issue 38: those are discarded (unpackAdminActions throws). */
  admin?: AdminAction[];
  forum: PackedForum;
  knowledge: PackedKnowledge;
  feeds: PackedFeeds;
  work: PackedWork;
  opportunities: OpportunitiesState;
  moderation: PackedModeration;
  inbox: PackedInbox;
  /** The seq → position boundaries (issue 50; positions.ts), [seq, delta] pairs. */
  positions: Array<[number, number]>;
};

/**
 * The state and the record locations as one serialised buffer. Input: the state (its records
 * must be the log's segments) and the locations of every record it includes. Output: bytes.
 */
export function packState(state: State, locations: RecordLocations): SnapshotBody {
  const arrays = new PackedArrays();
  const loc = locations.pack();
  const packed: Packed = {
    locations: { offsets: arrays.put(loc.offsets), lengths: arrays.put(loc.lengths), segmentFirst: loc.segmentFirst, vouched: loc.vouched },
    agents: packAgents(state.agents),
    settings: packSettings(state.settings),
    admin: packAdminActions(state.admin),
    forum: packForum(state.forum, arrays),
    knowledge: packKnowledge(state.knowledge, arrays),
    feeds: packFeeds(state.feeds, arrays),
    work: packWork(state.work, arrays),
    opportunities: packOpportunities(state.opportunities),
    moderation: packModeration(state.moderation),
    inbox: packInbox(state.inbox, arrays),
    positions: state.positions.pack(),
  };
  return { objects: serialize(packed), arrays: arrays.list };
}

/**
 * The state packed by `packState`, reading record text from `records`; the locations are
 * restored into `locations` (which must be empty). Throws Error for data that does not unpack
 * (the caller then replays the log instead).
 */
export function unpackState(body: SnapshotBody, records: RecordSource, locations: RecordLocations): State {
  const p = deserialize(body.objects) as Packed;
  const arrays = new PackedArrays(body.arrays);
  const state = createState(records);
  locations.restore({ offsets: arrays.take(p.locations.offsets), lengths: arrays.take(p.locations.lengths), segmentFirst: p.locations.segmentFirst, vouched: p.locations.vouched });
  // First: the areas check their ids against positions as they unpack.
  if (!Array.isArray(p.positions)) throw new Error('no positions in the snapshot');
  state.positions.unpack(p.positions);
  unpackAgents(state.agents, p.agents);
  unpackSettings(state.settings, p.settings);
  unpackAdminActions(state.admin, p.admin);
  unpackForum(state.forum, p.forum, arrays);
  unpackKnowledge(state.knowledge, p.knowledge, arrays);
  unpackFeeds(state.feeds, p.feeds, arrays);
  unpackWork(state.work, p.work, arrays);
  unpackOpportunities(state.opportunities, p.opportunities);
  unpackModeration(state.moderation, p.moderation);
  unpackInbox(state.inbox, p.inbox, arrays);
  return state;
}
