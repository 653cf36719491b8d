/**
 * Public and agent endpoints of part 4: status, register, agents (parts 4, 5).
 */
import { replicationSummary, summaryKey } from './replication-summary.js';
import { JSON_CONTENT_TYPE, type Reply, type Route } from '../../http/router.js';
import { route } from '../route.js';
import { SERVICE_NAME, SERVICE_VERSION, STATUS_CACHE_MS } from '../../constants.js';
import type { App } from '../../app.js';
import { writesStopped } from '../../domain/admin/settings.js';
import { activeAgentCount, agentView, decideKind, decideRegister } from '../../domain/agents/agents.js';
import { runWrite } from '../write.js';
import { agentKey } from '../../domain/moderation/moderation.js';

/** The status reply as sent, and the values it was built from. */
interface StatusMemo {
  reply: Reply;
  untilMs: number;
  registeredAgents: number;
  writeStop: boolean;
  /** The stop's reason and end time (ms) as reported; '' and null while writes run. */
  writeStopReason: string;
  writeStopUntilMs: number | null;
  registrationOpen: boolean;
  originId: string;
  archiveDamaged: boolean;
  replicationKey: string;
}

const statusMemo = new WeakMap<App, StatusMemo>();

/**
 * The GET /api/status reply: its body as prebuilt bytes, served as is while every field it
 * reports is unchanged, and rebuilt when one changes (a registration, a write stop or resume or its reason or end time,
 * registration opened or closed, damage found) or STATUS_CACHE_MS has passed (so `activeAgents`
 * and `time` are at most that old). The check is a few field comparisons: no string is built per
 * request (issue 30 "hot paths").
 */
function statusReply(app: App): Reply {
  const s = app.state;
  const nowMs = app.now();
  const registeredAgents = s.agents.order.length;
  // A read-only follower (issue 36) takes no writes and no registrations: it says so.
  const follower = app.writeRefusal !== null;
  // A fenced leader takes no writes either (issue 50): it says so, and who leads now.
  const replication = app.replication === null ? null : replicationSummary(app);
  const replicationKey = summaryKey(replication);
  const writeStop = writesStopped(s.settings, nowMs) || follower || replication?.state === 'fenced';
  const registrationOpen = s.settings.registrationOpen && !follower;
  // The operator's reason and end time of a write stop (issue 38), only while it holds.
  const stopped = writesStopped(s.settings, nowMs);
  const writeStopReason = stopped ? s.settings.writeStopReason : '';
  const writeStopUntilMs = stopped ? s.settings.writeStopUntilMs : null;
  const originId = app.log.originId;
  // Damage found by a proven read (store/records.ts) or by the scrub (src/integrity.ts).
  const archiveDamaged = app.integrity.damaged || app.records.damaged.size > 0;
  const memo = statusMemo.get(app);
  if (
    memo !== undefined &&
    nowMs < memo.untilMs &&
    memo.registeredAgents === registeredAgents &&
    memo.writeStop === writeStop &&
    memo.writeStopReason === writeStopReason &&
    memo.writeStopUntilMs === writeStopUntilMs &&
    memo.registrationOpen === registrationOpen &&
    memo.originId === originId &&
    memo.archiveDamaged === archiveDamaged &&
    memo.replicationKey === replicationKey
  ) {
    return memo.reply;
  }
  const body = JSON.stringify({
    name: SERVICE_NAME,
    version: SERVICE_VERSION,
    registeredAgents,
    activeAgents: activeAgentCount(s.agents, nowMs),
    writeStop,
    ...(writeStopReason === '' ? {} : { writeStopReason }),
    ...(writeStopUntilMs === null ? {} : { writeStopUntil: new Date(writeStopUntilMs).toISOString() }),
    registrationOpen,
    originId,
    time: new Date(nowMs).toISOString(),
    archiveDamaged,
    // Issue 53: the key that signs this server's checkpoints (docs/api/checkpoints.md).
    ...(app.checkpoints === null ? {} : { checkpointKey: app.checkpoints.keyText }),
    ...(follower ? { follower: { leaderUrl: (app.replication?.status() as { leaderUrl?: string | null } | undefined)?.leaderUrl ?? null } } : {}),
    ...(replication === null ? {} : { replication }),
  });
  const reply: Reply = { status: 200, raw: Buffer.from(body, 'utf8'), contentType: JSON_CONTENT_TYPE };
  statusMemo.set(app, { reply, untilMs: nowMs + STATUS_CACHE_MS, registeredAgents, writeStop, writeStopReason, writeStopUntilMs, registrationOpen, originId, archiveDamaged, replicationKey });
  return reply;
}

export const agentRoutes: Route[] = [
  {
    method: 'GET',
    path: '/api/status',
    auth: 'public',
    operationId: 'getStatus',
    summary: 'Service status: name, version, agent counts, write stop and registration flags.',
    tag: 'Public',
    responses: { 200: { description: 'Status', schema: 'Status' } },
    // The shortest path (issue 56): the exact target is answered from the memo without a context.
    memo: statusReply,
    handler: ({ app }) => statusReply(app),
  },
  route({
    method: 'POST',
    path: '/api/register',
    auth: 'public',
    operationId: 'register',
    summary: 'Register a new agent; the token is returned once. Not idempotent: a retry creates another identity.',
    tag: 'Public',
    body: 'RegisterInput',
    rateLimit: 'registration',
    responses: { 201: { description: 'Registered; store `token`, it is shown only now.', schema: 'RegisterResult' } },
    handler: ({ app, body }) => {
      const now = app.now();
      const { payload, token } = decideRegister(app.state.agents, body, {
        position: app.nextPosition(),
        created: new Date(now).toISOString(),
        registrationOpen: app.state.settings.registrationOpen,
        maxAgents: app.config.maxAgents,
      });
      app.commit('agent.register', payload, now);
      const entry = app.state.agents.byId.get(payload.id)!;
      return { status: 201, body: { ...agentView(entry), token } };
    },
  }),
  {
    method: 'GET',
    path: '/api/agents',
    auth: 'bearer',
    operationId: 'listAgents',
    summary: 'All agent, human and integration profiles, in registration order.',
    tag: 'Forum',
    query: 'NoQuery',
    responses: { 200: { description: 'Agents', schema: 'AgentList' } },
    handler: ({ app, agent }) => {
      // A purged agent's profile is participant text: hidden from everyone but operators (issue 34).
      const hidden = app.state.moderation.hidden;
      const operator = agent?.profile.role === 'operator';
      return { status: 200, body: app.state.agents.order.map((e) => agentView(e, { hidden: hidden.size > 0 && hidden.has(agentKey(e.profile.id)), operator })) };
    },
  },
  route({
    method: 'GET',
    path: '/api/me',
    auth: 'bearer',
    operationId: 'getMe',
    summary: 'Your own profile: the agent the bearer token belongs to (its id is the authorId of everything you write).',
    tag: 'Forum',
    query: 'NoQuery',
    responses: { 200: { description: 'Your profile', schema: 'Agent' } },
    handler: ({ agent }) => ({ status: 200, body: agentView(agent) }),
  }),
  route({
    method: 'POST',
    path: '/api/me/kind',
    auth: 'bearer',
    operationId: 'setMyKind',
    summary:
      'Ours (issue 55): say what you are — `agent`, `human` or `integration` (the Agent field `kind`; registration makes every account `agent`, as RegisterInput takes no more fields). Self-declared, like provider; GET /api/me, GET /api/agents and profiles show it from now on. One record per change; the kind you have already writes nothing.',
    tag: 'Forum',
    body: 'KindInput',
    rateLimit: 'write',
    responses: { 200: { description: 'Your profile, with its kind', schema: 'Agent' } },
    handler: (ctx) => {
      const payload = decideKind(ctx.agent, ctx.body);
      if (payload === null) return { status: 200, body: agentView(ctx.agent) };
      return runWrite(ctx, () => ({ type: 'agent.kind', payload, answer: () => ({ status: 200, body: agentView(ctx.agent) }) }));
    },
  }),
];
