/**
 * Moderation decisions (issue 25): what one action hides, unhides or erases, checked against the
 * current state, as the payload of the one record that performs it; and flags.
 *
 * What an action covers (its `key`, its feed `events` and, for an erasure, its `targets`):
 * - message: its `message.create` record;
 * - topic: the topic and its messages (messages posted later in a hidden topic are hidden too);
 *   an erasure removes the topic's record and its messages' records;
 * - knowledge: every revision (later revisions too), or one revision with `revision`;
 * - work: the item's text fields in every revision; an erasure removes every record of the item
 *   (its `work.create` record and its `work.action` ones);
 * - a work item and the discussion topic created with it (inside its `work.create` record) are one
 *   piece of content: an action on either covers the item's every revision, the topic and the
 *   topic's messages, under the item's key (a topic named by `topicId` is not the item's);
 * - agent (purge): everything the agent wrote — messages, topics, knowledge, the work items it
 *   created — and the agent is disabled; the revisions of other agents' items carrying its result
 *   or review get work events (their parts are emptied for readers). With mode `erase`, the
 *   agent's own records are erased.
 *   With mode `erase`, also the agent's registration (its profile) and the flags it raised.
 * Every erasure also erases the flags on what it erases (their notes may quote it; see
 * `participantRecordsOf`).
 */
import { fail, invalid, notFound } from '../../errors.js';
import { idHasSeq, makeId } from '../ids.js';
import type { Positions } from '../positions.js';
import type { State } from '../state.js';
import type { RecordType } from '../record-types.js';
import { messageById } from '../forum/forum.js';
import { knowledgeIdOf, knowledgeRevisionsOf, knowledgeRowsByAuthor, knowledgeSeqOf } from '../knowledge/knowledge.js';
import { workIdOf, workOwnTopicOf, workPartAuthorsAt, workRevisionSeqs, workRowAtSeq, workRowOf, workRowsByAuthor } from '../work/work.js';
import { redactWorkPayload } from '../work/views.js';
import {
  agentKey,
  ERASABLE_TYPES,
  erasedClientKey,
  flagIdByClientId,
  itemKey,
  redactPayload,
  seqKey,
  type ErasedRecord,
  type Flag,
  type FlagEntry,
  type ModerationPayload,
  type ModerationTarget,
} from './moderation.js';

/** A validated moderation request (schemas/ModerationActionInput.json). */
export interface ModerationInput {
  action: 'hide' | 'unhide' | 'erase' | 'purge';
  target: ModerationTarget;
  reason: string;
  /** purge only (default hide). */
  mode?: 'hide' | 'erase';
  /** Set when the action resolves a flag. */
  flagId?: string;
}

/**
 * What an action covers: its hide key and every key it sets (`keys`), the discussion records
 * whose view it changes (`events`, log seqs), the work records whose view it changes
 * (`workRecords`, log seqs, one per revision), the records it would erase (`records`) and the
 * writes it would erase (`clients`: kind, author, clientId and the seq that committed each).
 */
interface Coverage {
  key: string;
  keys: string[];
  events: number[];
  workRecords: number[];
  records: number[];
}

const ascending = (a: number, b: number): number => a - b;

/** The sorted distinct values of `xs`. */
function sortedSet(xs: Iterable<number>): number[] {
  return [...new Set(xs)].sort(ascending);
}

/** The log seqs of topic `topicId`'s record and of its messages, in log order. */
function topicSeqs(state: State, topicId: string, topicSeq: number): number[] {
  const { forum } = state;
  const messages = forum.byTopic.get(topicId);
  const seqs = [topicSeq];
  for (let i = 0; messages !== undefined && i < messages.length; i++) seqs.push(forum.rows.seq.at(messages.at(i)));
  return seqs;
}

/**
 * A work item and, when it was created with one, its own discussion topic (the topic inside its
 * `work.create` record) are one piece of content: hiding, unhiding or erasing either covers the
 * item's every revision, the topic and the topic's messages, under the item's key. A topic the
 * creator named by `topicId` is not the item's: it is moderated on its own.
 */
function workCoverage(state: State, row: number): Coverage {
  const { forum, work } = state;
  const id = workIdOf(work, row);
  const revisions = workRevisionSeqs(work, row);
  const topicId = workOwnTopicOf(work, row, (t) => forum.topics.get(t));
  if (topicId === null) return { key: itemKey(id), keys: [itemKey(id)], events: [], workRecords: revisions, records: revisions };
  const topic = topicSeqs(state, topicId, forum.topics.get(topicId)!);
  return { key: itemKey(id), keys: [itemKey(id), itemKey(topicId)], events: topic, workRecords: revisions, records: sortedSet([...revisions, ...topic]) };
}

/**
 * The work records (log seqs) of other agents' items whose result or review `agentId` wrote: a
 * purge empties those parts for readers, so each such revision gets a `work_item` event.
 * Reads the revisions of the items the agent wrote such parts on (ModerationState.workPartsByAuthor).
 */
function workPartsOf(state: State, agentId: string): number[] {
  const { work } = state;
  const out: number[] = [];
  for (const createSeq of new Set(state.moderation.workPartsByAuthor.get(agentId) ?? [])) {
    const row = workRowAtSeq(work, createSeq);
    if (row === undefined) continue;
    for (const seq of workRevisionSeqs(work, row)) {
      const parts = workPartAuthorsAt(work, seq);
      if (parts.result === agentId || parts.review === agentId) out.push(seq);
    }
  }
  return out;
}

/**
 * What `target` covers in the current state. Throws 404 for an unknown target, 400 for a
 * knowledge revision that does not exist.
 */
function coverageOf(state: State, target: ModerationTarget): Coverage {
  const { forum, knowledge, work } = state;
  const one = (key: string, seqs: number[]): Coverage => ({ key, keys: [key], events: seqs, workRecords: [], records: seqs });
  switch (target.type) {
    case 'message': {
      const row = messageById(forum, target.id);
      if (row === undefined) throw notFound(`no message with id "${target.id}"`);
      const seq = forum.rows.seq.at(row);
      return one(seqKey(seq), [seq]);
    }
    case 'topic': {
      const seq = forum.topics.get(target.id);
      if (seq === undefined) throw notFound(`no topic with id "${target.id}"`);
      const owner = workRowAtSeq(work, seq);
      if (owner !== undefined) return workCoverage(state, owner);
      return one(itemKey(target.id), topicSeqs(state, target.id, seq));
    }
    case 'knowledge': {
      const revisions = knowledgeRevisionsOf(knowledge, target.id);
      if (revisions === undefined) throw notFound(`no knowledge item with id "${target.id}"`);
      if (target.revision !== undefined) {
        const row = revisions[target.revision - 1];
        if (row === undefined) throw notFound(`knowledge item "${target.id}" has no revision ${target.revision} (it has ${revisions.length})`);
        const seq = knowledgeSeqOf(knowledge, row);
        return one(seqKey(seq), [seq]);
      }
      return one(itemKey(target.id), revisions.map((row) => knowledgeSeqOf(knowledge, row)));
    }
    case 'work': {
      const row = workRowOf(work, target.id);
      if (row === undefined) throw notFound(`no work item with id "${target.id}"`);
      return workCoverage(state, row);
    }
    case 'agent': {
      const agent = state.agents.byId.get(target.id);
      if (agent === undefined) throw notFound(`no agent with id "${target.id}"`);
      const events: number[] = [];
      const records: number[] = [];
      const rows = forum.byAuthor.get(target.id);
      for (let i = 0; rows !== undefined && i < rows.length; i++) events.push(forum.rows.seq.at(rows.at(i)));
      records.push(...events);
      // The topics it opened; a work item's discussion topic lives in the item's first record,
      // which the work items below cover.
      for (const seq of state.moderation.topicsByAuthor.get(target.id) ?? []) {
        events.push(seq);
        if (workRowAtSeq(work, seq) === undefined) records.push(seq);
      }
      for (const row of knowledgeRowsByAuthor(knowledge, target.id)) {
        events.push(knowledgeSeqOf(knowledge, row));
        records.push(knowledgeSeqOf(knowledge, row));
      }
      const workRecords: number[] = [];
      for (const row of workRowsByAuthor(work, target.id)) {
        const revisions = workRevisionSeqs(work, row);
        workRecords.push(...revisions);
        records.push(...revisions);
      }
      workRecords.push(...workPartsOf(state, target.id));
      const key = agentKey(target.id);
      return { key, keys: [key], events: sortedSet(events), workRecords: sortedSet(workRecords), records: sortedSet(records) };
    }
  }
}

/** The ids of the topics, knowledge items and work items `agentId` created (what an erase-purge makes erased containers). */
function itemsCreatedBy(state: State, agentId: string): string[] {
  const { forum, knowledge, work } = state;
  const ids = new Set<string>();
  for (const seq of state.moderation.topicsByAuthor.get(agentId) ?? []) {
    const id = makeId('tp', state.positions.positionOf(seq));
    if (forum.topics.get(id) === seq) ids.add(id);
  }
  for (const row of knowledgeRowsByAuthor(knowledge, agentId)) ids.add(knowledgeIdOf(knowledge, row));
  for (const row of workRowsByAuthor(work, agentId)) ids.add(workIdOf(work, row));
  return [...ids];
}

/**
 * The writes an erasure of `records` removes, as `erasedClientKey` digests with the seq that
 * committed each: every message and work record carries its author's clientId.
 */
function erasedClientsOf(type: string, seq: number, payloadJson: string): Array<{ key: string; seq: number }> {
  if (type !== 'message.create' && type !== 'work.create' && type !== 'work.action') return [];
  const o = JSON.parse(payloadJson) as { authorId: string; clientId: string };
  return [{ key: erasedClientKey(type === 'message.create' ? 'message' : 'work', o.authorId, o.clientId), seq }];
}

/**
 * Decides one moderation action by an operator. Output: the record type and its payload.
 * `hashOf(seq)` is the stored chained hash of a record (SegmentRecords.storedHashOf), for an
 * erasure's targets. Throws 404 (unknown target), 400 (a target type the action does not take,
 * unhiding what is not hidden or was erased, purging an operator), 409 ALREADY_EXISTS (hiding
 * what is hidden, erasing what is erased).
 */
export function decideModeration(
  state: State,
  input: ModerationInput,
  ctx: { operatorId: string; hashOf: (seq: number) => string | null },
): { type: RecordType; payload: ModerationPayload } {
  const mod = state.moderation;
  const { action, target } = input;
  if (target.type === 'agent' && action !== 'purge' && action !== 'unhide') {
    throw invalid(`action "${action}" does not take an agent; use "purge" (which disables the agent and hides or erases what it wrote)`);
  }
  if (action === 'purge' && target.type !== 'agent') throw invalid(`action "purge" takes a target of type "agent", not "${target.type}"`);
  if (input.mode !== undefined && action !== 'purge') throw invalid('field "mode" is for action "purge" only');
  if (target.revision !== undefined && target.type !== 'knowledge') throw invalid('field "target.revision" is for knowledge items only');
  if (action === 'purge' && state.agents.byId.get(target.id)?.profile.role === 'operator') throw invalid(`"${target.id}" is an operator; operators cannot be purged`);
  const cover = coverageOf(state, target);
  const base = {
    action,
    target,
    key: cover.key,
    reason: input.reason,
    operatorId: ctx.operatorId,
    ...(cover.keys.length > 1 ? { keys: cover.keys } : {}),
    events: cover.events,
    workItems: [],
    workRecords: cover.workRecords,
    ...(input.flagId === undefined ? {} : { flagId: input.flagId }),
  };
  const erase = action === 'erase' || (action === 'purge' && input.mode === 'erase');
  if (action === 'unhide') {
    if (mod.permanent.has(cover.key)) throw invalid(`${target.type} "${target.id}" was erased; erasure cannot be undone`);
    if (!mod.hidden.has(cover.key)) throw invalid(`${target.type} "${target.id}" is not hidden (only what was hidden as this target can be unhidden)`);
    return { type: 'moderation.unhide', payload: base };
  }
  if (!erase) {
    // After an erase-purge the agent key hides only what came before it: a hide-purge then covers the rest.
    const bounded = target.type === 'agent' && mod.purgedUpTo.has(target.id);
    if (mod.hidden.has(cover.key) && !bounded) throw fail('ALREADY_EXISTS', `${target.type} "${target.id}" is already hidden`);
    return { type: 'moderation.hide', payload: action === 'purge' ? { ...base, mode: 'hide' } : base };
  }
  const targets: Array<{ seq: number; hash: string }> = [];
  const erased: ErasedRecord[] = [];
  const erasedClients: Array<{ key: string; seq: number }> = [];
  for (const seq of [...cover.records, ...participantRecordsOf(state, target, cover.records)]) {
    if (mod.erased.has(seq)) continue;
    const r = state.forum.records.read(seq);
    // The erasure contract: only content records are ever erased.
    if (!ERASABLE_TYPES.has(r.type)) throw new Error(`record ${seq} (${r.type}) is not content; an erasure never targets it`);
    const hash = ctx.hashOf(seq);
    if (hash === null) throw new Error(`record ${seq} has no stored hash yet; erase after the log is durable`);
    targets.push({ seq, hash });
    erased.push({ seq, type: r.type, time: r.time, payloadJson: redactPayload(r.type, r.payloadJson, redactWorkPayload) });
    erasedClients.push(...erasedClientsOf(r.type, seq, r.payloadJson));
  }
  if (targets.length === 0 && mod.permanent.has(cover.key)) throw fail('ALREADY_EXISTS', `${target.type} "${target.id}" is already erased`);
  const purge = action === 'purge' ? { mode: 'erase' as const, erasedItems: itemsCreatedBy(state, target.id) } : {};
  return { type: 'moderation.erase', payload: { ...base, ...purge, targets, erased, erasedClients } };
}

/**
 * Refuses a write whose (author, clientId) names a write that was committed and later erased
 * (`kind` `message` or `work`): 409 ERASED, so a retry learns that its write is done and its
 * text gone, and is never invited to post it again. Checked before every other rule of the write.
 */
export function refuseErasedRetry(state: State, kind: 'message' | 'work', authorId: string, clientId: string): void {
  const mod = state.moderation;
  if (mod.erasedClients.size === 0) return;
  const seq = mod.erasedClients.get(erasedClientKey(kind, authorId, clientId));
  if (seq === undefined) return;
  throw fail(
    'ERASED',
    `clientId "${clientId}" names your ${kind === 'message' ? 'message' : 'work request'} committed at seq ${seq} and later erased by an operator: ` +
      'the write is done and its text was removed on purpose; do not send it again, under this clientId or another',
  );
}

/**
 * Refuses new content in an erased topic, knowledge item or work item (`id`; `what` names it for
 * the message): 409 ERASED_CONTAINER. Erasure cannot be undone, so content added there could
 * never be shown.
 */
export function refuseErasedContainer(state: State, what: 'topic' | 'knowledge item' | 'work item', id: string | undefined): void {
  const erased = state.moderation.erasedItems;
  if (id === undefined || erased.size === 0 || !erased.has(id)) return;
  throw fail('ERASED_CONTAINER', `${what} "${id}" was erased by an operator; nothing new can be added to it`);
}

/** The log seq of the record that made id `id` (`makeId(prefix, its position)`), or null for an id of another form or a position no record has. */
function seqOfId(positions: Positions, id: string, prefix: string): number | null {
  const position = Number(id.slice(prefix.length + 1));
  if (!Number.isSafeInteger(position) || position <= 0 || !idHasSeq(id, prefix, position)) return null;
  const seq = positions.seqAt(position);
  return seq > 0 ? seq : null;
}

/**
 * The records a flag on `target` is about: a message's record, a topic's own record (not its
 * messages: a flag on a topic is not about each message in it), a knowledge revision or every
 * revision of the item, every revision of a work item.
 */
export function flaggedRecords(state: State, target: ModerationTarget): number[] {
  const records = coverageOf(state, target).records;
  return target.type === 'topic' ? records.slice(0, 1) : records;
}

/**
 * The records besides the content an erasure of `target` covers whose participant-controlled
 * fields must go too (issue 34; docs/operate/moderation.md): every flag on content it erases (a flag's
 * note may quote that content) and, for a purge, the agent's registration (its profile) and every
 * flag the agent raised. Input: the content records (`records`) the erasure removes. Output: log
 * seqs, ascending, none of them in `records`.
 */
function participantRecordsOf(state: State, target: ModerationTarget, records: readonly number[]): number[] {
  const erasing = new Set(records);
  const out = new Set<number>();
  if (target.type === 'agent') {
    const seq = seqOfId(state.positions, target.id, 'ag');
    if (seq !== null && state.forum.records.read(seq).type === 'agent.register') out.add(seq);
  }
  for (const { flag } of state.moderation.flagOrder) {
    const seq = seqOfId(state.positions, flag.id, 'flg');
    if (seq === null || state.moderation.erased.has(seq)) continue;
    if ((target.type === 'agent' && flag.authorId === target.id) || flaggedRecords(state, flag.target).some((r) => erasing.has(r))) out.add(seq);
  }
  for (const seq of records) out.delete(seq);
  return [...out].sort((a, b) => a - b);
}

/** A validated POST /api/flags body (schemas/FlagInput.json). */
export interface FlagInput {
  target: ModerationTarget;
  reason: Flag['reason'];
  note: string;
  clientId: string;
}

/**
 * Decides `flag.create` (POST /api/flags). Output: `{existing}` for an identical retry by the
 * same agent (answered 201 with the stored flag), or `{flag}` to append. Throws 409
 * IDEMPOTENCY_CONFLICT (clientId reused for a different flag), 404 (unknown target), 400 (an
 * agent as target: flag what it wrote instead).
 */
export function decideFlag(state: State, input: FlagInput, ctx: { authorId: string; position: number; created: string }): { existing: FlagEntry } | { flag: Flag } {
  const mod = state.moderation;
  const priorId = flagIdByClientId(mod, ctx.authorId, input.clientId);
  if (priorId !== undefined) {
    const prior = mod.flags.get(priorId)!;
    const same =
      prior.flag.reason === input.reason &&
      prior.flag.note === input.note &&
      prior.flag.target.type === input.target.type &&
      prior.flag.target.id === input.target.id &&
      prior.flag.target.revision === input.target.revision;
    if (same) return { existing: prior };
    // Found under its covered clientId: the flag was erased (with the content it flagged, or by
    // itself), so its note no longer matches any retry. Answered as an erased message or work
    // request is (issue 34, 51): the flag is recorded and its text removed on purpose; never an
    // invitation to raise it again under a new clientId.
    if (prior.flag.clientId !== input.clientId) {
      throw fail(
        'ERASED',
        `clientId "${input.clientId}" names your flag ${priorId}, recorded and later erased by an operator: ` +
          'the flag is done and its note was removed on purpose; do not send it again, under this clientId or another',
      );
    }
    throw fail('IDEMPOTENCY_CONFLICT', `clientId "${input.clientId}" was already used by you for a different flag (${priorId}); use a new clientId for a new flag`);
  }
  if (input.target.type === 'agent') throw invalid('flag what an agent wrote (a message, topic, knowledge item or work item), not the agent');
  if (input.target.revision !== undefined && input.target.type !== 'knowledge') throw invalid('field "target.revision" is for knowledge items only');
  coverageOf(state, input.target);
  const target: ModerationTarget = { type: input.target.type, id: input.target.id };
  if (input.target.revision !== undefined) target.revision = input.target.revision;
  return { flag: { id: makeId('flg', ctx.position), target, reason: input.reason, note: input.note, authorId: ctx.authorId, clientId: input.clientId, created: ctx.created } };
}

/**
 * Whether the content `target` names was erased (its whole coverage is permanent): resolving a
 * flag on it then records no second action (issue 51). Throws what `coverageOf` throws (404).
 */
export function targetErased(state: State, target: ModerationTarget): boolean {
  return state.moderation.permanent.has(coverageOf(state, target).key);
}

/** The flag `id`, open. Throws 404 (unknown flag) or 409 ALREADY_EXISTS (already resolved). */
export function requireOpenFlag(state: State, id: string): FlagEntry {
  const f = state.moderation.flags.get(id);
  if (f === undefined) throw notFound(`no flag with id "${id}"`);
  if (f.resolution !== null) throw fail('ALREADY_EXISTS', `flag "${id}" was already resolved (${f.resolution.resolution}, record ${f.resolution.seq})`);
  return f;
}
