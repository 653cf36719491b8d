/**
 * A programmable fault-injecting HTTP proxy in front of an S3-compatible object store (issue 35
 * tests; issue 50's fault suite). A server under test is pointed at the proxy
 * (AWS_ENDPOINT_URL_S3) and the test decides, at run time and per kind of request, what the
 * object store does. Headers, Host included, are forwarded unchanged, so SigV4 signatures made for
 * the proxy's address still verify upstream.
 *
 * Request kinds (path-style S3, as the replication's SDK client sends them): `PUT` (PutObject),
 * `GET` (GetObject, HeadObject), `LIST` (a GET of the bucket: ListObjectsV2), `DELETE`
 * (DeleteObject, and the batch `POST ?delete`).
 *
 * Fault kinds (`addFault({ kind, ... })`), each applied to every matching request while it is
 * active (or to the next `count` of them):
 *  - `refuse`: the connection is reset at once (nothing reaches the store); adding it also resets
 *    every open (kept-alive) connection;
 *  - `reset`: the request is accepted and, `ms` later (default 20) while its body is still being
 *    read, the connection is reset (nothing reaches the store);
 *  - `stall`: the request is held `ms`, then forwarded (`then: 'forward'`, default) or the
 *    connection reset (`then: 'drop'`);
 *  - `delay`: forwarded after `ms`;
 *  - `error500`: answered `500 InternalError` (after `ms`, default 0), nothing reaches the store;
 *  - `slowDown`: answered `503 SlowDown` with S3's XML error body (after `ms`, default 0), nothing
 *    reaches the store;
 *  - `lostAnswer`: forwarded, the store applies it, and its answer is never delivered (the
 *    connection is reset once the store has answered).
 * Matching: `methods` (request kinds; all by default) and `key` (a RegExp tested on the object
 * key, the path after the bucket; every key by default). The first active matching fault wins.
 */
import { createServer, request } from 'node:http';

/** Request kinds a fault can select. */
export const REQUEST_KINDS = Object.freeze(['PUT', 'GET', 'LIST', 'DELETE']);
/** Fault kinds the proxy can inject. */
export const FAULT_KINDS = Object.freeze(['refuse', 'reset', 'stall', 'delay', 'error500', 'slowDown', 'lostAnswer']);

const S3_ERRORS = {
  error500: { status: 500, code: 'InternalError', message: 'We encountered an internal error. Please try again.' },
  slowDown: { status: 503, code: 'SlowDown', message: 'Please reduce your request rate.' },
};

/**
 * The request kind and object key of a path-style S3 request: PUT/GET (HEAD counts as GET)/LIST
 * (a GET of the bucket itself)/DELETE (a DELETE, or the batch delete `POST /bucket?delete`).
 * @param {string} method the HTTP method
 * @param {string} url the request target (`/bucket/key?query`)
 * @returns {{ kind: string, key: string }}
 */
export function requestKind(method, url) {
  const u = new URL(url, 'http://proxy');
  const parts = u.pathname.split('/');
  const key = decodeURIComponent(parts.slice(2).join('/'));
  if (method === 'DELETE' || (method === 'POST' && u.searchParams.has('delete'))) return { kind: 'DELETE', key };
  if (method === 'PUT') return { kind: 'PUT', key };
  if ((method === 'GET' || method === 'HEAD') && key === '') return { kind: 'LIST', key: u.searchParams.get('prefix') ?? '' };
  return { kind: 'GET', key };
}

/**
 * Starts a proxy to `upstream` (`http://host:port`) on 127.0.0.1 and a free port.
 * Resolves to a handle:
 *  - `endpoint`: the proxy's URL;
 *  - `addFault({ kind, methods?, key?, ms?, then?, count? })` → a fault id; throws on an unknown
 *    kind or request kind;
 *  - `removeFault(id)`, `clearFaults()`;
 *  - `journal(on)`: from now on (on = true) or no longer, every request that arrives is appended,
 *    in arrival order, to `requests` as `{ kind, key, inFlight }` (`inFlight`: the requests open
 *    at the proxy when it arrived, itself included); turning it on empties it;
 *  - `counts`: `requests` per request kind (everything that arrived), `forwarded`, and `faults`
 *    per fault kind (requests that fault hit);
 *  - `close()`: resets every connection and stops listening.
 */
export async function faultProxy(upstream) {
  const target = new URL(upstream);
  const faults = [];
  let nextId = 1;
  const counts = {
    requests: Object.fromEntries(REQUEST_KINDS.map((k) => [k, 0])),
    forwarded: 0,
    faults: Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])),
  };
  const sockets = new Set();
  const timers = new Set();
  const journal = { on: false, requests: [] };
  let open = 0;
  const later = (ms, fn) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn();
    }, ms);
    timers.add(timer);
  };

  /** The first active fault matching this request (its count is taken), or null. */
  const match = (kind, key) => {
    for (const f of faults) {
      if (f.methods !== null && !f.methods.includes(kind)) continue;
      if (f.key !== null && !f.key.test(key)) continue;
      if (f.count !== null) {
        f.count--;
        if (f.count <= 0) faults.splice(faults.indexOf(f), 1);
      }
      counts.faults[f.kind]++;
      return f;
    }
    return null;
  };

  /** Forwards `req` upstream; `lose`: the store's answer is read and the client's connection reset instead. */
  const forward = (req, res, lose) => {
    counts.forwarded++;
    const up = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (upRes) => {
      if (lose) {
        upRes.resume();
        upRes.on('end', () => req.socket.destroy());
        return;
      }
      res.writeHead(upRes.statusCode ?? 502, upRes.headers);
      upRes.pipe(res);
    });
    up.on('error', () => req.socket.destroy());
    req.pipe(up);
  };

  const answerError = (req, res, which) => {
    const e = S3_ERRORS[which];
    const body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${e.code}</Code><Message>${e.message}</Message><Resource>${req.url}</Resource><RequestId>fault-proxy</RequestId></Error>`;
    req.resume();
    const send = () => {
      if (res.destroyed) return;
      res.writeHead(e.status, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    };
    if (req.complete) send();
    else req.once('end', send);
  };

  const server = createServer((req, res) => {
    const { kind, key } = requestKind(req.method ?? 'GET', req.url ?? '/');
    counts.requests[kind]++;
    open++;
    res.once('close', () => open--);
    if (journal.on) journal.requests.push({ kind, key, inFlight: open });
    const f = match(kind, key);
    if (f === null) return forward(req, res, false);
    switch (f.kind) {
      case 'refuse':
        req.socket.destroy();
        return;
      case 'reset':
        req.once('data', () => req.socket.destroy());
        later(f.ms ?? 20, () => req.socket.destroy());
        return;
      case 'stall':
        later(f.ms ?? 1000, () => (f.then === 'drop' ? req.socket.destroy() : forward(req, res, false)));
        return;
      case 'delay':
        later(f.ms ?? 100, () => forward(req, res, false));
        return;
      case 'error500':
      case 'slowDown':
        later(f.ms ?? 0, () => answerError(req, res, f.kind));
        return;
      case 'lostAnswer':
        forward(req, res, true);
        return;
    }
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));

  return {
    endpoint: `http://127.0.0.1:${server.address().port}`,
    counts,
    requests: journal.requests,
    journal(on) {
      if (on) journal.requests.length = 0;
      journal.on = on;
    },
    addFault({ kind, methods = null, key = null, ms, then = 'forward', count = null }) {
      if (!FAULT_KINDS.includes(kind)) throw new Error(`unknown fault kind ${JSON.stringify(kind)}: one of ${FAULT_KINDS.join(', ')}`);
      for (const m of methods ?? []) if (!REQUEST_KINDS.includes(m)) throw new Error(`unknown request kind ${JSON.stringify(m)}: one of ${REQUEST_KINDS.join(', ')}`);
      const id = nextId++;
      faults.push({ id, kind, methods, key, ms, then, count });
      // A store that refuses connections also drops the ones it had open.
      if (kind === 'refuse' && methods === null && key === null) for (const s of sockets) s.destroy();
      return id;
    },
    removeFault(id) {
      const i = faults.findIndex((f) => f.id === id);
      if (i >= 0) faults.splice(i, 1);
    },
    clearFaults() {
      faults.length = 0;
    },
    /** The faults now active: [{ id, kind, methods, key, ms, then, count }]. */
    active: () => faults.map((f) => ({ ...f })),
    async close() {
      faults.length = 0;
      for (const timer of timers) clearTimeout(timer);
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
