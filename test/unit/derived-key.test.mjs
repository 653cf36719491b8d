import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DERIVED_KEY_FILE, loadDerivedKey } from '../../dist/store/derived-key.js';
import { tempDir } from '../helpers/server.mjs';

test('the derived-file key is made once (32 random bytes, 64 hex digits, mode 0600) and read back the same', (t) => {
  const dir = join(tempDir(t), 'index');
  const key = loadDerivedKey(dir);
  assert.equal(key.length, 32);
  const path = join(dir, DERIVED_KEY_FILE);
  assert.equal(readFileSync(path, 'latin1'), `${key.toString('hex')}\n`);
  assert.equal(statSync(path).mode & 0o777, 0o600);
  assert.deepEqual(readdirSync(dir), [DERIVED_KEY_FILE], 'no temporary file left');
  assert.deepEqual(loadDerivedKey(dir), key);
  assert.notDeepEqual(loadDerivedKey(join(tempDir(t), 'index')), key, 'another folder gets another key');
});

test('a key file that is not a key is replaced (and said so); one readable by others is made 0600 again', (t) => {
  const dir = join(tempDir(t), 'index');
  const first = loadDerivedKey(dir);
  const path = join(dir, DERIVED_KEY_FILE);
  chmodSync(path, 0o644);
  const notes = [];
  assert.deepEqual(loadDerivedKey(dir, (n) => notes.push(n)), first);
  assert.equal(statSync(path).mode & 0o777, 0o600);
  assert.match(notes[0], /readable by others/);
  writeFileSync(path, 'not a key\n');
  const second = loadDerivedKey(dir, (n) => notes.push(n));
  assert.notDeepEqual(second, first);
  assert.match(notes[1], /is not a key/);
  assert.equal(readFileSync(path, 'latin1'), `${second.toString('hex')}\n`);
});
