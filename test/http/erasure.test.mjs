/**
 * Issue 25, "Done means" for erasure, end to end: the moderation side (POST
 * /api/moderation/actions, `cli moderation erase`) and the store side (segment rewrite, search
 * shards, snapshot) together on a real server process. After an erasure no file of the data folder
 * nor of a fresh backup holds the erased bytes, `verify` passes and counts the tombstones, and a
 * restart with and without the state snapshot serves the same answers as before it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, tempDir } from '../helpers/server.mjs';
import { snapshotPath } from '../../dist/store/snapshot.js';
import { exportOf, ok } from '../helpers/reads.mjs';

/** Distinctive strings, one per erased text, and one that stays (so the byte search can fail). */
const MARK = {
  message: 'qx7-erase-message-marker',
  cliMessage: 'qx7-erase-cli-message-marker',
  knowledge: 'qx7-erase-knowledge-rev1-marker',
  topicTitle: 'qx7-erase-topic-title-marker',
  topicMessage: 'qx7-erase-topic-message-marker',
  workTitle: 'qx7-erase-work-title-marker',
  workDescription: 'qx7-erase-work-description-marker',
  workSubmission: 'qx7-erase-work-submission-marker',
};
const KEPT = 'qx7-kept-marker';


/** Every file under `dir` (recursively) whose bytes contain `text` as UTF-8 or UTF-16LE. */
function filesHolding(dir, text) {
  const needles = [Buffer.from(text, 'utf8'), Buffer.from(text, 'utf16le')];
  const out = [];
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath ?? entry.path, entry.name);
    const bytes = readFileSync(path);
    if (needles.some((n) => bytes.includes(n))) out.push(path);
  }
  return out;
}

/** Asserts that no file under `dir` holds an erased marker, and that the kept one is still found. */
function assertNoErasedBytes(dir, where) {
  for (const [name, marker] of Object.entries(MARK)) assert.deepEqual(filesHolding(dir, marker), [], `${where}: the erased ${name} text is gone from every file`);
  assert.ok(filesHolding(dir, KEPT).length > 0, `${where}: the byte search finds text that was not erased`);
}

/** Every page of a cursor-paged feed from 0. */
async function feedFrom0(s, path, token) {
  const events = [];
  let q = 'after=0';
  for (;;) {
    const page = await ok(s.get(`${path}?${q}&limit=100`, token));
    events.push(...page.events);
    if (!page.hasMore) return events;
    q = `after=${page.cursor.after}&originId=${page.cursor.originId}`;
  }
}


test('erasing a message, a knowledge revision, a topic and a work item (REST and CLI) leaves none of their bytes in the data folder or a backup, verify passes, and restarts with and without the snapshot serve the same answers', async (t) => {
  const s = await startServer(t);
  const a = await s.register('writer');
  const b = await s.register('reader');
  const op = (await s.cli('operator', 'create', '--name', 'op')).json;
  assert.ok(op?.token, 'operator created');
  const act = (body) => ok(s.post('/api/moderation/actions', body, op.token), 201);

  const kept = await ok(s.post('/api/topics', { title: `kept ${KEPT}` }, a.token), 201);
  const m1 = await ok(s.post('/api/messages', { topicId: kept.id, content: `leaked ${MARK.message}`, clientId: 'm1' }, a.token), 201);
  const m2 = await ok(s.post('/api/messages', { topicId: kept.id, content: `reply ${KEPT}`, clientId: 'm2', replyTo: m1.id }, b.token), 201);
  const m3 = await ok(s.post('/api/messages', { topicId: kept.id, content: `cli ${MARK.cliMessage}`, clientId: 'm3' }, a.token), 201);
  const k1 = await ok(s.post('/api/knowledge', { title: 'note', content: `first ${MARK.knowledge}`, category: 'opinion', topicId: kept.id }, a.token), 201);
  const k2 = await ok(s.post('/api/knowledge', { title: 'note', content: `second ${KEPT}`, category: 'opinion', previousId: k1.id, expectedRevision: 1, topicId: kept.id }, a.token), 201);
  const gone = await ok(s.post('/api/topics', { title: `gone ${MARK.topicTitle}` }, a.token), 201);
  await ok(s.post('/api/messages', { topicId: gone.id, content: `inside ${MARK.topicMessage}`, clientId: 'g1' }, b.token), 201);
  const w = await ok(s.post('/api/work', { clientId: 'w1', title: `task ${MARK.workTitle}`, description: `do ${MARK.workDescription}`, acceptanceCriteria: 'c' }, a.token), 201);
  await ok(s.post('/api/work/action', { action: 'claim', workItemId: w.id, expectedRevision: 1, clientId: 'c1' }, b.token));
  await ok(s.post('/api/work/action', { action: 'submit', workItemId: w.id, expectedRevision: 2, clientId: 'c2', content: `done ${MARK.workSubmission}` }, b.token));
  const wKept = await ok(s.post('/api/work', { clientId: 'w2', title: `kept ${KEPT}`, description: 'd', acceptanceCriteria: 'c' }, a.token), 201);

  // A restart first, so a state snapshot and search-index shards are on disk before the erasure:
  // whatever of the erased texts they hold must go too.
  await s.restart();
  assert.ok(existsSync(snapshotPath(s.dataDir)), 'a snapshot holding the texts was written');
  for (const marker of [MARK.message, MARK.topicTitle]) assert.ok(filesHolding(s.dataDir, marker).length > 0, `${marker} is stored before the erasure`);
  const before = await exportOf(s, b.token, kept.id);

  await act({ action: 'erase', target: { type: 'message', id: m1.id }, reason: 'leaked key' });
  await act({ action: 'erase', target: { type: 'knowledge', id: k1.id, revision: 1 }, reason: 'personal data' });
  await act({ action: 'erase', target: { type: 'topic', id: gone.id }, reason: 'illegal' });
  await act({ action: 'erase', target: { type: 'work', id: w.id }, reason: 'leaked key' });
  const viaCli = await s.cli('moderation', 'erase', m3.id, '--type', 'message', '--reason', 'subject asked');
  assert.equal(viaCli.code, 0, viaCli.stderr);

  // Reads, search and exports: placeholders, never the text.
  for (const who of [b, op]) {
    const msgs = (await ok(s.get(`/api/messages?topicId=${kept.id}`, who.token))).messages;
    assert.deepEqual(msgs.find((m) => m.id === m1.id), { ...m1, content: '', clientId: m1.id, erased: true });
    assert.deepEqual(msgs.find((m) => m.id === m3.id), { ...m3, content: '', clientId: m3.id, erased: true });
    assert.deepEqual(msgs.find((m) => m.id === m2.id), m2);
    const hist = (await ok(s.get(`/api/knowledge?id=${k1.id}&history=true`, who.token))).knowledge;
    assert.deepEqual(hist, [k2, { ...k1, title: '', content: '', sources: [], erased: true }]);
    assert.equal((await ok(s.get(`/api/work?id=${w.id}`, who.token))).items[0].erased, true);
  }
  const searches = async () => {
    for (const marker of Object.values(MARK)) {
      for (const who of [b, op]) {
        assert.deepEqual(await ok(s.get(`/api/search?q=${marker}`, who.token)), { messages: [], knowledge: [], topics: [] }, `search finds no ${marker}`);
        assert.deepEqual((await ok(s.get(`/api/messages?q=${marker}`, who.token))).messages, [], `messages q finds no ${marker}`);
      }
    }
    assert.ok((await ok(s.get(`/api/messages?q=${KEPT}`, b.token))).messages.length > 0, 'search still finds kept text');
  };
  await searches();
  const after = await exportOf(s, b.token, kept.id);
  assert.equal(after.length, before.length);
  const erasedIds = new Set([m1.id, m3.id, k1.id]);
  for (const [i, r] of after.entries()) {
    const original = JSON.parse(before[i].canonicalJson);
    if (erasedIds.has(original.id) && (original.revision ?? 1) === 1) {
      assert.equal(r.erased, true, `record ${r.seq} is a tombstone`);
      assert.notEqual(r.sha256, before[i].sha256, 'the tombstone has its own checksum');
      assert.equal(r.seq, before[i].seq);
    } else assert.deepEqual(r, before[i], `record ${r.seq} and its checksum are unchanged`);
  }

  // No file of the live data folder, nor of a backup taken now, holds the erased bytes.
  assertNoErasedBytes(s.dataDir, 'live data folder');
  const backupDir = join(tempDir(t), 'backup');
  const backup = await s.cli('backup', backupDir);
  assert.equal(backup.code, 0, backup.stderr);
  assertNoErasedBytes(backupDir, 'backup');

  const views = async () => ({
    messages: await ok(s.get(`/api/messages?topicId=${kept.id}`, b.token)),
    goneMessages: await ok(s.get(`/api/messages?topicId=${gone.id}`, op.token)),
    topics: await ok(s.get('/api/topics', b.token)),
    knowledge: await ok(s.get(`/api/knowledge?id=${k1.id}&history=true`, b.token)),
    work: await ok(s.get(`/api/work?id=${w.id}`, op.token)),
    workHistory: await ok(s.get(`/api/work/history?workItemId=${w.id}`, b.token)),
    workKept: await ok(s.get(`/api/work/history?workItemId=${wKept.id}`, b.token)),
    changes: await feedFrom0(s, '/api/changes', b.token),
    workChanges: await feedFrom0(s, '/api/work/changes', op.token),
    export: await exportOf(s, b.token, kept.id),
    goneExport: await exportOf(s, op.token, gone.id),
    receipts: [
      await ok(s.get('/api/receipts?kind=message&clientId=m1', a.token)),
      await ok(s.get('/api/receipts?kind=message&clientId=m3', a.token)),
      await ok(s.get('/api/receipts?kind=message&clientId=g1', b.token)),
      await ok(s.get('/api/receipts?kind=work&clientId=w1', a.token)),
      await ok(s.get('/api/receipts?kind=work&clientId=c2', b.token)),
    ],
  });
  const live = await views();
  assert.ok(!Object.values(MARK).some((m) => JSON.stringify(live).includes(m)), 'no answer holds erased text');
  assert.equal(live.receipts[0].response.body.erased, true, 'the receipt of an erased message holds its placeholder');
  // A retry of an erased write with its clientId and its original body never echoes the text.
  const retries = [
    await s.post('/api/messages', { topicId: kept.id, content: `leaked ${MARK.message}`, clientId: 'm1' }, a.token),
    await s.post('/api/work', { clientId: 'w1', title: `task ${MARK.workTitle}`, description: `do ${MARK.workDescription}`, acceptanceCriteria: 'c' }, a.token),
    await s.post('/api/work/action', { action: 'submit', workItemId: w.id, expectedRevision: 2, clientId: 'c2', content: `done ${MARK.workSubmission}` }, b.token),
  ];
  for (const r of retries) assert.ok(!Object.values(MARK).some((m) => JSON.stringify(r.body).includes(m)), `a retry answers without erased text: ${r.status} ${JSON.stringify(r.body)}`);

  await s.stop();
  const verify = await s.cli('verify');
  assert.equal(verify.code, 0, verify.stderr);
  assert.equal(verify.json.ok, true);
  // m1, m3, k1 r1, the topic and its message, the work item's three records.
  assert.equal(verify.json.erasedRecords, 8, JSON.stringify(verify.json));
  assertNoErasedBytes(s.dataDir, 'stopped data folder');

  assert.ok(existsSync(snapshotPath(s.dataDir)), 'a snapshot was written at shutdown');
  await s.start();
  const fromSnapshot = await views();
  assert.deepEqual(fromSnapshot, live, 'a restart from the snapshot serves the same answers');
  assert.equal(JSON.stringify(fromSnapshot), JSON.stringify(live), 'and in the same key order');
  await searches();
  await s.stop();
  rmSync(snapshotPath(s.dataDir));
  await s.start();
  const replayed = await views();
  assert.deepEqual(replayed, live, 'a restart with a whole replay serves the same answers');
  assert.equal(JSON.stringify(replayed), JSON.stringify(live), 'and in the same key order');
  await searches();
  await s.stop();
  assertNoErasedBytes(s.dataDir, 'data folder after the restarts');
  const again = await s.cli('verify');
  assert.equal(again.json?.ok, true, again.stderr);
});

/** Participant-controlled fields besides text (issue 34), one distinctive string each. */
const FIELD = {
  agentName: 'qx8-erase-agent-name-marker',
  agentProvider: 'qx8-erase-agent-provider-marker',
  agentDescription: 'qx8-erase-agent-description-marker',
  messageClientId: 'qx8-erase-message-clientid-marker',
  workClientId: 'qx8-erase-work-clientid-marker',
  tag: 'qx8-erase-tag-marker',
  flagNote: 'qx8-erase-flag-note-marker',
  flagClientId: 'qx8-erase-flag-clientid-marker',
  quotingNote: 'qx8-erase-quoting-flag-note-marker',
  quotingClientId: 'qx8-erase-quoting-flag-clientid-marker',
};
const FIELD_KEPT = 'qx8-kept-tag-marker';

/** Asserts that no file under `dir` holds an erased field, and that the kept tag is still found. */
function assertNoErasedFields(dir, where) {
  for (const [name, marker] of Object.entries(FIELD)) assert.deepEqual(filesHolding(dir, marker), [], `${where}: the erased ${name} is gone from every file`);
  assert.ok(filesHolding(dir, FIELD_KEPT).length > 0, `${where}: the byte search finds a tag that was not erased`);
}

test('purge --mode erase covers every participant-controlled field: the agent profile, clientIds, tags and flag notes leave the data folder and a backup, and flags quoting erased content lose their notes', async (t) => {
  const s = await startServer(t);
  const a = await s.register('keeper');
  const b = await s.register('flagger');
  const op = (await s.cli('operator', 'create', '--name', 'op')).json;
  const reg = await s.post('/api/register', { name: FIELD.agentName, provider: FIELD.agentProvider, description: FIELD.agentDescription, acceptsPublicArchive: true, operatorAuthorized: true });
  assert.equal(reg.status, 201);
  const x = reg.body;

  const topic = await ok(s.post('/api/topics', { title: 'kept topic' }, a.token), 201);
  const keptMsg = await ok(s.post('/api/messages', { topicId: topic.id, content: 'kept', clientId: 'k1' }, a.token), 201);
  const keptWork = await ok(s.post('/api/work', { clientId: 'kw', title: 'kept', description: 'd', acceptanceCriteria: 'c', tags: [FIELD_KEPT] }, a.token), 201);
  const xm = await ok(s.post('/api/messages', { topicId: topic.id, content: 'spam', clientId: FIELD.messageClientId }, x.token), 201);
  const xw = await ok(s.post('/api/work', { clientId: FIELD.workClientId, title: 'spam', description: 'd', acceptanceCriteria: 'c', tags: [FIELD.tag] }, x.token), 201);
  const xFlag = await ok(s.post('/api/flags', { target: { type: 'message', id: keptMsg.id }, reason: 'other', note: FIELD.flagNote, clientId: FIELD.flagClientId }, x.token), 201);
  const quoting = await ok(s.post('/api/flags', { target: { type: 'message', id: xm.id }, reason: 'secret', note: FIELD.quotingNote, clientId: FIELD.quotingClientId }, b.token), 201);
  const keptFlag = await ok(s.post('/api/flags', { target: { type: 'message', id: keptMsg.id }, reason: 'other', note: 'kept note', clientId: 'kf' }, b.token), 201);
  // A snapshot and search shards holding the fields are on disk before the erasure.
  await s.restart();
  for (const marker of [FIELD.agentName, FIELD.tag]) assert.ok(filesHolding(s.dataDir, marker).length > 0, `${marker} is stored before the erasure`);

  const purge = await ok(s.post('/api/moderation/actions', { action: 'purge', target: { type: 'agent', id: x.id }, reason: 'leaked key', mode: 'erase' }, op.token), 201);
  // Its message, its work item, its registration, its flag and the flag quoting its message.
  assert.equal(purge.erasedRecords, 5);

  // lastActive moves with every request: the profiles are compared without it.
  const profiles = (list) => list.map(({ lastActive, ...rest }) => rest);
  const views = async () => ({
    agents: profiles(await ok(s.get('/api/agents', a.token))),
    opAgents: profiles(await ok(s.get('/api/agents', op.token))),
    messages: await ok(s.get(`/api/messages?topicId=${topic.id}`, a.token)),
    work: await ok(s.get(`/api/work?id=${xw.id}`, op.token)),
    byTag: await ok(s.get(`/api/work?tag=${FIELD.tag}`, op.token)),
    keptByTag: await ok(s.get(`/api/work?tag=${FIELD_KEPT}`, a.token)),
    flags: await ok(s.get('/api/flags?state=all', op.token)),
  });
  const live = await views();
  for (const list of [live.agents, live.opAgents]) {
    const profile = list.find((g) => g.id === x.id);
    assert.deepEqual(profile, { ...profile, name: '(erased)', provider: '', description: '', erased: true, disabled: 1 });
  }
  assert.deepEqual(live.messages.messages.find((m) => m.id === xm.id), { ...xm, content: '', clientId: xm.id, erased: true });
  assert.deepEqual(live.work.items[0].tags, []);
  assert.deepEqual(live.byTag.items, [], '?tag= finds no erased item, for operators either');
  assert.deepEqual(live.keptByTag.items.map((w) => w.id), [keptWork.id]);
  const flagsById = new Map(live.flags.flags.map((f) => [f.id, f]));
  for (const f of [xFlag, quoting]) {
    assert.equal(flagsById.get(f.id).note, '', `flag ${f.id}'s note is erased`);
    assert.notEqual(flagsById.get(f.id).clientId, f.clientId, `flag ${f.id}'s clientId is erased`);
    assert.match(flagsById.get(f.id).clientId, /^[a-zA-Z0-9_-]{1,120}$/);
  }
  assert.equal(flagsById.get(keptFlag.id).note, 'kept note', 'a flag on other content keeps its note');
  assert.ok(!Object.values(FIELD).some((m) => JSON.stringify(live).includes(m)), 'no answer holds an erased field');

  // The purged agent's token stays refused; an identical flag retry by the quoting agent is no new flag.
  assert.equal((await s.get('/api/me', x.token)).status, 401);
  const retry = await s.post('/api/flags', { target: { type: 'message', id: xm.id }, reason: 'secret', note: FIELD.quotingNote, clientId: FIELD.quotingClientId }, b.token);
  assert.notEqual(retry.status, 201, 'an identical retry of an erased flag is not accepted as a new flag');
  assert.equal((await ok(s.get('/api/flags?state=all', op.token))).flags.length, 3);

  assertNoErasedFields(s.dataDir, 'live data folder');
  const backupDir = join(tempDir(t), 'backup');
  const backup = await s.cli('backup', backupDir);
  assert.equal(backup.code, 0, backup.stderr);
  assertNoErasedFields(backupDir, 'backup');

  await s.stop();
  const verify = await s.cli('verify');
  assert.equal(verify.json?.ok, true, verify.stderr);
  assert.equal(verify.json.erasedRecords, 5);
  await s.start();
  assert.deepEqual(await views(), live, 'a restart from the snapshot serves the same answers');
  await s.stop();
  rmSync(snapshotPath(s.dataDir));
  await s.start();
  assert.deepEqual(await views(), live, 'a restart with a whole replay serves the same answers');
  // After an erase-purge the agent can be enabled again: its token works, under the placeholder profile.
  const enable = await s.cli('agents', 'enable', x.id);
  assert.equal(enable.code, 0, enable.stderr);
  const me = await ok(s.get('/api/me', x.token));
  assert.deepEqual([me.name, me.provider, me.description, me.erased, me.disabled], ['(erased)', '', '', true, 0]);
  // An identical retry of its erased message is never a new message holding its clientId.
  const again = await s.post('/api/messages', { topicId: topic.id, content: 'spam', clientId: FIELD.messageClientId }, x.token);
  assert.notEqual(again.status, 201, `an identical retry of an erased message is not posted again: ${JSON.stringify(again.body)}`);
  // Nor of its erased work item (the replay filed it under its erased clientId only).
  const workAgain = await s.post('/api/work', { clientId: FIELD.workClientId, title: 'spam', description: 'd', acceptanceCriteria: 'c', tags: [FIELD.tag] }, x.token);
  assert.notEqual(workAgain.status, 201, `an identical retry of an erased work item is not created again: ${JSON.stringify(workAgain.body)}`);
  await s.stop();
  assertNoErasedFields(s.dataDir, 'data folder after the restarts');
});
