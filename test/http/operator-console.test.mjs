/**
 * Issue 38 "operators": every admin action is a record naming its operator (CLI `--as`,
 * FORUM_OPERATOR_TOKEN, operator tokens on the REST routes), the action log
 * (GET /api/admin/actions) rebuilt from the log after restarts, write stop with a reason and an
 * end time, the operator-only REST routes, and `moderation flags` showing what was flagged.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { cli, startServer, which } from '../helpers/server.mjs';

/** Runs the CLI on the server's folder and asserts it succeeded; resolves to its JSON. */
async function ok(s, ...args) {
  const r = await s.cli(...args);
  assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
  return r.json;
}

/** The action log as an operator reads it. */
async function actions(s, token, query = '') {
  const r = await s.get(`/api/admin/actions${query}`, token);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.actions;
}

/** The actions' who/what/target, oldest first, without seq and time (for comparisons). */
const summary = (list) => list.map((a) => `${a.operatorId} ${a.action} ${a.target}${a.reason ? ` (${a.reason})` : ''}`).reverse();

test('two named operators are told apart: --as, FORUM_OPERATOR_TOKEN and operator tokens on REST name who did each action, and the log keeps it across restarts from the snapshot and from the log', async (t) => {
  const s = await startServer(t);
  const alice = await ok(s, 'operator', 'create', '--name', 'Alice');
  const bob = await ok(s, 'operator', 'create', '--name', 'Bob');
  const agent = await s.register('target');
  const topic = await s.post('/api/topics', { title: 'to hide' }, agent.token);

  await ok(s, '--as', alice.id, 'agents', 'disable', agent.id, '--reason', 'spam loop');
  const viaToken = await cli(['--data-dir', s.dataDir, 'agents', 'enable', agent.id], { FORUM_OPERATOR_TOKEN: bob.token });
  assert.equal(viaToken.code, 0, viaToken.stderr);
  await ok(s, 'rooms', 'create', '--id', 'research', '--name', 'Research');
  assert.equal((await s.post('/api/admin/registration', { open: false }, alice.token)).status, 200);
  await ok(s, '--as', bob.id, 'moderation', 'hide', topic.body.id, '--type', 'topic', '--reason', 'off topic');
  await ok(s, '--as', alice.id, 'agents', 'rotate-token', agent.id);

  const expected = [
    `cli operator.create ${alice.id}`,
    `cli operator.create ${bob.id}`,
    `${alice.id} agents.disable ${agent.id} (spam loop)`,
    `${bob.id} agents.enable ${agent.id}`,
    'cli rooms.create research',
    `${alice.id} registration.close registration`,
    `${bob.id} moderation.hide topic ${topic.body.id} (off topic)`,
    `${alice.id} agents.rotate-token ${agent.id}`,
  ];
  assert.deepEqual(summary(await actions(s, bob.token)), expected);
  assert.deepEqual(summary(await actions(s, bob.token, `?operatorId=${alice.id}`)), expected.filter((l) => l.startsWith(alice.id)));
  assert.deepEqual(summary(await ok(s, 'actions', 'list')), expected, 'the CLI lists the same log');
  assert.deepEqual(summary(await ok(s, 'actions', 'list', '--operator', bob.id)), expected.filter((l) => l.startsWith(bob.id)));
  const moderation = (await s.get('/api/moderation/actions', bob.token)).body.actions;
  assert.equal(moderation[0].operatorId, bob.id, 'moderation records carry the --as operator too');

  // A stopped folder: the CLI applies the command itself, with the same operator rules.
  await s.stop();
  const offline = await s.cli('--as', bob.id, 'registration', 'open');
  assert.equal(offline.code, 0, offline.stderr);
  expected.push(`${bob.id} registration.open registration`);
  await s.start();
  assert.deepEqual(summary(await actions(s, alice.token)), expected, 'after a restart (snapshot or log)');
  await s.stop();
  rmSync(join(s.dataDir, 'index', 'state.snapshot'), { force: true });
  await s.start();
  assert.deepEqual(summary(await actions(s, alice.token)), expected, 'rebuilt from the log alone');
});

test('--as must name an existing operator: an unknown id or an agent id is refused (exit 1), a bad FORUM_OPERATOR_TOKEN too, and nothing is recorded', async (t) => {
  const s = await startServer(t);
  const op = await ok(s, 'operator', 'create', '--name', 'Ops');
  const agent = await s.register('not-an-operator');
  for (const as of ['op_nobody', agent.id]) {
    const r = await s.cli('--as', as, 'registration', 'close');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /is not an operator id; operators: /);
  }
  const bad = await cli(['--data-dir', s.dataDir, 'registration', 'close'], { FORUM_OPERATOR_TOKEN: agent.token });
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /FORUM_OPERATOR_TOKEN is not the token of an enabled operator/);
  assert.equal((await s.get('/api/status')).body.registrationOpen, true);
  assert.deepEqual(summary(await actions(s, op.token)), [`cli operator.create ${op.id}`]);
});

test('write stop with a reason shows the reason and the end time in the 423 error, and writes resume by themselves at `until` (injectable clock)', async (t) => {
  const s = await startServer(t, { env: { FORUM_TEST_CLOCK: '1' } });
  const op = await ok(s, 'operator', 'create', '--name', 'Ops');
  const agent = await s.register('writer');
  const now = Date.parse((await ok(s, 'clock', 'advance', '--ms', '0')).now);
  const until = new Date(now + 3_600_000).toISOString();
  const stop = await ok(s, '--as', op.id, 'writes', 'stop', '--reason', 'upgrading to 0.5', '--until', until);
  assert.deepEqual(stop, { writeStop: true, reason: 'upgrading to 0.5', until });

  const refused = await s.post('/api/topics', { title: 'during the stop' }, agent.token);
  assert.equal(refused.status, 423);
  assert.equal(refused.body.code, 'WRITE_STOP');
  assert.match(refused.body.error, /upgrading to 0\.5/);
  assert.ok(refused.body.error.includes(until), refused.body.error);
  const during = (await s.get('/api/status')).body;
  assert.equal(during.writeStop, true);
  assert.equal(during.writeStopReason, 'upgrading to 0.5', 'status shows the reason to agents');
  assert.equal(during.writeStopUntil, until);
  const settings = (await s.get('/api/admin/settings', op.token)).body;
  assert.deepEqual(settings, { registrationOpen: true, writeStop: true, reason: 'upgrading to 0.5', until });

  const past = await s.cli('writes', 'stop', '--until', new Date(now - 1000).toISOString());
  assert.equal(past.code, 1);
  assert.match(past.stderr, /--until .* is not in the future/);

  await ok(s, 'clock', 'advance', '--ms', String(3_600_000 + 1));
  assert.equal((await s.post('/api/topics', { title: 'after the stop' }, agent.token)).status, 201, 'writes resume at until');
  const after = (await s.get('/api/status')).body;
  assert.equal(after.writeStop, false);
  assert.equal(after.writeStopReason, undefined);
  assert.equal(after.writeStopUntil, undefined);

  const log = await actions(s, op.token);
  assert.equal(log[0].action, 'writes.stop');
  assert.equal(log[0].operatorId, op.id);
  assert.equal(log[0].reason, 'upgrading to 0.5');
  assert.equal(log[0].until, until);
});

test('operator REST routes act as the caller: disable, enable, rotate-token, rooms, registration and writes (answered during a write stop), each recorded with the operator', async (t) => {
  const s = await startServer(t);
  const op = await ok(s, 'operator', 'create', '--name', 'Console');
  const agent = await s.register('findme-agent');

  const found = await s.get('/api/admin/agents?q=FINDME', op.token);
  assert.equal(found.status, 200);
  assert.deepEqual(found.body.agents.map((a) => [a.agent.id, a.role]), [[agent.id, 'agent']]);

  const stop = await s.post('/api/admin/writes', { stopped: true, reason: 'maintenance' }, op.token);
  assert.equal(stop.status, 200, JSON.stringify(stop.body));
  assert.deepEqual(stop.body, { registrationOpen: true, writeStop: true, reason: 'maintenance', until: null });
  assert.equal((await s.post('/api/topics', { title: 'x' }, agent.token)).status, 423);

  const disabled = await s.post('/api/admin/agents/disable', { agentId: agent.id, reason: 'abuse' }, op.token);
  assert.equal(disabled.status, 200);
  assert.equal(disabled.body.disabled, 1);
  assert.equal((await s.get('/api/rooms', agent.token)).status, 401);
  assert.equal((await s.post('/api/admin/agents/enable', { agentId: agent.id }, op.token)).status, 200);
  const rotated = await s.post('/api/admin/agents/rotate-token', { agentId: agent.id }, op.token);
  assert.equal(rotated.status, 200);
  assert.equal((await s.get('/api/rooms', agent.token)).status, 401, 'the old token is refused');
  assert.equal((await s.get('/api/rooms', rotated.body.token)).status, 200, 'the new one works');
  const room = await s.post('/api/admin/rooms', { id: 'ops-room', name: 'Ops room' }, op.token);
  assert.equal(room.status, 201);
  assert.equal(room.body.id, 'ops-room');
  assert.equal((await s.post('/api/admin/rooms', { id: 'ops-room', name: 'again' }, op.token)).status, 409);
  assert.equal((await s.post('/api/admin/agents/disable', { agentId: 'ag_0000099999' }, op.token)).status, 404);
  assert.equal((await s.post('/api/admin/writes', { stopped: false }, op.token)).status, 200);
  assert.equal((await s.post('/api/topics', { title: 'y' }, rotated.body.token)).status, 201);

  assert.deepEqual(summary(await actions(s, op.token)), [
    `cli operator.create ${op.id}`,
    `${op.id} writes.stop writes (maintenance)`,
    `${op.id} agents.disable ${agent.id} (abuse)`,
    `${op.id} agents.enable ${agent.id}`,
    `${op.id} agents.rotate-token ${agent.id}`,
    `${op.id} rooms.create ops-room`,
    `${op.id} writes.resume writes`,
  ]);
  const text = JSON.stringify(await actions(s, op.token));
  assert.ok(!text.includes(rotated.body.token), 'the action log never shows a token');
});

test('an agent token gets 403 OPERATOR_ONLY on every operator route, and no token 401', async (t) => {
  const s = await startServer(t);
  const agent = await s.register('curious');
  const routes = [
    ['GET', '/api/admin/actions'],
    ['GET', '/api/admin/settings'],
    ['GET', '/api/admin/agents'],
    ['POST', '/api/admin/agents/disable', { agentId: agent.id }],
    ['POST', '/api/admin/agents/enable', { agentId: agent.id }],
    ['POST', '/api/admin/agents/rotate-token', { agentId: agent.id }],
    ['POST', '/api/admin/rooms', { id: 'mine', name: 'Mine' }],
    ['POST', '/api/admin/rooms/update', { id: 'commons', name: 'Mine' }],
    ['POST', '/api/admin/registration', { open: false }],
    ['POST', '/api/admin/writes', { stopped: true }],
    ['GET', '/api/moderation/actions'],
    ['GET', '/api/flags'],
  ];
  for (const [method, path, body] of routes) {
    const r = await s.request(method, path, { body, token: agent.token });
    assert.equal(r.status, 403, `${method} ${path}`);
    assert.equal(r.body.code, 'OPERATOR_ONLY', `${method} ${path}`);
    assert.equal((await s.request(method, path, { body })).status, 401, `${method} ${path} without a token`);
  }
  const st = (await s.get('/api/status')).body;
  assert.equal(st.writeStop, false);
  assert.equal(st.registrationOpen, true);
});

test('moderation flags shows what was flagged: the kind, the author and an excerpt of the text, kept as text', async (t) => {
  const s = await startServer(t);
  const author = await s.register('poster');
  const flagger = await s.register('flagger');
  const topic = await s.post('/api/topics', { title: 'A topic' }, author.token);
  const content = '<script>alert(1)</script> buy cheap tokens now ' + 'x'.repeat(400);
  const msg = await s.post('/api/messages', { topicId: topic.body.id, content, clientId: 'm1' }, author.token);
  assert.equal(msg.status, 201);
  const flag = await s.post('/api/flags', { target: { type: 'message', id: msg.body.id }, reason: 'spam', clientId: 'f1' }, flagger.token);
  assert.equal(flag.status, 201);

  const listed = await ok(s, 'moderation', 'flags');
  assert.equal(listed.length, 1);
  assert.equal(listed[0].id, flag.body.id);
  assert.equal(listed[0].content.kind, 'message');
  assert.equal(listed[0].content.authorId, author.id);
  assert.ok(listed[0].content.excerpt.startsWith('<script>alert(1)</script> buy cheap tokens now'), listed[0].content.excerpt);
  assert.equal(listed[0].content.excerpt.length, 200);
  assert.ok(listed[0].content.excerpt.endsWith('…'));
});

test('rooms rename and describe (CLI and REST) change the room in place, tell feed readers with a room event, are recorded with the operator and survive a restart', async (t) => {
  const s = await startServer(t);
  const op = await ok(s, 'operator', 'create', '--name', 'Rooms');
  const agent = await s.register('reader');
  await ok(s, 'rooms', 'create', '--id', 'lab', '--name', 'Lab', '--description', 'old words');
  const renamed = await ok(s, '--as', op.id, 'rooms', 'rename', 'lab', '--name', 'The Lab');
  assert.deepEqual([renamed.id, renamed.name, renamed.description], ['lab', 'The Lab', 'old words']);
  const described = await s.post('/api/admin/rooms/update', { id: 'lab', description: 'Experiments and results.' }, op.token);
  assert.equal(described.status, 200, JSON.stringify(described.body));
  assert.equal(described.body.name, 'The Lab');
  assert.equal((await s.post('/api/admin/rooms/update', { id: 'nowhere', name: 'X' }, op.token)).status, 404);
  assert.equal((await s.post('/api/admin/rooms/update', { id: 'lab' }, op.token)).status, 400, 'nothing to change');
  assert.equal((await s.cli('rooms', 'rename', 'nowhere', '--name', 'X')).code, 1);

  const expectRoom = async () => {
    const rooms = (await s.get('/api/rooms', agent.token)).body;
    assert.deepEqual(rooms.map((r) => [r.id, r.name, r.description]), [['commons', 'Commons', 'The default room for every topic.'], ['lab', 'The Lab', 'Experiments and results.']]);
  };
  await expectRoom();
  const events = (await s.get('/api/changes?limit=100', agent.token)).body.events.filter((e) => e.kind === 'room' && e.room.id === 'lab');
  assert.deepEqual(events.map((e) => [e.room.name, e.room.description]), [['Lab', 'old words'], ['The Lab', 'old words'], ['The Lab', 'Experiments and results.']]);
  assert.deepEqual(summary(await actions(s, op.token)).slice(-3), ['cli rooms.create lab', `${op.id} rooms.rename lab`, `${op.id} rooms.describe lab`]);

  await s.restart();
  await expectRoom();
  await s.stop();
  rmSync(join(s.dataDir, 'index', 'state.snapshot'), { force: true });
  await s.start();
  await expectRoom();
});

test("the JS helper's operator calls reach the operator routes: write stop with a reason, room create and update, disable, enable, rotate-token, the action log; an agent's helper gets OPERATOR_ONLY", async (t) => {
  const s = await startServer(t);
  const { ForumClient } = await import(new URL('../../src/api/docs/client/forum-client.mjs', import.meta.url).href);
  const op = await ok(s, 'operator', 'create', '--name', 'Helper');
  const agent = await s.register('subject');
  const opClient = new ForumClient({ baseUrl: s.url, token: op.token });
  const agentClient = new ForumClient({ baseUrl: s.url, token: agent.token });

  await opClient.setWriteStop({ stopped: true, reason: 'upgrading disks' });
  const settings = await opClient.adminSettings();
  assert.equal(settings.writeStop, true);
  assert.equal(settings.reason, 'upgrading disks');
  const refused = await s.post('/api/topics', { title: 'during stop' }, agent.token);
  assert.equal(refused.status, 423);
  assert.match(refused.body.error, /upgrading disks/);
  await opClient.setWriteStop({ stopped: false });
  await opClient.createRoom({ id: 'helpers', name: 'Helpers' });
  assert.equal((await opClient.updateRoom({ id: 'helpers', description: 'from the helper' })).description, 'from the helper');
  await opClient.disableAgent({ agentId: agent.id, reason: 'test' });
  await opClient.enableAgent({ agentId: agent.id });
  const rotated = await opClient.rotateAgentToken({ agentId: agent.id });
  assert.equal(typeof rotated.token, 'string');
  assert.ok((await opClient.adminAgents({ q: 'subject' })).agents.length >= 1);
  const log = (await opClient.adminActions({ operatorId: op.id })).actions.map((a) => a.action).reverse();
  assert.deepEqual(log, ['writes.stop', 'writes.resume', 'rooms.create', 'rooms.describe', 'agents.disable', 'agents.enable', 'agents.rotate-token']);

  const fresh = new ForumClient({ baseUrl: s.url, token: rotated.token });
  await assert.rejects(() => fresh.adminSettings(), (err) => err.status === 403 && err.code === 'OPERATOR_ONLY');
  await assert.rejects(() => agentClient.adminSettings(), (err) => err.status === 401, 'the rotated-away token is refused');
});

test("the Python helper's operator calls reach the operator routes: write stop with a reason and an end, room create and update, disable and enable with reasons, rotate-token, the action log", { skip: which('python3') ? false : 'python3 is not installed on this machine: the Python helper was NOT tested' }, async (t) => {
  const s = await startServer(t);
  const op = await ok(s, 'operator', 'create', '--name', 'PyHelper');
  const agent = await s.register('py-subject');
  const dir = mkdtempSync(join(tmpdir(), 'forum-py-op-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'forum_client.py'), readFileSync(new URL('../../src/api/docs/client/forum_client.py', import.meta.url)));
  writeFileSync(join(dir, 'drive.py'), `
import json, sys
from forum_client import ForumClient
op = ForumClient(base_url=sys.argv[1], token=sys.argv[2])
agent_id = sys.argv[3]
out = {}
op.set_write_stop(True, reason="upgrading disks", until="2099-01-01T00:00:00Z")
s = op.admin_settings()
out["stop"] = [s["writeStop"], s["reason"], s["until"]]
op.set_write_stop(False)
out["resumed"] = op.admin_settings()["writeStop"]
op.create_room("pyroom", "Py Room", description="first words")
out["room"] = op.update_room("pyroom", name="The Py Room")["name"]
op.disable_agent(agent_id, reason="py test")
op.enable_agent(agent_id)
out["token"] = isinstance(op.rotate_agent_token(agent_id)["token"], str)
out["log"] = [f'{a["action"]}:{a.get("reason") or ""}' for a in reversed(op.admin_actions(operator_id=sys.argv[4])["actions"])]
print(json.dumps(out))
`);
  const { stdout } = await promisify(execFile)('python3', [join(dir, 'drive.py'), s.url, op.token, agent.id, op.id], { cwd: dir, timeout: 60_000 });
  assert.deepEqual(JSON.parse(stdout), {
    stop: [true, 'upgrading disks', '2099-01-01T00:00:00.000Z'],
    resumed: false,
    room: 'The Py Room',
    token: true,
    log: ['writes.stop:upgrading disks', 'writes.resume:', 'rooms.create:', 'rooms.rename:', 'agents.disable:py test', 'agents.enable:', 'agents.rotate-token:'],
  });
});

test('a write stop\'s until must be a date and time that exist: 2099-02-30, month 13 and hour 24 are refused 400 naming until (REST and CLI) and nothing is stopped; 2096-02-29 (a leap day) is taken as given', async (t) => {
  const s = await startServer(t);
  const op = await ok(s, 'operator', 'create', '--name', 'Calendar');
  for (const [until, rule] of [
    ['2099-02-30T00:00:00Z', /day 30 is not within 2099-02, which has 28 days/],
    ['2100-02-29T12:00:00Z', /day 29 is not within 2100-02, which has 28 days/],
    ['2099-04-31T00:00:00+02:00', /day 31 is not within 2099-04, which has 30 days/],
    ['2099-13-01T00:00:00Z', /month 13 is not 01-12/],
    ['2099-01-01T24:00:00Z', /time is not within/],
  ]) {
    const rest = await s.post('/api/admin/writes', { stopped: true, reason: 'calendar', until }, op.token);
    assert.equal(rest.status, 400, `${until}: ${JSON.stringify(rest.body)}`);
    assert.equal(rest.body.code, 'VALIDATION');
    assert.match(rest.body.error, /until/);
    assert.match(rest.body.error, rule);
    const viaCli = await s.cli('--as', op.id, 'writes', 'stop', '--until', until);
    assert.equal(viaCli.code, 1, until);
    assert.match(viaCli.stderr, /--until/);
    assert.match(viaCli.stderr, rule);
  }
  assert.equal((await s.get('/api/admin/settings', op.token)).body.writeStop, false, 'nothing was stopped');
  const leap = await s.post('/api/admin/writes', { stopped: true, reason: 'calendar', until: '2096-02-29T23:59:59Z' }, op.token);
  assert.equal(leap.status, 200, JSON.stringify(leap.body));
  assert.equal(leap.body.until, '2096-02-29T23:59:59.000Z');
});

test('a disabled operator cannot act: --as its id is refused (exit 1) as its FORUM_OPERATOR_TOKEN is, and nothing is recorded under its name', async (t) => {
  const s = await startServer(t);
  const op = await ok(s, 'operator', 'create', '--name', 'Ops');
  const gone = await ok(s, 'operator', 'create', '--name', 'Former');
  await ok(s, '--as', op.id, 'agents', 'disable', gone.id, '--reason', 'left the team');
  const viaToken = await cli(['--data-dir', s.dataDir, 'registration', 'close'], { FORUM_OPERATOR_TOKEN: gone.token });
  assert.equal(viaToken.code, 1);
  assert.match(viaToken.stderr, /FORUM_OPERATOR_TOKEN is not the token of an enabled operator/);
  const viaAs = await s.cli('--as', gone.id, 'registration', 'close');
  assert.equal(viaAs.code, 1, viaAs.stdout);
  assert.match(viaAs.stderr, /--as .* is a disabled operator/);
  // Offline (the folder opened by the CLI itself) the same rule holds.
  await s.stop();
  const offline = await s.cli('--as', gone.id, 'registration', 'close');
  assert.equal(offline.code, 1, offline.stdout);
  assert.match(offline.stderr, /is a disabled operator/);
  await s.start();
  assert.equal((await s.get('/api/status')).body.registrationOpen, true, 'registration is still open');
  assert.deepEqual((await actions(s, op.token, `?operatorId=${gone.id}`)).map((a) => a.action), [], 'no action is recorded under the disabled operator');
});
