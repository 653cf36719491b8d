import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { cpSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, tempDir } from '../helpers/server.mjs';
import { jcs } from '../helpers/signing.mjs';

async function seed(s, n = 5) {
  const a = await s.register('feeder');
  const topic = (await s.post('/api/topics', { title: 'feed topic' }, a.token)).body;
  const messages = [];
  for (let i = 0; i < n; i++) messages.push((await s.post('/api/messages', { topicId: topic.id, content: `m${i}`, clientId: `c${i}` }, a.token)).body);
  return { a, topic, messages };
}

/** Follows a feed from after=0 in pages of `limit`, returning every event and the last cursor. */
async function catchUp(s, path, token, limit, start = { after: 0 }) {
  let cursor = start;
  const events = [];
  let pages = 0;
  for (;;) {
    const qs = `after=${cursor.after}&limit=${limit}${cursor.originId ? `&originId=${cursor.originId}` : ''}`;
    const res = await s.get(`${path}?${qs}`, token);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    events.push(...res.body.events);
    cursor = res.body.cursor;
    pages++;
    if (!res.body.hasMore) {
      assert.equal(res.body.pollAfterSeconds, 60);
      return { events, cursor, pages };
    }
    assert.equal(res.body.pollAfterSeconds, 1);
  }
}

test('the discussion feed delivers every visible record once, in order, through small pages', async (t) => {
  const s = await startServer(t);
  const { a, topic, messages } = await seed(s, 7);
  await s.register('hidden'); // agent records are hidden rows
  const { events, cursor, pages } = await catchUp(s, '/api/changes', a.token, 2);
  assert.ok(pages > 4);
  const seqs = events.map((e) => e.seq);
  assert.deepEqual(seqs, [...seqs].sort((x, y) => x - y), 'ascending');
  assert.equal(new Set(seqs).size, seqs.length, 'no duplicates');
  assert.deepEqual(events.map((e) => e.kind), ['room', 'topic', ...messages.map(() => 'message')]);
  assert.deepEqual(events[0].room.id, 'commons');
  assert.deepEqual(events[1].topic, topic);
  assert.deepEqual(events.slice(2).map((e) => e.message), messages);
  for (const e of events) assert.match(e.time, /Z$/);
  const status = await s.get('/api/status');
  assert.equal(cursor.originId, status.body.originId);
  const text = JSON.stringify(events);
  assert.doesNotMatch(text, /tokenHash|"hash"|"token"/, 'no secrets or hash-chain fields');
  assert.doesNotMatch(text, /feeder|hidden/, 'no agent records');
});

test('a page scanning only hidden rows is empty with hasMore true', async (t) => {
  const s = await startServer(t);
  const a = await s.register('x');
  for (let i = 0; i < 3; i++) await s.register(`hidden-${i}`);
  const first = await s.get('/api/changes?after=0&limit=1', a.token);
  assert.equal(first.body.events.length, 1, 'the commons room');
  const res = await s.get(`/api/changes?after=1&limit=2&originId=${first.body.cursor.originId}`, a.token);
  assert.equal(res.status, 200);
  assert.deepEqual(res.body.events, []);
  assert.equal(res.body.hasMore, true);
  assert.equal(res.body.cursor.after, 3);
  assert.equal(res.body.format, 'forum-changes-v1');
});

for (const path of ['/api/changes', '/api/work/changes']) {
  test(`bad cursors on ${path} get 400 or 409 as the spec says`, async (t) => {
    const s = await startServer(t);
    const { a } = await seed(s, 1);
    // One work item, so that after=1 is within the work feed too and only the origin is wrong.
    const work = await s.post('/api/work', { clientId: 'w1', title: 'feed work', description: 'd', acceptanceCriteria: 'c', tags: [] }, a.token);
    assert.equal(work.status, 201, JSON.stringify(work.body));
    const origin = (await s.get(`${path}?after=0`, a.token)).body.cursor.originId;
    assert.match(origin, /^[0-9a-f-]{36}$/);
    for (const after of ['01', '+1', '1e3', '-1', '1.0', 'x', '']) {
      const res = await s.get(`${path}?after=${encodeURIComponent(after)}&originId=${origin}`, a.token);
      assert.equal(res.status, 400, `after=${after}`);
      // The error states the rule, not just "must be integer".
      assert.match(res.body.error, /query parameter "after" must be a plain non-negative integer: digits only, with no leading zero, sign, exponent or decimal point/, `after=${after}`);
    }
    assert.equal((await s.get(`${path}?after=1&originId=${origin}`, a.token)).status, 200, 'the right cursor is accepted');
    const missing = await s.get(`${path}?after=1`, a.token);
    assert.equal(missing.status, 400);
    assert.match(missing.body.error, /originId/);
    assert.equal((await s.get(`${path}?after=1&originId=not-a-uuid`, a.token)).status, 400);
    const wrong = await s.get(`${path}?after=1&originId=00000000-0000-4000-8000-000000000000`, a.token);
    assert.equal(wrong.status, 409);
    const ahead = await s.get(`${path}?after=999999&originId=${origin}`, a.token);
    assert.equal(ahead.status, 409);
    assert.match(ahead.body.error, /ahead.*reread/);
    for (const limit of ['0', '101']) assert.equal((await s.get(`${path}?limit=${limit}`, a.token)).status, 400);
  });
}

test('the work feed refuses a discussion cursor and has its own origin and sequence', async (t) => {
  const s = await startServer(t);
  const { a } = await seed(s, 1);
  const d = await s.get('/api/changes?after=0', a.token);
  const w = await s.get('/api/work/changes?after=0', a.token);
  assert.equal(w.status, 200);
  assert.equal(w.body.format, 'forum-work-changes-v1');
  assert.notEqual(w.body.cursor.originId, d.body.cursor.originId);
  const mixed = await s.get(`/api/work/changes?after=0&originId=${d.body.cursor.originId}`, a.token);
  assert.equal(mixed.status, 409);
  const mixedBack = await s.get(`/api/changes?after=0&originId=${w.body.cursor.originId}`, a.token);
  assert.equal(mixedBack.status, 409);
  await s.restart();
  const again = await s.get('/api/work/changes?after=0', a.token);
  assert.equal(again.body.cursor.originId, w.body.cursor.originId, 'the work origin is stable across restarts');
});

test('cursors continue across a graceful restart and a kill -9 without gaps or duplicates', async (t) => {
  const s = await startServer(t);
  const { a, topic } = await seed(s, 3);
  const first = await catchUp(s, '/api/changes', a.token, 2);
  await s.restart();
  await s.post('/api/messages', { topicId: topic.id, content: 'after restart', clientId: 'r1' }, a.token);
  const second = await catchUp(s, '/api/changes', a.token, 2, first.cursor);
  assert.deepEqual(second.events.map((e) => e.message.content), ['after restart']);
  await s.kill9();
  await s.start();
  await s.post('/api/messages', { topicId: topic.id, content: 'after crash', clientId: 'r2' }, a.token);
  const third = await catchUp(s, '/api/changes', a.token, 2, second.cursor);
  assert.deepEqual(third.events.map((e) => e.message.content), ['after crash']);
  const all = await catchUp(s, '/api/changes', a.token, 100);
  assert.deepEqual(all.events.map((e) => e.seq), [...first.events, ...second.events, ...third.events].map((e) => e.seq));
});

test('a restored older copy of data turns a newer cursor into 409', async (t) => {
  const s = await startServer(t);
  const { a, topic } = await seed(s, 2);
  const backup = tempDir(t);
  const copyArchive = (from, to) => {
    cpSync(join(from, 'log'), join(to, 'log'), { recursive: true });
    cpSync(join(from, 'meta.json'), join(to, 'meta.json'));
  };
  copyArchive(s.dataDir, backup);
  for (let i = 0; i < 3; i++) await s.post('/api/messages', { topicId: topic.id, content: `late ${i}`, clientId: `late${i}` }, a.token);
  const { cursor } = await catchUp(s, '/api/changes', a.token, 100);
  await s.stop();
  rmSync(join(s.dataDir, 'log'), { recursive: true });
  copyArchive(backup, s.dataDir);
  await s.start();
  const res = await s.get(`/api/changes?after=${cursor.after}&originId=${cursor.originId}`, a.token);
  assert.equal(res.status, 409);
  assert.match(res.body.error, /reread/);
});

test('a topic export verifies with SHA-256 over canonicalJson and pins through', async (t) => {
  const s = await startServer(t);
  const { a, topic, messages } = await seed(s, 5);
  const other = (await s.post('/api/topics', { title: 'other' }, a.token)).body;
  await s.post('/api/messages', { topicId: other.id, content: 'elsewhere', clientId: 'o1' }, a.token);
  const first = await s.get(`/api/exchange?topicId=${topic.id}&limit=2`, a.token);
  assert.equal(first.status, 200);
  assert.equal(first.body.format, 'forum-exchange-v1');
  const { cursor } = first.body;
  assert.equal(cursor.topicId, topic.id);
  assert.equal(cursor.hasMore, true);
  const pinned = cursor.through;
  // Posts made after the first page never enter the pinned export.
  await s.post('/api/messages', { topicId: topic.id, content: 'too late', clientId: 'late' }, a.token);
  const records = [...first.body.records];
  let c = cursor;
  while (c.hasMore) {
    const res = await s.get(`/api/exchange?topicId=${c.topicId}&after=${c.after}&through=${c.through}&originId=${c.originId}&limit=2`, a.token);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.cursor.through, pinned);
    records.push(...res.body.records);
    c = res.body.cursor;
  }
  assert.deepEqual(records.map((r) => r.kind), ['topic', 'message', 'message', 'message', 'message', 'message']);
  for (const r of records) {
    assert.equal(createHash('sha256').update(Buffer.from(r.canonicalJson, 'utf8')).digest('hex'), r.sha256);
    const parsed = JSON.parse(r.canonicalJson);
    const keys = Object.keys(parsed);
    assert.deepEqual(keys, [...keys].sort(), 'sorted keys');
    assert.equal(r.canonicalJson, JSON.stringify(parsed), 'no insignificant whitespace');
  }
  assert.deepEqual(JSON.parse(records[0].canonicalJson), topic);
  assert.deepEqual(records.slice(1).map((r) => JSON.parse(r.canonicalJson)), messages);
});

test('exchange parameter rules: unknown topic 404, missing originId 400, after beyond through 400, wrong origin 409', async (t) => {
  const s = await startServer(t);
  const { a, topic } = await seed(s, 1);
  const origin = (await s.get('/api/status')).body.originId;
  assert.equal((await s.get('/api/exchange?topicId=tp_nope', a.token)).status, 404);
  assert.equal((await s.get('/api/exchange', a.token)).status, 400);
  assert.equal((await s.get(`/api/exchange?topicId=${topic.id}&after=1`, a.token)).status, 400);
  assert.equal((await s.get(`/api/exchange?topicId=${topic.id}&through=1`, a.token)).status, 400);
  const wrong = await s.get(`/api/exchange?topicId=${topic.id}&through=1&originId=00000000-0000-4000-8000-000000000000`, a.token);
  assert.equal(wrong.status, 409);
  assert.match(wrong.body.error, /does not belong to the topic export of this archive/);
  assert.equal((await s.get(`/api/exchange?topicId=${topic.id}&through=999999&originId=${origin}`, a.token)).status, 409);
  assert.equal((await s.get(`/api/exchange?topicId=bad!id`, a.token)).status, 400);
  const head = (await s.get(`/api/exchange?topicId=${topic.id}`, a.token)).body.cursor.through;
  const pinned = await s.get(`/api/exchange?topicId=${topic.id}&after=${head}&through=${head}&originId=${origin}`, a.token);
  assert.equal(pinned.status, 200, 'after equal to through is a caught-up cursor');
  const beyond = await s.get(`/api/exchange?topicId=${topic.id}&after=${head}&through=${head - 1}&originId=${origin}`, a.token);
  assert.equal(beyond.status, 400);
  assert.match(beyond.body.error, /after=\d+ is beyond through=\d+/);
});

test('message receipts: recorded with the normalized request and original response, unknown otherwise and for other agents', async (t) => {
  const s = await startServer(t);
  const { a, topic, messages } = await seed(s, 1);
  const b = await s.register('other');
  const rec = await s.get('/api/receipts?kind=message&clientId=c0', a.token);
  assert.equal(rec.status, 200);
  assert.equal(rec.body.outcome, 'recorded');
  assert.deepEqual(rec.body.request, { topicId: topic.id, content: 'm0', clientId: 'c0' });
  assert.deepEqual(rec.body.response, { status: 201, body: messages[0] });
  assert.equal(typeof rec.body.seq, 'number');
  assert.deepEqual((await s.get('/api/receipts?kind=message&clientId=c0', b.token)).body, { outcome: 'unknown', kind: 'message', clientId: 'c0' });
  assert.equal((await s.get('/api/receipts?kind=message&clientId=never', a.token)).body.outcome, 'unknown');
  await s.cli('writes', 'stop');
  assert.equal((await s.get('/api/receipts?kind=message&clientId=c0', a.token)).body.outcome, 'recorded', 'works during write stop');
  assert.equal((await s.get('/api/receipts?kind=nope&clientId=c0', a.token)).status, 400);
  assert.equal((await s.get('/api/receipts?kind=message', a.token)).status, 400);
});

test('knowledge revisions appear in the discussion feed with their sources and in their topic export', async (t) => {
  const s = await startServer(t);
  const { a, topic } = await seed(s, 1);
  const k1 = (await s.post('/api/knowledge', { title: 'K', content: 'v1', category: 'evidence', sources: ['https://example.org/a'], topicId: topic.id }, a.token)).body;
  const k2 = (await s.post('/api/knowledge', { title: 'K', content: 'v2', category: 'evidence', sources: ['https://example.org/b'], topicId: topic.id, previousId: k1.id, expectedRevision: 1 }, a.token)).body;
  await s.post('/api/knowledge', { title: 'elsewhere', content: 'x', category: 'opinion' }, a.token);
  const feed = (await s.get('/api/changes?after=0&limit=100', a.token)).body;
  const knowledge = feed.events.filter((e) => e.kind === 'knowledge').map((e) => e.knowledge);
  assert.deepEqual(knowledge.slice(0, 2), [k1, k2], 'every revision, with sources');
  const exported = (await s.get(`/api/exchange?topicId=${topic.id}`, a.token)).body.records;
  assert.deepEqual(exported.map((r) => r.kind), ['topic', 'message', 'knowledge', 'knowledge']);
  assert.deepEqual(exported.slice(2).map((r) => JSON.parse(r.canonicalJson).revision), [1, 2]);
});

test('the work feed delivers one complete snapshot per revision through small pages', async (t) => {
  const s = await startServer(t);
  const creator = await s.register('creator');
  const worker = await s.register('worker');
  const item = (await s.post('/api/work', { clientId: 'w1', title: 'Task', description: 'd', acceptanceCriteria: 'c' }, creator.token)).body;
  const claimed = (await s.post('/api/work/action', { action: 'claim', workItemId: item.id, expectedRevision: 1, clientId: 'a1' }, worker.token)).body;
  const released = (await s.post('/api/work/action', { action: 'release', workItemId: item.id, expectedRevision: 2, clientId: 'a2' }, worker.token)).body;
  const second = (await s.post('/api/work', { clientId: 'w2', title: 'Task 2', description: 'd', acceptanceCriteria: 'c' }, creator.token)).body;
  const { events } = await catchUp(s, '/api/work/changes', creator.token, 1);
  assert.deepEqual(events.map((e) => e.seq), [1, 2, 3, 4]);
  assert.ok(events.every((e) => e.kind === 'work_item'));
  assert.deepEqual(events.map((e) => e.workItem), [item, claimed, released, second]);
  const d = await catchUp(s, '/api/changes', creator.token, 100);
  assert.ok(!d.events.some((e) => e.kind === 'work_item'), 'no work events in the discussion feed');
  assert.deepEqual(d.events.filter((e) => e.kind === 'topic').map((e) => e.topic.id), [item.topicId, second.topicId], 'work discussion topics are discussion events');
});

test('work receipts return the normalized request and the snapshot as committed then', async (t) => {
  const s = await startServer(t);
  const creator = await s.register('creator');
  const worker = await s.register('worker');
  const created = await s.post('/api/work', { clientId: 'w1', title: ' Task ', description: 'd', acceptanceCriteria: 'c' }, creator.token);
  const claim = await s.post('/api/work/action', { action: 'claim', workItemId: created.body.id, expectedRevision: 1, clientId: 'a1' }, worker.token);
  await s.post('/api/work/action', { action: 'release', workItemId: created.body.id, expectedRevision: 2, clientId: 'a2' }, worker.token);
  const rc = (await s.get('/api/receipts?kind=work&clientId=w1', creator.token)).body;
  assert.equal(rc.outcome, 'recorded');
  assert.deepEqual(rc.response, { status: 201, body: created.body });
  assert.equal(rc.request.title, 'Task');
  const ra = (await s.get('/api/receipts?kind=work&clientId=a1', worker.token)).body;
  assert.deepEqual(ra.response, { status: 200, body: claim.body }, 'the claim snapshot, older than the current state');
  assert.equal(ra.request.action, 'claim');
  assert.equal((await s.get('/api/receipts?kind=work&clientId=a1', creator.token)).body.outcome, 'unknown', "another agent's clientId");
  assert.equal((await s.get('/api/receipts?kind=message&clientId=w1', creator.token)).body.outcome, 'unknown', 'kinds are separate namespaces');
});

/** Characters of `json` outside string literals. */
function outsideStrings(json) {
  let out = '';
  let inString = false;
  for (let i = 0; i < json.length; i++) {
    const c = json[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else out += c;
  }
  return out;
}

test('exchange records with multibyte and escape-heavy content hash their exact UTF-8 canonicalJson, are RFC 8785 canonical and byte-identical after restarts', async (t) => {
  const s = await startServer(t);
  const a = await s.register('Zoë 😀');
  const tricky = [
    'café é — 😀 日本語の文章 한국어 中文',
    'quotes "double" \'single\' “curly” and backslashes \\ \\\\ \\n \\u0041',
    'ü line one\nline two\r\nline three\ttabbed',
    'separators\u2028line\u2029paragraph\u0001\u001f\u007f end',
    '{"looks":"like json"} </script> 😀😀 \ud83d\udc4d',
  ];
  const topic = (await s.post('/api/topics', { title: 'Exporté 😀 "主题" \\ x' }, a.token)).body;
  const posted = [];
  for (const [i, content] of tricky.entries()) {
    const res = await s.post('/api/messages', { topicId: topic.id, content, clientId: `u${i}`, ...(i > 0 ? { replyTo: posted[0].id } : {}) }, a.token);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.content, content, 'stored byte-exact');
    posted.push(res.body);
  }
  const k = await s.post('/api/knowledge', { title: 'Wissen ü 😀', content: 'Σ "x" \\ y\n\u2028z 漢字', category: 'evidence', sources: ['https://example.org/%C3%A4?q=%221%22&r=1'], topicId: topic.id }, a.token);
  assert.equal(k.status, 201, JSON.stringify(k.body));

  const exportAll = async () => {
    const res = await s.get(`/api/exchange?topicId=${topic.id}&limit=100`, a.token);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.cursor.hasMore, false);
    return res.body.records;
  };
  const before = await exportAll();
  assert.deepEqual(before.map((r) => r.kind), ['topic', 'message', 'message', 'message', 'message', 'message', 'knowledge']);
  for (const r of before) {
    const bytes = Buffer.from(r.canonicalJson, 'utf8');
    assert.match(r.sha256, /^[0-9a-f]{64}$/);
    assert.equal(createHash('sha256').update(bytes).digest('hex'), r.sha256, `sha256 of seq ${r.seq} is over the UTF-8 bytes of canonicalJson`);
    assert.ok(bytes.length > r.canonicalJson.length, `seq ${r.seq} holds multibyte characters`);
    assert.equal(outsideStrings(r.canonicalJson).match(/\s/), null, `no whitespace outside strings in seq ${r.seq}`);
    assert.equal(r.canonicalJson, jcs(JSON.parse(r.canonicalJson)), `seq ${r.seq} is canonical: sorted keys, minimal escapes, no whitespace`);
  }
  assert.deepEqual(JSON.parse(before[0].canonicalJson), topic);
  assert.deepEqual(before.slice(1, 6).map((r) => JSON.parse(r.canonicalJson)), posted);
  assert.deepEqual(JSON.parse(before[6].canonicalJson), k.body);
  assert.ok(before[4].canonicalJson.includes('\u2028'), 'U+2028 is written as itself, not escaped (RFC 8785)');
  assert.ok(before[3].canonicalJson.includes('line one\\nline two\\r\\nline three\\ttabbed'), 'control characters use the short escapes');
  assert.ok(before[4].canonicalJson.includes('\\u0001\\u001f\u007f'), 'other controls are \\u00xx, DEL is literal');

  await s.restart();
  const afterRestart = await exportAll();
  assert.deepEqual(afterRestart.map((r) => [r.seq, r.canonicalJson, r.sha256]), before.map((r) => [r.seq, r.canonicalJson, r.sha256]), 'identical after a graceful restart');
  await s.kill9();
  await s.start();
  const afterCrash = await exportAll();
  assert.deepEqual(afterCrash.map((r) => [r.seq, r.canonicalJson, r.sha256]), before.map((r) => [r.seq, r.canonicalJson, r.sha256]), 'identical after a kill -9');
});

test('originId is matched case-insensitively on both feeds and the export, and only its canonical UUID form is accepted', async (t) => {
  const s = await startServer(t);
  const { a, topic } = await seed(s, 2);
  const cursors = {
    '/api/changes': (await s.get('/api/changes?after=0&limit=1', a.token)).body.cursor,
    '/api/work/changes': (await s.get('/api/work/changes?after=0', a.token)).body.cursor,
    [`/api/exchange?topicId=${topic.id}&`]: (await s.get(`/api/exchange?topicId=${topic.id}&limit=1`, a.token)).body.cursor,
  };
  for (const [path, cursor] of Object.entries(cursors)) {
    const url = (originId) => `${path}${path.endsWith('&') ? '' : '?'}after=${cursor.after}&originId=${encodeURIComponent(originId)}`;
    assert.equal((await s.get(url(cursor.originId), a.token)).status, 200, `${path} lower case`);
    const upper = await s.get(url(cursor.originId.toUpperCase()), a.token);
    assert.equal(upper.status, 200, `${path} upper case: ${JSON.stringify(upper.body)}`);
    for (const spelling of [`urn:uuid:${cursor.originId}`, `{${cursor.originId}}`, cursor.originId.replace(/-/g, ''), ` ${cursor.originId}`]) {
      const res = await s.get(url(spelling), a.token);
      assert.equal(res.status, 400, `${path} ${spelling}`);
      assert.match(res.body.error, /query parameter "originId" must be a UUID in canonical form/);
    }
  }
});
