/**
 * GET /api/limits (ours, an extension of part 8; issue 54): the caller's effective limits and
 * what remains of each, so an agent can pace itself before it meets a 429 instead of learning the
 * limits from one. Public: without a token it lists the per-address limits (registrations, the
 * address's share of the total) and the service's; with `Authorization: Bearer <token>` (checked
 * as on every Bearer route: 401 for an invalid, revoked or disabled one) also the token's: writes,
 * change reads, and the long polls and streams its agent holds now (FEED_WAITERS_PER_AGENT_MAX)
 * beside those held by everyone (FEED_WAITERS_MAX). Nothing is counted by reading it except what
 * every request counts toward (the address's share and the total, src/http/rate-limit.ts
 * `onRequest`), and it has no rate-limit class of its own.
 *
 * Each entry is a LimitState (schemas/LimitState.json): the draft-ietf-httpapi-ratelimit-headers
 * quota policy and service limit in JSON, under the same policy identifiers as the RateLimit and
 * RateLimit-Policy response fields.
 */
import type { App } from '../../app.js';
import { FEED_WAITERS_MAX, FEED_WAITERS_PER_AGENT_MAX } from '../../constants.js';
import type { LimitState, RateLimits } from '../../http/rate-limit.js';
import type { Route } from '../../http/router.js';
import { authenticate } from '../../http/server.js';
import { feedSlots } from '../feeds/routes.js';
import { route } from '../route.js';

/** The request rate limits of each app (set by src/service.ts when rate limits are on). */
const limitsByApp = new WeakMap<App, RateLimits>();

/** Makes GET /api/limits of `app` report `limits` (the service calls it when rate limits are on). */
export function reportRateLimits(app: App, limits: RateLimits): void {
  limitsByApp.set(app, limits);
}

/**
 * The held-request limits (issue 37) as LimitStates: the agent's own when `agentId` is given,
 * then everyone's.
 */
export function feedSlotStates(app: App, agentId: string | null): LimitState[] {
  const held = feedSlots(app, agentId);
  const out: LimitState[] = [];
  if (agentId !== null) {
    out.push({
      policy: 'feedSlots',
      scope: 'token',
      unit: 'concurrent-requests',
      quota: FEED_WAITERS_PER_AGENT_MAX,
      remaining: Math.max(0, FEED_WAITERS_PER_AGENT_MAX - held.byAgent),
      rule: `${FEED_WAITERS_PER_AGENT_MAX} long polls (wait=), feed streams and MCP listen streams held at once per agent, over the change feeds and the inbox together; past it a long poll is answered at once, a stream is refused with 429 and an MCP subscriptions/listen with -32603`,
    });
  }
  out.push({
    policy: 'feedSlotsTotal',
    scope: 'service',
    unit: 'concurrent-requests',
    quota: FEED_WAITERS_MAX,
    remaining: Math.max(0, FEED_WAITERS_MAX - held.total),
    rule: `${FEED_WAITERS_MAX} long polls, feed streams and MCP listen streams held at once by everyone; past it a long poll is answered at once, a stream is refused with 503 and an MCP subscriptions/listen with -32603`,
  });
  return out;
}

export const limitsRoutes: Route[] = [
  route({
    method: 'GET',
    path: '/api/limits',
    auth: 'public',
    operationId: 'getLimits',
    summary:
      'Ours (an extension): your effective limits and what remains of each now — per token with a bearer token (writes, change reads, held long polls and streams), per client address (registrations, the address\'s share of the total) and the service\'s — under the policy names of the RateLimit and RateLimit-Policy response fields. Reading it counts only toward what every request counts toward.',
    tag: 'Public',
    query: 'NoQuery',
    errors: [401],
    responses: { 200: { description: 'The limits and what remains', schema: 'Limits' } },
    handler: ({ app, req, clientIp }) => {
      // Optional authentication: a token that is sent must be valid (401 otherwise, as anywhere).
      const agentId = req.headers.authorization === undefined ? null : authenticate(app, req).agent.profile.id;
      const rate = limitsByApp.get(app);
      const limits = [...(rate?.states(agentId, clientIp) ?? []), ...feedSlotStates(app, agentId)];
      // Per token first, then per address, then the service's (the rate limits list theirs so).
      const order = { token: 0, address: 1, service: 2 } as const;
      limits.sort((a, b) => order[a.scope] - order[b.scope]);
      return { status: 200, body: { agentId, rateLimits: rate !== undefined, limits } };
    },
  }),
];
