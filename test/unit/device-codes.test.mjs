/**
 * Device codes (issue 55, src/domain/agents/device-codes.ts) on a fake clock: the decisions and
 * the index built from their records, as a replay and a state snapshot build it — the code's form,
 * expiry at exactly DEVICE_CODE_TTL_MS, one use, the per-agent bound, forgetting expired codes, and
 * the kind record. The HTTP behaviour is test/http/device-codes.test.mjs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEVICE_CODE_ALPHABET, DEVICE_CODE_LENGTH, DEVICE_CODE_TTL_MS, DEVICE_CODES_MAX } from '../../dist/constants.js';
import { createAgentsState, decideKind, decideRegister } from '../../dist/domain/agents/agents.js';
import { applyAgents, packAgents, unpackAgents } from '../../dist/domain/agents/apply.js';
import { decideDeviceCodeCreate, decideDeviceCodeRedeem, hashDeviceCode, newDeviceCode, normalizeDeviceCode } from '../../dist/domain/agents/device-codes.js';

const T0 = Date.parse('2026-12-02T08:00:00.000Z');

/** An agents index with one registered agent, and a way to append records at a given time. */
function world() {
  const s = createAgentsState();
  let seq = 0;
  const apply = (type, payload, ms) => applyAgents(s, { seq: ++seq, type, payload, time: new Date(ms).toISOString() });
  const { payload } = decideRegister(s, { name: 'erin', provider: 'independent', description: '', acceptsPublicArchive: true, operatorAuthorized: true }, { position: 1, created: new Date(T0).toISOString(), registrationOpen: true, maxAgents: null });
  apply('agent.register', payload, T0);
  const agent = s.byId.get(payload.id);
  const make = async (ms) => {
    const code = newDeviceCode();
    const p = decideDeviceCodeCreate(agent, { name: 'phone', scopes: ['read', 'write'] }, { hash: await hashDeviceCode(code) }, { position: seq + 1, nowMs: ms });
    apply('agent.device_code_create', p, ms);
    return code;
  };
  const redeem = async (code, ms) => {
    const { payload: p, token } = decideDeviceCodeRedeem(s, await hashDeviceCode(normalizeDeviceCode(code)), { position: seq + 1, nowMs: ms });
    apply('agent.device_code_redeem', p, ms);
    return { p, token };
  };
  return { s, agent, apply, make, redeem };
}

const codeOf = (fn) => {
  try {
    fn();
  } catch (err) {
    return `${err.status} ${err.code}`;
  }
  return 'ok';
};
const refusal = async (promise) => promise.then(() => 'ok', (err) => `${err.status} ${err.code}: ${err.message}`);

test('a code is DEVICE_CODE_LENGTH characters of the alphabet; entered, case, spaces and hyphens do not matter, anything else is 400 naming the field', () => {
  for (let i = 0; i < 200; i++) assert.match(newDeviceCode(), new RegExp(`^[${DEVICE_CODE_ALPHABET}]{${DEVICE_CODE_LENGTH}}$`));
  assert.equal(normalizeDeviceCode(' abcd-efgh '), 'ABCDEFGH');
  assert.equal(normalizeDeviceCode('AB CD EF GH'), 'ABCDEFGH');
  for (const bad of ['ABCDEFG', 'ABCDEFGHJ', '0BCDEFGH', 'OBCDEFGH', 'IBCDEFGH', 'LBCDEFGH', '1BCDEFGH', 'ABCD_EFG']) {
    assert.equal(codeOf(() => normalizeDeviceCode(bad)), '400 VALIDATION', bad);
  }
  assert.throws(() => normalizeDeviceCode('x'), { message: /^code: 8 characters from/ });
});

test('a code works until DEVICE_CODE_TTL_MS after it was made and exactly once; the token it gives is a named token of its agent', async () => {
  const w = world();
  const code = await w.make(T0);
  const early = await w.make(T0);
  const { p, token } = await w.redeem(code, T0 + DEVICE_CODE_TTL_MS - 1);
  assert.match(token, /^af_/);
  assert.deepEqual(w.agent.tokens.map((t) => [t.id, t.name, t.scopes]), [[p.tokenId, 'phone', ['read', 'write']]]);
  assert.equal(w.s.byNamedTokenHash.get(p.tokenHash)?.agentId, w.agent.profile.id, 'the new token authenticates as the agent');
  assert.match(await refusal(w.redeem(code, T0 + 1)), /^409 DEVICE_CODE_GONE: code: this device code was used already/);
  assert.match(await refusal(w.redeem(early, T0 + DEVICE_CODE_TTL_MS)), /^409 DEVICE_CODE_GONE: code: this device code expired at 2026-12-02T08:10:00.000Z/);
  assert.match(await refusal(w.redeem('ABCDEFGH', T0)), /^404 NOT_FOUND: code: no such device code/);
});

test(`an agent makes at most DEVICE_CODES_MAX (${DEVICE_CODES_MAX}) codes within the lifetime, used or not; once they expire, its next code forgets them (404)`, async () => {
  const w = world();
  const codes = [];
  for (let i = 0; i < DEVICE_CODES_MAX; i++) codes.push(await w.make(T0 + i));
  await w.redeem(codes[0], T0 + 10);
  assert.match(await refusal(w.make(T0 + 20)), /^409 CREDENTIAL_LIMIT: device codes: at most 3 per 10 minutes; the oldest expires at 2026-12-02T08:10:00.000Z/);
  await w.make(T0 + DEVICE_CODE_TTL_MS);
  assert.equal(w.agent.deviceCodes.length, DEVICE_CODES_MAX, 'the first expired and was forgotten');
  assert.match(await refusal(w.redeem(codes[0], T0 + DEVICE_CODE_TTL_MS)), /^404 NOT_FOUND/);
  assert.match(await refusal(w.redeem(codes[1], T0 + DEVICE_CODE_TTL_MS + 1)), /^409 DEVICE_CODE_GONE: code: this device code expired/, 'expired, remembered until the next code');
});

test('a state snapshot keeps the codes a replay knows, and a snapshot from before device codes unpacks with none', async () => {
  const w = world();
  const code = await w.make(T0);
  const packed = structuredClone(packAgents(w.s));
  const restored = createAgentsState();
  unpackAgents(restored, packed);
  assert.deepEqual([...restored.byDeviceCodeHash.keys()], [...w.s.byDeviceCodeHash.keys()]);
  const { payload } = decideDeviceCodeRedeem(restored, await hashDeviceCode(code), { position: 9, nowMs: T0 + 1 });
  assert.equal(payload.name, 'phone');
  const old = structuredClone(packed);
  for (const a of old.order) delete a.deviceCodes;
  const before = createAgentsState();
  unpackAgents(before, old);
  assert.equal(before.byDeviceCodeHash.size, 0);
});

test('the kind: a change is one record, the kind the agent has is none; the profile follows the record', () => {
  const w = world();
  assert.equal(w.agent.profile.kind, 'agent');
  assert.equal(decideKind(w.agent, { kind: 'agent' }), null);
  const p = decideKind(w.agent, { kind: 'human' });
  assert.deepEqual(p, { agentId: w.agent.profile.id, kind: 'human' });
  w.apply('agent.kind', p, T0 + 1);
  assert.equal(w.agent.profile.kind, 'human');
  assert.equal(decideKind(w.agent, { kind: 'human' }), null);
});
