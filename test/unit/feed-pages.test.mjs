import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FeedPageCache, uuidV5, workFeedOriginId } from '../../dist/domain/feeds/pages.js';
import { inboxOriginId } from '../../dist/domain/inbox/inbox.js';

test('a feed page whose window lies below the head is rendered once and then served from the cache', () => {
  const cache = new FeedPageCache(1024 * 1024, 2);
  let renders = 0;
  const render = () => `{"n":${++renders}}`;
  const first = cache.page('discussion', { after: 0, limit: 10 }, 50, render);
  const again = cache.page('discussion', { after: 0, limit: 10 }, 60, render);
  assert.equal(renders, 1);
  assert.equal(again, first);
  assert.equal(first.toString(), '{"n":1}');
});

test('a page that reaches the head is rendered again once the head moves and never kept in the bounded cache, because later records can still join it', () => {
  const cache = new FeedPageCache(1024 * 1024, 2);
  let renders = 0;
  const render = () => `{"n":${++renders}}`;
  cache.page('discussion', { after: 40, limit: 20 }, 50, render);
  const later = cache.page('discussion', { after: 40, limit: 20 }, 55, render);
  assert.equal(renders, 2);
  assert.equal(later.toString(), '{"n":2}');
  assert.equal(cache.size, 0);
});

test('a page that reaches the head is rendered once for every request at the same head (held requests woken together), again once the head moves or the request differs', () => {
  const cache = new FeedPageCache(1024 * 1024, 2);
  let renders = 0;
  const render = () => `{"n":${++renders}}`;
  const q = { after: 40, limit: 20 };
  const first = cache.page('discussion', q, 50, render, 'agent:0');
  for (let i = 0; i < 999; i++) assert.equal(cache.page('discussion', q, 50, render, 'agent:0'), first);
  assert.equal(renders, 1);
  cache.page('discussion', q, 50, render, 'operator:0');
  cache.page('discussion', { after: 41, limit: 20 }, 50, render, 'agent:0');
  cache.page('work', q, 50, render, 'agent:0');
  assert.equal(renders, 4, 'another reader class, cursor or feed is another page');
  assert.equal(cache.page('discussion', q, 51, render, 'agent:0').toString(), '{"n":5}', 'a new head renders anew');
  assert.equal(cache.size, 0, 'head pages never enter the bounded cache');
  const off = new FeedPageCache(0);
  off.page('discussion', q, 50, render);
  off.page('discussion', q, 50, render);
  assert.equal(renders, 7, 'with the cache off every request renders');
});

test('the page cache stays bounded, dropping the least recently used page', () => {
  const cache = new FeedPageCache(1024 * 1024, 2);
  let renders = 0;
  const render = () => `{"n":${++renders}}`;
  cache.page('discussion', { after: 0, limit: 1 }, 100, render);
  cache.page('discussion', { after: 1, limit: 1 }, 100, render);
  cache.page('discussion', { after: 0, limit: 1 }, 100, render); // touch page 0
  cache.page('discussion', { after: 2, limit: 1 }, 100, render); // evicts page 1
  assert.equal(cache.size, 2);
  cache.page('discussion', { after: 0, limit: 1 }, 100, render);
  assert.equal(renders, 3, 'page 0 survived');
  cache.page('discussion', { after: 1, limit: 1 }, 100, render);
  assert.equal(renders, 4, 'page 1 was evicted and rendered again');
});

test('the page cache stays within its byte bound, dropping least recently used pages, and keeps no page larger than the bound', () => {
  const cache = new FeedPageCache(100_000, 64);
  const page = (after, bytes) => cache.page('discussion', { after, limit: 1 }, 1000, () => 'x'.repeat(bytes));
  for (let after = 0; after < 20; after++) page(after, 30_000);
  assert.ok(cache.bytes <= 100_000, `${cache.bytes} bytes held`);
  assert.equal(cache.size, 3);
  const huge = page(500, 200_000);
  assert.equal(huge.length, 200_000, 'a page over the bound is still served');
  assert.ok(cache.bytes <= 100_000);
});

test('the two feeds share one cache without mixing their pages', () => {
  const cache = new FeedPageCache(1024 * 1024, 8);
  const d = cache.page('discussion', { after: 0, limit: 1 }, 10, () => 'discussion');
  const w = cache.page('work', { after: 0, limit: 1 }, 10, () => 'work');
  assert.equal(d.toString(), 'discussion');
  assert.equal(w.toString(), 'work');
});

test('a cache of 0 bytes keeps nothing and renders every page', () => {
  const cache = new FeedPageCache(0);
  let renders = 0;
  for (let i = 0; i < 3; i++) cache.page('discussion', { after: 0, limit: 1 }, 10, () => `${++renders}`);
  assert.equal(renders, 3);
  assert.equal(cache.size, 0);
});

test('the work feed\'s and the inbox\'s originIds are the name-based UUIDs of the log\'s originId, remembered per lineage and derived again when it changes', () => {
  const a = '0b1e7c1e-0000-4000-8000-000000000001';
  const b = '0b1e7c1e-0000-4000-8000-000000000002';
  const work = (o) => uuidV5(`forum-work-changes-v1:${o}`, '3f0f6a52-8c1e-4d55-9a7e-2a8f1c5b9e40');
  const inbox = (o) => uuidV5(`forum-inbox-v1:${o}`, '9b2d47e1-5c3a-4f8e-b6d0-71a4e9c2f358');
  for (const o of [a, a, b, a]) {
    assert.equal(workFeedOriginId(o), work(o));
    assert.equal(inboxOriginId(o), inbox(o));
  }
  assert.notEqual(inboxOriginId(a), inboxOriginId(b));
  assert.notEqual(workFeedOriginId(a), inboxOriginId(a));
});
