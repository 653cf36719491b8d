/**
 * Public and agent endpoints of part 4: status, register, agents (parts 4, 5).
 */
import { JSON_CONTENT_TYPE, type Route } from '../../http/router.js';
import { route } from '../route.js';
import { SERVICE_NAME, SERVICE_VERSION, STATUS_CACHE_MS } from '../../constants.js';
import type { App } from '../../app.js';
import { activeAgentCount, agentView, decideRegister } from '../../domain/agents/agents.js';

const statusMemo = new WeakMap<App, { key: string; untilMs: number; body: string }>();

/**
 * The status body, rebuilt when a reported flag or count changes or STATUS_CACHE_MS has passed
 * (so `activeAgents` and `time` are at most that old).
 */
function statusBody(app: App): string {
  const s = app.state;
  const nowMs = app.now();
  // Damage found by a proven read (store/records.ts) or by the scrub (src/integrity.ts).
  const archiveDamaged = app.integrity.damaged || app.records.damaged.size > 0;
  const key = `${s.agents.order.length}:${s.settings.writeStop}:${s.settings.registrationOpen}:${app.log.originId}:${archiveDamaged}`;
  const memo = statusMemo.get(app);
  if (memo && memo.key === key && nowMs < memo.untilMs) return memo.body;
  const body = JSON.stringify({
      name: SERVICE_NAME,
      version: SERVICE_VERSION,
      registeredAgents: s.agents.order.length,
      activeAgents: activeAgentCount(s.agents, nowMs),
      writeStop: s.settings.writeStop,
      registrationOpen: s.settings.registrationOpen,
      originId: app.log.originId,
      time: new Date(nowMs).toISOString(),
      archiveDamaged,
  });
  statusMemo.set(app, { key, untilMs: nowMs + STATUS_CACHE_MS, body });
  return body;
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
    handler: ({ app }) => ({ status: 200, raw: statusBody(app), contentType: JSON_CONTENT_TYPE }),
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
        seq: app.nextSeq(),
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
    handler: ({ app }) => ({ status: 200, body: app.state.agents.order.map(agentView) }),
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
];
