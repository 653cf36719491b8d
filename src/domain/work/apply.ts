/**
 * Work board apply and pack (part 8 "Work snapshot", issue 30): `applyWork` folds a `work.create`
 * or `work.action` record into the board's columns — the same code for replay and live writes,
 * and it never re-runs a rule, because every record carries the complete revision it produces —
 * and `packWork`/`unpackWork` keep those columns in a state snapshot, so that an unpacked board
 * answers every read as the replayed one does (test/unit/area-snapshots.test.mjs).
 */
import type { LogRecord } from '../../store/log.js';
import { addWorkEvent, type FeedsState } from '../feeds/feeds.js';
import { clientHash, indexTopic, type ForumState } from '../forum/forum.js';
import { U32List } from '../../containers/u32-list.js';
import { F64List } from '../../containers/f64-list.js';
import { packTable, unpackTable, type PackedArrays, type PackedTable } from '../packing.js';
import { idHasSeq } from '../ids.js';
import { ERASED_CLIENT_ID_PREFIX } from '../moderation/moderation.js';
import { nameId } from '../columns.js';
import {
  WORK_STATES,
  workRowOf,
  type WorkActionPayload,
  type WorkBoardState,
  type WorkCreatePayload,
  type WorkItem,
  type WorkRevisions,
  type WorkRows,
} from './work.js';

/** The number of tag list `tags` in `s.tagLists` (added on first sight). */
function tagListId(s: WorkBoardState, tags: readonly string[]): number {
  const key = JSON.stringify(tags);
  const known = s.tagListIds.get(key);
  if (known !== undefined) return known;
  s.tagListIds.set(key, s.tagLists.length);
  s.tagLists.push(Object.freeze([...tags]));
  return s.tagLists.length - 1;
}

/**
 * Applies `work.create` and `work.action`; returns false for other types. Emits one work-feed
 * event per revision and, for a create with a new topic, the topic's discussion event.
 * Throws Error (a broken invariant, stops replay) when an action names an unknown item or skips
 * a revision.
 */
export function applyWork(s: WorkBoardState, forum: ForumState, feeds: FeedsState, record: LogRecord): boolean {
  switch (record.type) {
    case 'work.create': {
      const p = record.payload as WorkCreatePayload;
      if (p.topic) indexTopic(forum, feeds, p.topic, record);
      const item = p.item;
      const row = s.rows.seq.length;
      if (item.sequence !== row + 1 || item.revision !== 1 || workRowOf(s, item.id) !== undefined) {
        throw new Error(`work.create at seq ${record.seq}: item ${item.id} sequence ${item.sequence} revision ${item.revision} does not follow ${row}`);
      }
      const state = stateCode(item, record.seq);
      const r = s.rows;
      r.seq.push(record.seq);
      r.author.push(nameId(s, item.authorId));
      r.topic.push(nameId(s, item.topicId));
      r.tags.push(tagListId(s, item.tags));
      r.state.push(state);
      r.assignee.push(item.assigneeId === null ? 0 : nameId(s, item.assigneeId) + 1);
      r.revision.push(1);
      r.leaseUntilMs.push(item.leaseUntil === null ? NaN : Date.parse(item.leaseUntil));
      r.lastRev.push(s.revs.seq.length);
      s.revs.seq.push(record.seq);
      s.revs.prev.push(0);
      if (!idHasSeq(item.id, 'wk', s.positions.positionOf(record.seq))) {
        s.otherIds.set(item.id, row);
        s.otherIdOf.set(row, item.id);
      }
      s.byClientId.add(clientHash(p.authorId, p.clientId), record.seq);
      // Counted conservatively: a clientId a client chose with the erased prefix counts too.
      if (p.clientId.startsWith(ERASED_CLIENT_ID_PREFIX)) s.erasedClientRows++;
      addWorkEvent(feeds, record.seq);
      return true;
    }
    case 'work.action': {
      const p = record.payload as WorkActionPayload;
      const item = p.item;
      const row = workRowOf(s, item.id);
      if (row === undefined || item.revision !== s.rows.revision.at(row) + 1) {
        throw new Error(`work.action at seq ${record.seq}: ${item.id} revision ${item.revision} does not follow the current revision`);
      }
      // The current revision's fields are updated in place.
      const r = s.rows;
      r.state.set(row, stateCode(item, record.seq));
      r.assignee.set(row, item.assigneeId === null ? 0 : nameId(s, item.assigneeId) + 1);
      r.revision.set(row, item.revision);
      r.leaseUntilMs.set(row, item.leaseUntil === null ? NaN : Date.parse(item.leaseUntil));
      s.revs.seq.push(record.seq);
      s.revs.prev.push(r.lastRev.at(row) + 1);
      r.lastRev.set(row, s.revs.seq.length - 1);
      s.byClientId.add(clientHash(p.authorId, p.clientId), record.seq);
      // Counted conservatively: a clientId a client chose with the erased prefix counts too.
      if (p.clientId.startsWith(ERASED_CLIENT_ID_PREFIX)) s.erasedClientRows++;
      addWorkEvent(feeds, record.seq);
      return true;
    }
    default:
      return false;
  }
}

/**
 * Empties the tags of work item `itemId` (its `work.create` record was erased, issue 34): the
 * filter column then holds what a replay of the erased record builds. No-op for an unknown item.
 */
export function eraseWorkTags(s: WorkBoardState, itemId: string): void {
  const row = workRowOf(s, itemId);
  if (row !== undefined) s.rows.tags.set(row, tagListId(s, []));
}

/**
 * The tag lists the rows use, numbered by first use in row order, and the rows' column renumbered:
 * exactly what a replay interns, so a list only erased items used is not packed (issue 34).
 */
function usedTagLists(s: WorkBoardState): { lists: Array<readonly string[]>; column: U32List } {
  const renumber = new Map<number, number>();
  const lists: Array<readonly string[]> = [];
  const column = new U32List(Math.max(16, s.rows.tags.length));
  for (let row = 0; row < s.rows.tags.length; row++) {
    const old = s.rows.tags.at(row);
    let id = renumber.get(old);
    if (id === undefined) {
      id = lists.length;
      renumber.set(old, id);
      lists.push(s.tagLists[old]!);
    }
    column.push(id);
  }
  return { lists, column };
}

// ---- snapshot ----

/** The number of `item.state` in the state column. Throws Error for a state part 3 does not name (a damaged or foreign log). */
function stateCode(item: WorkItem, seq: number): number {
  const code = WORK_STATES.indexOf(item.state);
  if (code < 0) throw new Error(`work record at seq ${seq}: item ${item.id} has unknown state ${JSON.stringify(item.state)}`);
  return code;
}

/** The work board as a state snapshot keeps it: each column an array of its own (by index), the receipts table. */
export interface PackedWork {
  rows: { seq: number; author: number; topic: number; tags: number; state: number; assignee: number; revision: number; leaseUntilMs: number; lastRev: number };
  revs: { seq: number; prev: number };
  names: string[];
  tagLists: Array<readonly string[]>;
  otherIds: Array<[string, number]>;
  byClientId: PackedTable;
  /** WorkBoardState.erasedClientRows; absent in a snapshot written before issue 39 (read as 1: unknown). */
  erasedClientRows?: number;
}

/** Packs the work board; its arrays go to `arrays`. */
export function packWork(s: WorkBoardState, arrays: PackedArrays): PackedWork {
  const r = s.rows;
  const tags = usedTagLists(s);
  return {
    rows: {
      seq: arrays.putList(r.seq),
      author: arrays.putList(r.author),
      topic: arrays.putList(r.topic),
      tags: arrays.putList(tags.column),
      state: arrays.putList(r.state),
      assignee: arrays.putList(r.assignee),
      revision: arrays.putList(r.revision),
      leaseUntilMs: arrays.put(r.leaseUntilMs.toU32()),
      lastRev: arrays.putList(r.lastRev),
    },
    revs: { seq: arrays.putList(s.revs.seq), prev: arrays.putList(s.revs.prev) },
    names: s.names,
    tagLists: tags.lists,
    otherIds: [...s.otherIds],
    byClientId: packTable(s.byClientId, arrays),
    erasedClientRows: s.erasedClientRows,
  };
}

/**
 * Fills the empty board `s` from `p`, as replaying the log would have built it. Throws Error for
 * columns of unequal lengths or a state number part 3 does not name (damaged data; the caller then
 * replays the log).
 */
export function unpackWork(s: WorkBoardState, p: PackedWork, arrays: PackedArrays): void {
  const rows: WorkRows = {
    seq: arrays.takeList(p.rows.seq),
    author: arrays.takeList(p.rows.author),
    topic: arrays.takeList(p.rows.topic),
    tags: arrays.takeList(p.rows.tags),
    state: arrays.takeList(p.rows.state),
    assignee: arrays.takeList(p.rows.assignee),
    revision: arrays.takeList(p.rows.revision),
    leaseUntilMs: F64List.fromU32(arrays.take(p.rows.leaseUntilMs)),
    lastRev: arrays.takeList(p.rows.lastRev),
  };
  const revs: WorkRevisions = { seq: arrays.takeList(p.revs.seq), prev: arrays.takeList(p.revs.prev) };
  const n = rows.seq.length;
  if (Object.values(rows).some((c: { length: number }) => c.length !== n) || revs.prev.length !== revs.seq.length || !Array.isArray(p.names) || !Array.isArray(p.tagLists)) {
    throw new Error('damaged work board');
  }
  for (let row = 0; row < n; row++) if (rows.state.at(row) >= WORK_STATES.length) throw new Error('damaged work board');
  s.rows = rows;
  s.revs = revs;
  s.names = p.names;
  s.nameIds = new Map(p.names.map((name, i) => [name, i]));
  s.tagLists = p.tagLists.map((tags) => Object.freeze([...tags]));
  s.tagListIds = new Map(s.tagLists.map((tags, i) => [JSON.stringify(tags), i]));
  s.otherIds = new Map(p.otherIds);
  s.otherIdOf = new Map(p.otherIds.map(([id, row]) => [row, id]));
  s.byClientId = unpackTable(p.byClientId, arrays);
  s.erasedClientRows = p.erasedClientRows ?? 1;
}
