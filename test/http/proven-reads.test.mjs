import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer } from '../helpers/server.mjs';
import { startInProcess } from '../helpers/inprocess.mjs';
import { writeWithMtimeKept } from '../helpers/tamper.mjs';

/**
 * An archive of 30 messages in small segments (so the early ones lie in SEALED segments), closed
 * cleanly so that a state snapshot covers every record (the next start replays none of them).
 */
async function sealedArchive(t) {
  const h = await startInProcess(t, { log: { segmentBytesMax: 1500 } });
  const a = await h.register('author');
  const topic = (await h.post('/api/topics', { title: 'proofs' }, a.token)).body;
  const posted = [];
  for (let i = 0; i < 30; i++) posted.push((await h.post('/api/messages', { topicId: topic.id, content: `message number ${i} says hello`, clientId: `c${i}` }, a.token)).body);
  await h.service.close();
  assert.ok(existsSync(join(h.dataDir, 'index', 'state.snapshot')), 'the clean stop wrote a state snapshot');
  const segs = readdirSync(join(h.dataDir, 'log')).filter((f) => f.endsWith('.jsonl')).sort();
  assert.ok(segs.length >= 3, `several segments (${segs.length})`);
  return { dataDir: h.dataDir, token: a.token, topic, posted };
}

/**
 * Edits the line of record `seq` in place with the server stopped, as silent disk corruption
 * would: same length, the segment's mtime restored. `edit(lineText)` returns the new line text.
 * Output: the segment file and the line's byte offset.
 */
function tamper(dataDir, seq, edit) {
  const logDir = join(dataDir, 'log');
  for (const name of readdirSync(logDir).filter((f) => f.endsWith('.jsonl'))) {
    const file = join(logDir, name);
    const buf = readFileSync(file);
    const needle = Buffer.from(`,"seq":${seq},"time"`);
    const at = buf.indexOf(needle);
    if (at === -1) continue;
    const start = buf.lastIndexOf(10, at) + 1;
    const end = buf.indexOf(10, at);
    const line = buf.toString('latin1', start, end);
    const changed = edit(line);
    assert.notEqual(changed, line);
    assert.equal(changed.length, line.length, 'the edit keeps the length');
    buf.write(changed, start, 'latin1');
    writeWithMtimeKept(file, buf);
    return { file, offset: start, first: Number(name.slice(0, 16)) };
  }
  throw new Error(`record ${seq} not found`);
}

/** Walks the change feed in pages of 3 until it ends or fails; output: the raw bodies and the failing status. */
async function walkChanges(s, token) {
  const bodies = [];
  let after = 0;
  let originId;
  for (;;) {
    const res = await s.get(`/api/changes?after=${after}&limit=3${originId ? `&originId=${originId}` : ''}`, token);
    if (res.status !== 200) return { bodies, status: res.status, body: res.body };
    bodies.push(JSON.stringify(res.body));
    if (!res.body.hasMore) return { bodies, status: 200 };
    ({ after, originId } = res.body.cursor);
  }
}

const seqOf = (id) => Number(id.slice(4));

const cases = [
  { name: 'a letter of the text changed', edit: (l) => l.replace('says hello', 'says HELLO'), altered: 'says HELLO' },
  { name: 'a JSON-breaking byte', edit: (l) => l.replace('says hello', 'says"hello'), altered: 'says"hello' },
  { name: 'a changed seq digit', edit: (l) => l.replace(/,"seq":(\d+),/, (m, d) => `,"seq":${d.slice(0, -1)}${(Number(d.at(-1)) + 1) % 10},`), altered: null },
  { name: "a changed topicId", edit: (l) => l.replace(/"topicId":"tp_(\d+)"/, (m, d) => `"topicId":"tp_${d.slice(0, -1)}${(Number(d.at(-1)) + 1) % 10}"`), altered: null },
];

for (const c of cases) {
  test(`a record edited in a sealed segment under a snapshot (${c.name}) is never served: 500 INTERNAL, feed and export stop before it, one error line, status damaged`, async (t) => {
    const { dataDir, topic, posted } = await sealedArchive(t);
    const victim = posted[2];
    const seq = seqOf(victim.id);
    const where = tamper(dataDir, seq, c.edit);
    assert.ok(where.first <= seq && readdirSync(join(dataDir, 'log')).filter((f) => f.endsWith('.jsonl')).sort().at(-1) !== where.file.slice(-22), 'the record lies in a sealed segment');

    const s = await startServer(t, { dataDir });
    assert.doesNotMatch(s.stderr, /not used/, 'the start resumed from the snapshot: it did not replay the damaged record');
    const reader = await s.register('reader');

    const list = await s.get(`/api/messages?topicId=${topic.id}&limit=100`, reader.token);
    assert.equal(list.status, 500);
    assert.equal(list.body.code, 'INTERNAL');
    if (c.altered) assert.ok(!JSON.stringify(list.body).includes(c.altered));

    const exported = await s.get(`/api/exchange?topicId=${topic.id}&after=0&limit=100`, reader.token);
    assert.equal(exported.status, 500, 'the export never hands the record out');
    assert.equal(exported.body.code, 'INTERNAL');
    const small = await s.get(`/api/exchange?topicId=${topic.id}&after=0&limit=2`, reader.token);
    assert.equal(small.status, 200, 'an export page before the record is served');
    assert.ok(small.body.records.every((r) => r.seq < seq));

    const walk = await walkChanges(s, reader.token);
    assert.equal(walk.status, 500, 'the change feed stops at the damaged record');
    assert.ok(walk.bodies.length > 0, 'the pages before it are served');
    for (const body of walk.bodies) {
      for (const e of JSON.parse(body).events) assert.ok(e.seq < seq, `event ${e.seq} precedes the damaged record ${seq}`);
      if (c.altered) assert.ok(!body.includes(c.altered));
    }

    const status = await s.get('/api/status');
    assert.equal(status.body.archiveDamaged, true);
    const lines = s.stderr.split('\n').filter((l) => l.includes('"record_damaged"'));
    assert.equal(lines.length, 1, 'exactly one error line however often the record is asked for');
    const line = JSON.parse(lines[0]);
    assert.equal(line.level, 'error');
    assert.equal(line.file, where.file);
    assert.equal(line.offset, where.offset);
    assert.equal(line.seq, seq);
    assert.match(line.msg, /verify/);

    await s.stop();
    const verify = await s.cli('verify');
    assert.equal(verify.code, 1, 'verify finds the damage');
    assert.match(verify.stderr, new RegExp(`${where.file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}.*${where.offset}`));
    assert.match(verify.stderr, /repair --truncate|restore/);
  });
}
