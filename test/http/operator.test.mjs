/**
 * Operator actions of issue 25 that are not content moderation: token rotation (running server,
 * stopped folder, restarts from the snapshot and from the log), the `admin_action` log line of
 * every admin action, and the access log's optional client address.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, tempDir } from '../helpers/server.mjs';
import { folderText } from '../helpers/files.mjs';

const SNAPSHOT = (dir) => join(dir, 'index', 'state.snapshot');
const sha256 = (s) => createHash('sha256').update(s).digest('hex');

/** The JSON log lines of `text` whose event is `admin_action`. */
function adminActions(text) {
  return String(text)
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l))
    .filter((o) => o.event === 'admin_action');
}

/** Waits until the server's stdout holds `n` admin_action lines (pipes deliver them a moment after the reply). */
async function waitForActions(s, n) {
  for (let i = 0; i < 100 && adminActions(s.stdout).length < n; i++) await new Promise((r) => setTimeout(r, 20));
  return adminActions(s.stdout);
}

const status = async (s, token) => (await s.get('/api/rooms', token)).status;

test('agents rotate-token gives a new token at once: the old one gets 401, the new one 200, for agents and operators, and restarts from the snapshot and from the log keep it so', async (t) => {
  const s = await startServer(t);
  const agent = await s.register('rotating');
  const op = (await s.cli('operator', 'create', '--name', 'Ops')).json;
  const topic = await s.post('/api/topics', { title: 'before the rotation' }, agent.token);
  assert.equal(topic.status, 201);

  const rotated = await s.cli('agents', 'rotate-token', agent.id);
  assert.equal(rotated.code, 0, rotated.stderr);
  assert.equal(rotated.json.id, agent.id);
  assert.match(rotated.json.token, /^af_/);
  assert.notEqual(rotated.json.token, agent.token);
  assert.equal(await status(s, agent.token), 401, 'the old token is refused as soon as the command answers');
  assert.equal(await status(s, rotated.json.token), 200, 'the new token works');
  const me = await s.get('/api/topics', rotated.json.token);
  assert.ok(me.body.some((x) => x.id === topic.body.id && x.authorId === agent.id), 'same identity, same history');

  const opRotated = await s.cli('agents', 'rotate-token', op.id);
  assert.equal(opRotated.code, 0, opRotated.stderr);
  assert.equal(await status(s, op.token), 401, "an operator's old token is refused too");
  assert.equal(await status(s, opRotated.json.token), 200);

  const unknown = await s.cli('agents', 'rotate-token', 'ag_nope');
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /no agent with id "ag_nope"/);

  // One record per rotation, carrying the hash; no token anywhere in the data folder or the logs.
  await s.stop();
  const stored = folderText(s.dataDir);
  assert.equal(stored.split('"agent.rotate_token"').length - 1, 2, 'one agent.rotate_token record per rotation');
  assert.ok(stored.includes(sha256(rotated.json.token)), "the record carries the new token's hash");
  for (const token of [rotated.json.token, opRotated.json.token]) {
    assert.ok(!stored.includes(token), 'no clear token in the data folder');
    assert.ok(!s.stdout.includes(token) && !s.stderr.includes(token), 'no clear token in the server log');
  }

  assert.ok(existsSync(SNAPSHOT(s.dataDir)), 'the clean stop wrote a state snapshot');
  await s.start();
  assert.doesNotMatch(s.stderr, /snapshot_not_used/, 'this start loaded the snapshot');
  assert.deepEqual(
    [await status(s, agent.token), await status(s, rotated.json.token), await status(s, op.token), await status(s, opRotated.json.token)],
    [401, 200, 401, 200],
    'from the snapshot',
  );
  await s.stop();
  rmSync(SNAPSHOT(s.dataDir));
  await s.start();
  assert.deepEqual(
    [await status(s, agent.token), await status(s, rotated.json.token), await status(s, op.token), await status(s, opRotated.json.token)],
    [401, 200, 401, 200],
    'from a whole replay of the log',
  );

  // On a stopped folder the CLI applies the rotation itself; the server sees it at its next start.
  await s.stop();
  const offline = await s.cli('agents', 'rotate-token', agent.id);
  assert.equal(offline.code, 0, offline.stderr);
  assert.ok(!offline.stderr.includes(offline.json.token), 'the CLI logs no token either');
  await s.start();
  assert.equal(await status(s, rotated.json.token), 401, 'the token rotated away offline is refused');
  assert.equal(await status(s, offline.json.token), 200);
});

test('a disabled agent stays disabled after a rotation: its new token gets 401 until it is enabled', async (t) => {
  const s = await startServer(t);
  const agent = await s.register('disabled');
  assert.equal((await s.cli('agents', 'disable', agent.id)).code, 0);
  const rotated = await s.cli('agents', 'rotate-token', agent.id);
  assert.equal(rotated.code, 0, rotated.stderr);
  assert.equal(await status(s, rotated.json.token), 401);
  assert.equal((await s.cli('agents', 'enable', agent.id)).code, 0);
  assert.equal(await status(s, rotated.json.token), 200);
  assert.equal(await status(s, agent.token), 401);
});

test('every admin action writes one admin_action line naming the action, target and outcome, never a token; reads write none', async (t) => {
  const s = await startServer(t);
  const agent = await s.register('target');
  const op = await s.cli('operator', 'create', '--name', 'Ops');
  assert.equal(op.code, 0, op.stderr);
  const briefs = join(tempDir(t, 'briefs-'), 'briefs.json');
  writeFileSync(
    briefs,
    JSON.stringify([{ workItemId: 'wk_0000000099', title: 'secret title text', summary: 's', requiredCapabilities: [], acceptanceCriteria: [], deliverable: 'd' }]),
  );
  const steps = [
    ['agents', 'disable', agent.id],
    ['agents', 'enable', agent.id],
    ['agents', 'list'],
    ['agents', 'rotate-token', agent.id],
    ['agents', 'disable', 'ag_nope'],
    ['rooms', 'create', '--id', 'ops-room', '--name', 'Ops room'],
    ['registration', 'close'],
    ['registration', 'open'],
    ['writes', 'stop'],
    ['writes', 'resume'],
    ['opportunities', 'set', '--file', briefs],
    ['opportunities', 'clear'],
  ];
  const tokens = [op.json.token];
  for (const args of steps) {
    const res = await s.cli(...args);
    if (res.json?.token) tokens.push(res.json.token);
  }
  const lines = await waitForActions(s, 12);
  assert.deepEqual(
    lines.map((l) => [l.action, l.target, l.outcome, l.code]),
    [
      ['operator.create', op.json.id, 'ok', undefined],
      ['agents.disable', agent.id, 'ok', undefined],
      ['agents.enable', agent.id, 'ok', undefined],
      ['agents.rotate-token', agent.id, 'ok', undefined],
      ['agents.disable', 'ag_nope', 'refused', 'NOT_FOUND'],
      ['rooms.create', 'ops-room', 'ok', undefined],
      ['registration.close', 'registration', 'ok', undefined],
      ['registration.open', 'registration', 'ok', undefined],
      ['writes.stop', 'writes', 'ok', undefined],
      ['writes.resume', 'writes', 'ok', undefined],
      ['opportunities.set', 'opportunities', 'ok', undefined],
      ['opportunities.clear', 'opportunities', 'ok', undefined],
    ],
  );
  for (const l of lines) assert.equal(l.level, 'info');
  const log = s.stdout + s.stderr;
  for (const token of tokens) assert.ok(!log.includes(token), 'no token in the server log');
  assert.ok(!log.includes('secret title text'), 'no catalog content in the server log');
});

test('archive commands on a stopped folder write their admin_action line on the CLI stderr, refusals included', async (t) => {
  const s = await startServer(t);
  await s.register('someone');
  const target = join(tempDir(t), 'backup');
  const backup = await s.cli('backup', target);
  assert.equal(backup.code, 0, backup.stderr);
  assert.deepEqual(adminActions(backup.stderr).map((l) => [l.action, l.target, l.outcome]), [['backup', s.dataDir, 'ok']]);
  const running = await s.cli('restore', target, '--yes');
  assert.equal(running.code, 1);
  assert.deepEqual(adminActions(running.stderr).map((l) => [l.action, l.outcome, l.error]), [['restore', 'failed', 'StoreStateError']], 'a restore refused while the server runs');
  await s.stop();
  const restored = await s.cli('restore', target, '--yes');
  assert.equal(restored.code, 0, restored.stderr);
  assert.deepEqual(adminActions(restored.stderr).map((l) => [l.action, l.target, l.outcome]), [['restore', s.dataDir, 'ok']]);
  const verify = await s.cli('verify');
  assert.equal(verify.code, 0, verify.stderr);
  assert.deepEqual(adminActions(verify.stderr), [], 'verify only reads');
  const offline = await s.cli('writes', 'stop');
  assert.deepEqual(adminActions(offline.stderr).map((l) => [l.action, l.outcome]), [['writes.stop', 'ok']], 'server commands run offline log too');
});

test('the access log carries the client address only with FORUM_ACCESS_LOG_CLIENT_ADDRESS=on, as FORUM_TRUST_PROXY resolves it', async (t) => {
  const requestLines = (s) => s.stdout.split('\n').filter((l) => l.includes('"event":"request"')).map((l) => JSON.parse(l));
  const waitForRequests = async (s, n) => {
    for (let i = 0; i < 100 && requestLines(s).length < n; i++) await new Promise((r) => setTimeout(r, 20));
    return requestLines(s);
  };

  const plain = await startServer(t, { env: { FORUM_ACCESS_LOG: 'on' } });
  await plain.get('/api/status');
  const [line] = await waitForRequests(plain, 1);
  assert.equal(line.route, '/api/status');
  assert.equal('clientAddress' in line, false, 'off by default');

  const withAddress = await startServer(t, { env: { FORUM_ACCESS_LOG: 'on', FORUM_ACCESS_LOG_CLIENT_ADDRESS: 'on' } });
  await withAddress.get('/api/status', undefined, { 'x-forwarded-for': '203.0.113.7' });
  assert.equal((await waitForRequests(withAddress, 1))[0].clientAddress, '127.0.0.1', 'the TCP peer; X-Forwarded-For is not trusted by default');

  const behindProxy = await startServer(t, { env: { FORUM_ACCESS_LOG: 'on', FORUM_ACCESS_LOG_CLIENT_ADDRESS: 'on', FORUM_TRUST_PROXY: 'xff' } });
  await behindProxy.get('/api/status', undefined, { 'x-forwarded-for': '203.0.113.7' });
  assert.equal((await waitForRequests(behindProxy, 1))[0].clientAddress, '203.0.113.7', 'the proxy-reported address under FORUM_TRUST_PROXY=xff');
});
