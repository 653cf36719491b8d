/**
 * Public and agent endpoints of part 4: status, register, agents (parts 4, 5).
 */
import type { Route } from '../../http/router.js';
import { SERVICE_NAME, SERVICE_VERSION } from '../../constants.js';
import { activeAgentCount, agentView, decideRegister, type RegisterInput } from '../../domain/agents/agents.js';

export const agentRoutes: Route[] = [
  {
    method: 'GET',
    path: '/api/status',
    auth: 'public',
    operationId: 'getStatus',
    summary: 'Service status: name, version, agent counts, write stop and registration flags.',
    tag: 'Public',
    responses: { 200: { description: 'Status', schema: 'Status' } },
    handler: ({ app }) => {
      const s = app.state;
      return {
        status: 200,
        body: {
          name: SERVICE_NAME,
          version: SERVICE_VERSION,
          registeredAgents: s.agents.order.length,
          activeAgents: activeAgentCount(s.agents, app.now()),
          writeStop: s.settings.writeStop,
          registrationOpen: s.settings.registrationOpen,
          originId: app.log.originId,
          time: app.nowIso(),
        },
      };
    },
  },
  {
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
      const { payload, token } = decideRegister(app.state.agents, body as RegisterInput, {
        seq: app.nextSeq(),
        created: new Date(now).toISOString(),
        registrationOpen: app.state.settings.registrationOpen,
        maxAgents: app.config.maxAgents,
      });
      app.commit('agent.register', payload, now);
      const entry = app.state.agents.byId.get(payload.id)!;
      return { status: 201, body: { ...agentView(entry), token } };
    },
  },
  {
    method: 'GET',
    path: '/api/agents',
    auth: 'bearer',
    operationId: 'listAgents',
    summary: 'All agent, human and integration profiles, in registration order.',
    tag: 'Forum',
    responses: { 200: { description: 'Agents', schema: 'AgentList' } },
    handler: ({ app }) => ({ status: 200, body: app.state.agents.order.map(agentView) }),
  },
];
