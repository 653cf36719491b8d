/**
 * Record positions (issue 50, src/domain/positions.ts): a log whose writer changed gives its
 * records positions past a gap, so ids and feed positions a lost branch gave out are never given
 * again. The map itself, then ids through the whole state (apply, lookups, the state snapshot).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Positions, nextPositionBase } from '../../dist/domain/positions.js';
import { POSITION_JUMP } from '../../dist/constants.js';
import { App } from '../../dist/app.js';
import { loadConfig } from '../../dist/config.js';
import { decideMessage, decideTopic, messageById, messageIdOf, topicIdAt } from '../../dist/domain/forum/forum.js';
import { existsSync, rmSync } from 'node:fs';
import { tempDir } from '../helpers/server.mjs';
import { snapshotPath } from '../helpers/snapshot.mjs';

test('a log that never changed writers has position = seq everywhere', () => {
  const p = new Positions();
  for (const seq of [0, 1, 2, 99, 2 ** 32 + 5]) {
    assert.equal(p.positionOf(seq), seq);
    assert.deepEqual(p.cursorSeq(seq), { seq, lostAfter: null });
  }
  assert.equal(p.seqAt(7), 7);
  assert.equal(p.seqAt(0), 0, 'no record has position 0');
  assert.equal(p.rebased, false);
});

test('after a change of writer, records go on past the gap and the gap maps to no record', () => {
  const p = new Positions();
  // Records 1..10 at positions 1..10; the epoch record at seq 11 gets position 2e9.
  p.rebase(11, nextPositionBase(10));
  const base = 2 * POSITION_JUMP;
  assert.equal(p.positionOf(10), 10);
  assert.equal(p.positionOf(11), base);
  assert.equal(p.positionOf(12), base + 1, 'a seq past the head goes on from the newest offset');
  assert.equal(p.seqAt(base + 1), 12);
  assert.equal(p.seqAt(10), 10);
  // A lost branch's records were at positions 11, 12, …: no record has them now.
  assert.equal(p.seqAt(11), 0);
  assert.equal(p.seqAt(base - 1), 0);
  // A cursor from the lost branch lands after record 10, and says where the history parts.
  assert.deepEqual(p.cursorSeq(15), { seq: 10, lostAfter: 10 });
  assert.deepEqual(p.cursorSeq(10), { seq: 10, lostAfter: null }, 'a cursor at the fork point lost nothing');
  assert.deepEqual(p.cursorSeq(base), { seq: 11, lostAfter: null });
  assert.deepEqual(p.cursorSeq(base + 50), { seq: 61, lostAfter: null }, 'a cursor past the head maps past the head (the caller says ahead or not yet)');
});

test('two changes of writer keep every stretch apart, and the map survives pack and unpack', () => {
  const p = new Positions();
  p.rebase(5, nextPositionBase(4));
  const second = nextPositionBase(p.positionOf(8));
  p.rebase(9, second);
  assert.ok(second - p.positionOf(8) >= POSITION_JUMP, 'each gap is at least POSITION_JUMP');
  const q = new Positions();
  q.unpack(p.pack());
  for (let seq = 1; seq <= 12; seq++) assert.equal(q.positionOf(seq), p.positionOf(seq));
  for (const pos of [3, 4, 5, 2 * POSITION_JUMP, 2 * POSITION_JUMP + 3, 2 * POSITION_JUMP + 4, second, second + 1]) {
    assert.deepEqual(q.cursorSeq(pos), p.cursorSeq(pos), `cursor ${pos}`);
  }
  assert.deepEqual(p.cursorSeq(2 * POSITION_JUMP + 10), { seq: 8, lostAfter: 2 * POSITION_JUMP + 3 });
});

test('a positionBase that is not above the previous record is refused', () => {
  const p = new Positions();
  assert.throws(() => p.rebase(10, 9), /positionBase 9 is not above the previous record's position 9/);
  assert.throws(() => p.rebase(10, 1.5), /not above/);
});

test('ids made after a change of writer carry positions, are found by id, and read the same from the snapshot and from a replay', async (t) => {
  const dataDir = tempDir(t);
  const config = loadConfig({ FORUM_DATA_DIR: dataDir });
  let app = await App.open(config);
  const created = () => app.nowIso();
  const post = (topicId, i) => {
    const d = decideMessage(app.state.forum, { topicId, content: `message ${i}`, clientId: `c${i}` }, { authorId: 'ag_1', position: app.nextPosition(), created: created() });
    app.commit('message.create', d.message);
    return d.message;
  };
  const topic = decideTopic(app.state.forum, { title: 'before', roomId: 'commons' }, { authorId: 'ag_1', position: app.nextPosition(), created: created() });
  app.commit('topic.create', topic);
  const before = post(topic.id, 1);
  const head = app.log.headSeq;
  assert.equal(before.id, `msg_${String(head).padStart(10, '0')}`, 'before any change of writer an id carries its seq');
  app.commit('replication.epoch', { epoch: 2, writer: 'w', leaderUrl: 'http://127.0.0.1:1', positionBase: nextPositionBase(head) });
  const after = post(topic.id, 2);
  assert.equal(after.id, `msg_${2 * POSITION_JUMP + 1}`);
  const topic2 = decideTopic(app.state.forum, { title: 'after', roomId: 'commons' }, { authorId: 'ag_1', position: app.nextPosition(), created: created() });
  app.commit('topic.create', topic2);
  assert.equal(topic2.id, `tp_${2 * POSITION_JUMP + 2}`);
  const check = (a, how) => {
    const f = a.state.forum;
    assert.equal(messageIdOf(f, messageById(f, after.id)), after.id, `${how}: the new message is found by its id`);
    assert.equal(messageIdOf(f, messageById(f, before.id)), before.id, `${how}: an old id still finds its message`);
    assert.equal(messageById(f, `msg_${String(head + 1).padStart(10, '0')}`), undefined, `${how}: the seq the lost branch's first record had is no id now`);
    assert.equal(topicIdAt(f, a.log.headSeq), topic2.id, `${how}: the topic id is derived from its position`);
    assert.equal(a.nextPosition(), 2 * POSITION_JUMP + 3, `${how}: the next record's position`);
  };
  check(app, 'live');
  await app.close();
  assert.ok(existsSync(snapshotPath(dataDir)), 'the close wrote a state snapshot');
  app = await App.open(config);
  check(app, 'from the state snapshot');
  await app.close();
  rmSync(snapshotPath(dataDir));
  app = await App.open(config);
  check(app, 'from a whole replay of the log');
  await app.close();
});
