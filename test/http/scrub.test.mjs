/**
 * Issue 28 "Background scrub": sealed segments are re-verified in a worker thread at
 * FORUM_SCRUB_MB_PER_MINUTE; damage is reported once (an `error` log line naming file, offset and
 * seq), counted in metrics and shown by /api/status. In-process (small segments through the log
 * options), spoken to over HTTP.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { startInProcess } from '../helpers/inprocess.mjs';
import { tempDir } from '../helpers/server.mjs';
import { setLogSink } from '../../dist/logger.js';

/** 4 KiB segments: a few dozen messages fill several. A fast pace: a pass over them is immediate. */
const OPTS = { log: { segmentBytesMax: 4096 }, env: { FORUM_SCRUB_MB_PER_MINUTE: '600', FORUM_SCRUB_START_DELAY_S: '0', FORUM_METRICS_PORT: '0' } };

async function metric(h, name) {
  const text = await (await request(h.service.metricsUrl)).body.text();
  const m = new RegExp(`^${name} (\\d+)`, 'm').exec(text);
  return m ? Number(m[1]) : null;
}

async function until(what, check, ms = 10000) {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

test('the scrub re-verifies sealed segments and finds a flipped byte within its pace: error line (file, offset, seq), metrics and /api/status say so', async (t) => {
  const lines = [];
  const restore = setLogSink((level, line) => lines.push(JSON.parse(line)));
  t.after(restore);
  const dataDir = tempDir(t);
  let h = await startInProcess(t, { ...OPTS, dataDir });
  const a = await h.register('author');
  const topic = (await h.post('/api/topics', { title: 'scrub' }, a.token)).body;
  for (let i = 0; i < 40; i++) {
    const content = i === 7 ? 'the scrub target record' : `filler message ${i} ${'x'.repeat(200)}`;
    assert.equal((await h.post('/api/messages', { topicId: topic.id, content, clientId: `c${i}` }, a.token)).status, 201);
  }
  await h.service.close();
  const segments = readdirSync(join(dataDir, 'log')).filter((f) => f.endsWith('.jsonl')).sort();
  assert.ok(segments.length >= 3, `several segments: ${segments}`);

  // A clean archive: a pass over every sealed segment, no damage.
  h = await startInProcess(t, { ...OPTS, dataDir });
  await until('a clean pass', async () => (await metric(h, 'forum_scrub_passes_total')) >= 1);
  assert.equal(await metric(h, 'forum_archive_damage_found_total'), 0);
  assert.equal((await h.get('/api/status')).body.archiveDamaged, false);
  const sealedBytes = segments.slice(0, -1).reduce((n, f) => n + statSync(join(dataDir, 'log', f)).size, 0);
  assert.ok((await metric(h, 'forum_scrub_bytes_total')) >= sealedBytes - 4096, 'the pass read the sealed segments');
  assert.ok(lines.some((l) => l.event === 'scrub' && /pass 1 verified \d+ sealed segment\(s\).*no damage/.test(l.msg)));
  await h.service.close();

  // Silent bit rot in a sealed segment: one byte of the target record, mtime kept, so the start
  // (from its state snapshot) does not replay that segment and only the scrub can find it.
  const file = segments.find((f) => readFileSync(join(dataDir, 'log', f), 'utf8').includes('the scrub target record'));
  assert.ok(segments.indexOf(file) < segments.length - 2, 'the target lies in a sealed segment with sealed segments after it');
  const path = join(dataDir, 'log', file);
  const bytes = readFileSync(path);
  const at = bytes.indexOf('scrub target');
  const lineStart = bytes.lastIndexOf(10, at) + 1;
  const seq = JSON.parse(bytes.toString('utf8', lineStart, bytes.indexOf(10, at))).seq;
  bytes[at] ^= 0x01;
  // To the nanosecond (fs.utimesSync takes seconds as a double, which loses the last digits).
  const { mtimeNs } = statSync(path, { bigint: true });
  writeFileSync(path, bytes);
  execFileSync('touch', ['-m', '-d', `@${mtimeNs / 1_000_000_000n}.${String(mtimeNs % 1_000_000_000n).padStart(9, '0')}`, path]);

  lines.length = 0;
  h = await startInProcess(t, { ...OPTS, dataDir });
  assert.ok(!lines.some((l) => l.event === 'snapshot_not_used'), 'the start used its snapshot');
  // A proven read (the search index's catch-up) may find the record first; wait for the scrub's own finding.
  await until('the scrub to find the damage', async () => h.app.integrity.findings.length > 0);
  assert.equal((await h.get('/api/status')).body.archiveDamaged, true);
  const errors = lines.filter((l) => l.level === 'error' && l.event === 'archive_damaged');
  assert.equal(errors.length, 1, 'one error line');
  assert.equal(errors[0].file, path);
  assert.equal(errors[0].offset, lineStart);
  assert.equal(errors[0].seq, seq);
  assert.equal(errors[0].source, 'scrub');
  assert.match(errors[0].msg, new RegExp(`${file} at byte ${lineStart} \\(record ${seq}\\)`));
  assert.equal(await metric(h, 'forum_archive_damage_found_total'), 1);
  assert.deepEqual(h.app.integrity.findings.map((f) => [f.file, f.offset, f.seq]), [[path, lineStart, seq]]);
  // The scrub went on past the damaged segment: the later sealed segments were verified too.
  await until('the pass to end', async () => (await metric(h, 'forum_scrub_passes_total')) >= 1);
  const pass = lines.find((l) => l.event === 'scrub' && l.segments !== undefined);
  assert.match(pass.msg, /the archive is damaged \(1 finding/);
  assert.equal(pass.segments, segments.length - 2, 'every sealed segment but the damaged one verified: the scrub went on after it');
});

test('the scrub keeps to its pace: a pass over N bytes at P MB per minute takes at least N / P', async (t) => {
  const lines = [];
  const restore = setLogSink((level, line) => lines.push(JSON.parse(line)));
  t.after(restore);
  const dataDir = tempDir(t);
  let h = await startInProcess(t, { ...OPTS, dataDir, env: { ...OPTS.env, FORUM_SCRUB_MB_PER_MINUTE: '0' } });
  const a = await h.register('author');
  const topic = (await h.post('/api/topics', { title: 'pace' }, a.token)).body;
  for (let i = 0; i < 40; i++) assert.equal((await h.post('/api/messages', { topicId: topic.id, content: `m ${i} ${'y'.repeat(300)}`, clientId: `c${i}` }, a.token)).status, 201);
  await h.service.close();
  // 1 MB per minute: 16.7 bytes per ms.
  h = await startInProcess(t, { ...OPTS, dataDir, env: { ...OPTS.env, FORUM_SCRUB_MB_PER_MINUTE: '1' } });
  await until('a pass', async () => lines.some((l) => l.event === 'scrub' && l.bytes !== undefined), 20000);
  const pass = lines.find((l) => l.event === 'scrub' && l.bytes !== undefined);
  assert.ok(pass.bytes > 8000, `the pass read ${pass.bytes} bytes`);
  const paceMs = pass.bytes / (1e6 / 60000);
  assert.ok(pass.ms >= paceMs * 0.8, `${pass.bytes} bytes took ${pass.ms} ms, the pace allows no less than ${Math.round(paceMs)} ms`);
});

test('FORUM_SCRUB_MB_PER_MINUTE=0 turns the scrub off', async (t) => {
  const h = await startInProcess(t, { ...OPTS, env: { ...OPTS.env, FORUM_SCRUB_MB_PER_MINUTE: '0' } });
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(await metric(h, 'forum_scrub_passes_total'), 0);
  assert.equal((await h.get('/api/status')).body.archiveDamaged, false);
});
