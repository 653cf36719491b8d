/**
 * A real small disk (issue 21 cases 3 and 4): an 8 MiB tmpfs under the data folder, writers that
 * race to fill it, then a start on the full disk. Needs root to mount tmpfs; elsewhere the test
 * skips and says so (CI runs as root).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync, statfsSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, logText } from '../helpers/server.mjs';

const TMPFS_BYTES = 8 * 1024 * 1024;
const MIN_FREE = 4_000_000;

/** Mounts an 8 MiB tmpfs on a new temp folder; returns its path, or the reason it cannot. */
function mountTmpfs(t) {
  if (process.getuid?.() !== 0) return { skip: 'mounting a tmpfs needs root (CI runs this test as root)' };
  const dir = mkdtempSync(join(tmpdir(), 'forum-tmpfs-'));
  const mount = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${TMPFS_BYTES}`, 'tmpfs', dir], { encoding: 'utf8' });
  t.after(() => {
    // Lazy: a server still running after a failed assertion is killed by its own hook later.
    if (mount.status === 0) spawnSync('umount', ['-l', dir]);
    rmSync(dir, { recursive: true, force: true });
  });
  if (mount.status !== 0) return { skip: `cannot mount a tmpfs here: ${(mount.stderr || mount.error?.message || '').trim()}` };
  return { dir };
}

/** Fills the file system of `dir` to the last byte with one file; returns its path. */
function fillDisk(dir) {
  const path = join(dir, 'filler');
  const fd = openSync(path, 'w');
  const block = Buffer.alloc(64 * 1024);
  try {
    for (;;) writeSync(fd, block);
  } catch (err) {
    if (err.code !== 'ENOSPC') throw err;
  }
  // The last partial block.
  try {
    for (;;) writeSync(fd, Buffer.alloc(512));
  } catch (err) {
    if (err.code !== 'ENOSPC') throw err;
  }
  closeSync(fd);
  return path;
}

const freeBytes = (dir) => {
  const s = statfsSync(dir);
  return s.bavail * s.bsize;
};

test('on a small disk, racing writers get 507 before it is full, the server never dies of ENOSPC, and a start on the full disk serves reads', async (t) => {
  const mounted = mountTmpfs(t);
  if (mounted.skip) return t.skip(mounted.skip);
  const dataDir = join(mounted.dir, 'data');
  mkdirSync(dataDir);
  // Space the operator frees at the end (beside the filler), so free space ends above the floor.
  const ballast = join(mounted.dir, 'ballast');
  writeFileSync(ballast, Buffer.alloc(2 * 1024 * 1024));
  const env = { FORUM_MIN_FREE_BYTES: String(MIN_FREE) };
  const s = await startServer(t, { dataDir, env });
  const writers = await Promise.all([1, 2, 3, 4].map((i) => s.register(`writer-${i}`)));
  const topic = (await s.post('/api/topics', { title: 'filling the disk' }, writers[0].token)).body;

  // Four writers of 7 KB messages, each until it is refused.
  const acknowledged = [];
  const content = 'x'.repeat(7000);
  await Promise.all(
    writers.map(async (w, i) => {
      for (let n = 0; n < 2000; n++) {
        const res = await s.post('/api/messages', { topicId: topic.id, content, clientId: `w${i}-${n}` }, w.token);
        if (res.status === 507) {
          assert.equal(res.body.code ?? 'LOW_DISK_SPACE', 'LOW_DISK_SPACE');
          assert.match(res.body.error, /FORUM_MIN_FREE_BYTES/);
          return;
        }
        assert.equal(res.status, 201, JSON.stringify(res.body));
        acknowledged.push(res.body.id);
      }
      assert.fail('the disk never filled');
    }),
  );
  assert.ok(acknowledged.length > 100, `writes were accepted until the floor (${acknowledged.length})`);
  assert.equal(s.proc.exitCode, null, `the server is still running: ${s.stderr}`);
  assert.doesNotMatch(logText(s.stderr), /ENOSPC|fatal/);
  assert.ok(freeBytes(mounted.dir) >= MIN_FREE - 64 * 1024, `free space stayed near the floor (${freeBytes(mounted.dir)} bytes)`);

  // Stop, leave a temporary file like an interrupted metadata write, fill the disk to the end.
  assert.equal(await s.stop(), 0, s.stderr);
  writeFileSync(join(dataDir, 'meta.json.tmp-424242'), '');
  const filler = fillDisk(mounted.dir);
  assert.equal(freeBytes(mounted.dir), 0);

  // A start on the full disk: it starts, says why writes are refused, serves reads, refuses writes.
  await s.start();
  assert.match(logText(s.stderr), /bytes free, below FORUM_MIN_FREE_BYTES .*serving reads only/);
  assert.match(logText(s.stderr), /removed .*meta\.json\.tmp-424242/);
  assert.deepEqual(readdirSync(dataDir).filter((n) => /\.tmp-\d+$/.test(n)), [], 'no temporary file is left');
  assert.equal((await s.get('/api/status')).status, 200);
  for (const id of [acknowledged[0], acknowledged.at(-1)]) {
    const found = await s.get(`/api/messages?messageId=${id}`, writers[0].token);
    assert.equal(found.status, 200);
    assert.equal(found.body.messages.length, 1, `acknowledged message ${id} is served`);
  }
  const refused = await s.post('/api/messages', { topicId: topic.id, content: 'on a full disk', clientId: 'full-1' }, writers[1].token);
  assert.equal(refused.status, 507);

  // Space freed: writes resume without a restart.
  rmSync(filler);
  rmSync(ballast);
  const resumed = await s.post('/api/messages', { topicId: topic.id, content: 'after freeing space', clientId: 'freed-1' }, writers[1].token);
  assert.equal(resumed.status, 201, JSON.stringify(resumed.body));
  assert.equal(await s.stop(), 0, s.stderr);
});
