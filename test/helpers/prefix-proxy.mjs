/**
 * Loopback reverse proxies for tests, all built on `loopbackProxy`: one that serves a forum under
 * a path prefix (as an operator's proxy would for FORUM_PUBLIC_URL=http://host/forum/), one that
 * adds a bearer token (a client that cannot send one). Each is closed after the test.
 */
import { createServer, request } from 'node:http';

/**
 * A proxy on 127.0.0.1 that sends each request to the URL `upstream(req)` returns, with the headers
 * `headersOf(req)` returns (default: the request's own), and relays the answer. `upstream` may
 * answer `null` to have the proxy answer 404 itself. `intercept(req, res, relay)`, when given,
 * decides per request: call `relay(onResponse?)` to forward (`onResponse(r, res)` replaces the
 * default pipe of the answer), or answer `res` itself. Resolves to the proxy's base URL.
 */
export async function loopbackProxy(t, { upstream, headersOf = (req) => req.headers, intercept }) {
  const proxy = createServer((req, res) => {
    const relay = (onResponse) => {
      const url = upstream(req);
      if (url === null) return res.writeHead(404, { 'content-type': 'text/plain' }).end('outside the prefix');
      const up = request(url, { method: req.method, headers: headersOf(req) }, (r) => {
        if (onResponse) return onResponse(r, res);
        res.writeHead(r.statusCode, r.headers);
        r.pipe(res);
      });
      up.on('error', () => res.writeHead(502).end());
      req.pipe(up);
    };
    if (intercept) intercept(req, res, relay);
    else relay();
  });
  await new Promise((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => { proxy.closeAllConnections(); proxy.close(resolve); }));
  return `http://127.0.0.1:${proxy.address().port}`;
}

/** Resolves to `{ url, setTarget(url) }`; `url` is the prefixed public base, without a trailing slash. */
export async function prefixProxy(t) {
  let target = null;
  const base = await loopbackProxy(t, { upstream: (req) => (req.url.startsWith('/forum/') ? `${target}${req.url.slice('/forum'.length)}` : null) });
  return { url: `${base}/forum`, setTarget: (url) => { target = url; } };
}

/** A proxy to `target` that sets `Authorization: Bearer <token>` on every request. */
export function authProxy(t, target, token) {
  return loopbackProxy(t, { upstream: (req) => `${target}${req.url}`, headersOf: (req) => ({ ...req.headers, authorization: `Bearer ${token}` }) });
}
