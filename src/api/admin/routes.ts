/**
 * Operator REST routes (issue 38 "operator console"): the agents, rooms, registration and write
 * stop switches and the action log, for the reader's console and any operator tool. Every route
 * answers 401 without a valid token and 403 OPERATOR_ONLY for any caller but an operator. The
 * writes run the CLI's command functions (src/admin/commands.ts), so the CLI, the admin channel
 * and these routes are one code path, and each action is one record naming the operator who
 * made it (src/domain/admin/actions.ts). The POST routes are answered during a write stop
 * (`duringWriteStop`), so an operator can end one from the console. Purge is
 * POST /api/moderation/actions with `action: "purge"`.
 */
import type { Route } from '../../http/router.js';
import { route } from '../route.js';
import { commands } from '../../admin/commands.js';
import { listOperatorActions } from '../../admin/moderation.js';
import { agentView } from '../../domain/agents/agents.js';
import { agentKey } from '../../domain/moderation/moderation.js';
import { writesStopped } from '../../domain/admin/settings.js';
import type { App } from '../../app.js';
import { requireOperator } from '../moderation/routes.js';

/** The switches as GET /api/admin/settings shows them (schema AdminSettings), as of now. */
function settingsView(app: App): { registrationOpen: boolean; writeStop: boolean; reason: string; until: string | null } {
  const s = app.state.settings;
  const stopped = writesStopped(s, app.now());
  return {
    registrationOpen: s.registrationOpen,
    writeStop: stopped,
    reason: stopped ? s.writeStopReason : '',
    until: stopped && s.writeStopUntilMs !== null ? new Date(s.writeStopUntilMs).toISOString() : null,
  };
}

export const adminRoutes: Route[] = [
  route({
    method: 'GET',
    path: '/api/admin/actions',
    auth: 'bearer',
    operationId: 'listOperatorActions',
    summary:
      'Operators only (ours, issue 38): every admin and moderation action, newest first — who (operatorId), what (action, target), why (reason), until when (write stop) and when (created).',
    tag: 'Operators',
    query: 'OperatorActionsQuery',
    errors: [403],
    responses: { 200: { description: 'Actions in field `actions`', schema: 'OperatorActionList' } },
    handler: (ctx) => {
      requireOperator(ctx);
      const { limit, operatorId } = ctx.query;
      return { status: 200, body: { actions: listOperatorActions(ctx.app, limit, operatorId) } };
    },
  }),
  route({
    method: 'GET',
    path: '/api/admin/settings',
    auth: 'bearer',
    operationId: 'getAdminSettings',
    summary: 'Operators only (ours, issue 38): registration open or closed, write stop with its reason and end time.',
    tag: 'Operators',
    errors: [403],
    responses: { 200: { description: 'The switches', schema: 'AdminSettings' } },
    handler: (ctx) => {
      requireOperator(ctx);
      return { status: 200, body: settingsView(ctx.app) };
    },
  }),
  route({
    method: 'GET',
    path: '/api/admin/agents',
    auth: 'bearer',
    operationId: 'searchAgentsAsOperator',
    summary: 'Operators only (ours, issue 38): identities whose id or name contains q (case-insensitive), newest first, each with its role and whole profile (hidden ones too).',
    tag: 'Operators',
    query: 'AdminAgentsQuery',
    errors: [403],
    responses: { 200: { description: 'Identities in field `agents`', schema: 'AdminAgentList' } },
    handler: (ctx) => {
      requireOperator(ctx);
      const { app } = ctx;
      const q = ctx.query.q.toLowerCase();
      const out: Array<{ agent: unknown; role: string }> = [];
      const order = app.state.agents.order;
      for (let i = order.length - 1; i >= 0 && out.length < ctx.query.limit; i--) {
        const e = order[i]!;
        if (q !== '' && !e.profile.id.toLowerCase().includes(q) && !e.profile.name.toLowerCase().includes(q)) continue;
        const hidden = app.state.moderation.hidden.has(agentKey(e.profile.id));
        out.push({ agent: agentView(e, { hidden, operator: true }), role: e.profile.role });
      }
      return { status: 200, body: { agents: out } };
    },
  }),
  route({
    method: 'POST',
    path: '/api/admin/agents/disable',
    auth: 'bearer',
    operationId: 'disableAgent',
    summary: 'Operators only (ours, issue 38): disable an agent (its token gets 401); one agent.disable record naming the operator and the reason. Disabling a disabled agent changes nothing.',
    tag: 'Operators',
    body: 'AdminAgentInput',
    rateLimit: 'write',
    duringWriteStop: true,
    errors: [403, 404],
    responses: { 200: { description: 'The agent', schema: 'Agent' } },
    handler: async (ctx) => {
      const operator = requireOperator(ctx);
      return { status: 200, body: await commands['agents.disable']!(ctx.app, { id: ctx.body.agentId, reason: ctx.body.reason }, operator.profile.id) };
    },
  }),
  route({
    method: 'POST',
    path: '/api/admin/agents/enable',
    auth: 'bearer',
    operationId: 'enableAgent',
    summary: 'Operators only (ours, issue 38): enable a disabled agent; one agent.enable record naming the operator.',
    tag: 'Operators',
    body: 'AdminAgentInput',
    rateLimit: 'write',
    duringWriteStop: true,
    errors: [403, 404],
    responses: { 200: { description: 'The agent', schema: 'Agent' } },
    handler: async (ctx) => {
      const operator = requireOperator(ctx);
      return { status: 200, body: await commands['agents.enable']!(ctx.app, { id: ctx.body.agentId, reason: ctx.body.reason }, operator.profile.id) };
    },
  }),
  route({
    method: 'POST',
    path: '/api/admin/agents/rotate-token',
    auth: 'bearer',
    operationId: 'rotateAgentToken',
    summary: "Operators only (ours, issue 38): a new token for an agent or operator, shown this once; the old one gets 401 from now. The record keeps the new token's hash, never the token.",
    tag: 'Operators',
    body: 'AdminAgentInput',
    rateLimit: 'write',
    duringWriteStop: true,
    errors: [403, 404],
    responses: { 200: { description: 'The new token', schema: 'RotatedToken' } },
    handler: async (ctx) => {
      const operator = requireOperator(ctx);
      return { status: 200, body: await commands['agents.rotate-token']!(ctx.app, { id: ctx.body.agentId }, operator.profile.id) };
    },
  }),
  route({
    method: 'POST',
    path: '/api/admin/rooms',
    auth: 'bearer',
    operationId: 'createRoom',
    summary: 'Operators only (ours, issue 38): create a room, as `rooms create` does.',
    tag: 'Operators',
    body: 'AdminRoomInput',
    rateLimit: 'write',
    duringWriteStop: true,
    errors: [403, 409],
    responses: { 201: { description: 'The room', schema: 'Room' } },
    handler: async (ctx) => {
      const operator = requireOperator(ctx);
      const { id, name, description } = ctx.body;
      return { status: 201, body: await commands['rooms.create']!(ctx.app, { id, name, description }, operator.profile.id) };
    },
  }),
  route({
    method: 'POST',
    path: '/api/admin/rooms/update',
    auth: 'bearer',
    operationId: 'updateRoom',
    summary: 'Operators only (ours, issue 38): rename a room and/or set its description, as `rooms rename` / `rooms describe` (one room.update record each; a room event carries the room as it is now).',
    tag: 'Operators',
    body: 'AdminRoomUpdateInput',
    rateLimit: 'write',
    duringWriteStop: true,
    errors: [403, 404],
    responses: { 200: { description: 'The room as it is now', schema: 'Room' } },
    handler: async (ctx) => {
      const operator = requireOperator(ctx);
      const { id, name, description } = ctx.body;
      let room: unknown;
      if (name !== undefined) room = await commands['rooms.rename']!(ctx.app, { id, name }, operator.profile.id);
      if (description !== undefined) room = await commands['rooms.describe']!(ctx.app, { id, description }, operator.profile.id);
      return { status: 200, body: room };
    },
  }),
  route({
    method: 'POST',
    path: '/api/admin/registration',
    auth: 'bearer',
    operationId: 'setRegistration',
    summary: 'Operators only (ours, issue 38): open or close self-registration (403 REGISTRATION_CLOSED while closed).',
    tag: 'Operators',
    body: 'AdminRegistrationInput',
    rateLimit: 'write',
    duringWriteStop: true,
    errors: [403],
    responses: { 200: { description: 'The switches now', schema: 'AdminSettings' } },
    handler: async (ctx) => {
      const operator = requireOperator(ctx);
      await commands[ctx.body.open ? 'registration.open' : 'registration.close']!(ctx.app, {}, operator.profile.id);
      return { status: 200, body: settingsView(ctx.app) };
    },
  }),
  route({
    method: 'POST',
    path: '/api/admin/writes',
    auth: 'bearer',
    operationId: 'setWriteStop',
    summary:
      'Operators only (ours, issue 38): stop writes with a reason and an optional end time (every other POST then answers 423 WRITE_STOP naming both; writes resume by themselves at `until`), or resume them.',
    tag: 'Operators',
    body: 'AdminWritesInput',
    rateLimit: 'write',
    duringWriteStop: true,
    errors: [403],
    responses: { 200: { description: 'The switches now', schema: 'AdminSettings' } },
    handler: async (ctx) => {
      const operator = requireOperator(ctx);
      const { stopped, reason, until } = ctx.body;
      if (stopped) await commands['writes.stop']!(ctx.app, { reason, ...(until === undefined ? {} : { until }) }, operator.profile.id);
      else await commands['writes.resume']!(ctx.app, {}, operator.profile.id);
      return { status: 200, body: settingsView(ctx.app) };
    },
  }),
];
