/**
 * The state snapshot file (src/store/snapshot.ts): its MAC covers every header field and every
 * body byte, and a header field of the wrong shape is refused even under a valid MAC.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readSnapshot, snapshotPath, writeSnapshot, SNAPSHOT_FORMAT } from '../../dist/store/snapshot.js';
import { tempDir } from '../helpers/server.mjs';

const KEY = Buffer.alloc(32, 3);
const HEADER = {
  originId: '7b0c5f3e-8d3a-4d3e-9d61-2b3f2a1c0e11',
  seq: 12,
  hash: 'ab'.repeat(32),
  lastTime: '2026-01-01T00:00:00.000Z',
  created: '2026-01-01T00:00:01.000Z',
  segments: [{ name: '0000000000000001.jsonl', sizeBytes: 4000, mtimeMs: 1767225600000.5 }],
};
const BODY = { objects: Buffer.from('objects'), arrays: [Uint32Array.of(1, 2, 3), Uint32Array.of(7)] };

function written(t) {
  const dir = tempDir(t);
  mkdirSync(join(dir, 'index'), { recursive: true });
  writeSnapshot(dir, HEADER, BODY, KEY);
  return dir;
}

/** The file as header object, header text before the MAC, MAC and body. */
function parts(dir) {
  const buf = readFileSync(snapshotPath(dir));
  const nl = buf.indexOf(10);
  const line = buf.toString('utf8', 0, nl);
  return { header: JSON.parse(line), body: buf.subarray(nl + 1) };
}

function rewrite(dir, header, body, key) {
  const { mac, ...fields } = header;
  const text = JSON.stringify(fields).slice(0, -1);
  const newMac = key ? createHmac('sha256', key).update(text).update(body).digest('hex') : mac;
  writeFileSync(snapshotPath(dir), Buffer.concat([Buffer.from(`${text},"mac":"${newMac}"}\n`), body]));
}

test('a snapshot reads back as written, under its key only', (t) => {
  const dir = written(t);
  const snap = readSnapshot(dir, KEY);
  assert.equal(snap.header.format, SNAPSHOT_FORMAT);
  assert.equal(snap.header.seq, 12);
  assert.deepEqual(snap.header.segments, HEADER.segments);
  assert.deepEqual(snap.body.objects, BODY.objects);
  assert.deepEqual(snap.body.arrays, BODY.arrays);
  assert.match(readSnapshot(dir, Buffer.alloc(32, 4)).reason, /fails its authentication/);
});

for (const [field, value] of [
  ['originId', 'another'],
  ['seq', 9],
  ['hash', 'cd'.repeat(32)],
  ['lastTime', '2100-01-01T00:00:00.000Z'],
  ['created', 'x'],
  ['segments', []],
  ['byteOrder', 'BE'],
  ['partBytes', null],
]) {
  test(`a header whose ${field} is changed without the key fails its authentication`, (t) => {
    const dir = written(t);
    const { header, body } = parts(dir);
    rewrite(dir, { ...header, [field]: value }, body);
    const got = readSnapshot(dir, KEY);
    assert.ok('reason' in got, JSON.stringify(got.header));
    // byteOrder and partBytes are checked before the MAC; every other field by it.
    assert.match(got.reason, field === 'byteOrder' ? /byte order/ : field === 'partBytes' ? /part sizes/ : /fails its authentication/);
  });
}

test('a body byte changed, or the MAC removed, fails its authentication', (t) => {
  const dir = written(t);
  const { header, body } = parts(dir);
  const bad = Buffer.from(body);
  bad[2] ^= 1;
  rewrite(dir, header, bad);
  assert.match(readSnapshot(dir, KEY).reason, /fails its authentication/);
  const { mac, ...noMac } = header;
  writeFileSync(snapshotPath(dir), Buffer.concat([Buffer.from(`${JSON.stringify(noMac)}\n`), body]));
  assert.match(readSnapshot(dir, KEY).reason, /no MAC/);
  assert.ok(mac);
});

for (const [what, edit, reason] of [
  ['a garbage lastTime', (h) => ({ ...h, lastTime: 'soon' }), /lastTime is not an ISO 8601/],
  ['a lastTime that is not in canonical form', (h) => ({ ...h, lastTime: '2026-01-01T00:00:00Z' }), /lastTime is not an ISO 8601/],
  ['no segments', (h) => { const { segments, ...rest } = h; return rest; }, /segments are missing/],
  ['a segment stamp without a size', (h) => ({ ...h, segments: [{ name: '0000000000000001.jsonl', mtimeMs: 1 }] }), /malformed stamps/],
  ['segments out of order', (h) => ({ ...h, segments: [{ ...h.segments[0], name: '0000000000000009.jsonl' }, h.segments[0]] }), /in order/],
  ['a seq of 0', (h) => ({ ...h, seq: 0 }), /seq is not a positive integer/],
  ['a short hash', (h) => ({ ...h, hash: 'ab' }), /hash is not 64 hex/],
]) {
  test(`a header with ${what} is refused even under a valid MAC`, (t) => {
    const dir = written(t);
    const { header, body } = parts(dir);
    rewrite(dir, edit(header), body, KEY);
    assert.match(readSnapshot(dir, KEY).reason, reason);
  });
}
