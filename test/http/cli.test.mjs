import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, cli, tempDir, logText, ROOT } from '../helpers/server.mjs';

test('every operator command works through a running server', async (t) => {
  const s = await startServer(t);
  const agent = await s.register('worker');

  const op = await s.cli('operator', 'create', '--name', 'Ops');
  assert.equal(op.code, 0, op.stderr);
  assert.match(op.json.token, /^af_/);
  assert.equal((await s.get('/api/rooms', op.json.token)).status, 200, 'the operator token authenticates');

  const room = await s.cli('rooms', 'create', '--id', 'research', '--name', 'Research', '--description', 'Papers');
  assert.equal(room.code, 0, room.stderr);
  const rooms = await s.get('/api/rooms', agent.token);
  assert.deepEqual(rooms.body.map((r) => r.id), ['commons', 'research']);
  assert.equal((await s.cli('rooms', 'create', '--id', 'research', '--name', 'Again')).code, 1, 'duplicate room refused');

  const list = await s.cli('agents', 'list');
  assert.deepEqual(list.json.map((a) => a.id), [agent.id, op.json.id]);

  assert.equal((await s.cli('agents', 'disable', agent.id)).json.disabled, 1);
  assert.equal((await s.get('/api/rooms', agent.token)).status, 401, 'a disabled agent gets 401');
  assert.equal((await s.cli('agents', 'enable', agent.id)).json.disabled, 0);
  assert.equal((await s.get('/api/rooms', agent.token)).status, 200);
  assert.equal((await s.cli('agents', 'disable', 'ag_nope')).code, 1);

  await s.cli('registration', 'close');
  const closed = await s.post('/api/register', { name: 'x', provider: 'p', acceptsPublicArchive: true, operatorAuthorized: true });
  assert.equal(closed.status, 403);
  assert.equal((await s.get('/api/status')).body.registrationOpen, false);
  await s.cli('registration', 'open');
  assert.equal((await s.get('/api/status')).body.registrationOpen, true);

  await s.cli('writes', 'stop');
  assert.equal((await s.post('/api/topics', { title: 'x' }, agent.token)).status, 423);
  assert.equal((await s.get('/api/topics', agent.token)).status, 200, 'reads keep working');
  assert.equal((await s.get('/api/status')).body.writeStop, true);
  await s.cli('writes', 'resume');
  assert.equal((await s.post('/api/topics', { title: 'x' }, agent.token)).status, 201);

  const verify = await s.cli('verify');
  assert.equal(verify.code, 0, verify.stderr);
  assert.equal(verify.json.ok, true);
  assert.ok(verify.json.records >= 10);
});

test('operator settings persist across restarts', async (t) => {
  const s = await startServer(t);
  const agent = await s.register();
  await s.cli('writes', 'stop');
  await s.cli('registration', 'close');
  await s.cli('agents', 'disable', agent.id);
  await s.restart();
  const status = (await s.get('/api/status')).body;
  assert.equal(status.writeStop, true);
  assert.equal(status.registrationOpen, false);
  assert.equal((await s.get('/api/rooms', agent.token)).status, 401);
});

test('commands work on a stopped data folder and the server sees their effect', async (t) => {
  const s = await startServer(t);
  const agent = await s.register('offline worker');
  await s.stop();
  const op = await s.cli('operator', 'create', '--name', 'Offline ops');
  assert.equal(op.code, 0, op.stderr);
  const room = await s.cli('rooms', 'create', '--id', 'offline', '--name', 'Offline', '--description', '');
  assert.equal(room.code, 0, room.stderr);
  assert.equal(room.json.description, '', 'an empty optional description is accepted');
  assert.deepEqual((await s.cli('agents', 'list')).json.map((a) => a.id), [agent.id, op.json.id]);
  assert.equal((await s.cli('agents', 'disable', agent.id)).json.disabled, 1);
  assert.equal((await s.cli('registration', 'close')).json.registrationOpen, false);
  assert.equal((await s.cli('writes', 'stop')).json.writeStop, true);
  const verify = await s.cli('verify');
  assert.equal(verify.code, 0, verify.stderr);
  await s.start();
  const rooms = await s.get('/api/rooms', op.json.token);
  assert.deepEqual(rooms.body.map((r) => r.id), ['commons', 'offline']);
  assert.equal((await s.get('/api/rooms', agent.token)).status, 401, 'the offline disable took effect');
  const status = (await s.get('/api/status')).body;
  assert.equal(status.registrationOpen, false);
  assert.equal(status.writeStop, true);
});

test('a command on a folder that holds no archive is refused and creates nothing', async (t) => {
  const { existsSync } = await import('node:fs');
  const { join } = await import('node:path');
  const typo = join(tempDir(t), 'dtaa');
  const res = await cli(['--data-dir', typo, 'writes', 'stop']);
  assert.equal(res.code, 1);
  assert.match(logText(res.stderr), /holds no Agent Forum archive.*--data-dir/);
  assert.equal(existsSync(join(typo, 'meta.json')), false, 'no archive was created');
  assert.equal(existsSync(join(typo, 'log')), false);
});

test('a missing positional ID is a usage error naming it (exit 2)', async (t) => {
  const s = await startServer(t);
  const res = await s.cli('agents', 'disable');
  assert.equal(res.code, 2);
  assert.match(res.stderr, /agents disable takes one ID/);
  assert.match(res.stderr, /usage: node dist\/cli\.js \[--data-dir DIR\] agents disable ID/);
});

test('--help and -h print the usage on stdout and exit 0; --version prints the package version', async () => {
  for (const flag of ['--help', '-h']) {
    const res = await cli([flag]);
    assert.equal(res.code, 0, res.stderr);
    assert.equal(res.stderr, '');
    assert.match(res.stdout, /^usage: node dist\/cli\.js/);
    for (const command of ['operator create', 'rooms create', 'writes stop', 'verify', 'backup DIR', 'repair']) assert.ok(res.stdout.includes(command), command);
  }
  const version = await cli(['--version']);
  assert.equal(version.code, 0);
  assert.equal(version.stdout.trim(), JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version);
});

test('each command has its own help: COMMAND --help names its options and exits 0', async () => {
  const res = await cli(['rooms', 'create', '--help']);
  assert.equal(res.code, 0, res.stderr);
  assert.match(res.stdout, /rooms create --id ID --name NAME \[--description DESCRIPTION\]/);
  assert.doesNotMatch(res.stdout, /operator create/, 'only that command');
});

test('unknown flags, flags of another command, missing values and unknown commands are refused with exit 2', async (t) => {
  const dir = tempDir(t);
  const cases = [
    [['rooms', 'create', '--idd', 'x', '--name', 'y'], /Unknown option '--idd'/],
    [['agents', 'list', '--name', 'x'], /--name is not an option of agents list/],
    [['operator', 'create', '--name'], /--name/],
    [['operator', 'create'], /operator create needs --name/],
    [['writes', 'halt'], /unknown command "writes halt"/],
    [['verify', 'extra'], /unexpected argument "extra" for verify/],
  ];
  for (const [args, message] of cases) {
    const res = await cli(['--data-dir', dir, ...args]);
    assert.equal(res.code, 2, `${args.join(' ')}: ${res.stderr}`);
    assert.match(res.stderr, message, args.join(' '));
    assert.equal(res.stdout, '');
  }
});

test('--name=value works like --name value, and --data-dir=DIR like --data-dir DIR', async (t) => {
  const s = await startServer(t);
  const res = await cli([`--data-dir=${s.dataDir}`, 'operator', 'create', '--name=ops-eq']);
  assert.equal(res.code, 0, res.stderr);
  assert.equal(typeof res.json.token, 'string');
  const listed = await cli(['--data-dir', s.dataDir, 'agents', 'list']);
  assert.ok(listed.json.some((a) => a.name === 'ops-eq'), JSON.stringify(listed.json));
});

test('verify exits 1 and names the first bad record', async (t) => {
  const s = await startServer(t);
  await s.register();
  await s.stop();
  const { readdirSync, readFileSync, writeFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const seg = join(s.dataDir, 'log', readdirSync(join(s.dataDir, 'log')).find((f) => f.endsWith('.jsonl')));
  writeFileSync(seg, readFileSync(seg, 'utf8').replace('test-lab', 'TEST-LAB'));
  const res = await s.cli('verify');
  assert.equal(res.code, 1);
  assert.match(logText(res.stderr), /record 2 fails its hash check/);
  assert.match(logText(res.stderr), /\.jsonl at byte offset \d+/);
});

test('usage errors exit 2 with the usage text', async (t) => {
  const dir = tempDir(t);
  const res = await cli(['--data-dir', dir, 'frobnicate']);
  assert.equal(res.code, 2);
  assert.match(logText(res.stderr), /usage: node dist\/cli.js/);
});

test('a group\'s --help (agents, opportunities and every other group) exits 0 and lists its subcommands', async () => {
  const groups = {
    agents: ['agents list', 'agents disable ID', 'agents enable ID', 'agents rotate-token ID'],
    opportunities: ['opportunities set --file FILE', 'opportunities clear'],
    operator: ['operator create --name NAME'],
    rooms: ['rooms create --id ID'],
    registration: ['registration close', 'registration open'],
    writes: ['writes stop', 'writes resume'],
    clock: ['clock advance --ms MS'],
  };
  for (const [group, subcommands] of Object.entries(groups)) {
    for (const flag of ['--help', '-h']) {
      const res = await cli([group, flag]);
      assert.equal(res.code, 0, `${group} ${flag}: ${res.stderr}`);
      assert.equal(res.stderr, '');
      assert.match(res.stdout, new RegExp(`^usage: node dist/cli\\.js \\[--data-dir DIR\\] ${group} SUBCOMMAND`));
      for (const sub of subcommands) assert.ok(res.stdout.includes(sub), `${group} --help lists ${sub}`);
      assert.doesNotMatch(res.stdout, /backup DIR/, 'only the group');
    }
  }
});

test('a group without a subcommand is a usage error (exit 2) that lists the subcommands', async (t) => {
  const res = await cli(['--data-dir', tempDir(t), 'agents']);
  assert.equal(res.code, 2);
  assert.match(res.stderr, /agents needs a subcommand/);
  assert.match(res.stderr, /agents rotate-token ID/);
  assert.equal(res.stdout, '');
});

test('opportunities set --help documents the file format with an example that opportunities set accepts, warning on stderr about its unknown work item', async (t) => {
  const help = await cli(['opportunities', 'set', '--help']);
  assert.equal(help.code, 0, help.stderr);
  for (const field of ['workItemId', 'title', 'summary', 'requiredCapabilities', 'acceptanceCriteria', 'deliverable']) assert.ok(help.stdout.includes(`"${field}"`), field);
  assert.match(help.stdout, /at most 3 briefs/);
  const example = help.stdout.slice(help.stdout.indexOf('[{'), help.stdout.indexOf('}]') + 2);
  const file = join(tempDir(t, 'briefs-'), 'briefs.json');
  writeFileSync(file, example);
  const s = await startServer(t);
  const set = await s.cli('opportunities', 'set', '--file', file);
  assert.equal(set.code, 0, set.stderr);
  assert.equal(set.json.briefs.length, 1, 'the example is a valid file');
  assert.match(set.stderr, /agent-forum: warning: brief "Compare three retrieval papers" names work item "wk_0000000003", which does not exist \(yet\)/);
  assert.deepEqual(set.json.warnings.length, 1);
  assert.deepEqual((await s.get('/api/opportunities')).body.items, [], 'the brief is kept but omitted from the catalog');

  const agent = await s.register('creator');
  const work = await s.post('/api/work', { clientId: 'w1', title: 'real', description: 'd', acceptanceCriteria: 'a' }, agent.token);
  writeFileSync(file, example.replace('wk_0000000003', work.body.id));
  const known = await s.cli('opportunities', 'set', '--file', file);
  assert.equal(known.code, 0, known.stderr);
  assert.doesNotMatch(known.stderr, /warning/, 'no warning when every work item exists');
  assert.equal(known.json.warnings, undefined);
});
