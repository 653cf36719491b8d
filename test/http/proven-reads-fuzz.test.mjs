import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { startServer, tempDir } from '../helpers/server.mjs';
import { startInProcess } from '../helpers/inprocess.mjs';
import { copyArchive, writeWithMtimeKept } from '../helpers/tamper.mjs';

/** Fuzz runs (each starts a server process): bounded so the file takes well under a minute. */
const RUNS = 8;

/** Every read the property compares: whole lists and small pages of the change feed and the export. */
function readPaths(topicId, originId, head) {
  const paths = [`/api/messages?topicId=${topicId}&limit=100`, '/api/topics', '/api/changes?after=0&limit=100', `/api/exchange?topicId=${topicId}&after=0&limit=100`];
  for (let after = 3; after < head; after += 3) {
    paths.push(`/api/changes?after=${after}&limit=3&originId=${originId}`);
    paths.push(`/api/exchange?topicId=${topicId}&after=${after}&limit=3&originId=${originId}&through=${head}`);
  }
  return paths;
}

test('random bytes flipped in random segments (mtime kept) are never served: every read, feed page and export page is the original or 500, and the server starts', async (t) => {
  // The archive: messages and knowledge in small segments, closed cleanly, so the state snapshot
  // covers every record and a start replays none of them.
  const h = await startInProcess(t, { log: { segmentBytesMax: 1200 } });
  const a = await h.register('author');
  const topic = (await h.post('/api/topics', { title: 'fuzzed' }, a.token)).body;
  for (let i = 0; i < 24; i++) await h.post('/api/messages', { topicId: topic.id, content: `fuzz message ${i} ${'w'.repeat(i * 3)}`, clientId: `f${i}` }, a.token);
  await h.post('/api/knowledge', { title: 'A finding', content: 'knowledge text', category: 'opinion', topicId: topic.id }, a.token);
  const head = h.app.log.headSeq;
  const originId = h.app.log.originId;
  const paths = readPaths(topic.id, originId, head);
  const reference = new Map();
  for (const p of paths) {
    const res = await h.get(p, a.token);
    assert.equal(res.status, 200, p);
    reference.set(p, res.body);
  }
  await h.service.close();
  const base = h.dataDir;
  const segments = readdirSync(join(base, 'log')).filter((f) => f.endsWith('.jsonl')).sort();
  assert.ok(segments.length >= 3);
  // The snapshot's anchor is the last record (the last line of the last segment): a start reads
  // it back and proves it, which also reads the stored hash of the record before it; damage to
  // either makes the start replay the whole log, which refuses a damaged log (the log's own rule,
  // docs/internals/storage.md#proven-reads-issue-28). Flips stay off both lines, so every start must succeed. `limits` maps
  // a segment to the first byte flips may not reach (the anchor's line, or the line before it).
  const lineStart = (buf, end) => buf.lastIndexOf(10, end - 2) + 1;
  const lastBuf = readFileSync(join(base, 'log', segments.at(-1)));
  const anchorStart = lineStart(lastBuf, lastBuf.length);
  const limits = new Map();
  if (anchorStart > 0) limits.set(segments.at(-1), lineStart(lastBuf, anchorStart));
  else {
    limits.set(segments.at(-1), 0);
    const prevBuf = readFileSync(join(base, 'log', segments.at(-2)));
    limits.set(segments.at(-2), lineStart(prevBuf, prevBuf.length));
  }

  const flip = fc.record({ segment: fc.nat(), at: fc.nat(), xor: fc.integer({ min: 1, max: 255 }) });
  await fc.assert(
    fc.asyncProperty(fc.array(flip, { minLength: 1, maxLength: 4 }), async (flips) => {
      const dir = join(tempDir(t), 'data');
      copyArchive(base, dir);
      for (const f of flips) {
        const name = segments[f.segment % segments.length];
        const file = join(dir, 'log', name);
        const buf = readFileSync(file);
        const limit = limits.get(name) ?? buf.length;
        if (limit === 0) continue;
        buf[f.at % limit] ^= f.xor;
        writeWithMtimeKept(file, buf);
        assert.equal(statSync(file).size, buf.length);
      }
      const s = await startServer(t, { dataDir: dir });
      try {
        for (const p of paths) {
          const res = await s.get(p, a.token);
          if (res.status === 200) assert.deepEqual(res.body, reference.get(p), `${p} served something other than the original`);
          else {
            assert.equal(res.status, 500, `${p}: ${res.status}`);
            assert.equal(res.body.code, 'INTERNAL');
          }
        }
        const status = await s.get('/api/status');
        const damagedLines = s.stderr.split('\n').filter((l) => l.includes('"record_damaged"'));
        assert.equal(status.body.archiveDamaged, damagedLines.length > 0, 'status says damaged exactly when a read found damage');
        for (const l of damagedLines) assert.match(JSON.parse(l).file, /\.jsonl$/);
      } finally {
        await s.stop();
      }
    }),
    { numRuns: RUNS, endOnFailure: true },
  );
});
