/**
 * Which open streams a group commit looks at (src/api/feeds/long-poll.ts, issue 37): inbox
 * streams only when some inbox gained an entry, or when one was left with an entry it could not
 * write yet (not durable at the last look) — never lost, and not compared after every commit.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../helpers/server.mjs';

const { FeedWaiters } = await import(pathToFileURL(join(ROOT, 'dist', 'api', 'feeds', 'long-poll.js')).href);
const { FEED_STREAM_FLUSH_MS } = await import(pathToFileURL(join(ROOT, 'dist', 'constants.js')).href);

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
