import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SlidingWindowLimiter, RateLimits, limitFromHeaders, rateLimitHeaders } from '../../dist/http/rate-limit.js';
import { DiskGuard, ShutdownGate } from '../../dist/http/guards.js';
import { clientIpResolver, isProxyAddress, ipRateKey } from '../../dist/http/client-ip.js';
import { DiskSpace } from '../../dist/store/disk.js';
import { loadConfig } from '../../dist/config.js';
import { clientErrorReply } from '../../dist/http/reply.js';
import {
  BODY_BYTES_MAX,
  CHANGE_READS_PER_TOKEN_PER_MINUTE,
  DISK_CHECK_INTERVAL_MS,
  DISK_RECHECK_MARGIN_BYTES,
  RECORD_OVERHEAD_BYTES_MAX,
  RATE_LIMIT_KEYS_MAX,
} from '../../dist/constants.js';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');

/** A ServerResponse stand-in that records setHeader calls. */
function fakeRes() {
  const headers = {};
  return { headers, setHeader: (k, v) => (headers[k.toLowerCase()] = v) };
}

test('a sliding window allows exactly limit requests and frees a slot when the oldest leaves the window', () => {
  const l = new SlidingWindowLimiter(3, 60_000);
  assert.equal(l.take('k', T0).remaining, 2);
  assert.equal(l.take('k', T0 + 10_000).remaining, 1);
  const third = l.take('k', T0 + 20_000);
  assert.deepEqual(third, { allowed: true, limit: 3, remaining: 0, resetMs: 40_000 });
  const refused = l.take('k', T0 + 30_000);
  assert.equal(refused.allowed, false);
  assert.equal(refused.resetMs, 30_000, 'the first request leaves the window at T0+60s');
  assert.equal(l.take('k', T0 + 59_999).allowed, false);
  const freed = l.take('k', T0 + 60_000);
  assert.equal(freed.allowed, true);
  assert.equal(freed.resetMs, 10_000, 'next slot frees when the T0+10s request leaves');
  assert.equal(l.take('k', T0 + 60_001).allowed, false);
});

test('a refused request takes no slot, so a client hammering the limit is not locked out longer', () => {
  const l = new SlidingWindowLimiter(2, 1000);
  l.take('k', T0);
  l.take('k', T0);
  for (let i = 0; i < 100; i++) assert.equal(l.take('k', T0 + i).allowed, false);
  assert.equal(l.take('k', T0 + 1000).allowed, true);
});

test('each key has its own budget', () => {
  const l = new SlidingWindowLimiter(1, 1000);
  assert.equal(l.take('a', T0).allowed, true);
  assert.equal(l.take('a', T0).allowed, false);
  assert.equal(l.take('b', T0).allowed, true);
});

test('a clock stepping backwards does not reopen a window', () => {
  const l = new SlidingWindowLimiter(1, 60_000);
  l.take('k', T0);
  const back = l.take('k', T0 - 120_000);
  assert.equal(back.allowed, false);
  assert.equal(back.resetMs, 60_000);
});

test('limiter memory stays bounded: 100,000 distinct tokens are forgotten once their window has passed', () => {
  const l = new SlidingWindowLimiter(30, 60_000, 200_000);
  for (let i = 0; i < 100_000; i++) l.take(`agent:${i}`, T0 + (i % 1000));
  assert.equal(l.size, 100_000);
  // One more request after the window: the sweep forgets every idle key.
  l.take('late', T0 + 61_000);
  assert.equal(l.size, 1);
  assert.equal(l.evictions, 0);
});

test('a key counted again becomes the most recent: the cap and the sweep forget the idle key instead', () => {
  const l = new SlidingWindowLimiter(5, 60_000, 3);
  l.take('a', T0);
  l.take('b', T0 + 1);
  l.take('c', T0 + 2);
  l.take('a', T0 + 3);
  l.take('d', T0 + 4);
  assert.equal(l.evictions, 1);
  assert.equal(l.take('a', T0 + 5).remaining, 2, 'a kept its count');
  assert.equal(l.take('b', T0 + 6).remaining, 4, 'b was forgotten and starts over');
  const s = new SlidingWindowLimiter(5, 60_000);
  s.take('x', T0);
  s.take('y', T0 + 1);
  s.take('x', T0 + 50_000);
  s.sweep(T0 + 60_001);
  assert.equal(s.size, 1, 'y left the window; x was counted 10 s ago');
  assert.equal(s.take('x', T0 + 60_002).remaining, 3, 'x kept its recent count');
});

test('limiter memory has a hard cap: at the cap the least recently counted key is forgotten', () => {
  assert.ok(RATE_LIMIT_KEYS_MAX >= 10_000);
  const l = new SlidingWindowLimiter(5, 3_600_000, 1000);
  for (let i = 0; i < 100_000; i++) {
    l.take(`ip:${i}`, T0 + i);
    assert.ok(l.size <= 1000);
  }
  assert.equal(l.size, 1000);
  assert.equal(l.evictions, 99_000);
  // The default cap applies to the production limiters.
  const limits = new RateLimits(() => T0);
  assert.equal(limits.writes.limiter.maxKeys, RATE_LIMIT_KEYS_MAX);
  assert.equal(limits.registrations.limiter.maxKeys, RATE_LIMIT_KEYS_MAX);
  // The most recently counted keys survive and keep their count.
  for (let i = 0; i < 5 - 1; i++) l.take('ip:99999', T0 + 100_000);
  assert.equal(l.take('ip:99999', T0 + 100_000).allowed, false);
});

test('the RateLimit fields name the policy, its quota and window, what remains and whole seconds until the next slot frees; the deprecated fields repeat the numbers', () => {
  const h = rateLimitHeaders('write', { allowed: true, limit: 30, remaining: 29, resetMs: 59_001 }, 60_000);
  assert.deepEqual(h, {
    RateLimit: '"write";r=29;t=60',
    'RateLimit-Policy': '"write";q=30;w=60',
    'RateLimit-Limit': '30',
    'RateLimit-Remaining': '29',
    'RateLimit-Reset': '60',
  });
  const refused = rateLimitHeaders('registration', { allowed: false, limit: 5, remaining: 0, resetMs: 1 }, 3_600_000);
  assert.equal(refused.RateLimit, '"registration";r=0;t=1');
  assert.equal(refused['RateLimit-Policy'], '"registration";q=5;w=3600');
});

test('limitFromHeaders reads a refusal\'s RateLimit fields back as the facts GET /api/limits lists, and nothing from other headers', () => {
  const h = rateLimitHeaders('changeRead', { allowed: false, limit: 60, remaining: 0, resetMs: 12_500 }, 60_000);
  assert.deepEqual(limitFromHeaders(h), { policy: 'changeRead', scope: 'token', unit: 'requests', quota: 60, windowSeconds: 60, remaining: 0, resetSeconds: 13 });
  assert.equal(limitFromHeaders({ 'Retry-After': '5' }), null);
  assert.equal(limitFromHeaders({ RateLimit: '"write";r=0;t=5', 'RateLimit-Policy': '"changeRead";q=60;w=60' }), null, 'the two fields must name the same policy');
});

test('peek tells what a key has left without counting, and forgets nothing', () => {
  const l = new SlidingWindowLimiter(3, 60_000);
  assert.deepEqual(l.peek('a', T0), { allowed: true, limit: 3, remaining: 3, resetMs: 0 });
  l.take('a', T0);
  l.take('a', T0 + 10_000);
  assert.deepEqual(l.peek('a', T0 + 20_000), { allowed: true, limit: 3, remaining: 1, resetMs: 40_000 });
  assert.deepEqual(l.peek('a', T0 + 20_000), { allowed: true, limit: 3, remaining: 1, resetMs: 40_000 }, 'peeking counted nothing');
  l.take('a', T0 + 20_000);
  assert.equal(l.peek('a', T0 + 30_000).allowed, false);
  assert.deepEqual(l.peek('a', T0 + 60_000), { allowed: true, limit: 3, remaining: 1, resetMs: 10_000 }, 'the first request left the window');
});

test('the change-read limit allows 60 per agent per minute and answers 429 with Retry-After after that', () => {
  let now = T0;
  const limits = new RateLimits(() => now);
  const route = { method: 'GET', path: '/api/changes', rateLimit: 'changeRead' };
  const ctx = (id) => ({ agent: { profile: { id } }, clientIp: '127.0.0.1' });
  for (let i = 0; i < CHANGE_READS_PER_TOKEN_PER_MINUTE; i++) {
    const res = fakeRes();
    limits.afterAuth(route, ctx('ag_1'), res);
    assert.equal(res.headers['ratelimit-remaining'], String(CHANGE_READS_PER_TOKEN_PER_MINUTE - 1 - i));
  }
  now += 30_000;
  const res = fakeRes();
  assert.throws(() => limits.afterAuth(route, ctx('ag_1'), res), (err) => {
    assert.equal(err.status, 429);
    assert.match(err.message, /60 change reads per token per minute/);
    assert.equal(err.headers['Retry-After'], '30');
    assert.equal(err.headers['RateLimit-Remaining'], '0');
    return true;
  });
  assert.equal(res.headers['ratelimit-limit'], '60');
  // Another agent and a write by the same agent are separate budgets.
  limits.afterAuth(route, ctx('ag_2'), fakeRes());
  limits.afterAuth({ ...route, method: 'POST', rateLimit: 'write' }, ctx('ag_1'), fakeRes());
  now += 30_000;
  limits.afterAuth(route, ctx('ag_1'), fakeRes());
});

test('routes without a rate-limit class get no RateLimit headers from the per-agent limits', () => {
  const limits = new RateLimits(() => T0);
  const res = fakeRes();
  limits.afterAuth({ method: 'GET', path: '/api/rooms' }, { agent: { profile: { id: 'a' } }, clientIp: '::1' }, res);
  limits.onRequest({ headers: {} }, '::1', res);
  assert.deepEqual(res.headers, {});
});

test('client IP: off ignores both forwarding headers; xff trusts only the right-most X-Forwarded-For hop; cloudflare only CF-Connecting-IP', () => {
  const req = (headers, remoteAddress = '10.0.0.1') => ({ headers, socket: { remoteAddress } });
  const off = clientIpResolver('off');
  const xff = clientIpResolver('xff');
  const cf = clientIpResolver('cloudflare');
  const spoof = { 'cf-connecting-ip': '203.0.113.9', 'x-forwarded-for': '198.51.100.1, 198.51.100.2' };
  assert.equal(off(req(spoof)), '10.0.0.1');
  assert.equal(xff(req(spoof)), '198.51.100.2', 'right-most hop, added by our proxy; CF-Connecting-IP ignored');
  assert.equal(cf(req(spoof)), '203.0.113.9', 'X-Forwarded-For ignored');
  assert.equal(xff(req({ 'cf-connecting-ip': '203.0.113.9' })), '10.0.0.1', 'xff mode never reads CF-Connecting-IP');
  assert.equal(cf(req({ 'x-forwarded-for': '198.51.100.2' })), '10.0.0.1', 'cloudflare mode never reads X-Forwarded-For');
  assert.equal(xff(req({ 'x-forwarded-for': ['1.1.1.1', '198.51.100.3'] })), '198.51.100.3');
  assert.equal(xff(req({ 'x-forwarded-for': '2001:db8::1' })), '2001:db8::1');
  assert.equal(xff(req({ 'x-forwarded-for': 'garbage' })), '10.0.0.1', 'a value that is not an IP falls back to the socket');
  assert.equal(cf(req({ 'cf-connecting-ip': 'nope' })), '10.0.0.1');
  assert.equal(xff(req({})), '10.0.0.1');
  assert.equal(cf(req({})), '10.0.0.1');
});

test('client IP, xff: the right-most untrusted hop counts; the operator\'s own proxies (loopback, private, unique-local) are skipped', () => {
  const xff = clientIpResolver('xff');
  const req = (value) => ({ headers: { 'x-forwarded-for': value }, socket: { remoteAddress: '127.0.0.1' } });
  assert.equal(xff(req('198.51.100.1, 203.0.113.7, 10.0.0.5')), '203.0.113.7', 'a tunnel in front of a local nginx: the nginx hop is skipped');
  assert.equal(xff(req('203.0.113.7, 127.0.0.1, 192.168.1.2')), '203.0.113.7');
  assert.equal(xff(req('2001:db8::7, fd00::1, ::1')), '2001:db8::7');
  assert.equal(xff(req('203.0.113.7:5678')), '203.0.113.7', 'a port is dropped');
  assert.equal(xff(req('[2001:db8::7]:443, 172.16.0.9')), '2001:db8::7');
  assert.equal(xff(req('192.168.1.20, 10.0.0.5')), '192.168.1.20', 'all hops private: the left-most, a client on the operator network');
  assert.equal(xff(req('203.0.113.7, garbage, 10.0.0.5')), '10.0.0.5', 'nothing left of a hop that is no address is trusted');
  assert.equal(xff(req('198.51.100.1, 172.32.0.1')), '172.32.0.1', '172.32/16 is not private');
  for (const ip of ['127.0.0.1', '10.1.2.3', '172.31.255.255', '192.168.0.1', '169.254.1.1', '100.64.0.1', '::1', 'fd12::1', 'fe80::1', '::ffff:10.0.0.1']) assert.ok(isProxyAddress(ip), ip);
  for (const ip of ['8.8.8.8', '172.15.0.1', '100.128.0.1', '2001:db8::1', '::ffff:8.8.8.8']) assert.ok(!isProxyAddress(ip), ip);
});

test('FORUM_TRUST_PROXY accepts off (default), xff and cloudflare; any other value, including on, is refused naming the valid values', () => {
  const base = { FORUM_DATA_DIR: '/tmp/unused' };
  assert.equal(loadConfig(base).trustProxy, 'off');
  assert.equal(loadConfig({ ...base, FORUM_TRUST_PROXY: '' }).trustProxy, 'off');
  assert.equal(loadConfig({ ...base, FORUM_TRUST_PROXY: 'xff' }).trustProxy, 'xff');
  assert.equal(loadConfig({ ...base, FORUM_TRUST_PROXY: 'Cloudflare' }).trustProxy, 'cloudflare');
  for (const bad of ['on', 'true', '1', 'yes', 'x-forwarded-for', 'cf']) {
    assert.throws(() => loadConfig({ ...base, FORUM_TRUST_PROXY: bad }), new RegExp(`FORUM_TRUST_PROXY must be one of off, xff, cloudflare, got "${bad}"`));
  }
});

test('FORUM_PUBLIC_URL must be an http(s) base URL with a host and no credentials, query or fragment; a path prefix is allowed', () => {
  const base = { FORUM_DATA_DIR: '/tmp/unused' };
  assert.equal(loadConfig({ ...base, FORUM_PUBLIC_URL: 'https://forum.example.org/base/' }).publicUrl, 'https://forum.example.org/base');
  assert.equal(loadConfig({ ...base, FORUM_PUBLIC_URL: 'http://127.0.0.1:8080' }).publicUrl, 'http://127.0.0.1:8080');
  const refused = [
    ['https://admin:secret@forum.example.org', /must not carry a user name or password/],
    ['https://admin@forum.example.org', /must not carry a user name or password/],
    ['https://forum.example.org/?token=abc', /must not carry a query/],
    ['https://forum.example.org/#top', /must not carry a fragment/],
    ['https://forum.example.org/#', /must not carry a fragment/],
    ['ftp://forum.example.org', /must start with http:\/\/ or https:\/\//],
    ['javascript:alert(1)', /must start with http:\/\/ or https:\/\//],
    ['forum.example.org', /must be an absolute URL/],
  ];
  for (const [url, message] of refused) assert.throws(() => loadConfig({ ...base, FORUM_PUBLIC_URL: url }), message, url);
  // The message never repeats a password.
  assert.throws(() => loadConfig({ ...base, FORUM_PUBLIC_URL: 'https://u:hunter2@x.org' }), (err) => !err.message.includes('hunter2'));
});

test('the registration limit allows 5 per client IP per hour, counted in afterAuth', () => {
  const limits = new RateLimits(() => T0);
  const route = { method: 'POST', path: '/api/register', rateLimit: 'registration' };
  for (let i = 0; i < 5; i++) limits.afterAuth(route, { agent: null, clientIp: '203.0.113.1' }, fakeRes());
  assert.throws(() => limits.afterAuth(route, { agent: null, clientIp: '203.0.113.1' }, fakeRes()), (err) => err.status === 429);
  limits.afterAuth(route, { agent: null, clientIp: '203.0.113.2' }, fakeRes());
});

test('parser-error replies: 431 for header overflow, 408 for request timeouts, 400 otherwise, none after a reset', () => {
  const status = (code) => Number(/^HTTP\/1\.1 (\d+) /.exec(clientErrorReply(Object.assign(new Error('x'), { code })))[1]);
  assert.equal(status('HPE_HEADER_OVERFLOW'), 431);
  assert.equal(status('ERR_HTTP_REQUEST_TIMEOUT'), 408);
  assert.equal(status('HPE_INVALID_METHOD'), 400);
  assert.equal(status(undefined), 400);
  assert.equal(clientErrorReply(Object.assign(new Error('x'), { code: 'ECONNRESET' })), null);
  const reply = clientErrorReply(Object.assign(new Error('x'), { code: 'HPE_INVALID_METHOD' }));
  const [head, body] = reply.split('\r\n\r\n');
  assert.match(head, /\r\nX-Content-Type-Options: nosniff\r\n/);
  assert.match(head, /\r\nCache-Control: no-store\r\n/);
  assert.match(head, new RegExp(`\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`));
});

test('IPv4 addresses are their own key; IPv6 addresses share a key per /64 network', () => {
  assert.equal(ipRateKey('203.0.113.9'), '203.0.113.9');
  assert.equal(ipRateKey('::ffff:203.0.113.9'), '203.0.113.9');
  assert.equal(ipRateKey('2001:db8:1:2:aaaa::1'), '2001:db8:1:2:0:0:0:0/64');
  assert.equal(ipRateKey('2001:db8:1:2:ffff:ffff:ffff:ffff'), ipRateKey('2001:db8:1:2::'));
  assert.notEqual(ipRateKey('2001:db8:1:3::1'), ipRateKey('2001:db8:1:2::1'));
  assert.equal(ipRateKey('fe80::1%eth0'), 'fe80:0:0:0:0:0:0:0/64');
  assert.equal(ipRateKey('::1'), '0:0:0:0:0:0:0:0/64');
  assert.equal(ipRateKey('unknown'), 'unknown');
});

test('the free-space probe runs at most once per check interval', () => {
  let free = 10;
  const disk = new DiskSpace(() => free, DISK_CHECK_INTERVAL_MS);
  assert.equal(disk.freeBytes(T0), 10);
  free = 5;
  for (let i = 0; i < 1000; i++) assert.equal(disk.freeBytes(T0 + i), 10);
  assert.equal(disk.probes, 1);
  assert.equal(disk.freeBytes(T0 + DISK_CHECK_INTERVAL_MS), 5);
  assert.equal(disk.probes, 2);
});

/** A POST for the disk guard: a request with the given Content-Length, and a closable response. */
function postFor(contentLength) {
  const listeners = [];
  const headers = contentLength === undefined ? {} : { 'content-length': String(contentLength) };
  return {
    route: { method: 'POST' },
    ctx: { req: { headers } },
    res: { once: (event, fn) => event === 'close' && listeners.push(fn) },
    close: () => listeners.splice(0).forEach((fn) => fn()),
    listenerCount: () => listeners.length,
  };
}
const admit = (guard, p) => guard.afterAuth(p.route, p.ctx, p.res);

test('a failing free-space probe does not refuse writes', (t) => {
  t.mock.method(console, 'error', () => {});
  const disk = new DiskSpace(() => {
    throw new Error('ENOSYS');
  }, DISK_CHECK_INTERVAL_MS);
  const guard = new DiskGuard(disk, 100, () => T0);
  admit(guard, postFor(10));
  assert.equal(disk.freeBytes(T0), null);
});

test('the disk guard refuses a POST with 507 when its estimated bytes would cross the minimum, and never refuses reads', () => {
  const disk = (free) => new DiskSpace(() => free, DISK_CHECK_INTERVAL_MS);
  const MIN = 1_000_000;
  const need = 500 + RECORD_OVERHEAD_BYTES_MAX;
  new DiskGuard(disk(0), MIN, () => T0).afterAuth({ method: 'GET' });
  assert.throws(() => admit(new DiskGuard(disk(MIN + need - 1), MIN, () => T0), postFor(500)), (err) => err.status === 507 && /FORUM_MIN_FREE_BYTES/.test(err.message));
  admit(new DiskGuard(disk(MIN + need), MIN, () => T0), postFor(500));
  // A chunked body (no Content-Length) is counted at the largest body allowed.
  assert.throws(() => admit(new DiskGuard(disk(MIN + need), MIN, () => T0), postFor(undefined)), (err) => err.status === 507);
  admit(new DiskGuard(disk(MIN + BODY_BYTES_MAX + RECORD_OVERHEAD_BYTES_MAX), MIN, () => T0), postFor(undefined));
});

test('writes in flight are counted against the free space, so concurrent writes cannot all pass one measurement', () => {
  const MIN = 1_000_000;
  const need = 1000 + RECORD_OVERHEAD_BYTES_MAX;
  // The simulated disk: what answered writes put on it is gone from the free space.
  let onDisk = 0;
  const disk = new DiskSpace(() => MIN + 2.5 * need - onDisk, DISK_CHECK_INTERVAL_MS);
  const guard = new DiskGuard(disk, MIN, () => T0);
  const first = postFor(1000);
  admit(guard, first);
  admit(guard, postFor(1000));
  assert.throws(() => admit(guard, postFor(1000)), (err) => err.status === 507, 'the third would cross the floor');
  assert.equal(disk.probes, 3, 'near the floor every write measures');
  first.close();
  onDisk += need;
  assert.throws(() => admit(guard, postFor(1000)), (err) => err.status === 507, 'the answered write is on disk, the other still in flight');
});

test('far above the floor, answered writes are subtracted from the cached measurement until the next one', () => {
  const free = DISK_RECHECK_MARGIN_BYTES * 4;
  const disk = new DiskSpace(() => free, DISK_CHECK_INTERVAL_MS);
  const guard = new DiskGuard(disk, 1_000_000, () => T0);
  const p = postFor(1000);
  admit(guard, p);
  assert.equal(disk.freeBytes(T0), free - 1000 - RECORD_OVERHEAD_BYTES_MAX, 'in flight');
  p.close();
  assert.equal(disk.freeBytes(T0), free - 1000 - RECORD_OVERHEAD_BYTES_MAX, 'answered');
  assert.equal(disk.probes, 1);
  assert.equal(disk.freeBytes(T0 + DISK_CHECK_INTERVAL_MS), free, 'a new measurement replaces the estimate');
});

test('near the floor a write re-measures at once, so space freed (or used) by others is seen without waiting', () => {
  const MIN = 1_000_000;
  let free = MIN;
  const disk = new DiskSpace(() => free, DISK_CHECK_INTERVAL_MS);
  const guard = new DiskGuard(disk, MIN, () => T0);
  assert.throws(() => admit(guard, postFor(10)), (err) => err.status === 507);
  free = MIN + 10 * 1024 * 1024;
  admit(guard, postFor(10));
  assert.equal(disk.probes, 2);
});

test('writes run for one response (an /mcp or A2A dispatch) share one close listener, and all their bytes are settled when it closes', () => {
  const free = DISK_RECHECK_MARGIN_BYTES * 4;
  const disk = new DiskSpace(() => free, DISK_CHECK_INTERVAL_MS);
  const guard = new DiskGuard(disk, 1_000_000, () => T0);
  const p = postFor(1000);
  for (let i = 0; i < 12; i++) admit(guard, p);
  assert.equal(p.listenerCount(), 1, 'one listener, not one per write (no MaxListenersExceededWarning past 10)');
  assert.equal(disk.freeBytes(T0), free - 12 * (1000 + RECORD_OVERHEAD_BYTES_MAX), 'every write is reserved');
  p.close();
  admit(guard, postFor(1000));
  assert.equal(disk.freeBytes(T0 + DISK_CHECK_INTERVAL_MS), free - 1000 - RECORD_OVERHEAD_BYTES_MAX, 'the closed response settled all twelve; the open one is still held');
});

test('the shutdown gate answers 503 with Retry-After and Connection: close to every request once stopping', () => {
  const gate = new ShutdownGate();
  gate.onRequest();
  gate.stopping = true;
  assert.throws(() => gate.onRequest(), (err) => {
    assert.equal(err.status, 503);
    assert.ok(Number(err.headers['Retry-After']) >= 1);
    assert.equal(err.headers.Connection, 'close');
    return true;
  });
});
