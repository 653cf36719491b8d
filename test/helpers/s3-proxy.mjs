/**
 * A fault-injecting HTTP proxy in front of a test's object store (issue 35 tests): the server
 * under test is pointed at the proxy (AWS_ENDPOINT_URL_S3), and the test decides what the object
 * store does — answer normally, be down (every connection reset), or lose the answer of the next
 * PUT to a chunk (the PUT reaches the store; its response never reaches the server, as when a
 * connection drops after the store committed the write). Headers, Host included, are forwarded
 * unchanged, so SigV4 signatures made for the proxy's address still verify upstream.
 */
import { createServer, request } from 'node:http';

/**
 * Starts a proxy to `upstream` (http://host:port) on 127.0.0.1 and a free port; stopped after the
 * test. Resolves to { endpoint, setMode(mode), dropNextPutResponse(pattern), counts }, where mode
 * is 'up' or 'down', and counts has `puts`, `dropped` and `refused`.
 */
export async function s3Proxy(t, upstream) {
  const target = new URL(upstream);
  let mode = 'up';
  let drop = null;
  const counts = { puts: 0, dropped: 0, refused: 0 };
  const sockets = new Set();
  const server = createServer((req, res) => {
    if (mode === 'down') {
      counts.refused++;
      req.socket.destroy();
      return;
    }
    if (req.method === 'PUT') counts.puts++;
    const dropThis = drop !== null && req.method === 'PUT' && drop.test(req.url ?? '');
    if (dropThis) drop = null;
    const up = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (upRes) => {
      if (dropThis) {
        counts.dropped++;
        upRes.resume();
        upRes.on('end', () => req.socket.destroy());
        return;
      }
      res.writeHead(upRes.statusCode ?? 502, upRes.headers);
      upRes.pipe(res);
    });
    up.on('error', () => req.socket.destroy());
    req.pipe(up);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return {
    endpoint: `http://127.0.0.1:${server.address().port}`,
    counts,
    /** 'up': forward everything; 'down': reset every connection (kept-alive ones too). */
    setMode(next) {
      mode = next;
      if (next === 'down') for (const s of sockets) s.destroy();
    },
    /** The next PUT whose path matches `pattern` is forwarded, but its answer is never delivered. */
    dropNextPutResponse(pattern) {
      drop = pattern;
    },
  };
}
