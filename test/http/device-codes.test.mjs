/**
 * Issue 55, black-box against the built server: an account says what it is (POST /api/me/kind,
 * `human` for a person; RegisterInput stays as the spec has it), and "add another device" — a
 * signed-in caller makes a short one-time code (POST /api/me/device-codes), another device enters
 * it (POST /api/device-codes/redeem, no token) and gets a new named token, shown once. Codes
 * expire (moved by the server's test clock), work once, are bounded per agent, guesses count
 * toward the registration limit, and the log keeps only their hash. docs/api/tokens.md#device-codes.
 * Also the signed-out page's rooms (GET /api/rooms/public).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { DEVICE_CODE_ALPHABET, DEVICE_CODE_TTL_MS, DEVICE_CODES_MAX, REGISTRATIONS_PER_IP_PER_HOUR } from '../../dist/constants.js';
import { startServer } from '../helpers/server.mjs';
import { folderText } from '../helpers/files.mjs';

/** Asserts the status (printing the body otherwise) and returns the body. */
function expect(res, status) {
  assert.equal(res.status, status, JSON.stringify(res.body));
  return res.body;
}

/** Moves the server's clock (FORUM_TEST_CLOCK=1) forward by `ms`. */
async function advance(s, ms) {
  const r = await s.cli('clock', 'advance', '--ms', String(ms));
  assert.equal(r.code, 0, r.stderr);
}

/** ABCDEFGH → "abcd-efgh": how a person might type the code the reader shows as ABCD-EFGH. */
const typed = (code) => `${code.slice(0, 4)}-${code.slice(4)}`.toLowerCase();

test('an account says it is human with POST /api/me/kind: GET /api/me, the agent list show it, one record per change; the kind it has writes nothing; a bad kind is 400 naming the field', async (t) => {
  const s = await startServer(t);
  const erin = await s.register('erin');
  const bob = await s.register('bob');
  assert.equal(erin.kind, 'agent', 'registration gives kind agent (RegisterInput has no kind)');
  const changed = expect(await s.post('/api/me/kind', { kind: 'human' }, erin.token), 200);
  assert.equal(changed.kind, 'human');
  assert.equal(changed.id, erin.id);
  assert.equal(expect(await s.get('/api/me', erin.token), 200).kind, 'human');
  const listed = expect(await s.get('/api/agents', bob.token), 200);
  assert.deepEqual(listed.map((a) => [a.name, a.kind]), [['erin', 'human'], ['bob', 'agent']]);
  expect(await s.post('/api/me/kind', { kind: 'human' }, erin.token), 200);

  const bad = expect(await s.post('/api/me/kind', { kind: 'person' }, erin.token), 400);
  assert.match(bad.error, /kind/);
  assert.match(expect(await s.post('/api/me/kind', { kind: 'human', name: 'x' }, erin.token), 400).error, /name/);
  expect(await s.post('/api/me/kind', { kind: 'human' }), 401);
  const readOnly = expect(await s.post('/api/me/tokens', { name: 'ro', scopes: ['read'] }, bob.token), 201);
  assert.equal(expect(await s.post('/api/me/kind', { kind: 'human' }, readOnly.token), 403).code, 'TOKEN_SCOPE');

  await s.stop();
  const stored = folderText(s.dataDir);
  assert.equal(stored.split('"agent.kind"').length - 1, 1, 'one record for the one change; the repeat wrote none');
  await s.start();
  assert.equal(expect(await s.get('/api/me', erin.token), 200).kind, 'human', 'the kind survives a restart');
  const spec = expect(await s.get('/openapi.json'), 200);
  assert.ok(spec.paths['/api/me/kind']?.post, '/openapi.json documents POST /api/me/kind');
  assert.equal(spec.paths['/api/me/kind'].post.requestBody.content['application/json'].schema.$ref, '#/components/schemas/KindInput');
});

test('a device code gives another device a new named token once: typed in lower case with a hyphen it works, a second time it is 409 DEVICE_CODE_GONE (part 7 has no 410), unknown 404, malformed 400; the token is the same account, listed by name', async (t) => {
  const s = await startServer(t);
  const erin = await s.register('erin');
  const made = expect(await s.post('/api/me/device-codes', {}, erin.token), 201);
  assert.match(made.code, new RegExp(`^[${DEVICE_CODE_ALPHABET}]{8}$`));
  assert.match(made.id, /^dc_/);
  assert.deepEqual([made.name, made.scopes], ['another device', ['read', 'write']]);
  const madeAt = Date.parse(expect(await s.get('/api/status'), 200).time);
  const lifetime = Date.parse(made.expiresAt) - madeAt;
  assert.ok(lifetime > DEVICE_CODE_TTL_MS - 5000 && lifetime <= DEVICE_CODE_TTL_MS, `expires ${DEVICE_CODE_TTL_MS} ms after it was made (${lifetime})`);

  const redeemed = expect(await s.post('/api/device-codes/redeem', { code: typed(made.code) }), 201);
  assert.match(redeemed.token, /^af_/);
  assert.deepEqual([redeemed.name, redeemed.scopes, redeemed.current], ['another device', ['read', 'write'], false]);
  assert.equal(expect(await s.get('/api/me', redeemed.token), 200).id, erin.id, 'the new token is the same account');
  const tokens = expect(await s.get('/api/me/tokens', erin.token), 200).tokens;
  assert.deepEqual(tokens.map((x) => [x.id, x.name]), [['primary', 'registration'], [redeemed.id, 'another device']]);

  const again = expect(await s.post('/api/device-codes/redeem', { code: made.code }), 409);
  assert.equal(again.code, 'DEVICE_CODE_GONE');
  assert.match(again.error, /^code: .*used already/);
  const unknown = [...made.code].map((c) => (c === '2' ? '3' : '2')).join('');
  assert.equal(expect(await s.post('/api/device-codes/redeem', { code: unknown }), 404).code, 'NOT_FOUND');
  for (const code of ['ABC', '0OIL1234', 'ABCDEFGHJ']) {
    const res = expect(await s.post('/api/device-codes/redeem', { code }), 400);
    assert.match(res.error, /^code: 8 characters from/, code);
  }
  assert.match(expect(await s.post('/api/device-codes/redeem', {}), 400).error, /code/);
  expect(await s.post('/api/me/device-codes', {}), 401);

  const readOnly = expect(await s.post('/api/me/device-codes', { name: 'tablet', scopes: ['read'] }, erin.token), 201);
  const reader = expect(await s.post('/api/device-codes/redeem', { code: readOnly.code }), 201);
  assert.deepEqual(reader.scopes, ['read']);
  assert.equal(expect(await s.post('/api/topics', { title: 'no' }, reader.token), 403).code, 'TOKEN_SCOPE', 'a read-only code gives a read-only token');
  assert.equal(expect(await s.post('/api/me/device-codes', {}, reader.token), 403).code, 'TOKEN_SCOPE', 'and that token makes no codes');
  assert.match(expect(await s.post('/api/me/device-codes', { name: '  ' }, erin.token), 400).error, /name/);
});

test(`device codes expire after ${DEVICE_CODE_TTL_MS / 60000} minutes (409 DEVICE_CODE_GONE), an agent makes at most ${DEVICE_CODES_MAX} within that time (409), they survive restarts from the snapshot and the log, and the data folder and logs never hold a code`, async (t) => {
  const s = await startServer(t, { env: { FORUM_TEST_CLOCK: '1' } });
  const erin = await s.register('erin');
  const op = (await s.cli('operator', 'create', '--name', 'Ops')).json;
  const first = expect(await s.post('/api/me/device-codes', { name: 'phone' }, erin.token), 201);
  const codes = [first];
  for (let i = 1; i < DEVICE_CODES_MAX; i++) codes.push(expect(await s.post('/api/me/device-codes', {}, erin.token), 201));
  const over = expect(await s.post('/api/me/device-codes', {}, erin.token), 409);
  assert.equal(over.code, 'CREDENTIAL_LIMIT');
  assert.match(over.error, new RegExp(`at most ${DEVICE_CODES_MAX} per 10 minutes; the oldest expires at ${first.expiresAt}`));

  // Restarts keep the codes: from the snapshot of a clean stop, and from a whole replay.
  await s.restart();
  await s.stop();
  assert.ok(existsSync(join(s.dataDir, 'index', 'state.snapshot')));
  rmSync(join(s.dataDir, 'index', 'state.snapshot'));
  await s.start();
  const phone = expect(await s.post('/api/device-codes/redeem', { code: first.code }), 201);
  assert.equal(phone.name, 'phone', 'a code made before two restarts still works');

  await advance(s, DEVICE_CODE_TTL_MS);
  const expired = expect(await s.post('/api/device-codes/redeem', { code: codes[1].code }), 409);
  assert.equal(expired.code, 'DEVICE_CODE_GONE');
  assert.match(expired.error, new RegExp(`^code: this device code expired at ${codes[1].expiresAt.replace(/\./g, '\\.')}`));
  const fresh = expect(await s.post('/api/me/device-codes', {}, erin.token), 201);
  assert.equal(expect(await s.post('/api/device-codes/redeem', { code: codes[2].code }), 404).code, 'NOT_FOUND', 'an expired code is forgotten once its agent makes the next one');
  expect(await s.post('/api/device-codes/redeem', { code: fresh.code }), 201);

  const actions = expect(await s.get('/api/admin/actions', op.token), 200).actions.filter((a) => a.action.startsWith('device-codes.'));
  assert.deepEqual(actions.map((a) => [a.action, a.agentId, a.operatorId]).reverse(), [
    ...codes.map(() => ['device-codes.create', erin.id, null]),
    ['device-codes.redeem', erin.id, null],
    ['device-codes.create', erin.id, null],
    ['device-codes.redeem', erin.id, null],
  ]);
  assert.equal(actions.at(-1).target, `device code ${first.id} of ${erin.id}`);
  assert.equal(actions[0].target.startsWith('token tk_'), true);

  await s.stop();
  const stored = folderText(s.dataDir);
  assert.equal(stored.split('"agent.device_code_create"').length - 1, DEVICE_CODES_MAX + 1, 'one record per code');
  assert.equal(stored.split('"agent.device_code_redeem"').length - 1, 2, 'one record per redemption');
  for (const c of [...codes, fresh]) {
    for (const form of [c.code, typed(c.code)]) {
      assert.ok(!stored.includes(form), 'no code in the data folder');
      assert.ok(!s.stdout.includes(form) && !s.stderr.includes(form), 'no code in the server log');
    }
  }
  assert.ok(!stored.includes(phone.token), 'nor the token it gave');
});

test(`redeeming counts toward the registration limit of the client address (${REGISTRATIONS_PER_IP_PER_HOUR} per hour), so guesses are bounded: past it, 429 with Retry-After, even for a right code`, async (t) => {
  const s = await startServer(t, { env: { FORUM_RATE_LIMITS: 'on' } });
  const erin = await s.register('erin');
  const made = expect(await s.post('/api/me/device-codes', {}, erin.token), 201);
  const guess = made.code.startsWith('2') ? `3${made.code.slice(1)}` : `2${made.code.slice(1)}`;
  for (let i = 1; i < REGISTRATIONS_PER_IP_PER_HOUR; i++) expect(await s.post('/api/device-codes/redeem', { code: guess }), 404);
  const limited = expect(await s.post('/api/device-codes/redeem', { code: made.code }), 429);
  assert.equal(limited.code, 'RATE_LIMITED');
  const res = await s.post('/api/device-codes/redeem', { code: made.code });
  assert.equal(res.status, 429);
  assert.ok(Number(res.headers['retry-after']) >= 1, 'Retry-After says when');
  assert.match(res.headers['ratelimit-policy'], /^"registration";/);
});

test('GET /api/rooms/public lists the rooms (id, name, description, created) without a token, as GET /api/rooms does with one; topics still need a token', async (t) => {
  const s = await startServer(t);
  assert.equal((await s.cli('rooms', 'create', '--id', 'tides', '--name', 'Tides', '--description', 'Tide tables')).code, 0);
  const bob = await s.register('bob');
  const rooms = expect(await s.get('/api/rooms/public'), 200);
  assert.deepEqual(rooms.map((r) => [r.id, r.name, r.description]), [['commons', 'Commons', 'The default room for every topic.'], ['tides', 'Tides', 'Tide tables']]);
  assert.deepEqual(rooms, expect(await s.get('/api/rooms', bob.token), 200));
  expect(await s.get('/api/rooms'), 401);
  expect(await s.get('/api/topics'), 401);
});
