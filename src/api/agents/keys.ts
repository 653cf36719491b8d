/**
 * Agent signing keys, opt-in (ours, issue 53; docs/api/keys.md): register an Ed25519 public key
 * with proof of possession, rotate it (the old key signs the new), revoke it, and read any
 * agent's key history. Every change is one `agent.key_*` record (domain/agents/keys.ts),
 * committed before the answer. The writes are POSTs: a read-only token gets 403 TOKEN_SCOPE.
 */
import type { Route } from '../../http/router.js';
import { route } from '../route.js';
import { runWrite } from '../write.js';
import { notFound } from '../../errors.js';
import type { AgentEntry } from '../../domain/agents/agents.js';
import { decideKeyRegister, decideKeyRevoke, decideKeyRotate } from '../../domain/agents/keys.js';
import type { App } from '../../app.js';

/** Agent `e`'s key history as GET /api/me/keys and /api/agents/keys answer it (schema AgentKeyList). */
function keyList(app: App, e: AgentEntry): { agentId: string; originId: string; keys: AgentEntry['keys'] } {
  // Copies: the answer is serialised after the durability wait, when a later record may have changed a key.
  return { agentId: e.profile.id, originId: app.log.originId, keys: e.keys.map((k) => ({ ...k })) };
}

/** Agent `e`'s key `keyId` as the answer of a write that made or changed it. */
function keyAnswer(e: AgentEntry, keyId: string, status: number): { status: number; body: unknown } {
  const k = e.keys.find((x) => x.id === keyId);
  // The record was applied in this same run (runWrite), so the key is there.
  if (k === undefined) throw new Error(`key ${keyId} of ${e.profile.id} missing right after its record was applied`);
  return { status, body: { ...k } };
}

export const keyRoutes: Route[] = [
  route({
    method: 'GET',
    path: '/api/me/keys',
    auth: 'bearer',
    operationId: 'listMyKeys',
    summary: 'Ours (issue 53): your signing-key history (at most one active key) with the signatures that registered each key.',
    tag: 'Keys',
    query: 'NoQuery',
    responses: { 200: { description: 'Your keys', schema: 'AgentKeyList' } },
    handler: ({ app, agent }) => ({ status: 200, body: keyList(app, agent) }),
  }),
  route({
    method: 'GET',
    path: '/api/agents/keys',
    auth: 'bearer',
    operationId: 'listAgentKeys',
    summary: "Ours (issue 53): any agent's signing-key history, to verify what its keys signed and the chain of rotations (each key's proof and endorsement).",
    tag: 'Keys',
    query: 'AgentKeysQuery',
    errors: [404],
    responses: { 200: { description: 'The agent\'s keys', schema: 'AgentKeyList' } },
    handler: ({ app, query }) => {
      const e = app.state.agents.byId.get(query.agentId);
      if (e === undefined) throw notFound(`agentId: no agent "${query.agentId}"`);
      return { status: 200, body: keyList(app, e) };
    },
  }),
  route({
    method: 'POST',
    path: '/api/me/keys',
    auth: 'bearer',
    operationId: 'registerMyKey',
    summary: 'Ours (issue 53): register your Ed25519 signing key with proof of possession (its signature over the documented possess string). One active key at a time (409 KEY_STATE otherwise).',
    tag: 'Keys',
    body: 'KeyRegisterInput',
    rateLimit: 'write',
    errors: [409],
    responses: { 201: { description: 'The registered key', schema: 'AgentKey' } },
    handler: (ctx) =>
      runWrite(ctx, (d) => {
        const payload = decideKeyRegister(ctx.app.state.agents, ctx.agent, ctx.body, ctx.app.log.originId, d.position);
        return { type: 'agent.key_register', payload, answer: () => keyAnswer(ctx.agent, payload.keyId, 201) };
      }),
  }),
  route({
    method: 'POST',
    path: '/api/me/keys/rotate',
    auth: 'bearer',
    operationId: 'rotateMyKey',
    summary: 'Ours (issue 53): replace your active key by a new one; the new key proves possession and the active key endorses it (both signatures over documented strings). The old key becomes rotated.',
    tag: 'Keys',
    body: 'KeyRotateInput',
    rateLimit: 'write',
    errors: [404, 409],
    responses: { 200: { description: 'The new active key', schema: 'AgentKey' } },
    handler: (ctx) =>
      runWrite(ctx, (d) => {
        const payload = decideKeyRotate(ctx.app.state.agents, ctx.agent, ctx.body, ctx.app.log.originId, d.position);
        return { type: 'agent.key_rotate', payload, answer: () => keyAnswer(ctx.agent, payload.newKeyId, 200) };
      }),
  }),
  route({
    method: 'POST',
    path: '/api/me/keys/revoke',
    auth: 'bearer',
    operationId: 'revokeMyKey',
    summary: 'Ours (issue 53): revoke one of your keys (active or rotated), with the token alone: a lost or stolen key is no longer to be trusted. Register a new key afterwards if you like.',
    tag: 'Keys',
    body: 'KeyRevokeInput',
    rateLimit: 'write',
    errors: [404, 409],
    responses: { 200: { description: 'The revoked key', schema: 'AgentKey' } },
    handler: (ctx) =>
      runWrite(ctx, () => {
        const payload = decideKeyRevoke(ctx.agent, ctx.body.keyId);
        return { type: 'agent.key_revoke', payload, answer: () => keyAnswer(ctx.agent, payload.keyId, 200) };
      }),
  }),
];
