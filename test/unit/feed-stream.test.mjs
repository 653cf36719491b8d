/**
 * One feed stream (src/api/feeds/stream.ts, issue 37): against a response that stops draining, a
 * reader that does not read is not written to past FEED_STREAM_BUFFER_BYTES_MAX, and resumes from
 * its cursor on 'drain'; on an injected clock, the feed's rules pace its pages (a backlog page's
 * pollAfterSeconds, the change-read limit). (Loopback sockets buffer megabytes in the kernel, so a black-box test
 * would need a large backlog before the server's own bound is reached; the HTTP behaviour of
 * streams is covered by test/http/sse.test.mjs.)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../helpers/server.mjs';

const { FeedStream, eventOf, lastEventCursor } = await import(pathToFileURL(join(ROOT, 'dist', 'api', 'feeds', 'stream.js')).href);
const { FEED_STREAM_BUFFER_BYTES_MAX, FEED_STREAM_RETRY_MS } = await import(pathToFileURL(join(ROOT, 'dist', 'constants.js')).href);

const ORIGIN = '5f0c6c1e-8f1e-4f57-9a43-2f4b7f0d9a11';
const PAGE_BYTES = 10_000;

/**
 * A page at cursor `after` of about PAGE_BYTES, shaped like the feeds' pages: a backlog page
 * (`hasMore`, pollAfterSeconds 1) or a caught-up one (pollAfterSeconds 60).
 */
const pageAt = (after, hasMore = false) =>
  Buffer.from(`{"format":"forum-changes-v1","cursor":{"originId":"${ORIGIN}","after":${after}},"hasMore":${hasMore},"pollAfterSeconds":${hasMore ? 1 : 60},"events":["${'x'.repeat(PAGE_BYTES)}"]}`);

/** A response whose client reads nothing: written bytes stay queued until `drainAll`. */
class StalledResponse extends EventEmitter {
  chunks = [];
  writableLength = 0;
  writableEnded = false;
  write(chunk) {
    this.chunks.push(Buffer.from(chunk));
    this.writableLength += chunk.length;
    return this.writableLength < 16 * 1024;
  }
  end() {
    this.writableEnded = true;
  }
  destroy() {}
  drainAll() {
    this.writableLength = 0;
    this.emit('drain');
  }
}

/** A feed that gains a page each time it is asked, up to 100: page k ends at cursor k, caught up. */
const source = { next: (after) => (after >= 100 ? null : eventOf(pageAt(after + 1))) };

/** A response that reads everything at once. */
class OpenResponse {
  chunks = [];
  writableLength = 0;
  writableEnded = false;
  write(chunk) {
    this.chunks.push(Buffer.from(chunk).toString());
    return true;
  }
  end() {
    this.writableEnded = true;
  }
  once() {}
  destroy() {}
  /** The cursors of the events written, in order. */
  ids() {
    return this.chunks.slice(1).map((c) => Number(/^id: [^:]+:(\d+)\n/.exec(c)[1]));
  }
}

test('a page\'s event is its id (originId:after), its data line and a blank line, built once per page', () => {
  const page = pageAt(7);
  const ev = eventOf(page);
  assert.equal(ev.after, 7);
  assert.equal(ev.hasMore, false);
  assert.equal(ev.pollAfterMs, 60_000);
  assert.deepEqual([eventOf(pageAt(8, true)).hasMore, eventOf(pageAt(8, true)).pollAfterMs], [true, 1000]);
  assert.equal(ev.bytes.toString(), `id: ${ORIGIN}:7\ndata: ${page.toString()}\n\n`);
  assert.equal(eventOf(page), ev, 'the same Buffer gets the same event');
  assert.deepEqual(lastEventCursor(`${ORIGIN}:7`), { originId: ORIGIN, after: 7 });
  assert.equal(lastEventCursor(undefined), undefined);
  assert.throws(() => lastEventCursor('7'), (err) => err.status === 400);
});

test(`a stream whose reader does not read holds at most FEED_STREAM_BUFFER_BYTES_MAX (${FEED_STREAM_BUFFER_BYTES_MAX}) plus one page, and resumes from its cursor on drain`, () => {
  const res = new StalledResponse();
  const stream = new FeedStream(source, 0, () => 0);
  stream.start(res);
  assert.equal(res.chunks[0].toString(), `retry: ${FEED_STREAM_RETRY_MS}\n\n`);
  const bound = FEED_STREAM_BUFFER_BYTES_MAX + PAGE_BYTES + 200;
  assert.ok(res.writableLength > FEED_STREAM_BUFFER_BYTES_MAX && res.writableLength <= bound, `${res.writableLength} bytes queued`);
  const written = res.chunks.length;
  const cursor = stream.after;
  assert.ok(cursor < 100, 'it stopped before the end of the feed');
  // New commits wake it: nothing more is written while the reader does not read.
  for (let i = 0; i < 5; i++) stream.pump();
  assert.equal(res.chunks.length, written);
  assert.equal(stream.after, cursor);
  // The reader reads: the stream goes on from its cursor, the next page first.
  res.drainAll();
  assert.ok(res.chunks.length > written);
  assert.match(res.chunks[written].toString().slice(0, 60), new RegExp(`^id: ${ORIGIN}:${cursor + 1}\n`));
  assert.ok(res.writableLength <= bound);
  while (stream.after < 100) res.drainAll();
  const ids = res.chunks.slice(1).map((c) => Number(/^id: [^:]+:(\d+)\n/.exec(c.toString().slice(0, 80))[1]));
  assert.deepEqual(ids, Array.from({ length: 100 }, (_, i) => i + 1), 'every page once, in order');
  stream.end();
  assert.equal(res.writableEnded, true);
});

test('after a backlog page (hasMore) a stream writes its next page no sooner than the page\'s pollAfterSeconds later, as a polling client would ask for it', () => {
  let now = 1_000_000;
  // A backlog of 3 pages of a feed at cursor 30: pages 10, 20 with hasMore, then 30 caught up.
  const backlog = { next: (after) => (after >= 30 ? null : eventOf(pageAt(after + 10, after + 10 < 30))) };
  const res = new OpenResponse();
  const stream = new FeedStream(backlog, 0, () => now);
  stream.start(res);
  assert.deepEqual(res.ids(), [10], 'the first page at once, then a pause');
  assert.equal(stream.pump(), false, 'a commit does not cut the pause short');
  now += 999;
  stream.tick(now);
  assert.deepEqual(res.ids(), [10], 'nothing before pollAfterSeconds (1 s)');
  now += 1;
  stream.tick(now);
  assert.deepEqual(res.ids(), [10, 20]);
  now += 1000;
  stream.tick(now);
  assert.deepEqual(res.ids(), [10, 20, 30], 'the page that catches up');
  now += 1000;
  stream.tick(now);
  assert.equal(stream.pump(), false, 'caught up: nothing to write');
  assert.deepEqual(res.ids(), [10, 20, 30]);
});

test('a caught-up stream writes each new page as soon as it is woken; every page after the first takes one change read, and a page the limit refuses waits unwritten for the window', () => {
  let now = 0;
  let head = 1;
  let budget = 2;
  const taken = [];
  const feed = {
    next: (after) => (after >= head ? null : eventOf(pageAt(head))),
    take: () => {
      if (budget === 0) return 5000 - (now % 5000);
      budget--;
      taken.push(head);
      return 0;
    },
  };
  const res = new OpenResponse();
  const stream = new FeedStream(feed, 0, () => now);
  stream.start(res);
  assert.deepEqual(res.ids(), [1]);
  assert.deepEqual(taken, [], 'the opening request paid for the first page');
  head = 2;
  assert.equal(stream.pump(), true);
  head = 3;
  assert.equal(stream.pump(), true);
  assert.deepEqual(res.ids(), [1, 2, 3], 'no pause between caught-up pages');
  assert.deepEqual(taken, [2, 3]);
  head = 4;
  now = 1000;
  assert.equal(stream.pump(), false, 'the limit refuses page 4');
  assert.deepEqual(res.ids(), [1, 2, 3]);
  now = 4999;
  stream.tick(now);
  assert.deepEqual(res.ids(), [1, 2, 3], 'not before the window lets one more through');
  budget = 1;
  now = 5000;
  stream.tick(now);
  assert.deepEqual(res.ids(), [1, 2, 3, 4]);
  assert.deepEqual(taken, [2, 3, 4], 'a refused take counted nothing');
});
