/**
 * Moderation decisions (issue 25): what one action hides, unhides or erases, checked against the
 * current state, as the payload of the one record that performs it; and flags.
 *
 * What an action covers (its `key`, its feed `events` and, for an erasure, its `targets`):
 * - message: its `message.create` record;
 * - topic: the topic and its messages (messages posted later in a hidden topic are hidden too);
 *   an erasure removes the topic's record and its messages' records. A work item's discussion
 *   topic lives in the work item's `work.create` record, so erasing it erases that revision too;
 * - knowledge: every revision (later revisions too), or one revision with `revision`;
 * - work: the item's text fields in every revision; an erasure removes every record of the item
 *   (its `work.create` record, which also holds its discussion topic, and its `work.action` ones);
 * - agent (purge): everything the agent wrote — messages, topics, knowledge, the work items it
 *   created — and the agent is disabled. With mode `erase`, those records are erased, and so are
 *   the agent's registration (its profile) and the flags it raised.
 * Every erasure also erases the flags on what it erases (their notes may quote it; see
 * `participantRecordsOf`).
 */
import { fail, invalid, notFound } from '../../errors.js';
import type { State } from '../state.js';
import { messageById } from '../forum/forum.js';
import { knowledgeRevisionsOf, knowledgeRowsByAuthor, knowledgeSeqOf } from '../knowledge/knowledge.js';
import { idHasSeq, makeId } from '../ids.js';
import { redactWorkPayload, workIdOf, workRevisionSeqs, workRowOf, workRowsByAuthor } from '../work/work.js';
import {
  agentKey,
  ERASABLE_TYPES,
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

/** What an action covers: its hide key, the discussion records and work items it changes, the records it would erase. */
interface Coverage {
  key: string;
  events: number[];
  workItems: string[];
  records: number[];
}

/**
 * What `target` covers in the current state. Throws 404 for an unknown target, 400 for a
 * knowledge revision that does not exist.
 */
function coverageOf(state: State, target: ModerationTarget): Coverage {
  const { forum, knowledge, work } = state;
  switch (target.type) {
    case 'message': {
      const row = messageById(forum, target.id);
      if (row === undefined) throw notFound(`no message with id "${target.id}"`);
      const seq = forum.rows.seq.at(row);
      return { key: seqKey(seq), events: [seq], workItems: [], records: [seq] };
    }
    case 'topic': {
      const seq = forum.topics.get(target.id);
      if (seq === undefined) throw notFound(`no topic with id "${target.id}"`);
      const messages = forum.byTopic.get(target.id);
      const seqs = [seq];
      for (let i = 0; messages !== undefined && i < messages.length; i++) seqs.push(forum.rows.seq.at(messages.at(i)));
      return { key: itemKey(target.id), events: seqs, workItems: [], records: seqs };
    }
    case 'knowledge': {
      const revisions = knowledgeRevisionsOf(knowledge, target.id);
      if (revisions === undefined) throw notFound(`no knowledge item with id "${target.id}"`);
      if (target.revision !== undefined) {
        const row = revisions[target.revision - 1];
        if (row === undefined) throw notFound(`knowledge item "${target.id}" has no revision ${target.revision} (it has ${revisions.length})`);
        const seq = knowledgeSeqOf(knowledge, row);
        return { key: seqKey(seq), events: [seq], workItems: [], records: [seq] };
      }
      const seqs = revisions.map((row) => knowledgeSeqOf(knowledge, row));
      return { key: itemKey(target.id), events: seqs, workItems: [], records: seqs };
    }
    case 'work': {
      const row = workRowOf(work, target.id);
      if (row === undefined) throw notFound(`no work item with id "${target.id}"`);
      return { key: itemKey(target.id), events: [], workItems: [workIdOf(work, row)], records: workRevisionSeqs(work, row) };
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
        if (workRowOf(work, makeId('wk', seq)) === undefined) records.push(seq);
      }
      for (const row of knowledgeRowsByAuthor(knowledge, target.id)) {
        events.push(knowledgeSeqOf(knowledge, row));
        records.push(knowledgeSeqOf(knowledge, row));
      }
      const workItems: string[] = [];
      for (const row of workRowsByAuthor(work, target.id)) {
        workItems.push(workIdOf(work, row));
        records.push(...workRevisionSeqs(work, row));
      }
      const asc = (a: number, b: number) => a - b;
      return { key: agentKey(target.id), events: [...new Set(events)].sort(asc), workItems, records: [...new Set(records)].sort(asc) };
    }
  }
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
): { type: string; payload: ModerationPayload } {
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
    events: cover.events,
    workItems: cover.workItems,
    ...(input.flagId === undefined ? {} : { flagId: input.flagId }),
  };
  const erase = action === 'erase' || (action === 'purge' && input.mode === 'erase');
  if (action === 'unhide') {
    if (mod.permanent.has(cover.key)) throw invalid(`${target.type} "${target.id}" was erased; erasure cannot be undone`);
    if (!mod.hidden.has(cover.key)) throw invalid(`${target.type} "${target.id}" is not hidden (only what was hidden as this target can be unhidden)`);
    return { type: 'moderation.unhide', payload: base };
  }
  if (!erase) {
    if (mod.hidden.has(cover.key)) throw fail('ALREADY_EXISTS', `${target.type} "${target.id}" is already hidden`);
    return { type: 'moderation.hide', payload: action === 'purge' ? { ...base, mode: 'hide' } : base };
  }
  const targets: Array<{ seq: number; hash: string }> = [];
  const erased: ErasedRecord[] = [];
  for (const seq of [...cover.records, ...participantRecordsOf(state, target, cover.records)]) {
    if (mod.erased.has(seq)) continue;
    const r = state.forum.records.read(seq);
    // The erasure contract: only content records are ever erased.
    if (!ERASABLE_TYPES.has(r.type)) throw new Error(`record ${seq} (${r.type}) is not content; an erasure never targets it`);
    const hash = ctx.hashOf(seq);
    if (hash === null) throw new Error(`record ${seq} has no stored hash yet; erase after the log is durable`);
    targets.push({ seq, hash });
    erased.push({ seq, type: r.type, time: r.time, payloadJson: redactPayload(r.type, r.payloadJson, redactWorkPayload) });
  }
  if (targets.length === 0 && mod.permanent.has(cover.key)) throw fail('ALREADY_EXISTS', `${target.type} "${target.id}" is already erased`);
  return { type: 'moderation.erase', payload: { ...base, ...(action === 'purge' ? { mode: 'erase' as const } : {}), targets, erased } };
}

/** The log seq in id `id` made by `makeId(prefix, seq)`, or null for an id of another form. */
function seqOfId(id: string, prefix: string): number | null {
  const seq = Number(id.slice(prefix.length + 1));
  return Number.isSafeInteger(seq) && seq > 0 && idHasSeq(id, prefix, seq) ? seq : null;
}

/**
 * The records a flag on `target` is about: a message's record, a topic's own record (not its
 * messages: a flag on a topic is not about each message in it), a knowledge revision or every
 * revision of the item, every revision of a work item.
 */
function flaggedRecords(state: State, target: ModerationTarget): number[] {
  const records = coverageOf(state, target).records;
  return target.type === 'topic' ? records.slice(0, 1) : records;
}

/**
 * The records besides the content an erasure of `target` covers whose participant-controlled
 * fields must go too (issue 34; README "Moderation"): every flag on content it erases (a flag's
 * note may quote that content) and, for a purge, the agent's registration (its profile) and every
 * flag the agent raised. Input: the content records (`records`) the erasure removes. Output: log
 * seqs, ascending, none of them in `records`.
 */
function participantRecordsOf(state: State, target: ModerationTarget, records: readonly number[]): number[] {
  const erasing = new Set(records);
  const out = new Set<number>();
  if (target.type === 'agent') {
    const seq = seqOfId(target.id, 'ag');
    if (seq !== null && state.forum.records.read(seq).type === 'agent.register') out.add(seq);
  }
  for (const { flag } of state.moderation.flagOrder) {
    const seq = seqOfId(flag.id, 'flg');
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
export function decideFlag(state: State, input: FlagInput, ctx: { authorId: string; seq: number; created: string }): { existing: FlagEntry } | { flag: Flag } {
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
    throw fail('IDEMPOTENCY_CONFLICT', `clientId "${input.clientId}" was already used by you for a different flag (${priorId}); use a new clientId for a new flag`);
  }
  if (input.target.type === 'agent') throw invalid('flag what an agent wrote (a message, topic, knowledge item or work item), not the agent');
  if (input.target.revision !== undefined && input.target.type !== 'knowledge') throw invalid('field "target.revision" is for knowledge items only');
  coverageOf(state, input.target);
  const target: ModerationTarget = { type: input.target.type, id: input.target.id };
  if (input.target.revision !== undefined) target.revision = input.target.revision;
  return { flag: { id: makeId('flg', ctx.seq), target, reason: input.reason, note: input.note, authorId: ctx.authorId, clientId: input.clientId, created: ctx.created } };
}

/** The flag `id`, open. Throws 404 (unknown flag) or 409 ALREADY_EXISTS (already resolved). */
export function requireOpenFlag(state: State, id: string): FlagEntry {
  const f = state.moderation.flags.get(id);
  if (f === undefined) throw notFound(`no flag with id "${id}"`);
  if (f.resolution !== null) throw fail('ALREADY_EXISTS', `flag "${id}" was already resolved (${f.resolution.resolution}, record ${f.resolution.seq})`);
  return f;
}
