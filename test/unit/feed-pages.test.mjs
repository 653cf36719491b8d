import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FeedPageCache } from '../../dist/domain/feeds/pages.js';

test('a feed page whose window lies below the head is rendered once and then served from the cache', () => {
  const cache = new FeedPageCache(2);
  let renders = 0;
  const render = () => `{"n":${++renders}}`;
  const first = cache.page({ after: 0, limit: 10 }, 50, render);
  const again = cache.page({ after: 0, limit: 10 }, 60, render);
  assert.equal(renders, 1);
  assert.equal(again, first);
  assert.equal(first.toString(), '{"n":1}');
});

test('a page that reaches the head is rendered every time, because later records can still join it', () => {
  const cache = new FeedPageCache(2);
  let renders = 0;
  const render = () => `{"n":${++renders}}`;
  cache.page({ after: 40, limit: 20 }, 50, render);
  const later = cache.page({ after: 40, limit: 20 }, 55, render);
  assert.equal(renders, 2);
  assert.equal(later.toString(), '{"n":2}');
  assert.equal(cache.size, 0);
});

test('the page cache stays bounded, dropping the least recently used page', () => {
  const cache = new FeedPageCache(2);
  let renders = 0;
  const render = () => `{"n":${++renders}}`;
  cache.page({ after: 0, limit: 1 }, 100, render);
  cache.page({ after: 1, limit: 1 }, 100, render);
  cache.page({ after: 0, limit: 1 }, 100, render); // touch page 0
  cache.page({ after: 2, limit: 1 }, 100, render); // evicts page 1
  assert.equal(cache.size, 2);
  cache.page({ after: 0, limit: 1 }, 100, render);
  assert.equal(renders, 3, 'page 0 survived');
  cache.page({ after: 1, limit: 1 }, 100, render);
  assert.equal(renders, 4, 'page 1 was evicted and rendered again');
});
