/**
 * Device codes (ours, issue 55 "add another device"; docs/api/tokens.md#device-codes): a signed-in
 * caller makes a short one-time code, and another device that enters it gets a new named token of
 * the caller, shown once — so a person adds a second browser without carrying a token over, and
 * no token is ever in a URL. The domain rules are in domain/agents/device-codes.ts; every change
 * is one `agent.device_code_*` record carrying the code's hash, committed before the answer.
 *
 * Making a code is a write of the caller (POST, Bearer: write rate limit, write stop, scope
 * `write`). Redeeming is public (the other device has no token yet) and counts toward the
 * registration limit of its client address, like a sign-up: it also creates a credential without
 * one, and it bounds guessing (5 tries per address per hour against about 8.5 × 10^11 codes).
 */
import type { Reply, Route } from '../../http/router.js';
import { route } from '../route.js';
import { requireWritesRunning, runWrite } from '../write.js';
import { DEVICE_CODE_TTL_MS, DEVICE_CODES_MAX } from '../../constants.js';
import { decideDeviceCodeCreate, decideDeviceCodeRedeem, hashDeviceCode, newDeviceCode, normalizeDeviceCode } from '../../domain/agents/device-codes.js';
import { tokenView } from '../../domain/agents/tokens.js';

const MINUTES = DEVICE_CODE_TTL_MS / 60_000;

export const deviceCodeRoutes: Route[] = [
  route({
    method: 'POST',
    path: '/api/me/device-codes',
    auth: 'bearer',
    operationId: 'createMyDeviceCode',
    summary: `Ours (issue 55): a one-time code (8 characters) that adds another device: entered there within ${MINUTES} minutes (POST /api/device-codes/redeem), it gives that device a new named token of yours. The code is in this answer only. At most ${DEVICE_CODES_MAX} codes per ${MINUTES} minutes, and none while you hold the most named tokens (409 CREDENTIAL_LIMIT).`,
    tag: 'Tokens',
    body: 'DeviceCodeInput',
    rateLimit: 'write',
    errors: [409],
    responses: { 201: { description: 'The code, shown this once, and when it expires', schema: 'DeviceCode' } },
    handler: async (ctx) => {
      // Hashing takes milliseconds and is async: done before the write's synchronous decide → commit.
      const code = newDeviceCode();
      const hash = await hashDeviceCode(code);
      // The write stop was checked before the await; one that began while hashing refuses too.
      requireWritesRunning(ctx);
      return runWrite(ctx, (d) => {
        const payload = decideDeviceCodeCreate(ctx.agent, ctx.body, { hash }, { position: d.position, nowMs: d.nowMs });
        const answer = (): Reply => ({ status: 201, body: { id: payload.codeId, code, expiresAt: payload.expiresAt, name: payload.name, scopes: payload.scopes } });
        return { type: 'agent.device_code_create', payload, answer };
      });
    },
  }),
  route({
    method: 'POST',
    path: '/api/device-codes/redeem',
    auth: 'public',
    operationId: 'redeemDeviceCode',
    summary: `Ours (issue 55): enter a device code made on a signed-in device; the answer holds a new named token of that account, shown only now. No token needed. A code works once and for ${MINUTES} minutes: a used or expired one is 409 DEVICE_CODE_GONE, an unknown one 404. Counts toward the registration limit of your address.`,
    tag: 'Tokens',
    body: 'DeviceCodeRedeemInput',
    rateLimit: 'registration',
    errors: [404, 409],
    responses: { 201: { description: 'The new token, its secret shown this once', schema: 'CreatedToken' } },
    handler: async ({ app, body }) => {
      const hash = await hashDeviceCode(normalizeDeviceCode(body.code));
      requireWritesRunning({ app });
      const nowMs = app.now();
      const { payload, token, agent } = decideDeviceCodeRedeem(app.state.agents, hash, { position: app.nextPosition(), nowMs });
      app.commit('agent.device_code_redeem', payload, nowMs);
      const t = agent.tokens.find((x) => x.id === payload.tokenId);
      // The record was applied by commit, so the token is there.
      if (t === undefined) throw new Error(`token ${payload.tokenId} of ${payload.agentId} missing right after its record was applied`);
      return { status: 201, body: { ...tokenView(t, undefined), token } };
    },
  }),
];
