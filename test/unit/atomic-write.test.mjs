import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic, writeFileAtomicSync, TEMP_FILE_PATTERN } from '../../dist/store/fsutil.js';
import { App } from '../../dist/app.js';
import { loadConfig } from '../../dist/config.js';
import { listSegments } from '../../dist/store/segment.js';
import { tempDir } from '../helpers/server.mjs';

const temps = (dir) => readdirSync(dir).filter((n) => TEMP_FILE_PATTERN.test(n));

for (const [name, write] of [
  ['writeFileAtomic', (p, c) => writeFileAtomic(p, c)],
  ['writeFileAtomicSync', (p, c) => writeFileAtomicSync(p, c)],
]) {
  test(`${name} replaces a file with text, bytes or parts, readable only by its owner, leaving no temp file`, async (t) => {
    const dir = tempDir(t);
    const path = join(dir, 'f');
    writeFileSync(path, 'old content that is longer');
    await write(path, 'new ü');
    assert.equal(readFileSync(path, 'utf8'), 'new ü');
    await write(path, Buffer.from([1, 2, 3]));
    assert.deepEqual([...readFileSync(path)], [1, 2, 3]);
    await write(path, [Buffer.from('ab'), new Uint8Array(0), Buffer.from('cd')]);
    assert.equal(readFileSync(path, 'utf8'), 'abcd');
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.deepEqual(temps(dir), []);
  });

  test(`${name} that fails keeps the old file and removes its temp file`, async (t) => {
    const dir = tempDir(t);
    const path = join(dir, 'sub', 'f');
    mkdirSync(join(dir, 'sub'));
    writeFileSync(path, 'old');
    // A part that cannot be written (not bytes) fails the write after the temp file was created.
    await assert.rejects(async () => write(path, [Buffer.from('x'), 42]));
    assert.equal(readFileSync(path, 'utf8'), 'old');
    assert.deepEqual(temps(join(dir, 'sub')), []);
  });
}

test('an abandoned atomic write leaves the target as it was and no temp file', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'f');
  writeFileSync(path, 'old');
  assert.equal(await writeFileAtomic(path, 'new', { abandon: () => true }), false);
  assert.equal(readFileSync(path, 'utf8'), 'old');
  assert.deepEqual(temps(dir), []);
  assert.equal(await writeFileAtomic(path, 'new', { abandon: () => false }), true);
  assert.equal(readFileSync(path, 'utf8'), 'new');
});

test('onRenamed runs once the new content is in place', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'f');
  let seen;
  await writeFileAtomic(path, 'new', { onRenamed: () => (seen = readFileSync(path, 'utf8')) });
  assert.equal(seen, 'new');
});

test('a temp file left by any crash-safe writer is removed at the next start', async (t) => {
  const dir = tempDir(t);
  const config = { ...loadConfig({ FORUM_DATA_DIR: dir }), dataDir: dir };
  let app = await App.open(config);
  await app.close();
  const logDir = join(dir, 'log');
  const searchDir = join(dir, 'index', 'search');
  mkdirSync(searchDir, { recursive: true });
  // One per writer, named as writeFileAtomic names them, by a process id that no longer runs.
  const left = [
    join(dir, 'meta.json.tmp-424242'),
    join(dir, 'index', 'state.snapshot.tmp-424242'),
    join(dir, 'index', 'derived.key.tmp-424242'),
    join(searchDir, '0000000000000001-0000000000000003.ngram.tmp-424242'),
    join(logDir, `${listSegments(logDir)[0].name}.tmp-424242`),
  ];
  for (const p of left) writeFileSync(p, 'partial');
  app = await App.open(config);
  t.after(() => app.close());
  for (const p of left) assert.equal(existsSync(p), false, `${p} is removed`);
});
