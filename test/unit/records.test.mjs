import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RecordCache, splitRecordText } from '../../dist/store/records.js';
import { App } from '../../dist/app.js';
import { loadConfig } from '../../dist/config.js';
import { decideMessage, decideTopic, messageByClientId, messageJsonOf } from '../../dist/domain/forum/forum.js';
import { tempDir } from '../helpers/server.mjs';

test('the record cache keeps the most recently used records within its byte bound', () => {
  const cache = new RecordCache(2000);
  const rec = (n) => ({ payloadJson: 'x'.repeat(400) + n, time: '2026-01-01T00:00:00.000Z' });
  for (let seq = 1; seq <= 10; seq++) cache.set(seq, rec(seq));
  assert.ok(cache.bytes <= 2000, `holds ${cache.bytes} bytes`);
  assert.equal(cache.get(1), undefined, 'the oldest records were evicted');
  assert.deepEqual(cache.get(10), rec(10));
  const huge = { payloadJson: 'y'.repeat(5000), time: 't' };
  cache.set(11, huge);
  assert.equal(cache.get(11), undefined, 'a record larger than the whole cache is not kept');
});

test('a record read from the cache counts as recently used and outlives records not read since', () => {
  const rec = (n) => ({ payloadJson: 'x'.repeat(400) + n, time: '2026-01-01T00:00:00.000Z' });
  const cache = new RecordCache(4 * (2 * (401 + 24) + 64) + 10);
  for (let seq = 1; seq <= 4; seq++) cache.set(seq, rec(seq));
  assert.deepEqual(cache.get(1), rec(1));
  cache.set(5, rec(5));
  assert.equal(cache.get(2), undefined, 'the least recently used record went first');
  assert.deepEqual(cache.get(1), rec(1), 'the record read after its insertion stayed');
  assert.deepEqual(cache.stats, { hits: 2, misses: 1 });
});

test('a cache of 0 bytes keeps nothing', () => {
  const cache = new RecordCache(0);
  cache.set(1, { payloadJson: '{}', time: 't' });
  assert.equal(cache.get(1), undefined);
  assert.equal(cache.bytes, 0);
});

test('a record text read back must be the record the index located', () => {
  const text = '{"payload":{"a":",\\"seq\\":9"},"seq":12,"time":"2026-01-01T00:00:00.000Z","type":"x.y"';
  assert.deepEqual(splitRecordText(text, 12), { payloadJson: '{"a":",\\"seq\\":9"}', time: '2026-01-01T00:00:00.000Z', type: 'x.y' });
  assert.throws(() => splitRecordText(text, 13), /not where the index located it/);
  assert.throws(() => splitRecordText('garbage', 1), /not where the index located it/);
});

test('messages read back from the segments after a restart are byte-identical to the ones answered at append time', async (t) => {
  const dir = tempDir(t);
  const config = { ...loadConfig({ FORUM_DATA_DIR: dir, FORUM_RECORD_CACHE_MB: '0' }), dataDir: dir };
  let app = await App.open(config, { log: { segmentBytesMax: 4096 } });
  const created = () => app.nowIso();
  const topic = decideTopic(app.state.forum, { title: 't', roomId: 'commons' }, { authorId: 'ag_1', position: app.nextPosition(), created: created() });
  app.commit('topic.create', topic);
  const answered = [];
  const contents = ['plain', 'Ünïcödé — 日本 😀', 'quote " backslash \\ newline \n tab \t', 'x'.repeat(3000)];
  for (let i = 0; i < 40; i++) {
    const d = decideMessage(app.state.forum, { topicId: topic.id, content: contents[i % contents.length] + i, clientId: `c${i}` }, { authorId: `ag_${i % 3}`, position: app.nextPosition(), created: created() });
    app.commit('message.create', d.message);
    answered.push(messageJsonOf(app.state.forum, app.state.forum.rows.seq.length - 1));
    if (i % 7 === 0) await app.log.sync();
  }
  await app.log.sync();
  await app.close();
  app = await App.open(config, { log: { segmentBytesMax: 4096 } });
  t.after(() => app.close());
  const rows = app.state.forum.rows.seq.length;
  assert.equal(rows, 40);
  for (let row = 0; row < rows; row++) assert.equal(messageJsonOf(app.state.forum, row), answered[row], `row ${row}`);
  assert.equal(messageByClientId(app.state.forum, 'ag_1', 'c37'), 37);
  assert.equal(messageByClientId(app.state.forum, 'ag_2', 'c37'), undefined, 'clientIds are per author');
});

test('the vouched map travels with the packed locations, so a tombstone read after a snapshot load is proven', async (t) => {
  const { Log } = await import('../../dist/store/log.js');
  const { SegmentRecords } = await import('../../dist/store/records.js');
  const { join } = await import('node:path');
  const dir = tempDir(t);
  const log = await Log.open(dir, () => undefined);
  for (let i = 1; i <= 3; i++) log.append('message.create', { content: `text ${i}` }, Date.UTC(2026, 0, 1, 0, 0, i));
  await log.sync();
  const target = { seq: 2, hash: log.records.storedHashOf(2) };
  log.append('moderation.erase', { targets: [target] }, Date.UTC(2026, 0, 2));
  await log.sync();
  await log.erase([target]);
  const packed = log.records.locations.pack();
  await log.close();
  assert.deepEqual(packed.vouched, [[2, target.hash]]);
  const loaded = new SegmentRecords(join(dir, 'log'), 0);
  loaded.locations.restore(packed);
  t.after(() => loaded.close());
  assert.deepEqual(loaded.read(2), { payloadJson: 'null', time: '2026-01-01T00:00:02.000Z', type: 'message.create', erased: true });
  assert.equal(loaded.read(3).payloadJson, '{"content":"text 3"}', 'the record after the tombstone is proven with its stored hash');
  const unvouched = new SegmentRecords(join(dir, 'log'), 0);
  unvouched.locations.restore({ ...packed, vouched: [] });
  t.after(() => unvouched.close());
  assert.throws(() => unvouched.read(2), (err) => err.name === 'RecordDamagedError' && err.seq === 2 && /no erase record vouches/.test(err.reason));
});
