/**
 * Delivery rounds (src/api/feeds/long-poll.ts, issue 37): which open streams a group commit looks
 * at (inbox streams only when some inbox gained an entry, or when one was left with an entry it
 * could not write yet — never lost, and not compared after every commit), followers that ask
 * again within a delivery window answered by the round at its end, and windows that grow with the
 * cost of a round.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../helpers/server.mjs';

const { FeedWaiters } = await import(pathToFileURL(join(ROOT, 'dist', 'api', 'feeds', 'long-poll.js')).href);
const { FEED_DELIVERY_SHARE_PERCENT, FEED_STREAM_FLUSH_MS } = await import(pathToFileURL(join(ROOT, 'dist', 'constants.js')).href);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * A fake forum: each agent's inbox last entry, the inboxes' last entry overall, and how far the
 * log is durable (a stream writes only durable entries).
 */
function fakeForum() {
  const f = { inbox: new Map(), last: 0, durable: 0 };
  f.add = (agentId, seq) => {
    f.inbox.set(agentId, seq);
    f.last = Math.max(f.last, seq);
  };
  f.lastEvent = (feed, agentId) => (feed !== 'inbox' ? 0 : agentId === undefined ? f.last : f.inbox.get(agentId) ?? 0);
  return f;
}

/** A stream of `agentId`'s inbox that counts how often it is pumped and writes up to the durable head. */
function fakeStream(forum, agentId) {
  const s = {
    after: 0,
    pumps: 0,
    pump() {
      s.pumps++;
      const target = Math.min(forum.inbox.get(agentId) ?? 0, forum.durable);
      if (target <= s.after) return false;
      s.after = target;
      return true;
    },
    tick() {},
    end() {},
  };
  return s;
}

const socket = () => Object.assign(new EventEmitter(), {});

/** The waiters' timers are unref'd (a server's sockets keep its process alive): keep this one alive meanwhile. */
const keepAlive = (t) => {
  const timer = setInterval(() => {}, 1000);
  t.after(() => clearInterval(timer));
};

test('a commit that gives no inbox an entry does not look at the inbox streams; an entry not yet durable at one look is written at the next', async (t) => {
  const forum = fakeForum();
  const waiters = new FeedWaiters(() => Date.now(), forum.lastEvent);
  t.after(() => waiters.releaseAll());
  const a = fakeStream(forum, 'ag_a');
  const b = fakeStream(forum, 'ag_b');
  assert.equal(waiters.openStream('inbox', 60, 'ag_a', socket(), a), null);
  assert.equal(waiters.openStream('inbox', 60, 'ag_b', socket(), b), null);

  // Commits that concern no inbox: no stream is pumped (the streams were opened caught up).
  for (let i = 0; i < 5; i++) waiters.notify();
  assert.deepEqual([a.pumps, b.pumps], [0, 0]);

  // An entry for a, appended but not durable when its commit is looked at: a is pumped and writes nothing.
  forum.add('ag_a', 10);
  waiters.notify();
  assert.deepEqual([a.pumps, b.pumps, a.after], [1, 0, 0]);
  // The next commit gives no inbox an entry, but a's entry is durable now: a writes it.
  forum.durable = 10;
  waiters.notify();
  assert.deepEqual([a.pumps, a.after], [2, 10]);
  // Then quiet again: nothing is looked at (after the coalescing window the write opened).
  await sleep(FEED_STREAM_FLUSH_MS + 30);
  for (let i = 0; i < 5; i++) waiters.notify();
  assert.deepEqual([a.pumps, b.pumps], [2, 0]);

  // An entry for b, durable at once: only b writes.
  forum.add('ag_b', 11);
  forum.durable = 11;
  waiters.notify();
  assert.deepEqual([a.pumps, b.pumps, b.after], [2, 1, 11]);
});

test('an inbox stream opened after the last look is looked at by the next commit, even one that gives no inbox an entry', async (t) => {
  const forum = fakeForum();
  const waiters = new FeedWaiters(() => Date.now(), forum.lastEvent);
  t.after(() => waiters.releaseAll());
  const a = fakeStream(forum, 'ag_a');
  waiters.openStream('inbox', 60, 'ag_a', socket(), a);
  // An entry for c, appended but not durable, seen by a look at the streams (c has none open yet).
  forum.add('ag_c', 12);
  waiters.notify();
  const c = fakeStream(forum, 'ag_c');
  waiters.openStream('inbox', 60, 'ag_c', socket(), c);
  // Durable now; this commit gives no inbox a new entry.
  forum.durable = 12;
  waiters.notify();
  assert.equal(c.after, 12, 'the late stream got its entry');
});

/**
 * FeedWaiters over a discussion feed whose last event is `feed.discussion` (set it to commit),
 * released and kept alive for the test.
 */
function discussionWaiters(t, discussion) {
  const feed = { discussion };
  const waiters = new FeedWaiters(() => Date.now(), (name) => (name === 'discussion' ? feed.discussion : 0));
  t.after(() => waiters.releaseAll());
  keepAlive(t);
  return { waiters, feed };
}

/** A stand-in for a held request's reply: which request it answered. */
const replyOf = (name) => () => ({ status: 200, json: { name } });

test('within a delivery window, a request whose cursor is not caught up is held and answered by the round at the window\'s end, not at once', async (t) => {
  const { waiters, feed } = discussionWaiters(t, 5);
  // No window open: not held (the caller answers at once); it opens one, which closes empty.
  assert.equal(waiters.holdForRound('discussion', 3, 30, 'ag_a', socket(), replyOf('early')), null);
  await sleep(FEED_STREAM_FLUSH_MS + 30);
  // A caught-up request, answered by a commit: that round opens a window.
  const first = waiters.hold('discussion', 5, 30, 'ag_a', socket(), replyOf('first'));
  feed.discussion = 6;
  const t0 = performance.now();
  waiters.notify();
  assert.deepEqual((await first).json, { name: 'first' });
  // Its follower asks again at once from 6 while the feed has moved on to 7: held for the round.
  feed.discussion = 7;
  waiters.notify();
  const again = waiters.holdForRound('discussion', 6, 30, 'ag_a', socket(), replyOf('again'));
  assert.ok(again !== null, 'held while the window is open');
  assert.equal(waiters.size, 1);
  assert.deepEqual((await again).json, { name: 'again' });
  const waited = performance.now() - t0;
  assert.ok(waited >= FEED_STREAM_FLUSH_MS - 5, `answered ${Math.round(waited)} ms after the first round, at the window's end`);
  assert.equal(waiters.size, 0);
});

test('followers that are never caught up are paced too: the first to ask is answered at once and the others that ask within its window by one round at its end', async (t) => {
  const { waiters, feed } = discussionWaiters(t, 100);
  const t0 = performance.now();
  // The feed moves faster than they read: every request has events past its cursor.
  assert.equal(waiters.holdForRound('discussion', 10, 30, 'ag_a', socket(), replyOf('first')), null, 'the first is answered at once');
  const others = ['b', 'c', 'd'].map((x, i) => waiters.holdForRound('discussion', 20 + i, 30, `ag_${x}`, socket(), replyOf(x)));
  assert.ok(others.every((p) => p !== null), 'the followers who ask within the window it opened are held');
  assert.equal(waiters.size, 3);
  feed.discussion = 101;
  waiters.notify();
  assert.equal(waiters.size, 3, 'a commit within the window is left to the round at its end');
  const answered = await Promise.all(others);
  assert.deepEqual(answered.map((r) => r.json.name), ['b', 'c', 'd']);
  const waited = performance.now() - t0;
  assert.ok(waited >= FEED_STREAM_FLUSH_MS - 5, `answered ${Math.round(waited)} ms after the first, at the window's end`);
  assert.equal(waiters.size, 0);
});

test('what the followers\' next requests cost the main thread during a window (charge) lengthens the next one as the round\'s own cost does', async (t) => {
  const { waiters, feed } = discussionWaiters(t, 5);
  const first = waiters.hold('discussion', 5, 30, 'ag_a', socket(), replyOf('first'));
  feed.discussion = 6;
  waiters.notify(); // a round: answers `first`, opens a window of the minimum
  await first;
  // Its followers' next requests: 30 ms of the main thread, charged to this window.
  waiters.charge(30);
  feed.discussion = 7;
  waiters.notify();
  const second = waiters.holdForRound('discussion', 6, 30, 'ag_a', socket(), replyOf('second'));
  await second; // the round at the window's end, whose window is sized by the 30 ms
  const t0 = performance.now();
  feed.discussion = 8;
  waiters.notify();
  const third = waiters.holdForRound('discussion', 7, 30, 'ag_a', socket(), replyOf('third'));
  assert.ok(third !== null);
  await third;
  const waited = performance.now() - t0;
  const share = FEED_DELIVERY_SHARE_PERCENT / 100;
  const expectedMs = (30 * (1 - share)) / share;
  assert.ok(waited >= expectedMs * 0.9, `the next round came ${Math.round(waited)} ms later, for 30 ms charged (at least ${Math.round(expectedMs)} ms expected)`);
  // Outside a window nothing is charged: after it closes, a commit is delivered at once.
  await sleep(FEED_STREAM_FLUSH_MS + 30);
  waiters.charge(1000);
  const fourth = waiters.hold('discussion', 8, 30, 'ag_a', socket(), replyOf('fourth'));
  feed.discussion = 9;
  waiters.notify();
  // At once: answered by the notify itself, before the event loop reaches its next check phase.
  const came = await Promise.race([fourth.then(() => 'delivered'), new Promise((resolve) => setImmediate(() => resolve('a later turn')))]);
  assert.equal(came, 'delivered', 'delivered at once, in the notify that the commit made');
});

/** Keeps the main thread busy for `ms`. */
const busy = (ms) => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

/** A discussion stream whose every write costs `costMs` of the main thread. */
const costlyStream = (feed, costMs) => {
  const stream = { after: 0, tick() {}, end() {}, pump() {
    if (feed.discussion <= stream.after) return false;
    busy(costMs);
    stream.after = feed.discussion;
    return true;
  } };
  return stream;
};

test('a costly round opens a window long enough to keep deliveries to their share of the main thread', async (t) => {
  const { waiters, feed } = discussionWaiters(t, 1);
  const stream = costlyStream(feed, 30);
  waiters.openStream('discussion', 60, 'ag_a', socket(), stream);
  feed.discussion = 2;
  waiters.notify(); // a round: its write costs 30 ms, and its window is sized by that
  assert.equal(stream.after, 2, 'the first commit after a quiet period is delivered at once');
  const t0 = performance.now();
  feed.discussion = 3;
  waiters.notify(); // within that round's window
  const share = FEED_DELIVERY_SHARE_PERCENT / 100;
  const expectedMs = (30 * (1 - share)) / share;
  while (stream.after < 3 && performance.now() - t0 < 5000) await sleep(10);
  const waited = performance.now() - t0;
  assert.equal(stream.after, 3, 'delivered at the window\'s end');
  assert.ok(waited >= expectedMs * 0.8, `the next delivery came ${Math.round(waited)} ms later, for a round of 30 ms (at least ${Math.round(expectedMs)} ms expected)`);
});

test('a round\'s cost is its own work: what the event loop does after it in the same turn (its group commit\'s write acknowledgements) does not lengthen the windows', async (t) => {
  const { waiters, feed } = discussionWaiters(t, 1);
  const stream = costlyStream(feed, 0);
  waiters.openStream('discussion', 60, 'ag_a', socket(), stream);
  feed.discussion = 2;
  waiters.notify(); // a round, at once
  busy(30); // other work of the same turn, after the round
  feed.discussion = 3;
  waiters.notify(); // within the window: delivered at its end
  while (stream.after < 3) await sleep(5);
  const t0 = performance.now();
  feed.discussion = 4;
  waiters.notify(); // within the next window, which the 30 ms must not have lengthened
  while (stream.after < 4 && performance.now() - t0 < 5000) await sleep(5);
  const waited = performance.now() - t0;
  const share = FEED_DELIVERY_SHARE_PERCENT / 100;
  const lengthenedMs = (30 * (1 - share)) / share;
  assert.equal(stream.after, 4);
  assert.ok(waited < FEED_STREAM_FLUSH_MS + (lengthenedMs - FEED_STREAM_FLUSH_MS) / 2, `delivered ${Math.round(waited)} ms later: a window of ${FEED_STREAM_FLUSH_MS} ms, not one sized by the 30 ms that followed a round (${Math.round(lengthenedMs)} ms)`);
});
