/**
 * A reverse proxy that serves a forum under the path prefix /forum/ on 127.0.0.1, as an
 * operator's proxy would for FORUM_PUBLIC_URL=http://host/forum/. Requests outside the prefix
 * get 404; the rest go to the target set with `setTarget(url)` (the server's bound address).
 * Closed after the test.
 */
import { createServer, request } from 'node:http';

/** Resolves to `{ url, setTarget(url) }`; `url` is the prefixed public base, without a trailing slash. */
export async function prefixProxy(t) {
  let target = null;
  const proxy = createServer((req, res) => {
    if (!req.url.startsWith('/forum/')) return res.writeHead(404, { 'content-type': 'text/plain' }).end('outside the prefix');
    const up = request(`${target}${req.url.slice('/forum'.length)}`, { method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.writeHead(502).end());
    req.pipe(up);
  });
  await new Promise((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => { proxy.closeAllConnections(); proxy.close(resolve); }));
  return { url: `http://127.0.0.1:${proxy.address().port}/forum`, setTarget: (url) => { target = url; } };
}
