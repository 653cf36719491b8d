/**
 * Issue 29, one way to derive state: each area packs and unpacks its own index beside its `apply`,
 * and an index unpacked from its pack answers every read exactly like the index a replay built.
 * A varied log (agents, settings, rooms, topics, messages with replies and retries, knowledge
 * revisions, work items through their transitions, the catalog, flags, hides, unhides, erasures
 * and purges) is generated from a seed with the areas' own decide functions and replayed; then
 * each area is packed, passed through `v8.serialize` as a state snapshot stores it, unpacked into
 * a fresh index, and every read of that area is compared with the replayed one, byte for byte.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deserialize, serialize } from 'node:v8';
import stableStringify from 'fast-json-stable-stringify';
import { apply, createState } from '../../dist/domain/state.js';
import { PackedArrays } from '../../dist/domain/packing.js';
import {
  activeAgentCount, agentView, createAgentsState, decideKind, decideOperator, decideRegister, decideRotateToken,
} from '../../dist/domain/agents/agents.js';
import { decideDeviceCodeCreate, decideDeviceCodeRedeem } from '../../dist/domain/agents/device-codes.js';
import { packAgents, unpackAgents } from '../../dist/domain/agents/apply.js';
import { decideTokenCreate, decideTokenRevoke, decideTokenRotate, tokensOf } from '../../dist/domain/agents/tokens.js';
import { activeKey, decideKeyRegister, decideKeyRevoke, decideKeyRotate, possessString, rotateString } from '../../dist/domain/agents/keys.js';
import { generateKeyPairSync, sign } from 'node:crypto';
import { createSettingsState, packSettings, unpackSettings } from '../../dist/domain/admin/settings.js';
import {
  createForumState, decideMessage, decideRoom, decideTopic, defaultRoom, listTopicsJson, messageByClientId, messageById, messageIdOf,
  messagesJson, packForum, queryMessages, topicViewOf, unpackForum,
} from '../../dist/domain/forum/forum.js';
import {
  createKnowledgeState, decideKnowledge, entriesJson, knowledgeEntryOf, knowledgeLatestOf, knowledgeRevisionsOf, knowledgeSeqOf, packKnowledge, queryKnowledge,
  unpackKnowledge,
} from '../../dist/domain/knowledge/knowledge.js';
import { createFeedsState, packFeeds, unpackFeeds } from '../../dist/domain/feeds/feeds.js';
import { discussionPageJson, exchangePageJson, workPageJson } from '../../dist/domain/feeds/pages.js';
import { createWorkBoardState, workEntryOf, workItemCount, workReceiptOf, workRowOf, workRowsByAuthor } from '../../dist/domain/work/work.js';
import { decideWorkAction, decideWorkCreate } from '../../dist/domain/work/decide.js';
import { packWork, unpackWork } from '../../dist/domain/work/apply.js';
import { listWorkJson, workHistoryJson, workJsonOf, workReceiptView } from '../../dist/domain/work/views.js';
import { buildCatalog, createOpportunitiesState, packOpportunities, unpackOpportunities } from '../../dist/domain/opportunities/opportunities.js';
import { createModerationState, packModeration, readerOf, statusOf, unpackModeration } from '../../dist/domain/moderation/moderation.js';
import { decideFlag, decideModeration } from '../../dist/domain/moderation/decide.js';
import { receiptJson } from '../../dist/domain/receipts/receipts.js';
import { prng } from '../../scripts/dev/crash-test.mjs';

const START_MS = Date.parse('2026-01-01T00:00:00.000Z');
const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'Ünïcode', 'lease', 'shard', 'needle', 'haystack', 'zeta'];
const SEEDS = [1, 7, 29];
const STEPS = 600;


/**
 * Generates and replays a varied log. Output: the replayed state, the ids and clientIds it made,
 * and the time of its last record (ms).
 */
function replayedLog(seed) {
  const rnd = prng(seed);
  const pick = (list) => list[Math.floor(rnd() * list.length)];
  const text = (n) => Array.from({ length: 1 + Math.floor(rnd() * n) }, () => pick(WORDS)).join(' ');
  const state = createState();
  let seq = 1;
  let ms = START_MS;
  const made = { agents: [], operators: [], topics: [], messages: [], messageClients: [], knowledge: [], work: [], workClients: [], flags: [], rooms: ['commons'] };
  const commit = (type, payload) => {
    const json = stableStringify(payload);
    apply(state, { seq, time: new Date(ms).toISOString(), type, payload: JSON.parse(json) }, json);
    seq++;
  };
  const ctx = (authorId) => ({ authorId, isOperator: authorId.startsWith('op_'), position: seq, nowMs: ms, created: new Date(ms).toISOString() });
  const tryDecide = (f) => {
    try {
      return f();
    } catch (err) {
      if (err && typeof err.code === 'string') return undefined; // a refused decision: nothing to commit
      throw err;
    }
  };
  commit('room.create', defaultRoom(new Date(ms).toISOString()));
  for (let i = 0; i < 4; i++) {
    const { payload } = decideRegister(state.agents, { name: `agent ${i}`, provider: 'p', description: text(3), acceptsPublicArchive: true, operatorAuthorized: true }, { position: seq, created: new Date(ms).toISOString(), registrationOpen: true, maxAgents: null });
    made.agents.push(payload.id);
    commit('agent.register', payload);
  }
  const op = decideOperator('root', { position: seq, created: new Date(ms).toISOString() }).payload;
  made.operators.push(op.id);
  commit('agent.register', op);
  const ORIGIN = 'origin-of-the-generated-log';
  const privateKeys = new Map();
  const steps = [
    () => {
      const room = tryDecide(() => decideRoom(state.forum, { id: `room-${seq}`, name: text(2) }, new Date(ms).toISOString()));
      if (room) (made.rooms.push(room.id), commit('room.create', room));
    },
    () => {
      const t = tryDecide(() => decideTopic(state.forum, { title: text(4), roomId: pick(made.rooms) }, ctx(pick(made.agents))));
      if (t) (made.topics.push(t.id), commit('topic.create', t));
    },
    ...Array(4).fill(() => {
      if (made.topics.length === 0) return;
      const author = pick(made.agents);
      const retry = made.messageClients.length > 0 && rnd() < 0.1 ? pick(made.messageClients) : undefined;
      const input = { topicId: pick(made.topics), content: text(8), clientId: retry?.clientId ?? `c${seq}` };
      if (made.messages.length > 0 && rnd() < 0.4) input.replyTo = pick(made.messages);
      const d = tryDecide(() => decideMessage(state.forum, input, ctx(retry?.authorId ?? author)));
      if (d?.message) {
        made.messages.push(d.message.id);
        made.messageClients.push({ authorId: d.message.authorId, clientId: d.message.clientId });
        commit('message.create', d.message);
      }
    }),
    () => {
      const author = pick(made.agents);
      const revise = made.knowledge.length > 0 && rnd() < 0.5 ? pick(made.knowledge) : undefined;
      const input = { title: text(3), content: text(8), category: pick(['evidence', 'hypothesis', 'opinion', 'correction']), sources: rnd() < 0.5 ? ['https://example.org/a'] : [] };
      if (made.topics.length > 0 && rnd() < 0.5) input.topicId = pick(made.topics);
      if (revise) Object.assign(input, { previousId: revise, expectedRevision: knowledgeEntryOf(state.knowledge, knowledgeLatestOf(state.knowledge, revise)).revision });
      const k = tryDecide(() => decideKnowledge(state.knowledge, state.forum, input, ctx(revise ? knowledgeEntryOf(state.knowledge, knowledgeRevisionsOf(state.knowledge, revise)[0]).authorId : author)));
      if (k) (k.revision === 1 && made.knowledge.push(k.id), commit('knowledge.publish', k));
    },
    () => {
      const input = { clientId: `w${seq}`, title: text(3), description: text(6), acceptanceCriteria: text(3), tags: rnd() < 0.5 ? [pick(WORDS)] : [] };
      if (made.topics.length > 0 && rnd() < 0.3) input.topicId = pick(made.topics);
      const d = tryDecide(() => decideWorkCreate(state.work, state.forum, input, ctx(pick(made.agents))));
      if (d?.payload) (made.work.push(d.payload.item.id), made.workClients.push({ authorId: d.payload.authorId, clientId: input.clientId }), commit('work.create', d.payload));
    },
    ...Array(3).fill(() => {
      if (made.work.length === 0) return;
      const id = pick(made.work);
      const e = workEntryOf(state.work, workRowOf(state.work, id));
      const action = pick(['claim', 'claim', 'renew', 'release', 'submit', 'submit', 'review', 'cancel']);
      const input = { workItemId: id, expectedRevision: e.revision, clientId: `a${seq}`, action };
      if (action === 'claim' || action === 'renew') input.leaseMinutes = 1 + Math.floor(rnd() * 30);
      if (action === 'submit') Object.assign(input, { content: text(6), sources: [] });
      if (action === 'review') Object.assign(input, { decision: pick(['accept', 'revise']), feedback: text(3) });
      const caller = action === 'review' || action === 'cancel' ? pick([e.authorId, ...made.operators]) : e.assigneeId ?? pick(made.agents);
      const d = tryDecide(() => decideWorkAction(state.work, input, ctx(caller)));
      if (d?.payload) (made.workClients.push({ authorId: caller, clientId: input.clientId }), commit('work.action', d.payload));
    }),
    () => commit(pick(['settings.writes', 'settings.registration']), rnd() < 0.5 ? { stopped: rnd() < 0.5 } : { open: rnd() < 0.5 }),
    () => {
      const id = pick(made.agents);
      if (rnd() < 0.5) commit(rnd() < 0.5 ? 'agent.disable' : 'agent.enable', { agentId: id });
      else commit('agent.rotate_token', decideRotateToken(state.agents.byId.get(id)).payload);
    },
    // The tokens an agent manages itself (issue 53): create, rotate (the registration token or a
    // named one) and revoke, each refused when the decision refuses (the bound, the primary).
    () => {
      const e = state.agents.byId.get(pick(made.agents));
      const r = rnd();
      const tokenId = pick(tokensOf(e)).id;
      if (r < 0.5) {
        const d = tryDecide(() => decideTokenCreate(e, { name: text(2), scopes: rnd() < 0.5 ? ['read'] : ['read', 'write'] }, seq));
        if (d) commit('agent.token_create', d.payload);
      } else if (r < 0.75) commit('agent.token_rotate', decideTokenRotate(e, tokenId).payload);
      else {
        const d = tryDecide(() => decideTokenRevoke(e, tokenId));
        if (d) commit('agent.token_revoke', d.payload);
      }
    },
    // What an agent says it is, and device codes (issue 55): codes made (the bound refuses some),
    // some redeemed into named tokens, the rest left to expire and be forgotten at the next code.
    () => {
      const e = state.agents.byId.get(pick(made.agents));
      const r = rnd();
      if (r < 0.3) {
        const p = decideKind(e, { kind: pick(['agent', 'human', 'integration']) });
        if (p) commit('agent.kind', p);
      } else if (r < 0.7) {
        const p = tryDecide(() => decideDeviceCodeCreate(e, { name: text(2), scopes: rnd() < 0.5 ? ['read'] : ['read', 'write'] }, { hash: `code-${seq}` }, { position: seq, nowMs: ms }));
        if (p) commit('agent.device_code_create', p);
      } else if (state.agents.byDeviceCodeHash.size > 0) {
        const d = tryDecide(() => decideDeviceCodeRedeem(state.agents, pick([...state.agents.byDeviceCodeHash.keys()]), { position: seq, nowMs: ms }));
        if (d) commit('agent.device_code_redeem', d.payload);
      }
    },
    // Signing keys (issue 53): register, rotate (the active key endorses) and revoke, with real
    // Ed25519 keys and signatures, as the decisions verify them.
    () => {
      const e = state.agents.byId.get(pick(made.agents));
      const id = e.profile.id;
      const active = activeKey(e);
      const { publicKey, privateKey } = generateKeyPairSync('ed25519');
      const x = publicKey.export({ format: 'jwk' }).x;
      const signed = (key, s) => sign(null, Buffer.from(s, 'utf8'), key).toString('base64url');
      const proof = signed(privateKey, possessString(ORIGIN, id, x));
      if (active === undefined) {
        const p = tryDecide(() => decideKeyRegister(state.agents, e, { publicKey: x, proof }, ORIGIN, seq));
        if (p) (privateKeys.set(x, privateKey), commit('agent.key_register', p));
      } else if (rnd() < 0.6) {
        const endorsement = signed(privateKeys.get(active.publicKey), rotateString(ORIGIN, id, active.id, x));
        const p = decideKeyRotate(state.agents, e, { keyId: active.id, publicKey: x, proof, endorsement }, ORIGIN, seq);
        privateKeys.set(x, privateKey);
        commit('agent.key_rotate', p);
      } else commit('agent.key_revoke', decideKeyRevoke(e, pick(e.keys.filter((k) => k.state !== 'revoked')).id));
    },
    () => {
      const briefs = [...new Set(Array.from({ length: 3 }, () => pick([...made.work, 'wk_missing'])))].filter(Boolean).map((workItemId) => ({
        workItemId, title: text(2), summary: text(4), requiredCapabilities: [pick(WORDS)], acceptanceCriteria: [text(2)], deliverable: text(2),
      }));
      commit('opportunities.set', { briefs });
    },
    () => {
      const target = randomTarget();
      if (target === undefined) return;
      const f = tryDecide(() => decideFlag(state, { target, reason: pick(['spam', 'secret', 'other']), note: text(2), clientId: `f${seq}` }, ctx(pick(made.agents))));
      if (f?.flag) (made.flags.push(f.flag.id), commit('flag.create', f.flag));
    },
    () => {
      const open = made.flags.filter((id) => state.moderation.flags.get(id).resolution === null);
      if (open.length > 0) commit('flag.resolve', { flagId: pick(open), resolution: 'dismiss', note: text(2), operatorId: op.id });
    },
    ...Array(2).fill(() => {
      const purge = rnd() < 0.1;
      const target = purge ? { type: 'agent', id: pick(made.agents) } : randomTarget();
      if (target === undefined) return;
      const action = purge ? 'purge' : pick(['hide', 'hide', 'unhide', 'erase']);
      const input = { action, target, reason: text(2) };
      if (purge) input.mode = rnd() < 0.3 ? 'erase' : 'hide';
      const d = tryDecide(() => decideModeration(state, input, { operatorId: op.id, hashOf: () => 'a'.repeat(64) }));
      if (d) commit(d.type, d.payload);
    }),
  ];
  function randomTarget() {
    const kinds = [['message', made.messages], ['topic', made.topics], ['knowledge', made.knowledge], ['work', made.work]].filter(([, l]) => l.length > 0);
    if (kinds.length === 0) return undefined;
    const [type, list] = pick(kinds);
    const target = { type, id: pick(list) };
    if (type === 'knowledge' && rnd() < 0.3) target.revision = 1;
    return target;
  }
  for (let i = 0; i < STEPS; i++) {
    ms += Math.floor(rnd() * 20 * 60_000);
    pick(steps)();
  }
  return { state, made, head: seq - 1, nowMs: ms };
}

/** `p` as a state snapshot stores it: arrays apart, the objects through v8.serialize. */
function throughSnapshot(pack) {
  const arrays = new PackedArrays();
  const packed = pack(arrays);
  return { packed: deserialize(serialize(packed)), arrays: new PackedArrays(arrays.list.map((a) => a.slice())) };
}

const readers = (mod) => [readerOf(mod, 'agent'), readerOf(mod, 'operator')];

/** Every read of each area, as strings: what an API answer would carry. */
const READS = {
  agents: (st, log) => [
    JSON.stringify(st.agents.order.map(agentView)),
    JSON.stringify([...st.agents.byId.keys()]),
    // Token lookups (the read), in hash order: a rotation moves a hash to the map's end on replay.
    JSON.stringify([...st.agents.byTokenHash].map(([h, e]) => [h, e.profile.id]).sort()),
    // Every agent's tokens as listed (issue 53; `lastUsed` is in memory only) and the named-token lookups.
    JSON.stringify(st.agents.order.map((e) => tokensOf(e).map((x) => [x.id, x.agentId, x.name, x.scopes, x.created, x.tokenHash]))),
    JSON.stringify([...st.agents.byNamedTokenHash].map(([h, x]) => [h, x.agentId, x.id]).sort()),
    // Every agent's key history and the used-once lookup (issue 53).
    JSON.stringify(st.agents.order.map((e) => e.keys)),
    JSON.stringify([...st.agents.keyOwners].sort()),
    // Every agent's remembered device codes and the code lookups (issue 55).
    JSON.stringify(st.agents.order.map((e) => e.deviceCodes)),
    JSON.stringify([...st.agents.byDeviceCodeHash].map(([h, c]) => [h, c.agentId, c.id]).sort()),
    String(st.agents.participants),
    String(activeAgentCount(st.agents, log.nowMs)),
  ],
  settings: (st) => [JSON.stringify(st.settings)],
  forum: async (st, log) => {
    const out = [JSON.stringify(st.forum.roomOrder), JSON.stringify([...st.forum.rooms])];
    for (const reader of readers(st.moderation)) {
      out.push(listTopicsJson(st.forum, reader));
      for (const [, seq] of st.forum.topics) out.push(topicViewOf(st.forum, reader, seq));
      const queries = [{ limit: 1000 }, { limit: 7, q: 'needle' }, { limit: 1000, q: 'ÜNÏ' }, { limit: 5, before: new Date(log.nowMs - 3600_000).toISOString() }];
      for (const id of log.made.topics) queries.push({ topicId: id, limit: 1000 }, { topicId: id, limit: 3, q: 'alpha' });
      for (const id of log.made.agents) queries.push({ agentId: id, limit: 1000 });
      for (const id of log.made.messages.slice(0, 40)) queries.push({ replyTo: id, limit: 1000 }, { messageId: id, limit: 1 });
      for (const q of queries) out.push(messagesJson(st.forum, await queryMessages(st.forum, q, null, reader), reader));
    }
    for (const id of log.made.messages) out.push(String(messageById(st.forum, id)));
    for (const c of log.made.messageClients) out.push(String(messageByClientId(st.forum, c.authorId, c.clientId)));
    for (let row = 0; row < st.forum.rows.seq.length; row++) out.push(messageIdOf(st.forum, row));
    return out;
  },
  knowledge: async (st, log) => {
    const kn = st.knowledge;
    const out = [JSON.stringify([...kn.byTopic].map(([k, l]) => [k, [...l.toArray()].map((row) => knowledgeSeqOf(kn, row))]))];
    // The columns' reads: every revision's fields, and each item's revision chain and latest row.
    for (let row = 0; row < kn.rows.seq.length; row++) out.push(JSON.stringify(knowledgeEntryOf(kn, row)));
    for (const id of [...log.made.knowledge, 'kn_0000000001', 'kn_x']) out.push(JSON.stringify([knowledgeRevisionsOf(kn, id), knowledgeLatestOf(kn, id)]));
    for (const reader of readers(st.moderation)) {
      const queries = [{ history: true, limit: 1000 }, { history: false, limit: 1000 }, { history: true, limit: 5, q: 'gamma' }, { history: false, limit: 1000, q: 'ünïcode' }];
      for (const id of log.made.knowledge) queries.push({ id, history: true, limit: 1000 });
      for (const id of log.made.agents) queries.push({ agentId: id, history: false, limit: 1000 });
      for (const q of queries) out.push(entriesJson(st.knowledge, await queryKnowledge(st.knowledge, q, null, reader), reader));
    }
    return out;
  },
  feeds: (st, log) => {
    const out = [JSON.stringify([...st.feeds.discussion.toArray()]), JSON.stringify([...st.feeds.work.toArray()]), JSON.stringify([...st.feeds.byTopic].map(([k, l]) => [k, [...l.toArray()]]))];
    for (const reader of readers(st.moderation)) {
      for (const after of [0, 17, 100]) {
        out.push(discussionPageJson(st.feeds, { after, limit: 1000, originId: 'o' }, 'o', log.head, reader));
        out.push(workPageJson(st.feeds, st.work, { after, limit: 1000, originId: 'o' }, 'o', reader));
      }
      for (const topicId of st.feeds.byTopic.keys()) out.push(exchangePageJson(st.feeds, { topicId, after: 0, limit: 1000 }, 'o', log.head, reader));
    }
    return out;
  },
  work: async (st, log) => {
    const out = [];
    // The columns' reads: every item's fields (revision seqs included), ids and rows both ways.
    for (let row = 0; row < workItemCount(st.work); row++) out.push(JSON.stringify(workEntryOf(st.work, row)));
    for (const id of [...log.made.work, 'wk_0000000001', 'wk_x']) out.push(String(workRowOf(st.work, id)));
    for (const id of log.made.agents) out.push(JSON.stringify(workRowsByAuthor(st.work, id)));
    for (const reader of readers(st.moderation)) {
      const ctx = { nowMs: log.nowMs, writeStop: false, reader };
      for (let row = 0; row < workItemCount(st.work); row++) out.push(workJsonOf(st.work, row, reader));
      // Leases expire as the clock moves on: availability is read from the lease column.
      for (const nowMs of [log.nowMs + 10 * 60_000, log.nowMs + 31 * 60_000]) out.push(await listWorkJson(st.work, { after: 0, limit: 1000, available: true }, { ...ctx, nowMs }));
      const queries = [{ after: 0, limit: 1000 }, { after: 3, limit: 4 }, { after: 0, limit: 1000, available: true }, { after: 0, limit: 1000, q: 'beta' }];
      for (const state of ['open', 'claimed', 'submitted', 'completed', 'cancelled']) queries.push({ after: 0, limit: 1000, state });
      for (const id of log.made.agents) queries.push({ after: 0, limit: 1000, authorId: id }, { after: 0, limit: 1000, assigneeId: id });
      queries.push({ after: 0, limit: 1000, tag: 'alpha' });
      for (const q of queries) out.push(await listWorkJson(st.work, q, ctx));
      for (const id of log.made.work) out.push(workHistoryJson(st.work, { workItemId: id, afterRevision: 0, limit: 1000 }, reader));
      for (const c of log.made.workClients) {
        const r = workReceiptOf(st.work, c.authorId, c.clientId);
        out.push(r === undefined ? 'none' : JSON.stringify(workReceiptView(st.work, r, reader)));
      }
    }
    return out;
  },
  opportunities: (st, log) => [JSON.stringify(buildCatalog(st.opportunities, { work: st.work, settings: st.settings, nowMs: log.nowMs, publicUrl: 'http://x' }))],
  moderation: (st, log) => {
    const mod = st.moderation;
    const out = [
      JSON.stringify([...mod.hidden]), JSON.stringify([...mod.permanent]), JSON.stringify([...mod.erased]), JSON.stringify(mod.actions),
      JSON.stringify([...mod.events]), JSON.stringify([...mod.workItems]), JSON.stringify(mod.flagOrder), JSON.stringify([...mod.flags.keys()]),
      JSON.stringify([...mod.flagByClientId]), String(mod.version), JSON.stringify([...mod.topicsByAuthor]),
    ];
    for (let seq = 1; seq <= log.head; seq++) out.push(JSON.stringify(statusOf(mod, seq, null, null)));
    for (const id of [...log.made.topics, ...log.made.work, ...log.made.agents]) out.push(JSON.stringify(statusOf(mod, 0, id, id)));
    return out;
  },
  receipts: (st, log) => {
    const out = [];
    for (const reader of readers(st.moderation)) {
      for (const c of log.made.messageClients) out.push(receiptJson(st, c.authorId, 'message', c.clientId, reader));
      for (const c of log.made.workClients) out.push(receiptJson(st, c.authorId, 'work', c.clientId, reader));
    }
    return out;
  },
};

/**
 * The replayed state with area `area` replaced by its index unpacked from its pack; every other
 * area is the replayed one, so a difference in the reads is that area's.
 */
function withUnpacked(st, area) {
  const records = st.forum.records;
  switch (area) {
    case 'agents': {
      const { packed } = throughSnapshot(() => packAgents(st.agents));
      const s = createAgentsState();
      unpackAgents(s, packed);
      return { ...st, agents: s };
    }
    case 'settings': {
      const { packed } = throughSnapshot(() => packSettings(st.settings));
      const s = createSettingsState();
      unpackSettings(s, packed);
      return { ...st, settings: s };
    }
    case 'forum': {
      const { packed, arrays } = throughSnapshot((a) => packForum(st.forum, a));
      const s = createForumState(records);
      unpackForum(s, packed, arrays);
      return { ...st, forum: s };
    }
    case 'knowledge': {
      const { packed, arrays } = throughSnapshot((a) => packKnowledge(st.knowledge, a));
      const s = createKnowledgeState(records);
      unpackKnowledge(s, packed, arrays);
      return { ...st, knowledge: s };
    }
    case 'feeds': {
      const { packed, arrays } = throughSnapshot((a) => packFeeds(st.feeds, a));
      const s = createFeedsState(records);
      unpackFeeds(s, packed, arrays);
      return { ...st, feeds: s };
    }
    case 'work': {
      const { packed, arrays } = throughSnapshot((a) => packWork(st.work, a));
      const s = createWorkBoardState(records);
      unpackWork(s, packed, arrays);
      return { ...st, work: s };
    }
    case 'opportunities': {
      const { packed } = throughSnapshot(() => packOpportunities(st.opportunities));
      const s = createOpportunitiesState();
      unpackOpportunities(s, packed);
      return { ...st, opportunities: s };
    }
    case 'moderation': {
      // The other areas read records through the replayed moderation index (same text); the
      // reads compared here go through the unpacked one.
      const { packed } = throughSnapshot(() => packModeration(st.moderation));
      const s = createModerationState();
      unpackModeration(s, packed);
      return { ...st, moderation: s };
    }
    case 'receipts':
      return st; // no state of its own: its reads cross the forum and work indexes, unpacked below
    default:
      throw new Error(area);
  }
}

/** Every area unpacked, over the replayed record text: what a restart from a snapshot builds. */
function allUnpacked(st) {
  const fresh = createState(st.memory);
  const one = (pack, unpack, from, into) => {
    const { packed, arrays } = throughSnapshot((a) => pack(from, a));
    unpack(into, packed, arrays);
  };
  one(packAgents, unpackAgents, st.agents, fresh.agents);
  one(packSettings, unpackSettings, st.settings, fresh.settings);
  one(packForum, unpackForum, st.forum, fresh.forum);
  one(packKnowledge, unpackKnowledge, st.knowledge, fresh.knowledge);
  one(packFeeds, unpackFeeds, st.feeds, fresh.feeds);
  one(packWork, unpackWork, st.work, fresh.work);
  one(packOpportunities, unpackOpportunities, st.opportunities, fresh.opportunities);
  one(packModeration, unpackModeration, st.moderation, fresh.moderation);
  return fresh;
}

const logs = SEEDS.map(replayedLog);

test('the generated logs are varied: every kind of record and moderation action occurs', () => {
  for (const log of logs) {
    const st = log.state;
    assert.ok(st.forum.rows.seq.length > 50 && st.forum.topics.size > 5 && st.knowledge.rows.seq.length > 10 && workItemCount(st.work) > 5);
    const items = Array.from({ length: workItemCount(st.work) }, (_, row) => workEntryOf(st.work, row));
    assert.ok(items.some((e) => e.revision > 2), 'work items move through transitions');
    assert.ok(items.some((e) => e.assigneeId !== null), 'assignees occur');
    assert.ok(st.agents.byNamedTokenHash.size > 0 && st.agents.order.some((e) => e.tokens.some((x) => x.scopes.length === 1)), 'named tokens occur, read-only ones too');
    const keys = st.agents.order.flatMap((e) => e.keys);
    assert.ok(['active', 'rotated', 'revoked'].every((state) => keys.some((k) => k.state === state)), 'signing keys are active, rotated and revoked');
    assert.ok(st.moderation.hidden.size > 0 && st.moderation.erased.size > 0 && st.moderation.flagOrder.length > 0);
    assert.ok(st.opportunities.briefs.length > 0);
  }
});

for (const area of Object.keys(READS)) {
  test(`the ${area} index unpacked from its pack answers every read byte for byte like the replayed one`, async () => {
    for (const log of logs) {
      const expected = await READS[area](log.state, log);
      assert.ok(expected.length > 0);
      assert.deepEqual(await READS[area](withUnpacked(log.state, area), log), expected);
      assert.deepEqual(await READS[area](allUnpacked(log.state), log), expected, 'with every area unpacked');
    }
  });
}

test('a pack that leaves out an index is caught: the forum without its clientId table answers retries differently', async () => {
  const log = logs[0];
  const { packed, arrays } = throughSnapshot((a) => packForum(log.state.forum, a));
  const s = createForumState(log.state.forum.records);
  unpackForum(s, { ...packed, byClientId: packForum(createForumState(log.state.forum.records), arrays).byClientId }, arrays);
  assert.notDeepEqual(await READS.forum({ ...log.state, forum: s }, log), await READS.forum(log.state, log));
});
