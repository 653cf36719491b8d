/**
 * The tokens an agent manages itself (ours, issue 53; docs/api/tokens.md): list, create, rotate
 * and revoke, under the caller's own path `/api/me` (the spec names no such routes; part 5 item 9
 * leaves token lifetime open). Every change is one `agent.token_*` record carrying the token's
 * hash (domain/agents/tokens.ts), committed before the answer; a new secret is shown only in that
 * answer. The writes are POSTs, so a token without scope `write` gets 403 TOKEN_SCOPE for them
 * like for every other write (src/http/server.ts `runRoute`).
 */
import type { Reply, Route } from '../../http/router.js';
import { route } from '../route.js';
import { runWrite } from '../write.js';
import { AGENT_TOKENS_MAX } from '../../constants.js';
import type { AgentEntry } from '../../domain/agents/agents.js';
import { decideTokenCreate, decideTokenRevoke, decideTokenRotate, tokensOf, tokenView, type AgentToken } from '../../domain/agents/tokens.js';

/** The answer carrying a token's new secret: its list entry plus `token` (schema CreatedToken). */
function created(status: number, agent: AgentEntry, tokenId: string, secret: string, current: AgentToken | undefined): Reply {
  const t = tokensOf(agent).find((x) => x.id === tokenId);
  // The record was applied in this same run (runWrite), so the token is there.
  if (t === undefined) throw new Error(`token ${tokenId} of ${agent.profile.id} missing right after its record was applied`);
  return { status, body: { ...tokenView(t, current), token: secret } };
}

export const tokenRoutes: Route[] = [
  route({
    method: 'GET',
    path: '/api/me/tokens',
    auth: 'bearer',
    operationId: 'listMyTokens',
    summary: 'Ours (issue 53): your tokens — the registration token (`primary`) and your named tokens — with name, scopes, created and last used (in memory only). Never a secret.',
    tag: 'Tokens',
    query: 'NoQuery',
    responses: { 200: { description: 'Your tokens', schema: 'AgentTokenList' } },
    handler: ({ agent, token }) => ({ status: 200, body: { tokens: tokensOf(agent).map((t) => tokenView(t, token)), max: AGENT_TOKENS_MAX } }),
  }),
  route({
    method: 'POST',
    path: '/api/me/tokens',
    auth: 'bearer',
    operationId: 'createMyToken',
    summary: `Ours (issue 53): a named token with scopes ["read"] or ["read", "write"]; the secret is in this answer only. At most ${AGENT_TOKENS_MAX} besides the registration token (409 CREDENTIAL_LIMIT). Not idempotent.`,
    tag: 'Tokens',
    body: 'TokenCreateInput',
    rateLimit: 'write',
    errors: [409],
    responses: { 201: { description: 'The new token, its secret shown this once', schema: 'CreatedToken' } },
    handler: (ctx) =>
      runWrite(ctx, (d) => {
        const { payload, token } = decideTokenCreate(ctx.agent, ctx.body, d.position);
        return { type: 'agent.token_create', payload, answer: () => created(201, ctx.agent, payload.tokenId, token, ctx.token) };
      }),
  }),
  route({
    method: 'POST',
    path: '/api/me/tokens/rotate',
    auth: 'bearer',
    operationId: 'rotateMyToken',
    summary: 'Ours (issue 53): a new secret for one of your tokens (default: the one you send), same id, name and scopes; the old secret gets 401 from now. The new one is in this answer only: a lost answer loses it (use another token, or the operator, to recover).',
    tag: 'Tokens',
    body: 'TokenRotateInput',
    rateLimit: 'write',
    errors: [404],
    responses: { 200: { description: 'The rotated token, its new secret shown this once', schema: 'CreatedToken' } },
    handler: (ctx) =>
      runWrite(ctx, () => {
        const tokenId = ctx.body.tokenId ?? ctx.token?.id;
        if (tokenId === undefined) throw new Error('a bearer route without the token it was authenticated with');
        const { payload, token } = decideTokenRotate(ctx.agent, tokenId);
        return { type: 'agent.token_rotate', payload, answer: () => created(200, ctx.agent, payload.tokenId, token, ctx.token) };
      }),
  }),
  route({
    method: 'POST',
    path: '/api/me/tokens/revoke',
    auth: 'bearer',
    operationId: 'revokeMyToken',
    summary: 'Ours (issue 53): revoke one of your named tokens; it gets 401 from now. The registration token cannot be revoked (400): rotate it.',
    tag: 'Tokens',
    body: 'TokenRevokeInput',
    rateLimit: 'write',
    errors: [404],
    responses: { 200: { description: 'The revoked token as it was listed', schema: 'AgentToken' } },
    handler: (ctx) =>
      runWrite(ctx, () => {
        const { payload, token } = decideTokenRevoke(ctx.agent, ctx.body.tokenId);
        const view = tokenView(token, ctx.token);
        return { type: 'agent.token_revoke', payload, answer: () => ({ status: 200, body: view }) };
      }),
  }),
];
