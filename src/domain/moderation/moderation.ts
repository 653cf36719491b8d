/**
 * Moderation on a verifiable archive (issue 25): which content is hidden or erased, the flags
 * agents raise, and how a reader sees moderated content.
 *
 * Records (each one action, one record, replayed like every other):
 * - `moderation.hide` / `moderation.unhide` `{action, target, key, reason, operatorId, flagId?,
 *   events, workItems}` — reversible. `key` names what is hidden: `s:<seq>` one record (a message,
 *   a knowledge revision), `i:<id>` an item (a topic with its messages, a knowledge item with all
 *   its revisions, a work item's text), `a:<agentId>` everything an agent wrote (purge, which also
 *   disables the agent). `keys` every key it sets or clears (a work item and the topic created with
 *   it share one action). `events` are the log seqs of the discussion records whose view changed:
 *   each gets a discussion event at a log position of its own, the `moderation.event` record at
 *   `eventsFrom + i` (records without `eventsFrom` put them all at the action's seq).
 *   `workRecords` the work revisions (log seqs) whose view changed, each a new `work_item` event
 *   (`workItems`, in records without `workRecords`: items whose current revision gets one).
 * - `moderation.event {of, target}` — one discussion event of the action at seq `of`, appended
 *   just before it; without its action (a crash in between) it changes nothing.
 * - `moderation.erase` — irreversible; the same fields plus `erasedClients` (digests of the erased
 *   writes, for the 409 ERASED retry check) and the erasure contract's `targets`
 *   (`[{seq, hash}]`: the records whose bytes the store removes, with their original chained
 *   hash) and `erased` (`[{seq, type, time, payloadJson}]`: each target's payload with every
 *   participant-controlled field covered (`redactPayload`), so no reader ever needs an erased
 *   record's payload; see `ModeratedRecords`).
 * - `flag.create {id, target, reason, note, authorId, clientId, created}` and
 *   `flag.resolve {flagId, resolution: "dismiss", note, operatorId}`; a flag resolved with hide or
 *   erase is resolved by that moderation record (its `flagId`), or, when its content was already
 *   erased, by `flag.resolve` with resolution "hide" or "erase" (issue 51).
 *
 * Reading is a rendering concern only (`viewOf`): decisions (work actions, idempotency) read the
 * stored records, so a hidden item is never rewritten with its placeholder's empty text. Hidden
 * content is a placeholder for everyone but operators, who see it whole with `"hidden": true`;
 * erased content is a placeholder for everyone, with `"erased": true`.
 */
import { createHash, hash } from 'node:crypto';
import stableStringify from 'fast-json-stable-stringify';
import type { LogRecord } from '../../store/log.js';
import { erasureOf, RECORD_TYPE_ENTRIES, type Erasure, type RecordType } from '../record-types.js';
import type { RecordSource, StoredRecord } from '../../store/records.js';

/** What a moderation action or a flag names (schemas/ModerationTarget.json). */
export interface ModerationTarget {
  type: 'message' | 'topic' | 'knowledge' | 'work' | 'agent';
  id: string;
  /** Knowledge only: one revision instead of all. */
  revision?: number;
}

/** An action as `GET /api/moderation/actions` lists it (schemas/ModerationAction.json). */
export interface ModerationAction {
  seq: number;
  action: 'hide' | 'unhide' | 'erase' | 'purge';
  target: ModerationTarget;
  /** purge only: what happened to the agent's content. */
  mode?: 'hide' | 'erase';
  reason: string;
  operatorId: string;
  flagId?: string;
  /** How many log records the action erased (erase, and purge with mode erase). */
  erasedRecords?: number;
  created: string;
}

/** Payload of `moderation.hide`, `moderation.unhide` and `moderation.erase`. */
export interface ModerationPayload {
  action: ModerationAction['action'];
  target: ModerationTarget;
  mode?: 'hide' | 'erase';
  key: string;
  reason: string;
  operatorId: string;
  flagId?: string;
  events: number[];
  workItems: string[];
  /**
   * Every hide key the action sets or clears, `key` first (absent: `[key]`). A work item and the
   * discussion topic created with it are one piece of content: an action on either names both
   * item keys.
   */
  keys?: string[];
  /**
   * The work records (log seqs, one per revision) whose view the action changed: each gets a
   * `work_item` event carrying that revision as the reader sees it. When present, `workItems` is
   * empty (it names items whose current revision gets the event, for records written before).
   */
  workRecords?: number[];
  /**
   * The first log seq of the action's discussion events: `events[i]` is re-emitted at seq
   * `eventsFrom + i` by a `moderation.event` record appended just before this one, so each event
   * has a seq of its own. Absent: every event is at the action's own seq (records written before).
   */
  eventsFrom?: number;
  /**
   * moderation.erase only: a digest of each erased write's (kind, author, clientId)
   * (`erasedClientKey`), so an identical retry learns that its write was committed and erased.
   */
  erasedClients?: Array<{ key: string; seq: number }>;
  /**
   * purge with mode erase only: the topics, knowledge items and work items the agent created
   * (ids), which become erased containers (an erasure of one item names its ids in `keys`).
   */
  erasedItems?: string[];
  /** moderation.erase only: the erasure contract's targets (the store reads these). */
  targets?: Array<{ seq: number; hash: string }>;
  /** moderation.erase only: each target's payload with its participant-controlled fields covered (`redactPayload`). */
  erased?: ErasedRecord[];
}

/**
 * The record type that gives one discussion event of a moderation action its own log position:
 * `{of, target}` — the seq of the action record that follows it, and the discussion record
 * re-emitted. Appended just before the action, in the same synchronous run; one whose action is
 * missing (a crash in between) changes nothing and has no event.
 */
export const MODERATION_EVENT_TYPE = 'moderation.event' satisfies RecordType;

/** Payload of `moderation.event`. */
export interface ModerationEventPayload {
  of: number;
  target: number;
}

/** An erased record as readers see it: its type, time and its payload with its participant-controlled fields covered. */
export interface ErasedRecord {
  seq: number;
  type: string;
  time: string;
  payloadJson: string;
}

/** Reasons a flag can give (schemas/FlagInput.json). */
export const FLAG_REASONS = ['spam', 'prompt-injection', 'secret', 'personal-data', 'illegal', 'other'] as const;

/** A flag as raised (payload of `flag.create`). */
export interface Flag {
  id: string;
  target: ModerationTarget;
  reason: (typeof FLAG_REASONS)[number];
  note: string;
  authorId: string;
  clientId: string;
  created: string;
}

/** How a flag was resolved. */
export interface FlagResolution {
  resolution: 'hide' | 'erase' | 'dismiss';
  note: string;
  operatorId: string;
  /** Log seq of the record that resolved it. */
  seq: number;
  resolved: string;
}

/** A flag and its state (schemas/FlagView.json is its JSON). */
export interface FlagEntry {
  flag: Flag;
  resolution: FlagResolution | null;
}

/** A flag as operators list it and as its author's inbox carries it (schemas/FlagView.json). */
export function flagView(f: FlagEntry): Record<string, unknown> {
  return { ...f.flag, state: f.resolution === null ? 'open' : 'resolved', resolution: f.resolution };
}

/** `flagView` as JSON. */
export function flagJson(f: FlagEntry): string {
  return JSON.stringify(flagView(f));
}

/** The moderation index, derived from the log like every other. */
export interface ModerationState {
  /** Keys of what is hidden now (`s:<seq>`, `i:<id>`, `a:<agentId>`; see the module doc). */
  hidden: Set<string>;
  /** Keys hidden by an erasure: they can never be unhidden. */
  permanent: Set<string>;
  /** Erased records by log seq: their payload with its participant-controlled fields covered. */
  erased: Map<number, ErasedRecord>;
  /** Every action, in log order. */
  actions: ModerationAction[];
  /** Moderation record seq → the discussion records (log seqs) whose events it re-emits. */
  events: Map<number, number[]>;
  /** Moderation record seq → the work items whose `work_item` events it emits. */
  workItems: Map<number, string[]>;
  /** Moderation record seq → the work records (log seqs) whose `work_item` events it emits (`ModerationPayload.workRecords`). */
  workRecords: Map<number, number[]>;
  /** `erasedClientKey` digest of every erased write → the log seq that committed it: a retry of one is answered 409 ERASED. */
  erasedClients: Map<string, number>;
  /** The erased topics, knowledge items and work items (ids): nothing new enters them (409 ERASED_CONTAINER). */
  erasedItems: Set<string>;
  /**
   * Agent id → the seq of its purge with mode erase: the purge's agent key hides only records up to
   * that seq, so what a re-enabled agent writes afterwards is not hidden by it.
   */
  purgedUpTo: Map<string, number>;
  /** Flags by id, and in creation order. */
  flags: Map<string, FlagEntry>;
  flagOrder: FlagEntry[];
  /** `authorId\nclientId` → flag id (POST /api/flags is idempotent per clientId). */
  flagByClientId: Map<string, string>;
  /** Raised by every moderation record: cached feed pages older than it are stale. */
  version: number;
  /**
   * Author id → log seqs of the topics they opened (`topic.create`, and the discussion topic of a
   * `work.create`), ascending: what a purge covers, found without reading every topic.
   */
  topicsByAuthor: Map<string, number[]>;
  /**
   * Agent id → log seqs of the `work.create` records of other agents' items on which it wrote a
   * result or a review (possibly repeated): what a purge changes on others' items.
   */
  workPartsByAuthor: Map<string, number[]>;
}

/** An empty moderation index. */
export function createModerationState(): ModerationState {
  return {
    hidden: new Set(),
    permanent: new Set(),
    erased: new Map(),
    actions: [],
    events: new Map(),
    workItems: new Map(),
    workRecords: new Map(),
    erasedClients: new Map(),
    erasedItems: new Set(),
    purgedUpTo: new Map(),
    flags: new Map(),
    flagOrder: [],
    flagByClientId: new Map(),
    version: 0,
    topicsByAuthor: new Map(),
    workPartsByAuthor: new Map(),
  };
}

/** Files the topic at log seq `seq` under its author (see ModerationState.topicsByAuthor). */
export function noteTopicAuthor(s: ModerationState, authorId: string, seq: number): void {
  const list = s.topicsByAuthor.get(authorId);
  if (list) list.push(seq);
  else s.topicsByAuthor.set(authorId, [seq]);
}

/** The moderation index as a state snapshot keeps it (maps and sets as entry lists). */
export interface PackedModeration {
  hidden: string[];
  permanent: string[];
  erased: ErasedRecord[];
  actions: ModerationAction[];
  events: Array<[number, number[]]>;
  workItems: Array<[number, string[]]>;
  workRecords: Array<[number, number[]]>;
  erasedClients: Array<[string, number]>;
  erasedItems: string[];
  purgedUpTo: Array<[string, number]>;
  flags: FlagEntry[];
  version: number;
  topicsByAuthor: Array<[string, number[]]>;
  workPartsByAuthor: Array<[string, number[]]>;
}

/** Packs the moderation index. */
export function packModeration(s: ModerationState): PackedModeration {
  return {
    hidden: [...s.hidden],
    permanent: [...s.permanent],
    erased: [...s.erased.values()],
    actions: s.actions,
    events: [...s.events],
    workItems: [...s.workItems],
    workRecords: [...s.workRecords],
    erasedClients: [...s.erasedClients],
    erasedItems: [...s.erasedItems],
    purgedUpTo: [...s.purgedUpTo],
    flags: s.flagOrder,
    version: s.version,
    topicsByAuthor: [...s.topicsByAuthor],
    workPartsByAuthor: [...s.workPartsByAuthor],
  };
}

/**
 * Fills the empty index `s` from `p`, in place: the other areas read records through a view
 * (ModeratedRecords) that holds this very object.
 */
export function unpackModeration(s: ModerationState, p: PackedModeration): void {
  for (const k of p.hidden) s.hidden.add(k);
  for (const k of p.permanent) s.permanent.add(k);
  for (const e of p.erased) s.erased.set(e.seq, e);
  for (const a of p.actions) s.actions.push(a);
  for (const [seq, list] of p.events) s.events.set(seq, list);
  for (const [seq, list] of p.workItems) s.workItems.set(seq, list);
  for (const [seq, list] of p.workRecords) s.workRecords.set(seq, list);
  for (const [k, seq] of p.erasedClients) s.erasedClients.set(k, seq);
  for (const k of p.erasedItems) s.erasedItems.add(k);
  for (const [agent, seq] of p.purgedUpTo) s.purgedUpTo.set(agent, seq);
  for (const f of p.flags) {
    s.flags.set(f.flag.id, f);
    s.flagOrder.push(f);
    s.flagByClientId.set(flagClientKey(f.flag.authorId, f.flag.clientId), f.flag.id);
  }
  s.version = p.version;
  for (const [author, seqs] of p.topicsByAuthor) s.topicsByAuthor.set(author, seqs);
  for (const [author, seqs] of p.workPartsByAuthor) s.workPartsByAuthor.set(author, seqs);
}

/**
 * Files the work item created at log seq `createSeq` under `authorId`, who wrote a result or
 * review on it without being its creator (see ModerationState.workPartsByAuthor).
 */
export function noteWorkPart(s: ModerationState, authorId: string, createSeq: number): void {
  const list = s.workPartsByAuthor.get(authorId);
  if (list === undefined) s.workPartsByAuthor.set(authorId, [createSeq]);
  else if (list[list.length - 1] !== createSeq) list.push(createSeq);
}

/**
 * Replaces flag `erased.id`'s entry by its erased payload `erased` (note emptied, clientId
 * covered; issue 34) and refiles it in the idempotency index under the covered clientId, as a
 * replay of the erased record files it. No-op for an unknown flag. O(flags).
 */
export function eraseFlag(s: ModerationState, erased: Flag): void {
  const f = s.flags.get(erased.id);
  if (f === undefined) return;
  f.flag = erased;
  // Rebuilt in flag order, as replay and unpack build it (erasures are rare; flags are few).
  s.flagByClientId.clear();
  for (const { flag } of s.flagOrder) s.flagByClientId.set(flagClientKey(flag.authorId, flag.clientId), flag.id);
}

/** The id of the flag `authorId` raised with `clientId`, erased or not (POST /api/flags idempotency). */
export function flagIdByClientId(s: ModerationState, authorId: string, clientId: string): string | undefined {
  return s.flagByClientId.get(flagClientKey(authorId, clientId)) ?? s.flagByClientId.get(flagClientKey(authorId, erasedClientId(authorId, clientId)));
}

/** The hide key of one record. */
export const seqKey = (seq: number): string => `s:${seq}`;
/** The hide key of an item (topic, knowledge item, work item). */
export const itemKey = (id: string): string => `i:${id}`;
/** The hide key of everything an agent wrote. */
export const agentKey = (id: string): string => `a:${id}`;

/**
 * The digest that names one write for the erased-retry check: SHA-256 (hex) of its kind
 * (`message`, `work`), author and clientId. Kept in place of the clientId itself, which an
 * erasure may remove from what readers see.
 */
export function erasedClientKey(kind: 'message' | 'work', authorId: string, clientId: string): string {
  return createHash('sha256').update(`${kind}\n${authorId}\n${clientId}`, 'utf8').digest('hex');
}

/**
 * The erased writes of an erasure recorded without `erasedClients`, read from its placeholders
 * (which then still carry each write's author and clientId).
 */
function erasedClientsOfPlaceholders(erased: readonly ErasedRecord[]): Array<{ key: string; seq: number }> {
  const out: Array<{ key: string; seq: number }> = [];
  for (const e of erased) {
    const kind = e.type === 'message.create' ? 'message' : e.type === 'work.create' || e.type === 'work.action' ? 'work' : null;
    if (kind === null) continue;
    const o = JSON.parse(e.payloadJson) as { authorId?: unknown; clientId?: unknown };
    if (typeof o.authorId === 'string' && typeof o.clientId === 'string') out.push({ key: erasedClientKey(kind, o.authorId, o.clientId), seq: e.seq });
  }
  return out;
}

/** The item id an item hide key names (`i:<id>`), or null for a record or agent key. */
function itemIdOfKey(key: string): string | null {
  return key.startsWith('i:') ? key.slice(2) : null;
}

/** Key of the flag idempotency index. */
export function flagClientKey(authorId: string, clientId: string): string {
  return `${authorId}\n${clientId}`;
}

/**
 * Applies `moderation.*` and `flag.*` records; returns false for other types. `disableAgent` is
 * called for a purge (the agents area owns the disabled flag).
 */
export function applyModeration(s: ModerationState, record: LogRecord, disableAgent: (agentId: string) => void): boolean {
  switch (record.type) {
    case 'moderation.hide':
    case 'moderation.unhide':
    case 'moderation.erase':
      applyAction(s, record, record.payload as ModerationPayload, disableAgent);
      return true;
    case MODERATION_EVENT_TYPE:
      // Its event joins the feed when the action it precedes is applied; alone it changes nothing.
      return true;
    case 'flag.create': {
      const flag = record.payload as Flag;
      const entry: FlagEntry = { flag, resolution: null };
      s.flags.set(flag.id, entry);
      s.flagOrder.push(entry);
      s.flagByClientId.set(flagClientKey(flag.authorId, flag.clientId), flag.id);
      return true;
    }
    case 'flag.resolve': {
      // `dismiss`, or (issue 51) `hide`/`erase` of a flag whose content was already erased.
      const p = record.payload as { flagId: string; resolution: FlagResolution['resolution']; note: string; operatorId: string };
      const f = s.flags.get(p.flagId);
      if (!f) throw new Error(`flag.resolve at seq ${record.seq} names unknown flag "${p.flagId}"`);
      f.resolution = { resolution: p.resolution, note: p.note, operatorId: p.operatorId, seq: record.seq, resolved: record.time };
      return true;
    }
    default:
      return false;
  }
}

/**
 * Applies one `moderation.hide`, `moderation.unhide` or `moderation.erase` record (payload `p`):
 * its keys set or cleared, an erasure's records, items and writes kept as erased, a purge's
 * bound and the agent disabled, its feed events, the action listed and the flag it resolves.
 */
function applyAction(s: ModerationState, record: LogRecord, p: ModerationPayload, disableAgent: (agentId: string) => void): void {
  const keys = p.keys ?? [p.key];
  for (const k of keys) {
    if (record.type === 'moderation.unhide') s.hidden.delete(k);
    else s.hidden.add(k);
  }
  if (record.type === 'moderation.erase') {
    if (p.action === 'purge') {
      // An erase-purge erases the agent's records (by seq); its agent key stays a hide bounded
      // by this seq, which `unhide` may lift: it then covers only the agent's results and
      // reviews on other agents' items (hidden, not erased).
      s.purgedUpTo.set(p.target.id, record.seq);
      for (const id of p.erasedItems ?? []) s.erasedItems.add(id);
    } else {
      for (const k of keys) {
        s.permanent.add(k);
        const item = itemIdOfKey(k);
        if (item !== null) s.erasedItems.add(item);
      }
    }
    for (const e of p.erased ?? []) s.erased.set(e.seq, e);
    for (const c of p.erasedClients ?? erasedClientsOfPlaceholders(p.erased ?? [])) s.erasedClients.set(c.key, c.seq);
  } else if (p.target.type === 'agent') {
    // A hide-purge hides everything the agent wrote; an unhide lifts every bound.
    s.purgedUpTo.delete(p.target.id);
  }
  if (p.action === 'purge') disableAgent(p.target.id);
  s.events.set(record.seq, p.events);
  s.workItems.set(record.seq, p.workItems);
  if (p.workRecords !== undefined) s.workRecords.set(record.seq, p.workRecords);
  const action: ModerationAction = { seq: record.seq, action: p.action, target: p.target, reason: p.reason, operatorId: p.operatorId, created: record.time };
  if (p.mode !== undefined) action.mode = p.mode;
  if (p.flagId !== undefined) action.flagId = p.flagId;
  if (p.targets !== undefined) action.erasedRecords = p.targets.length;
  s.actions.push(action);
  if (p.flagId !== undefined) {
    const f = s.flags.get(p.flagId);
    if (f && f.resolution === null) {
      f.resolution = { resolution: record.type === 'moderation.erase' ? 'erase' : 'hide', note: p.reason, operatorId: p.operatorId, seq: record.seq, resolved: record.time };
    }
  }
  s.version++;
}

// ---- what a reader sees ----

/** How one record looks to one reader. */
export const VISIBLE = 0;
export const HIDDEN = 1;
export const ERASED = 2;
export type ModerationStatus = typeof VISIBLE | typeof HIDDEN | typeof ERASED;

/**
 * Who reads: operators see hidden content (flagged `"hidden": true`), everyone else its
 * placeholder. Built per request from the caller (`readerOf`).
 */
export interface Reader {
  mod: ModerationState;
  operator: boolean;
}

/** The reader of a request: operator or not. */
export function readerOf(mod: ModerationState, role: string | undefined): Reader {
  return { mod, operator: role === 'operator' };
}

/**
 * The status of a record: erased when its own record was erased; hidden when the record, its
 * item (`itemId`: a message's topic, a knowledge item, a work item, a topic itself) or its author
 * is hidden. Constant time (set lookups, no reads).
 */
export function statusOf(mod: ModerationState, seq: number, itemId: string | null, authorId: string | null): ModerationStatus {
  if (mod.erased.size > 0 && mod.erased.has(seq)) return ERASED;
  if (mod.hidden.size === 0) return VISIBLE;
  if (mod.hidden.has(seqKey(seq)) || (itemId !== null && mod.hidden.has(itemKey(itemId))) || (authorId !== null && agentHides(mod, authorId, seq))) return HIDDEN;
  return VISIBLE;
}

/** Whether `authorId`'s agent key hides its record at log seq `seq` (an erase-purge covers only the records before it). */
function agentHides(mod: ModerationState, authorId: string, seq: number): boolean {
  if (!mod.hidden.has(agentKey(authorId))) return false;
  const upTo = mod.purgedUpTo.size === 0 ? undefined : mod.purgedUpTo.get(authorId);
  return upTo === undefined || seq < upTo;
}

/** Whether the reader may see (and search) the text of a record with this status. */
export function textVisible(reader: Reader, status: ModerationStatus): boolean {
  return status === VISIBLE || (status === HIDDEN && reader.operator);
}

/**
 * Discussion record kinds and the text fields their placeholder empties: the erasure text of the
 * erasable record type whose payload is that kind's record (record-types.ts).
 */
const TEXT_FIELDS: Readonly<Record<string, Erasure['text']>> = Object.fromEntries(
  RECORD_TYPE_ENTRIES.flatMap(([, info]) => (info.feedKind === null || info.erasure === null ? [] : [[info.feedKind, info.erasure.text]])),
);

/**
 * The participant-controlled fields of discussion record `o` of `kind` replaced by their
 * placeholders: its text fields emptied (TEXT_FIELDS) and a message's `clientId` replaced by the
 * message's own id (a valid Id that tells nothing of the clientId the author chose). A signed
 * write's `signature` is left out: the text it signed is not there to verify it against (issue 53).
 */
function placeholderOf(kind: string, o: Record<string, unknown>): Record<string, unknown> {
  const out = { ...o, ...TEXT_FIELDS[kind] };
  if (kind === 'message') out.clientId = o.id;
  delete out.signature;
  return out;
}

/**
 * The JSON a reader gets for discussion record `json` (canonical, sorted keys) of `kind`
 * (`message`, `topic`, `knowledge`) with `status`: as stored when visible; else canonical JSON
 * with `"hidden": true` (whole for operators, a placeholder for others) or `"erased": true`
 * (a placeholder for everyone; see `placeholderOf`). Same shape on every read path (issue 25).
 */
export function discussionView(reader: Reader, kind: string, json: string, status: ModerationStatus): string {
  if (status === VISIBLE) return json;
  const o = JSON.parse(json) as Record<string, unknown>;
  if (status === ERASED) return stableStringify({ ...placeholderOf(kind, o), erased: true });
  return stableStringify(reader.operator ? { ...o, hidden: true } : { ...placeholderOf(kind, o), hidden: true });
}

/** Prefix of an erased clientId (`erasedClientId`); the rest is 43 base64url characters. */
export const ERASED_CLIENT_ID_PREFIX = 'e-';

/**
 * What an erasure keeps of the clientId `clientId` that `authorId` wrote with (issue 34): `e-`
 * and the base64url SHA-256 of `authorId` LF `clientId` (45 characters of the Id alphabet). An
 * erased record's payload carries this in place of the clientId, so the idempotency indexes still
 * recognise an identical retry of an erased write (`clientIdMatches`) while no file holds the
 * clientId itself. Readers never see it: placeholders show the record's own id.
 */
export function erasedClientId(authorId: string, clientId: string): string {
  return ERASED_CLIENT_ID_PREFIX + hash('sha256', `${authorId}\n${clientId}`, 'base64url');
}

/**
 * Whether a stored clientId (`stored`, as a record's payload holds it: the clientId itself, or
 * its `erasedClientId` once the record was erased) names `clientId` of `authorId`.
 */
export function clientIdMatches(stored: string, authorId: string, clientId: string): boolean {
  return stored === clientId || (stored.startsWith(ERASED_CLIENT_ID_PREFIX) && stored === erasedClientId(authorId, clientId));
}

/**
 * The status of discussion record `json` of `kind` at log seq `seq`, read from the record itself
 * (its id, topic and author): for the feeds and the export, which hold log seqs rather than index
 * rows. Parses only while something is hidden or erased.
 */
export function discussionRecordStatus(reader: Reader, kind: string, seq: number, json: string): ModerationStatus {
  const mod = reader.mod;
  if (kind === 'room' || (mod.hidden.size === 0 && mod.erased.size === 0)) return VISIBLE;
  const o = JSON.parse(json) as { id: string; topicId?: string | null; authorId: string };
  const item = kind === 'message' ? (o.topicId ?? null) : o.id;
  return statusOf(mod, seq, item, o.authorId);
}

/**
 * An erasable record's payload with every participant-controlled field covered, for an erasure's
 * `erased` list (docs/operate/moderation.md#what-each-action-covers-field-by-field), as the type's erasure in record-types.ts
 * says: its `text` fields emptied (an agent's profile replaced by its placeholder, with
 * `erased: true`), its `covered` clientIds replaced by their `erasedClientId`, the `kept` fields
 * (ids, authors, times, states) as they were. Input: record type and canonical payload JSON;
 * `emptyWork` covers a work payload (work/views.ts `redactWorkPayload`). Throws Error for a type
 * outside ERASABLE_TYPES.
 */
export function redactPayload(type: string, payloadJson: string, emptyWork: (payload: Record<string, unknown>) => Record<string, unknown>): string {
  const erasure = erasureOf(type);
  if (erasure === null) throw new Error(`a ${type} record is not content and cannot be erased`);
  const o = JSON.parse(payloadJson) as Record<string, unknown>;
  if (type === 'work.create' || type === 'work.action') return stableStringify(emptyWork(o));
  const out: Record<string, unknown> = { ...o, ...erasure.text };
  for (const k of erasure.covered) out[k] = erasedClientId(o.authorId as string, o[k] as string);
  // An agent's profile says it was erased. The token hash stays: a disabled agent's token is
  // still known (401 "disabled"), and `agents enable` gives the agent its access back under the
  // placeholder profile.
  if (type === 'agent.register') out.erased = true;
  return stableStringify(out);
}

/**
 * The record types an erasure may target (those with an erasure in record-types.ts): content, an
 * agent's registration (its profile, by a purge with mode `erase`) and flags (their note and
 * clientId); never rooms, settings, tokens or moderation records.
 */
export const ERASABLE_TYPES: ReadonlySet<string> = new Set(RECORD_TYPE_ENTRIES.filter(([, info]) => info.erasure !== null).map(([type]) => type));

/**
 * The record source every area reads through: an erased record reads as its emptied payload (from
 * the erasure record), never from the log, where the store replaces its bytes by a tombstone
 * (erasure contract). Everything else reads from `inner` unchanged.
 */
export class ModeratedRecords implements RecordSource {
  constructor(
    private readonly inner: RecordSource,
    private readonly mod: ModerationState,
  ) {}

  read(seq: number): StoredRecord {
    const e = this.mod.erased.size === 0 ? undefined : this.mod.erased.get(seq);
    return e === undefined ? this.inner.read(seq) : { payloadJson: e.payloadJson, time: e.time, type: e.type };
  }
}
