/**
 * Feed cursors as positions (issue 50; docs/api/feeds.md "Positions"): `checkCursor` maps a
 * client's position to the seq its page scans from, refuses a lost one (409 CURSOR_LOST) and keeps
 * the ahead / not-yet rules; the work feed, numbered by revision, gets jumps of its own at the same
 * changes of writer (`workFeedPositions`). The black-box side is test/http/feed-positions.test.mjs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Positions, nextPositionBase } from '../../dist/domain/positions.js';
import { SEQ_POSITIONS, workFeedPositions } from '../../dist/domain/feeds/feeds.js';
import { checkCursor, notYetPageJson, DISCUSSION_FORMAT } from '../../dist/domain/feeds/pages.js';
import { U32List } from '../../dist/containers/u32-list.js';
import { POSITION_JUMP } from '../../dist/constants.js';

const J = POSITION_JUMP;
const ORIGIN = '5f0c6c1e-8f1e-4f57-9a43-2f4b7f0d9a11';

/** A log of `head` records whose writer changed at each of `epochs` (log seqs), as apply notes it. */
function logPositions(epochs) {
  const p = new Positions();
  for (const seq of epochs) p.rebase(seq, nextPositionBase(p.positionOf(seq - 1)));
  return p;
}

function list(values) {
  const l = new U32List(4);
  for (const v of values) l.push(v);
  return l;
}

/** checkCursor's error code and message, or its result. */
function check(after, head, positions, lagging = false) {
  try {
    return checkCursor({ after, originId: ORIGIN }, ORIGIN, head, 'discussion feed', lagging, positions);
  } catch (err) {
    return { code: err.code, message: err.message };
  }
}

test('on a log whose writer never changed a cursor is its seq, and the old rules hold (ahead is 409 CURSOR_AHEAD, or not yet on a follower)', () => {
  const p = new Positions();
  assert.deepEqual(check(7, 20, p), { seq: 7, notYet: false });
  assert.deepEqual(check(20, 20, p), { seq: 20, notYet: false });
  assert.equal(check(21, 20, p).code, 'CURSOR_AHEAD');
  assert.deepEqual(check(21, 20, p, true), { seq: 21, notYet: true });
  assert.deepEqual(check(7, 20, SEQ_POSITIONS), { seq: 7, notYet: false });
});

test('after a change of writer a cursor maps to the seq its scan continues after; one in the gap is 409 CURSOR_LOST naming the fork point', () => {
  // Records 1..10 at positions 1..10, the epoch record (seq 11) at 2e9, then 12.. at 2e9 + 1 ...
  const p = logPositions([11]);
  const head = 20;
  assert.deepEqual(check(10, head, p), { seq: 10, notYet: false }, 'the fork point itself');
  assert.deepEqual(check(2 * J, head, p), { seq: 11, notYet: false });
  assert.deepEqual(check(2 * J + 9, head, p), { seq: 20, notYet: false }, 'the head as a position');
  for (const lost of [11, 13, 2 * J - 1]) {
    const r = check(lost, head, p);
    assert.equal(r.code, 'CURSOR_LOST', `after=${lost}`);
    assert.match(r.message, /after position 10\b/);
    assert.match(r.message, /Reread from after=10\b/);
    assert.match(r.message, /deduplicate/);
    assert.equal(check(lost, head, p, true).code, 'CURSOR_LOST', 'a follower that has the jump refuses it too');
  }
  const ahead = check(2 * J + 10, head, p);
  assert.equal(ahead.code, 'CURSOR_AHEAD');
  assert.match(ahead.message, new RegExp(`ends at ${2 * J + 9}\\b`), 'the head is named as a position');
  assert.deepEqual(check(2 * J + 10, head, p, true), { seq: 21, notYet: true });
});

test('a follower\'s not-yet page gives the client\'s own position back', () => {
  const page = JSON.parse(notYetPageJson(DISCUSSION_FORMAT, ORIGIN, 2 * J + 50));
  assert.deepEqual(page.cursor, { originId: ORIGIN, after: 2 * J + 50 });
  assert.deepEqual([page.hasMore, page.events], [false, []]);
});

test('the work feed keeps its sequence on a log whose writer never changed', () => {
  const w = workFeedPositions(list([3, 4, 6]), new Positions());
  for (const seq of [0, 1, 3, 99]) assert.equal(w.positionOf(seq), seq);
  assert.deepEqual(w.cursorSeq(5), { seq: 5, lostAfter: null });
});

test('the work feed jumps at a change of writer: events before keep 1, 2, 3, the next starts past the gap, and a cursor in the gap is lost after the last event before it', () => {
  // Work events at log seqs 3, 4 and 6; the writer changed at log seq 10.
  const w = workFeedPositions(list([3, 4, 6, 12]), logPositions([10]));
  assert.deepEqual([1, 2, 3, 4].map((s) => w.positionOf(s)), [1, 2, 3, 2 * J + 1]);
  assert.deepEqual(w.cursorSeq(3), { seq: 3, lostAfter: null });
  assert.deepEqual(w.cursorSeq(5), { seq: 3, lostAfter: 3 }, 'the old writer\'s next work events were 4, 5, …');
  assert.deepEqual(w.cursorSeq(2 * J + 1), { seq: 4, lostAfter: null });
  assert.deepEqual(w.cursorSeq(2 * J + 7), { seq: 10, lostAfter: null }, 'past the head: the caller says ahead or not yet');
});

test('two changes of writer with no work event between them: the second jump clears the positions the first writer may have lost', () => {
  const w = workFeedPositions(list([3, 4, 6, 15]), logPositions([10, 12]));
  assert.equal(w.positionOf(3), 3);
  assert.equal(w.positionOf(4), 4 * J + 1, 'past the first writer\'s stretch (2e9 + 1, …)');
  assert.deepEqual(w.cursorSeq(2 * J + 1), { seq: 3, lostAfter: 3 }, 'a work event the second writer lost');
  assert.deepEqual(w.cursorSeq(6), { seq: 3, lostAfter: 3 }, 'a work event the first writer lost');
});

test('two changes of writer with work events between them: each stretch keeps its positions and each gap is lost after its last event', () => {
  const w = workFeedPositions(list([3, 4, 6, 11, 14]), logPositions([10, 12]));
  assert.deepEqual([1, 2, 3, 4, 5].map((s) => w.positionOf(s)), [1, 2, 3, 2 * J + 1, 4 * J + 1]);
  assert.deepEqual(w.cursorSeq(2 * J + 1), { seq: 4, lostAfter: null });
  assert.deepEqual(w.cursorSeq(2 * J + 2), { seq: 4, lostAfter: 2 * J + 1 });
  assert.deepEqual(w.cursorSeq(4), { seq: 3, lostAfter: 3 });
  assert.ok(w.positionOf(5) - w.positionOf(4) > J, 'each gap is at least POSITION_JUMP');
});

test('the work feed\'s positions of events already there never change when a later change of writer is noted', () => {
  const work = list([3, 4, 6, 11]);
  const before = workFeedPositions(work, logPositions([10]));
  const after = workFeedPositions(work, logPositions([10, 12]));
  for (let seq = 0; seq <= 4; seq++) assert.equal(after.positionOf(seq), before.positionOf(seq), `work seq ${seq}`);
});
