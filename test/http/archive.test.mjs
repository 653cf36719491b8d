import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli, startServer, tempDir, which, CLI_JS, SERVER_JS, logText } from '../helpers/server.mjs';
import { startInProcess } from '../helpers/inprocess.mjs';

function segment(dir) {
  return join(dir, 'log', readdirSync(join(dir, 'log')).filter((f) => f.endsWith('.jsonl')).sort()[0]);
}

/** Starts the server expecting it to refuse; returns its stderr. */
function refusedStart(dataDir) {
  const r = spawnSync(process.execPath, [SERVER_JS], { env: { ...process.env, PORT: '0', FORUM_DATA_DIR: dataDir }, encoding: 'utf8', timeout: 15000 });
  assert.equal(r.status, 1, `server should refuse to start: ${r.stdout}`);
  return logText(r.stderr);
}

async function seeded(t) {
  const s = await startServer(t);
  const a = await s.register('archivist');
  const topic = (await s.post('/api/topics', { title: 'archive' }, a.token)).body;
  const posted = [];
  for (let i = 0; i < 5; i++) posted.push((await s.post('/api/messages', { topicId: topic.id, content: `m${i}`, clientId: `c${i}` }, a.token)).body);
  return { s, a, topic, posted };
}

test('backup while the server runs under writes gives a verified copy holding every earlier acknowledged write', async (t) => {
  const { s, a, topic, posted } = await seeded(t);
  let stop = false;
  const writer = (async () => {
    for (let i = 0; !stop; i++) await s.post('/api/messages', { topicId: topic.id, content: `during ${i}`, clientId: `d${i}` }, a.token);
  })();
  const target = join(tempDir(t), 'copy');
  const res = await s.cli('backup', target);
  stop = true;
  await writer;
  assert.equal(res.code, 0, res.stderr);
  assert.ok(res.json.bytes > 0);
  const verify = await s.cli('--data-dir', target, 'verify');
  assert.equal(verify.code, 0, verify.stderr);
  assert.equal(verify.json.backup.lastSeq, res.json.lastSeq, 'verify reports the folder as a backup');
  // A backup shares the live originId: serving it as it is would reuse seqs, so the server
  // refuses and says to restore it, which gives it a new lineage.
  assert.match(refusedStart(target), /is a copy made by "backup".*restore/s);
  const installed = tempDir(t);
  // An empty folder holds nothing to replace: restore asks no confirmation there.
  const restored = await cli(['--data-dir', installed, 'restore', target]);
  assert.equal(restored.code, 0, restored.stderr);
  const copy = await startServer(t, { dataDir: installed });
  for (const m of posted) {
    const found = await copy.get(`/api/messages?messageId=${m.id}`, a.token);
    assert.deepEqual(found.body.messages, [m], `${m.id} in the backup`);
  }
  const live = (await s.get('/api/status')).body.originId;
  assert.notEqual((await copy.get('/api/status')).body.originId, live, 'a restored backup has its own lineage');
  assert.equal(restored.json.restoredFrom, live);
});

test('verify passes on a folder the server is writing to, counting its write in progress as such', async (t) => {
  const { s, a, topic } = await seeded(t);
  let stop = false;
  const writer = (async () => {
    for (let i = 0; !stop; i++) await s.post('/api/messages', { topicId: topic.id, content: `busy ${i}`, clientId: `b${i}` }, a.token);
  })();
  const runs = [];
  for (let i = 0; i < 5; i++) runs.push(await s.cli('verify'));
  stop = true;
  await writer;
  for (const r of runs) assert.equal(r.code, 0, r.stderr);
});

test('a plain cp -r of the data folder while the server runs starts at once as its own server', async (t) => {
  const { s, a, posted } = await seeded(t);
  const copy = join(tempDir(t), 'copy');
  const cp = spawnSync('cp', ['-r', s.dataDir, copy], { encoding: 'utf8' });
  assert.equal(cp.status, 0, cp.stderr);
  const started = await startServer(t, { dataDir: copy });
  for (const m of posted) assert.deepEqual((await started.get(`/api/messages?messageId=${m.id}`, a.token)).body.messages, [m]);
  assert.equal((await s.get('/api/status')).status, 200, 'the original keeps running');
});

test('restore installs a backup with a new lineage, keeps the replaced log, and old cursors get 409', async (t) => {
  const { s, a, topic } = await seeded(t);
  const target = join(tempDir(t), 'copy');
  assert.equal((await s.cli('backup', target)).code, 0);
  await s.post('/api/messages', { topicId: topic.id, content: 'after backup', clientId: 'late' }, a.token);
  const feed = (await s.get('/api/changes?after=0&limit=100', a.token)).body;
  const refused = await s.cli('restore', target);
  assert.equal(refused.code, 1, 'restore refuses while the server runs');
  assert.match(logText(refused.stderr), /stop the server/);
  await s.stop();
  const res = await s.cli('restore', target, '--yes');
  assert.equal(res.code, 0, res.stderr);
  assert.notEqual(res.json.originId, feed.cursor.originId);
  assert.equal(res.json.restoredFrom, feed.cursor.originId);
  assert.ok(existsSync(res.json.replacedLog), 'the replaced log is kept');
  await s.start();
  const stale = await s.get(`/api/changes?after=${feed.cursor.after}&originId=${feed.cursor.originId}`, a.token);
  assert.equal(stale.status, 409);
  const msgs = (await s.get(`/api/messages?topicId=${topic.id}&limit=100`, a.token)).body.messages;
  assert.equal(msgs.length, 5, 'the archive is the backup, without the later post');
});

/** Every file of a folder with its bytes, to show that a refused command changed nothing. */
function folderState(dir) {
  const out = {};
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out[join(e.parentPath ?? e.path, e.name)] = readFileSync(join(e.parentPath ?? e.path, e.name)).toString('base64');
  }
  return out;
}

test('restore asks for --yes before replacing live data: without it and without a terminal it exits 2, says what it would replace and how to confirm, and changes nothing', async (t) => {
  const { s, a, topic } = await seeded(t);
  const target = join(tempDir(t), 'copy');
  assert.equal((await s.cli('backup', target)).code, 0);
  await s.post('/api/messages', { topicId: topic.id, content: 'after backup', clientId: 'late' }, a.token);
  const originId = (await s.get('/api/status')).body.originId;
  await s.stop();
  const before = folderState(s.dataDir);
  const res = await s.cli('restore', target);
  assert.equal(res.code, 2, res.stderr);
  assert.equal(res.stdout, '');
  const said = logText(res.stderr);
  assert.match(said, new RegExp(`restore would replace the archive in ${s.dataDir} \\(originId ${originId}, records up to seq \\d+`));
  assert.ok(said.includes(`with the backup in ${target}`), said);
  assert.match(said, /Nothing was changed\. To confirm, run it again with --yes: node dist\/cli\.js --data-dir .* restore .* --yes/);
  assert.deepEqual(folderState(s.dataDir), before, 'the data folder is untouched');
  await s.start();
  const msgs = (await s.get(`/api/messages?topicId=${topic.id}&limit=100`, a.token)).body.messages;
  assert.equal(msgs.length, 6, 'the live archive, with the post made after the backup, still serves');
});

test('restore at a terminal proceeds on "yes" typed there and changes nothing on any other answer', { skip: which('script') ? false : 'util-linux script(1) is not installed: no pseudo-terminal to type into' }, async (t) => {
  const { s } = await seeded(t);
  const target = join(tempDir(t), 'copy');
  assert.equal((await s.cli('backup', target)).code, 0);
  await s.stop();
  // script(1) runs the CLI on a pseudo-terminal (stdin and stderr are TTYs) and types our input.
  const atTerminal = (answer) =>
    spawnSync('script', ['-qec', `${process.execPath} ${CLI_JS} --data-dir ${s.dataDir} restore ${target}`, '/dev/null'], { input: `${answer}\n`, encoding: 'utf8', timeout: 30000 });
  const before = folderState(s.dataDir);
  const declined = atTerminal('no');
  assert.equal(declined.status, 2, declined.stdout);
  assert.match(declined.stdout, /restore would replace the archive in .*Type "yes" to replace it: /s);
  assert.match(declined.stdout, /restore not confirmed; nothing was changed/);
  assert.deepEqual(folderState(s.dataDir), before);
  const accepted = atTerminal('yes');
  assert.equal(accepted.status, 0, accepted.stdout);
  assert.match(accepted.stdout, /"restoredFrom"/);
  assert.ok(readdirSync(s.dataDir).some((f) => f.startsWith('log.replaced-')), 'the replaced log is kept');
});

test('an interrupted restore refuses to start and says to rerun restore', async (t) => {
  const { s } = await seeded(t);
  await s.stop();
  writeFileSync(join(s.dataDir, 'RESTORE-IN-PROGRESS'), 'x');
  assert.match(refusedStart(s.dataDir), /restore .* was interrupted/);
});

test('a flipped byte in the middle refuses startup naming file and offset; repair --truncate quarantines the rest under a new lineage', async (t) => {
  const { s, a, topic } = await seeded(t);
  const before = (await s.get('/api/changes?after=0&limit=100', a.token)).body;
  await s.stop();
  const seg = segment(s.dataDir);
  const lines = readFileSync(seg, 'utf8').split('\n');
  const badIndex = lines.findIndex((l) => l.includes('"content":"m2"'));
  const offset = Buffer.byteLength(lines.slice(0, badIndex).join('\n') + '\n');
  lines[badIndex] = lines[badIndex].replace('"m2"', '"M2"');
  writeFileSync(seg, lines.join('\n'));
  const stderr = refusedStart(s.dataDir);
  assert.match(stderr, new RegExp(`${seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} at byte offset ${offset}`));
  assert.match(stderr, /repair --truncate/);
  const repaired = await s.cli('repair', '--truncate');
  assert.equal(repaired.code, 0, repaired.stderr);
  assert.equal(repaired.json.keptRecords, badIndex);
  assert.ok(readFileSync(repaired.json.quarantined[0], 'utf8').includes('"M2"'), 'the damaged tail is kept in quarantine');
  await s.start();
  const msgs = (await s.get(`/api/messages?topicId=${topic.id}`, a.token)).body.messages;
  assert.deepEqual(msgs.map((m) => m.content), ['m1', 'm0']);
  // Record positions after the cut will be reused, so the repaired log is a new lineage: a
  // cursor from before the repair is refused (409) instead of silently skipping them.
  assert.equal(repaired.json.repairedFrom, before.cursor.originId);
  const status = (await s.get('/api/status')).body;
  assert.equal(status.originId, repaired.json.originId);
  assert.notEqual(status.originId, before.cursor.originId);
  const stale = await s.get(`/api/changes?after=${badIndex - 1}&originId=${before.cursor.originId}`, a.token);
  assert.equal(stale.status, 409);
});

test('a log that lost its last segment refuses to start; repair --truncate keeps the rest under a new lineage', async (t) => {
  const h = await startInProcess(t, { log: { segmentBytesMax: 1500 } });
  const a = await h.register('segmented');
  const topic = (await h.post('/api/topics', { title: 'segments' }, a.token)).body;
  const acked = [];
  for (let i = 0; i < 30; i++) acked.push((await h.post('/api/messages', { topicId: topic.id, content: `message ${i} `.repeat(8), clientId: `s${i}` }, a.token)).body);
  const before = (await h.get('/api/changes?after=0&limit=100', a.token)).body;
  await h.service.close();
  const segs = readdirSync(join(h.dataDir, 'log')).filter((f) => f.endsWith('.jsonl')).sort();
  assert.ok(segs.length >= 3, `several segments (${segs.length})`);
  const lostFrom = Number(segs.at(-1).slice(0, 16));
  unlinkSync(join(h.dataDir, 'log', segs.at(-1)));
  const stderr = refusedStart(h.dataDir);
  assert.match(stderr, new RegExp(`ends at record ${lostFrom - 1}, but .*meta.json records that this log reached record ${before.cursor.after}`));
  assert.match(stderr, /repair --truncate/);
  const repaired = await cli(['--data-dir', h.dataDir, 'repair', '--truncate']);
  assert.equal(repaired.code, 0, repaired.stderr);
  assert.equal(repaired.json.keptRecords, lostFrom - 1);
  assert.deepEqual(repaired.json.quarantined, [], 'nothing left to quarantine');
  const s = await startServer(t, { dataDir: h.dataDir });
  assert.notEqual((await s.get('/api/status')).body.originId, before.cursor.originId);
  const old = await s.get(`/api/changes?after=${lostFrom - 1}&originId=${before.cursor.originId}`, a.token);
  assert.equal(old.status, 409, 'a cursor of the old lineage is refused, even where seqs still exist');
  const kept = acked.filter((m) => Number(m.id.slice(4)) < lostFrom);
  for (const m of kept) assert.deepEqual((await s.get(`/api/messages?messageId=${m.id}`, a.token)).body.messages, [m]);
});

test('restore installs a backup into a data folder that does not exist yet', async (t) => {
  const { s, a, posted } = await seeded(t);
  const target = join(tempDir(t), 'copy');
  assert.equal((await s.cli('backup', target)).code, 0);
  const fresh = join(tempDir(t), 'new-machine', 'data');
  const res = await cli(['--data-dir', fresh, 'restore', target]);
  assert.equal(res.code, 0, res.stderr);
  const started = await startServer(t, { dataDir: fresh });
  assert.deepEqual((await started.get(`/api/messages?messageId=${posted[0].id}`, a.token)).body.messages, [posted[0]]);
});

test('garbage appended after complete records is refused, not silently dropped', async (t) => {
  const { s } = await seeded(t);
  await s.stop();
  appendFileSync(segment(s.dataDir), 'this is not a record\n');
  assert.match(refusedStart(s.dataDir), /not framed/);
});

test('garbage appended without a newline is refused at startup naming file and offset, and repair --truncate keeps every record', async (t) => {
  const { s, a, topic, posted } = await seeded(t);
  await s.stop();
  const seg = segment(s.dataDir);
  const offset = readFileSync(seg).length;
  appendFileSync(seg, 'this is not a record');
  const stderr = refusedStart(s.dataDir);
  assert.match(stderr, new RegExp(`${seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} at byte offset ${offset}: .*neither start like a record line`));
  assert.equal(readFileSync(seg).length, offset + 20, 'startup changed nothing');
  const repaired = await s.cli('repair', '--truncate');
  assert.equal(repaired.code, 0, repaired.stderr);
  assert.equal(readFileSync(repaired.json.quarantined[0], 'utf8'), 'this is not a record');
  await s.start();
  const msgs = (await s.get(`/api/messages?topicId=${topic.id}`, a.token)).body.messages;
  assert.equal(msgs.length, posted.length, 'no record was lost');
});

test('restore of a damaged backup refuses, names the backup file and offset, and advises about the backup, not data/', async (t) => {
  const { s } = await seeded(t);
  const target = join(tempDir(t), 'copy');
  assert.equal((await s.cli('backup', target)).code, 0);
  await s.stop();
  const seg = segment(target);
  const bytes = readFileSync(seg);
  const offset = bytes.indexOf('"content":"m2"');
  bytes[offset + 12] = 0x4d; // m2 → M2: the record's hash no longer matches
  writeFileSync(seg, bytes);
  const lineStart = bytes.lastIndexOf(10, offset) + 1;
  const res = await s.cli('restore', target, '--yes');
  assert.equal(res.code, 1);
  assert.match(logText(res.stderr), new RegExp(`log damaged in ${seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} at byte offset ${lineStart}`));
  assert.match(logText(res.stderr), /The damaged folder is the backup .*restore another backup/s);
  assert.doesNotMatch(logText(res.stderr), /Restore data\/ from a backup|repair --truncate/, 'no advice meant for a damaged data folder');
  assert.equal((await s.start()).url !== null, true, 'the data folder was not touched');
});

test('a partial final line is truncated at startup and the server serves everything before it', async (t) => {
  const { s, a, topic, posted } = await seeded(t);
  await s.stop();
  appendFileSync(segment(s.dataDir), '{"payload":{"content":"half');
  await s.start();
  assert.match(logText(s.stderr), /dropped an incomplete final line/);
  const msgs = (await s.get(`/api/messages?topicId=${topic.id}`, a.token)).body.messages;
  assert.equal(msgs.length, posted.length);
  assert.equal((await s.cli('verify')).code, 0);
});

test('a deleted metadata file refuses startup; repair --new-lineage starts a new lineage', async (t) => {
  const { s, a } = await seeded(t);
  const before = (await s.get('/api/status')).body.originId;
  await s.stop();
  unlinkSync(join(s.dataDir, 'meta.json'));
  assert.match(refusedStart(s.dataDir), /meta.json is missing/);
  const res = await s.cli('repair', '--new-lineage');
  assert.equal(res.code, 0, res.stderr);
  await s.start();
  const status = (await s.get('/api/status')).body;
  assert.notEqual(status.originId, before);
  assert.equal((await s.get('/api/agents', a.token)).status, 200, 'records are kept');
});
