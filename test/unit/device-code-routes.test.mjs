/**
 * The device-code routes (src/api/agents/device-codes.ts) around their one await: each hashes the
 * code with scrypt (milliseconds, more when the thread pool is busy) after the HTTP layer checked
 * the write stop, so a stop the operator starts meanwhile must still refuse the write (423
 * WRITE_STOP, nothing committed). The handlers run here on a fake app whose settings change while
 * the hash is being computed: the handler is suspended at its await when the stop is set, so the
 * order is fixed, not timed. The HTTP behaviour is test/http/device-codes.test.mjs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deviceCodeRoutes } from '../../dist/api/agents/device-codes.js';
import { createAgentsState, decideRegister } from '../../dist/domain/agents/agents.js';
import { applyAgents } from '../../dist/domain/agents/apply.js';
import { decideDeviceCodeCreate, hashDeviceCode, newDeviceCode } from '../../dist/domain/agents/device-codes.js';

const T0 = Date.parse('2026-12-02T08:00:00.000Z');

/** A fake app holding one agent (and one live code of it), recording what is committed. */
async function world() {
  const agents = createAgentsState();
  let seq = 0;
  const commits = [];
  const settings = { writeStop: false, writeStopReason: '', writeStopUntilMs: null, registrationOpen: true };
  const apply = (type, payload) => applyAgents(agents, { seq: ++seq, type, payload, time: new Date(T0).toISOString() });
  const { payload } = decideRegister(agents, { name: 'erin', provider: 'independent', description: '', acceptsPublicArchive: true, operatorAuthorized: true }, { position: 1, created: new Date(T0).toISOString(), registrationOpen: true, maxAgents: null });
  apply('agent.register', payload);
  const agent = agents.byId.get(payload.id);
  const code = newDeviceCode();
  apply('agent.device_code_create', decideDeviceCodeCreate(agent, { name: 'phone', scopes: ['read', 'write'] }, { hash: await hashDeviceCode(code) }, { position: seq + 1, nowMs: T0 }));
  const app = {
    now: () => T0 + 1000,
    nextSeq: () => seq + 1,
    nextPosition: () => seq + 1,
    state: { agents, settings },
    commit: (type, p) => {
      commits.push(type);
      apply(type, p);
    },
  };
  return { app, agent, code, commits, settings };
}

const handlerOf = (path) => deviceCodeRoutes.find((r) => r.path === path).handler;

/** Starts `run` (which reaches the handler's await synchronously), then stops writes before it resumes. */
async function stoppedMeanwhile(w, run) {
  const pending = run();
  w.settings.writeStop = true;
  w.settings.writeStopReason = 'backup';
  await assert.rejects(pending, (err) => err.code === 'WRITE_STOP' && err.status === 423 && /backup/.test(err.message));
  assert.deepEqual(w.commits, [], 'nothing is committed once writes stopped');
}

test('redeeming: a write stop that starts while the code is hashed refuses the redemption (423), and the code stays unused', async () => {
  const w = await world();
  await stoppedMeanwhile(w, () => handlerOf('/api/device-codes/redeem')({ app: w.app, body: { code: w.code } }));
  assert.equal(w.agent.tokens.length, 0, 'no token was given');
  w.settings.writeStop = false;
  const res = await handlerOf('/api/device-codes/redeem')({ app: w.app, body: { code: w.code } });
  assert.equal(res.status, 201, 'once writes run again the code still works');
  assert.deepEqual(w.commits, ['agent.device_code_redeem']);
});

test('making a code: a write stop that starts while the code is hashed refuses it (423), and no code is recorded', async () => {
  const w = await world();
  const before = w.agent.deviceCodes.length;
  await stoppedMeanwhile(w, () => handlerOf('/api/me/device-codes')({ app: w.app, agent: w.agent, body: { name: 'tablet', scopes: ['read'] } }));
  assert.equal(w.agent.deviceCodes.length, before);
  w.settings.writeStop = false;
  const res = await handlerOf('/api/me/device-codes')({ app: w.app, agent: w.agent, body: { name: 'tablet', scopes: ['read'] } });
  assert.equal(res.status, 201);
  assert.deepEqual(w.commits, ['agent.device_code_create']);
});
