/**
 * The in-memory index: one sub-state per area, and `apply`, the single fold over log records
 * used both at startup replay and after every live append (so replay and live state cannot
 * differ by construction).
 */
import { parseTimeMs } from '../clock.js';
import type { LogRecord } from '../store/log.js';
import { MemoryRecords, type RecordSource } from '../store/records.js';
import { createAgentsState, touchAgentRecord, type AgentsState } from './agents/agents.js';
import { applyAgents } from './agents/apply.js';
import { applySettings, createSettingsState, type SettingsState } from './admin/settings.js';
import { applyAdminActions, createAdminActionsState, type AdminActionsState } from './admin/actions.js';
import { addModerationEvents, addModerationEventsAt, createFeedsState, type FeedsState } from './feeds/feeds.js';
import { applyForum, createForumState, messageAuthorOf, type ForumState } from './forum/forum.js';
import { applyKnowledge, createKnowledgeState, type KnowledgeState } from './knowledge/knowledge.js';
import { applyOpportunities, createOpportunitiesState, type OpportunitiesState } from './opportunities/opportunities.js';
import { createWorkBoardState, workRowOf, type WorkActionPayload, type WorkBoardState } from './work/work.js';
import { applyWork } from './work/apply.js';
import {
  applyModeration,
  createModerationState,
  ERASABLE_TYPES,
  MODERATION_EVENT_TYPE,
  ModeratedRecords,
  noteTopicAuthor,
  noteWorkPart,
  type ModerationPayload,
  type ModerationState,
} from './moderation/moderation.js';
import { applyErasedFields } from './moderation/erased-fields.js';
import { REPLICATION_EPOCH_TYPE } from '../store/record-format.js';
import { applyInbox, createInboxState, type InboxState } from './inbox/inbox.js';
import { Positions } from './positions.js';

/** The whole in-memory index: one sub-state per area, rebuilt from the log at startup. */
export interface State {
  agents: AgentsState;
  settings: SettingsState;
  /** Every admin action, who did it and why (issue 38). */
  admin: AdminActionsState;
  forum: ForumState;
  knowledge: KnowledgeState;
  feeds: FeedsState;
  work: WorkBoardState;
  opportunities: OpportunitiesState;
  /** Hidden and erased content, flags (issue 25). */
  moderation: ModerationState;
  /** Each agent's inbox (issue 37). */
  inbox: InboxState;
  /** The log's seq → position map: ids and feed positions (issue 50; positions.ts). */
  positions: Positions;
  /**
   * Set when the state keeps record text itself (no log on disk: unit tests and tools), so
   * `apply` stores each record there; null when records are read back from the log's segments.
   */
  memory: MemoryRecords | null;
}

/**
 * An empty index, before replay. Input: where record text is read back from (the log's
 * `SegmentRecords`); without one, records are kept in memory as they are applied.
 */
export function createState(records?: RecordSource): State {
  const memory = records === undefined ? new MemoryRecords() : null;
  const moderation = createModerationState();
  // Every area reads through the moderation view of the records: an erased record reads as its
  // emptied payload, so no area ever needs the bytes the store removed (issue 25).
  const source = new ModeratedRecords(records ?? memory!, moderation);
  const positions = new Positions();
  return {
    positions,
    moderation,
    memory,
    agents: createAgentsState(),
    settings: createSettingsState(),
    admin: createAdminActionsState(),
    forum: createForumState(source, positions),
    knowledge: createKnowledgeState(source, positions),
    feeds: createFeedsState(source),
    work: createWorkBoardState(source, positions),
    opportunities: createOpportunitiesState(),
    inbox: createInboxState(),
  };
}

/**
 * Applies one record to the state. `payloadJson` is the payload's canonical JSON as stored in the
 * log (sorted keys), so areas whose payload is the public record reuse it as their pre-serialised
 * JSON: live and replayed state serialise byte-identically, and replay re-serialises nothing.
 * Throws for an unknown record type: a log written by a newer
 * version must not be half-understood (programmer/operator error, stops startup).
 */
export function apply(state: State, record: LogRecord, payloadJson: string): void {
  state.memory?.put(record.seq, { payloadJson, time: record.time, type: record.type });
  if (payloadJson === 'null' && ERASABLE_TYPES.has(record.type)) {
    // A tombstone (erasure contract): the record is applied with its emptied payload, which the
    // erasure record carries. A replay meets the tombstone before that record; App.open then
    // seeds the erased payloads and replays again (ErasedRecordError).
    const e = state.moderation.erased.get(record.seq);
    if (e === undefined) throw new ErasedRecordError(record.seq);
    payloadJson = e.payloadJson;
    record = { seq: record.seq, time: record.time, type: record.type, payload: JSON.parse(payloadJson) as unknown };
  }
  // A writer that took the epoch from another gives its fence record a new position (positions.ts).
  if (record.type === REPLICATION_EPOCH_TYPE) applyEpoch(state.positions, record.seq, payloadJson);
  const handled =
    // The leader's fence in the replica bucket (store/replica/leader.ts): only its positionBase above.
    record.type === REPLICATION_EPOCH_TYPE ||
    // Notes every admin record's action; handles `admin.action` only, the others go on below.
    applyAdminActions(state.admin, record) ||
    applyAgents(state.agents, record) ||
    applySettings(state.settings, record) ||
    applyForum(state.forum, state.feeds, record, payloadJson) ||
    applyKnowledge(state.knowledge, state.feeds, record, payloadJson) ||
    applyWork(state.work, state.forum, state.feeds, record) ||
    applyOpportunities(state.opportunities, record) ||
    applyModeration(state.moderation, record, (agentId) => {
      const e = state.agents.byId.get(agentId);
      if (e) e.disabled = 1;
    });
  if (!handled) throw new Error(`unknown record type "${record.type}" at seq ${record.seq}`);
  applyInbox(state.inbox, { forum: state.forum, knowledge: state.knowledge, moderation: state.moderation, isAgent: (id) => state.agents.byId.has(id) }, record, payloadJson);
  if (record.type === 'moderation.erase') applyErasedFields(state, (record.payload as ModerationPayload).erased ?? []);
  // Topics by author, for a purge (their payloads are parsed on apply anyway).
  if (record.type === 'topic.create') noteTopicAuthor(state.moderation, (record.payload as { authorId: string }).authorId, record.seq);
  else if (record.type === 'work.create') {
    const topic = (record.payload as { topic: { authorId: string } | null }).topic;
    if (topic !== null) noteTopicAuthor(state.moderation, topic.authorId, record.seq);
  }
  else if (record.type === 'work.action') noteWorkParts(state, record.payload as WorkActionPayload);
  if (record.type.startsWith('moderation.') && record.type !== MODERATION_EVENT_TYPE) {
    const mod = state.moderation;
    const p = record.payload as ModerationPayload;
    const workEvents = mod.workRecords.get(record.seq)?.length ?? mod.workItems.get(record.seq)?.length ?? 0;
    const events = mod.events.get(record.seq) ?? [];
    if (p.eventsFrom === undefined) addModerationEvents(state.feeds, record.seq, events.length > 0, workEvents);
    else addModerationEventsAt(state.feeds, p.eventsFrom, events.length, workEvents, record.seq);
  }
  // A message's author is read from the index entry just made: its payload is never parsed on replay.
  const authorId =
    record.type === 'message.create'
      ? messageAuthorOf(state.forum, state.forum.rows.seq.length - 1)
      : (record.payload as { authorId?: unknown } | null)?.authorId;
  if (typeof authorId === 'string') touchAgentRecord(state.agents, authorId, parseTimeMs(record.time));
}

/**
 * Notes an epoch record's `positionBase` (issue 50): present only when the writer took the epoch
 * from another writer; the record then has that position and the records after it go on from it.
 */
function applyEpoch(positions: Positions, seq: number, payloadJson: string): void {
  const base = (JSON.parse(payloadJson) as { positionBase?: unknown }).positionBase;
  if (base === undefined) return;
  if (typeof base !== 'number') throw new Error(`replication.epoch record ${seq}: positionBase is not a number`);
  positions.rebase(seq, base);
}

/** Notes a result or review written on another agent's work item (what a purge of its author changes). */
function noteWorkParts(state: State, p: WorkActionPayload): void {
  const { item } = p;
  const parts = [item.result?.authorId, item.review?.authorId];
  if (!parts.some((a) => a !== undefined && a !== item.authorId)) return;
  const row = workRowOf(state.work, item.id);
  if (row === undefined) return;
  const createSeq = state.work.rows.seq.at(row);
  for (const a of new Set(parts)) if (a !== undefined && a !== item.authorId) noteWorkPart(state.moderation, a, createSeq);
}

/**
 * Thrown by `apply` for an erased record (a tombstone, payload `null`) whose emptied payload is not
 * known yet: a whole replay reaches the tombstone before the `moderation.erase` record that vouches
 * for it. App.open then collects every erasure's emptied payloads and replays again.
 */
export class ErasedRecordError extends Error {
  constructor(readonly seq: number) {
    super(`record ${seq} is erased and its erasure record has not been read yet`);
    this.name = 'ErasedRecordError';
  }
}
