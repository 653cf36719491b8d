/**
 * The per-agent inbox (issue 37): for each agent, the log seqs of the records that concern it,
 * derived from the log like every other index (filled by `applyInbox`, called from `apply`).
 *
 * An entry is one log record, at most once per agent, never a record of the agent's own action:
 * - `reply`: a message whose `replyTo` names a message the agent wrote;
 * - `mention`: a message (not the agent's own) whose content holds `@<agentId>`, or `@<name>` where
 *   `<name>` equals the agent's registered name compared case-insensitively; the token after `@`
 *   is the longest run of `[A-Za-z0-9_-]` and the `@` must not follow a letter, digit or `_` (so
 *   `a@b` is no mention). A name holding any other character (a space, a dot), and the name of an
 *   agent whose profile an erase-purge replaced, can only be mentioned by id. A message that is both a reply to the agent and a mention of it is one
 *   `reply` entry;
 * - `work`: a new revision (`work.action`) of a work item the agent created or is or was the
 *   assignee of, made by another agent;
 * - `flag`: the record that resolved a flag the agent raised (`flag.resolve` for a dismissal, the
 *   `moderation.hide`/`moderation.erase` that named the flag), unless the agent resolved it itself;
 * - `correction`: a knowledge revision of category `correction`, by another agent, whose content or
 *   one of whose sources names a knowledge item the agent wrote (published revision 1 of; only that
 *   agent may revise it, part 5 item 8). An item is named by its id as a whole token: `kn_` and
 *   digits, not right after or before a letter, digit or `_` (so `…/api/knowledge/kn_0000000042`
 *   and `see kn_0000000042.` name it, `xkn_0000000042` does not), and the item must exist when the
 *   correction is published. Each revision is judged on its own: every later revision of the
 *   correction that still names the item is an entry too. A correction naming several of the
 *   agent's items is one entry. (A new revision of the agent's own item is always its own action,
 *   so it is never an entry.)
 *
 * Memory: one U32List (4 bytes an entry) per agent that has entries, the registered names that can
 * be mentioned (lower-cased → agent ids) and the assignees of each work item that ever had one.
 * A page binary-searches the agent's list for the cursor and reads back at most `limit` records:
 * it costs what it returns, never a scan of the archive.
 */
import { U32List } from '../../containers/u32-list.js';
import type { LogRecord } from '../../store/log.js';
import type { RecordSource } from '../../store/records.js';
import { FEED_POLL_BACKLOG_SECONDS, FEED_POLL_CAUGHT_UP_SECONDS } from '../../constants.js';
import type { AgentRegisterPayload } from '../agents/agents.js';
import { lastOnly, uuidV5, type CursorQuery } from '../feeds/pages.js';
import { SEQ_POSITIONS, type FeedPositions } from '../feeds/feeds.js';
import { messageAuthorOf, type ForumState } from '../forum/forum.js';
import { discussionRecordStatus, flagJson, statusOf, VISIBLE, type ModerationPayload, type ModerationState, type Reader } from '../moderation/moderation.js';
import type { WorkActionPayload, WorkBoardState } from '../work/work.js';
import { workRecordJson } from '../work/views.js';
import { packLists, unpackLists, type PackedArrays, type PackedLists } from '../packing.js';
import { knowledgeAuthorOf, type Knowledge, type KnowledgeState } from '../knowledge/knowledge.js';

export const INBOX_FORMAT = 'forum-inbox-v1';

/** RFC 4122 namespace used to derive the inbox's originId (ours; a fixed random UUID). */
const INBOX_NAMESPACE = '9b2d47e1-5c3a-4f8e-b6d0-71a4e9c2f358';

/**
 * The inbox's originId: derived from the log's originId (stable across restarts, new with a new
 * lineage, never equal to either feed's, so a feed cursor sent to the inbox is a 409).
 */
export const inboxOriginId = lastOnly((logOriginId) => uuidV5(`${INBOX_FORMAT}:${logOriginId}`, INBOX_NAMESPACE));

/** Every agent's inbox and what deciding an entry needs. */
export interface InboxState {
  /** Agent id → log seqs of its entries, ascending. */
  byAgent: Map<string, U32List>;
  /** Lower-cased registered name (mentionable ones only) → the ids of the agents with that name. */
  byName: Map<string, string[]>;
  /** Work item id → every agent that has been its assignee. */
  assignees: Map<string, string[]>;
  /** The highest seq added to any inbox (0: none): what long-polling waiters compare. */
  last: number;
}

/** An empty inbox index. */
export function createInboxState(): InboxState {
  return { byAgent: new Map(), byName: new Map(), assignees: new Map(), last: 0 };
}

/** A name that can be mentioned as `@name`: the whole token the mention syntax reads. */
const MENTIONABLE_NAME = /^[A-Za-z0-9_-]+$/;
/** A mention token: `@` not after a word character, then the longest run of the token alphabet. */
const MENTION = /(?<![A-Za-z0-9_])@([A-Za-z0-9_-]+)/g;

/** The areas `applyInbox` reads (all applied before it for the same record). */
export interface InboxSources {
  forum: ForumState;
  knowledge: KnowledgeState;
  moderation: ModerationState;
  isAgent: (id: string) => boolean;
}

function addEntry(s: InboxState, agentId: string, seq: number): void {
  let list = s.byAgent.get(agentId);
  if (list === undefined) s.byAgent.set(agentId, (list = new U32List(4)));
  else if (list.at(list.length - 1) === seq) return;
  list.push(seq);
  if (seq > s.last) s.last = seq;
}

/** Removes `agentId` from the mentionable names. */
function forgetName(s: InboxState, agentId: string): void {
  for (const [name, ids] of s.byName) {
    const left = ids.filter((id) => id !== agentId);
    if (left.length === 0) s.byName.delete(name);
    else if (left.length !== ids.length) s.byName.set(name, left);
  }
}

/** A knowledge id as a whole token (module doc, `correction`). */
const KNOWLEDGE_ID_TOKEN = /(?<![A-Za-z0-9_])kn_\d+(?![A-Za-z0-9_])/g;

/**
 * The authors of the knowledge items that correction `k` names (module doc), without repeats and
 * without `k`'s own author.
 */
function correctedAuthors(knowledge: KnowledgeState, k: Knowledge): string[] {
  const out = new Set<string>();
  for (const text of [k.content, ...k.sources]) {
    for (const m of text.matchAll(KNOWLEDGE_ID_TOKEN)) {
      const author = knowledgeAuthorOf(knowledge, m[0]);
      if (author !== undefined && author !== k.authorId) out.add(author);
    }
  }
  return [...out];
}

/** The agents a message's content mentions (module doc), in order of appearance, without repeats. */
function mentionedAgents(s: InboxState, content: string, isAgent: (id: string) => boolean): string[] {
  const out = new Set<string>();
  for (const m of content.matchAll(MENTION)) {
    const token = m[1]!;
    if (isAgent(token)) out.add(token);
    for (const id of s.byName.get(token.toLowerCase()) ?? []) out.add(id);
  }
  return [...out];
}

/**
 * Files record `record` (payload JSON `payloadJson`, as `apply` got it) in the inboxes it concerns
 * (module doc). Called by `apply` after every other area applied the record.
 */
export function applyInbox(s: InboxState, src: InboxSources, record: LogRecord, payloadJson: string): void {
  switch (record.type) {
    case 'agent.register': {
      const p = record.payload as AgentRegisterPayload;
      if (MENTIONABLE_NAME.test(p.name)) {
        const key = p.name.toLowerCase();
        const ids = s.byName.get(key);
        if (ids) ids.push(p.id);
        else s.byName.set(key, [p.id]);
      }
      return;
    }
    case 'message.create': {
      const rows = src.forum.rows;
      const row = rows.seq.length - 1;
      const author = messageAuthorOf(src.forum, row);
      const parentSeq = rows.replyTo.at(row);
      if (parentSeq > 0) {
        const parentAuthor = messageAuthorOf(src.forum, rows.seq.upperBound(parentSeq - 1));
        if (parentAuthor !== author) addEntry(s, parentAuthor, record.seq);
      }
      // Only a payload holding an `@` is parsed: replay never parses other messages.
      if (payloadJson.includes('@')) {
        const { content } = JSON.parse(payloadJson) as { content: string };
        for (const id of mentionedAgents(s, content, src.isAgent)) if (id !== author) addEntry(s, id, record.seq);
      }
      return;
    }
    case 'knowledge.publish': {
      // Only a correction is parsed: replay never parses other revisions (canonical JSON: sorted
      // keys, no spaces, and a quote inside a string is escaped, so this finds the field only).
      if (!payloadJson.includes('"category":"correction"')) return;
      const k = JSON.parse(payloadJson) as Knowledge;
      if (k.category !== 'correction') return;
      for (const id of correctedAuthors(src.knowledge, k)) addEntry(s, id, record.seq);
      return;
    }
    case 'work.action': {
      const { item, authorId: actor } = record.payload as WorkActionPayload;
      let past = s.assignees.get(item.id);
      if (item.assigneeId !== null && !(past ?? []).includes(item.assigneeId)) {
        if (past === undefined) s.assignees.set(item.id, (past = []));
        past.push(item.assigneeId);
      }
      for (const id of new Set([item.authorId, ...(past ?? [])])) if (id !== actor) addEntry(s, id, record.seq);
      return;
    }
    case 'flag.resolve': {
      const p = record.payload as { flagId: string; operatorId: string };
      const author = src.moderation.flags.get(p.flagId)?.flag.authorId;
      if (author !== undefined && author !== p.operatorId) addEntry(s, author, record.seq);
      return;
    }
    case 'moderation.hide':
    case 'moderation.erase': {
      const p = record.payload as ModerationPayload;
      // An erase-purge replaces the agent's registered name (a replay reads the placeholder): from
      // then on its old name mentions nobody, live as after a replay.
      if (record.type === 'moderation.erase' && p.action === 'purge') forgetName(s, p.target.id);
      if (p.flagId === undefined) return;
      const f = src.moderation.flags.get(p.flagId);
      // Only the record that resolved the flag (a later action naming it resolves nothing).
      if (f !== undefined && f.resolution?.seq === record.seq && f.flag.authorId !== p.operatorId) addEntry(s, f.flag.authorId, record.seq);
      return;
    }
    default:
      return;
  }
}

/** Whether `agentId`'s inbox has an entry in (after, head]. Constant time. */
export function inboxHasEntryAfter(s: InboxState, agentId: string, after: number, head: number): boolean {
  const list = s.byAgent.get(agentId);
  if (list === undefined) return false;
  const i = list.upperBound(after);
  return i < list.length && list.at(i) <= head;
}

/** The seq of `agentId`'s latest entry (0: none). */
export function inboxLast(s: InboxState, agentId: string): number {
  const list = s.byAgent.get(agentId);
  return list === undefined || list.length === 0 ? 0 : list.at(list.length - 1);
}

/** What an inbox page reads: the records, the indexes that render them and the moderation view. */
export interface InboxPageSources {
  records: RecordSource;
  forum: ForumState;
  work: WorkBoardState;
  reader: Reader;
}

/**
 * The JSON of the entry at log seq `seq` of `agentId`'s inbox, or null when its content is hidden
 * or erased now (the entry is dropped, not shown as a placeholder): `{"seq","reason","time",
 * "<kind>": <record>}` (`seq`: the record's position, `positions`, issue 50) with `message` (reason `reply` or `mention`), `knowledge` (`correction`: the
 * revision as the discussion feed carries it), `workItem` (`work`) or `flag` (`flag`), each as the
 * reader would see it on the feeds and the flag list.
 */
function entryJson(src: InboxPageSources, agentId: string, seq: number, positions: FeedPositions): string | null {
  const r = src.records.read(seq);
  const head = `{"seq":${positions.positionOf(seq)},"time":"${r.time}",`;
  switch (r.type) {
    case 'message.create': {
      if (discussionRecordStatus(src.reader, 'message', seq, r.payloadJson) !== VISIBLE) return null;
      // A reply to the agent's message, as applyInbox filed it: the forum's rows hold the parent's
      // seq (0 for no parent), so the payload is not parsed again for every page that shows it.
      const rows = src.forum.rows;
      const parentSeq = rows.replyTo.at(rows.seq.upperBound(seq - 1));
      const reply = parentSeq > 0 && messageAuthorOf(src.forum, rows.seq.upperBound(parentSeq - 1)) === agentId;
      return `${head}"reason":"${reply ? 'reply' : 'mention'}","message":${r.payloadJson}}`;
    }
    case 'knowledge.publish': {
      if (discussionRecordStatus(src.reader, 'knowledge', seq, r.payloadJson) !== VISIBLE) return null;
      return `${head}"reason":"correction","knowledge":${r.payloadJson}}`;
    }
    case 'work.action': {
      const { item } = JSON.parse(r.payloadJson) as WorkActionPayload;
      if (statusOf(src.reader.mod, seq, item.id, item.authorId) !== VISIBLE) return null;
      return `${head}"reason":"work","workItem":${workRecordJson(src.work, seq, src.reader)}}`;
    }
    default: {
      const flagId = (JSON.parse(r.payloadJson) as { flagId?: string }).flagId;
      const f = flagId === undefined ? undefined : src.reader.mod.flags.get(flagId);
      if (f === undefined) return null;
      return `${head}"reason":"flag","flag":${flagJson(f)}}`;
    }
  }
}

/**
 * One page of `agentId`'s inbox as JSON (`forum-inbox-v1`, docs/api/feeds.md): its entries in
 * (after, head] in log order (log seqs: `q.after` as `checkCursor` mapped the client's position),
 * at most `q.limit` of them read back (hidden and erased ones count toward the limit and are left
 * out, so a page can be short with hasMore true). The cursor's `after` is the last entry read, or
 * `head` once nothing is left, as a position (`positions`, the log's: issue 50), and so is each
 * entry's `seq`. The caller checks the cursor.
 */
export function inboxPageJson(s: InboxState, src: InboxPageSources, agentId: string, q: CursorQuery, originId: string, head: number, positions: FeedPositions = SEQ_POSITIONS): string {
  const list = s.byAgent.get(agentId);
  const out: string[] = [];
  let i = list === undefined ? 0 : list.upperBound(q.after);
  let after = q.after;
  const n = list?.length ?? 0;
  for (let read = 0; read < q.limit && i < n && list!.at(i) <= head; read++, i++) {
    after = list!.at(i);
    const e = entryJson(src, agentId, after, positions);
    if (e !== null) out.push(e);
  }
  const hasMore = i < n && list!.at(i) <= head;
  if (!hasMore) after = Math.max(after, head);
  return inboxPage(originId, positions.positionOf(after), hasMore, out);
}

/** The inbox page envelope: cursor `after` (a position), `hasMore` and the entries already encoded. */
function inboxPage(originId: string, after: number, hasMore: boolean, entries: string[]): string {
  const poll = hasMore ? FEED_POLL_BACKLOG_SECONDS : FEED_POLL_CAUGHT_UP_SECONDS;
  return `{"format":"${INBOX_FORMAT}","cursor":{"originId":"${originId}","after":${after}},"hasMore":${hasMore},"pollAfterSeconds":${poll},"entries":[${entries.join(',')}]}`;
}

/**
 * A follower's inbox answer to a cursor ahead of its head (issue 50; feeds/pages.ts `checkCursor`):
 * no entries, caught up, and the client's own cursor `after` (a position) back.
 */
export function inboxNotYetPageJson(originId: string, after: number): string {
  return inboxPage(originId, after, false, []);
}

/** The inbox as a state snapshot keeps it. */
export interface PackedInbox {
  byAgent: PackedLists;
  byName: Array<[string, string[]]>;
  assignees: Array<[string, string[]]>;
  last: number;
}

/** Packs the inbox; its lists go to `arrays`. */
export function packInbox(s: InboxState, arrays: PackedArrays): PackedInbox {
  return { byAgent: packLists(s.byAgent, arrays), byName: [...s.byName], assignees: [...s.assignees], last: s.last };
}

/** Fills the empty inbox `s` from `p`. Throws Error for damaged data. */
export function unpackInbox(s: InboxState, p: PackedInbox, arrays: PackedArrays): void {
  s.byAgent = unpackLists(p.byAgent, arrays);
  s.byName = new Map(p.byName);
  s.assignees = new Map(p.assignees);
  s.last = p.last;
}
