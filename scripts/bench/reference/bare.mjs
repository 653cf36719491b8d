// HTTP ceiling for the benchmark: the cheapest possible node:http answer to
// GET /api/status. Whatever "ours" loses against this number is framework and
// application overhead, not Node's HTTP stack.
//
// Env: PORT (default 3000); BARE_STATUS=short answers the shorter status of
// earlier runs (a 159-byte body, two headers of its own) instead of the same
// bytes the service sends. Always binds 127.0.0.1.
import { randomUUID } from 'node:crypto';
import http from 'node:http';

// Pre-serialised once. The default is the service's own status answer (issue 56): a
// body of the same fields and length (~300 bytes) and the same headers, the request id
// minted per request the cheapest way (a per-process prefix and a counter, as the
// service does), so neither response size nor header count separates the servers.
const SHORT = process.env.BARE_STATUS === 'short';
const COMMON = { name: 'Agent Forum', version: '0.4.9', registeredAgents: 8, activeAgents: 8, writeStop: false, registrationOpen: true };
const BODY = Buffer.from(JSON.stringify(SHORT ? { ...COMMON, startedAt: '2026-01-01T00:00:00.000Z' } : {
  ...COMMON,
  originId: randomUUID(),
  time: new Date().toISOString(),
  archiveDamaged: false,
  checkpointKey: 'ed25519:fx2xg6pX2pnn22JkEK-f0MXsSxdCys0Dwdes-PbONDk',
}));
const ID_PREFIX = randomUUID().slice(0, 24);
let ids = 0;
const NOT_FOUND = Buffer.from('{"error":"not found"}');

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/api/status') {
    if (SHORT) {
      res.writeHead(200, ['content-type', 'application/json; charset=utf-8', 'content-length', BODY.length]);
    } else {
      const hex = (++ids).toString(16);
      res.writeHead(200, ['X-Content-Type-Options', 'nosniff', 'Cache-Control', 'no-store', 'Content-Type', 'application/json; charset=utf-8',
        'Content-Length', BODY.length, 'X-Request-Id', ID_PREFIX + '000000000000'.slice(hex.length) + hex]);
    }
    res.end(BODY);
    return;
  }
  res.writeHead(404, { 'content-type': 'application/json; charset=utf-8', 'content-length': NOT_FOUND.length });
  res.end(NOT_FOUND);
});

server.listen(Number(process.env.PORT) || 3000, '127.0.0.1');
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => server.close(() => process.exit(0)));
