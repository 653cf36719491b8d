/**
 * Issue 51, defect 1: a feed stream whose reader stops reading holds at most
 * FEED_STREAM_BUFFER_BYTES_MAX plus one page in the server, whether it is caught up or catching
 * up over a backlog (the check used to follow only caught-up pages, so a stream catching up queued
 * one page a second in server memory), and a page queued before an erasure is never delivered
 * with the erased content. Measured through the gauge forum_feed_stream_queued_bytes_max (the most
 * bytes one open stream holds queued for a client that has not taken them) on the metrics
 * listener; the reader is a raw socket that sends its request and never reads, so once the
 * kernel's buffers for the connection are full (a few hundred KiB on loopback when nothing is
 * read) the server's own queue is what grows.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import http from 'node:http';
import { startServer } from '../helpers/server.mjs';
import { ok } from '../helpers/reads.mjs';
import { FEED_STREAM_BUFFER_BYTES_MAX, MESSAGE_CONTENT_LENGTH_MAX, PAGE_LIMIT_MAX } from '../../dist/constants.js';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** Backlog pages of PAGE_LIMIT_MAX messages of ~24 KB each (3-byte characters): ~2.4 MB a page. */
const PAGES = 6;
const FILLER = '€'.repeat(MESSAGE_CONTENT_LENGTH_MAX - 40);
/** The text of the backlog's last message, erased in the second test. */
const SECRET = 'sse-slow-reader-secret-7f3a';

let s;
let metricsUrl;
let writer;
let op;
let topicId;
let last;
/** The largest page of the backlog as GET answers it, in bytes. */
let pageBytesMax = 0;

const cleanups = [];
after(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

before(async () => {
  s = await startServer({ after: (fn) => cleanups.push(fn) }, { env: { FORUM_METRICS_PORT: '0' } });
  metricsUrl = JSON.parse(s.stdout.split('\n').find((l) => l.includes('"listening"'))).metricsUrl;
  writer = await s.register('backlog-writer');
  op = (await s.cli('operator', 'create', '--name', 'op')).json;
  topicId = (await ok(s.post('/api/topics', { title: 'a large backlog' }, writer.token), 201)).id;
  const total = PAGES * PAGE_LIMIT_MAX;
  for (let i = 0; i < total; i += 20) {
    const batch = [];
    for (let j = i; j < Math.min(total, i + 20); j++) {
      const content = j === total - 1 ? `${SECRET} ${FILLER}` : `m${j} ${FILLER}`;
      batch.push(ok(s.post('/api/messages', { topicId, content, clientId: `b${j}` }, writer.token), 201));
    }
    const posted = await Promise.all(batch);
    last = posted.at(-1);
  }
  for (let q = 'after=0'; ; ) {
    const res = await fetch(`${s.url}/api/changes?${q}&limit=${PAGE_LIMIT_MAX}`, { headers: { authorization: `Bearer ${writer.token}` } });
    const text = await res.text();
    pageBytesMax = Math.max(pageBytesMax, Buffer.byteLength(text));
    const page = JSON.parse(text);
    if (!page.hasMore) break;
    q = `after=${page.cursor.after}&originId=${page.cursor.originId}`;
  }
});

/** The gauge forum_feed_stream_queued_bytes_max now. */
async function queuedMax() {
  const line = (await (await fetch(metricsUrl)).text()).split('\n').find((l) => l.startsWith('forum_feed_stream_queued_bytes_max '));
  assert.ok(line, 'forum_feed_stream_queued_bytes_max is reported');
  return Number(line.split(' ')[1]);
}

/** Opens a stream of /api/changes from the start on a raw socket that never reads. */
function stalledStream(token) {
  const u = new URL(s.url);
  const socket = net.connect(Number(u.port), u.hostname);
  socket.write(`GET /api/changes?after=0&limit=${PAGE_LIMIT_MAX}&wait=60 HTTP/1.1\r\nHost: ${u.host}\r\nAuthorization: Bearer ${token}\r\nAccept: text/event-stream\r\n\r\n`);
  socket.pause();
  socket.on('error', () => {});
  return socket;
}

/** Waits until the gauge passes `bytes` (or `ms` pass); resolves to the last value seen. */
async function queuedPast(bytes, ms) {
  const end = Date.now() + ms;
  let v = await queuedMax();
  while (v <= bytes && Date.now() < end) {
    await sleep(100);
    v = await queuedMax();
  }
  return v;
}

test(`a stream catching up over a backlog holds at most FEED_STREAM_BUFFER_BYTES_MAX (${FEED_STREAM_BUFFER_BYTES_MAX}) plus one page for a reader that stopped reading`, async () => {
  const reader = await s.register('stalled-reader');
  const socket = stalledStream(reader.token);
  const bound = FEED_STREAM_BUFFER_BYTES_MAX + pageBytesMax + 256;
  try {
    // The kernel takes the first pages; then the server's queue reaches the bound ...
    const reached = await queuedPast(FEED_STREAM_BUFFER_BYTES_MAX, (PAGES + 10) * 1000);
    assert.ok(reached > FEED_STREAM_BUFFER_BYTES_MAX, `the backlog fills the connection (queued ${reached} bytes)`);
    // ... and stays under it while the rest of the backlog would be paced out (one page a second).
    let most = reached;
    for (const end = Date.now() + (PAGES + 1) * 1000; Date.now() < end; await sleep(100)) most = Math.max(most, await queuedMax());
    assert.ok(most <= bound, `queued ${most} bytes for one stream, bound ${bound} (${FEED_STREAM_BUFFER_BYTES_MAX} + a page of ${pageBytesMax})`);
  } finally {
    socket.destroy();
  }
});

/**
 * Opens a stream of /api/changes (from the start, or after `lastEventId`) whose response is not
 * read until `read()` is called. `read(until)` resolves to the complete events received (`{id, page}`)
 * once the connection ends or `until(page)` holds; an event cut off by the end is not one.
 */
function pausedStream(token, lastEventId) {
  return new Promise((resolve, reject) => {
    const headers = { authorization: `Bearer ${token}`, accept: 'text/event-stream' };
    if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
    const req = http.get(`${s.url}/api/changes?after=0&limit=${PAGE_LIMIT_MAX}&wait=60`, { agent: false, headers }, (res) => {
      assert.equal(res.statusCode, 200);
      res.pause();
      const read = (until = () => false) =>
        new Promise((done) => {
          const events = [];
          let buf = '';
          const finish = () => {
            req.destroy();
            done(events);
          };
          res.setEncoding('utf8');
          res.on('data', (chunk) => {
            buf += chunk;
            for (let i = buf.indexOf('\n\n'); i !== -1; i = buf.indexOf('\n\n')) {
              const block = buf.slice(0, i);
              buf = buf.slice(i + 2);
              const id = /^id: (.*)$/m.exec(block)?.[1];
              const data = /^data: (.*)$/m.exec(block)?.[1];
              if (data === undefined) continue;
              const page = JSON.parse(data);
              events.push({ id, page, text: data });
              if (until(page)) return finish();
            }
          });
          res.on('close', finish);
          res.on('error', () => {});
          res.resume();
        });
      resolve({ read });
    });
    req.on('error', reject);
  });
}

test('a page queued for a reader that stopped reading is dropped by an erasure, never delivered with the erased content; the reader resumes from its last event and gets the page as it reads now', async () => {
  const reader = await s.register('paused-reader');
  const first = await pausedStream(reader.token);
  const queued = await queuedPast(FEED_STREAM_BUFFER_BYTES_MAX, (PAGES + 10) * 1000);
  assert.ok(queued > FEED_STREAM_BUFFER_BYTES_MAX, `pages are queued in the server for the reader (${queued} bytes)`);
  // Long enough for a stream without the bound to have queued the whole backlog, the last message's page included.
  await sleep((PAGES + 1) * 1000);
  await ok(s.post('/api/moderation/actions', { action: 'erase', target: { type: 'message', id: last.id }, reason: 'leaked secret' }, op.token), 201);
  assert.equal(await queuedMax(), 0, 'once the erasure is acknowledged nothing rendered before it is left queued for the stream');

  // The reader reads again: what the kernel had taken before the erasure, then the end of that connection.
  const before = await first.read();
  assert.ok(before.length > 0, 'the pages the kernel had taken arrive');
  const resumed = await pausedStream(reader.token, before.at(-1).id);
  const after = await resumed.read((page) => page.events.some((e) => e.message?.id === last.id));
  const all = [...before, ...after];
  for (const ev of all) assert.ok(!ev.text.includes(SECRET), `event ${ev.id} carries no erased text`);
  const erased = after.flatMap((ev) => ev.page.events).filter((e) => e.message?.id === last.id);
  // Its own event and the erasure's event, both rendered after the erasure.
  assert.ok(erased.length > 0, 'the erased message comes after the reader resumed');
  for (const e of erased) assert.deepEqual([e.message.erased, e.message.content], [true, ''], `event at seq ${e.seq} is the placeholder`);
  const cursors = all.map((ev) => ev.page.cursor.after);
  assert.deepEqual(cursors, [...cursors].sort((x, y) => x - y), 'each page once, in order, across the two connections');
  assert.equal(new Set(cursors).size, cursors.length);
});
