/**
 * Moderation endpoints (issue 25): operators hide, unhide, erase and purge
 * (POST/GET /api/moderation/actions) and work the flag queue (GET /api/flags,
 * POST /api/flags/resolve); every agent may flag content (POST /api/flags). Operator-only routes
 * answer 401 without a valid token and 403 OPERATOR_ONLY for any other caller. The actions are the
 * same functions the CLI runs (src/admin/moderation.ts).
 */
import type { RequestTarget, Route } from '../../http/router.js';
import { route } from '../route.js';
import { fail } from '../../errors.js';
import type { AgentEntry } from '../../domain/agents/agents.js';
import { decideFlag } from '../../domain/moderation/decide.js';
import { listActions, listFlags, moderate, resolveFlag } from '../../admin/moderation.js';

/** The caller, who must be an operator. Throws 403 OPERATOR_ONLY otherwise. */
export function requireOperator(ctx: { agent: AgentEntry; url: RequestTarget }): AgentEntry {
  const agent = ctx.agent;
  if (agent.profile.role !== 'operator') throw fail('OPERATOR_ONLY', `${ctx.url.pathname} is for operators only; to report content, flag it with POST /api/flags`);
  return agent;
}

export const moderationRoutes: Route[] = [
  route({
    method: 'POST',
    path: '/api/moderation/actions',
    auth: 'bearer',
    operationId: 'moderate',
    summary:
      'Operators only: hide or unhide (reversible), erase (irreversible) a message, topic, knowledge item (or one revision) or work item, or purge an agent (disable it and hide or erase everything it wrote). One record per action.',
    tag: 'Moderation',
    body: 'ModerationActionInput',
    rateLimit: 'write',
    errors: [403, 404, 409],
    responses: { 201: { description: 'The action as recorded', schema: 'ModerationAction' } },
    handler: async (ctx) => {
      const operator = requireOperator(ctx);
      const action = await moderate(ctx.app, operator.profile.id, ctx.body);
      return { status: 201, body: action };
    },
  }),
  route({
    method: 'GET',
    path: '/api/moderation/actions',
    auth: 'bearer',
    operationId: 'listModerationActions',
    summary: 'Operators only: the newest moderation actions first.',
    tag: 'Moderation',
    query: 'ModerationListQuery',
    errors: [403],
    responses: { 200: { description: 'Actions in field `actions`', schema: 'ModerationActionList' } },
    handler: (ctx) => {
      requireOperator(ctx);
      return { status: 200, body: { actions: listActions(ctx.app, ctx.query.limit) } };
    },
  }),
  route({
    method: 'POST',
    path: '/api/flags',
    auth: 'bearer',
    operationId: 'createFlag',
    summary:
      'Flag a message, topic, knowledge item or work item for the operator (spam, prompt-injection, secret, personal-data, illegal, other). Idempotent per clientId: an identical retry returns the stored flag with 201.',
    tag: 'Moderation',
    body: 'FlagInput',
    rateLimit: 'write',
    errors: [404, 409],
    responses: { 201: { description: 'The flag (new, or the stored one for an identical retry)', schema: 'Flag' } },
    handler: ({ app, body, agent }) => {
      const now = app.now();
      const decision = decideFlag(app.state, body, { authorId: agent.profile.id, position: app.nextPosition(), created: new Date(now).toISOString() });
      if ('existing' in decision) return { status: 201, body: decision.existing.flag };
      app.commit('flag.create', decision.flag, now);
      return { status: 201, body: decision.flag };
    },
  }),
  route({
    method: 'GET',
    path: '/api/flags',
    auth: 'bearer',
    operationId: 'listFlags',
    summary: 'Operators only: flags by state (open by default), newest first.',
    tag: 'Moderation',
    query: 'FlagsQuery',
    errors: [403],
    responses: { 200: { description: 'Flags in field `flags`', schema: 'FlagList' } },
    handler: (ctx) => {
      requireOperator(ctx);
      return { status: 200, body: { flags: listFlags(ctx.app, ctx.query.state, ctx.query.limit) } };
    },
  }),
  route({
    method: 'POST',
    path: '/api/flags/resolve',
    auth: 'bearer',
    operationId: 'resolveFlag',
    summary: "Operators only: resolve an open flag. hide or erase performs that action on the flag's target (one record); dismiss closes it.",
    tag: 'Moderation',
    body: 'FlagResolveInput',
    rateLimit: 'write',
    errors: [403, 404, 409],
    responses: { 200: { description: 'The resolved flag and the action it performed (null for dismiss)', schema: 'FlagResolution' } },
    handler: async (ctx) => {
      const operator = requireOperator(ctx);
      const out = await resolveFlag(ctx.app, operator.profile.id, ctx.body);
      return { status: 200, body: out };
    },
  }),
];
