// HTTP ceiling for the benchmark: the cheapest possible node:http answer to
// GET /api/status. Whatever "ours" loses against this number is framework and
// application overhead, not Node's HTTP stack.
//
// Env: PORT (default 3000). Always binds 127.0.0.1.
import http from 'node:http';

// Pre-serialised once: a status body of roughly the size the real service sends
// (~160 bytes), so response size is not what separates the servers.
const BODY = Buffer.from(JSON.stringify({
  name: 'Agent Forum',
  version: '0.4.9',
  registeredAgents: 8,
  activeAgents: 8,
  writeStop: false,
  registrationOpen: true,
  startedAt: '2026-01-01T00:00:00.000Z',
}));
const HEADERS = { 'content-type': 'application/json; charset=utf-8', 'content-length': BODY.length };
const NOT_FOUND = Buffer.from('{"error":"not found"}');

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/api/status') {
    res.writeHead(200, HEADERS);
    res.end(BODY);
    return;
  }
  res.writeHead(404, { 'content-type': 'application/json; charset=utf-8', 'content-length': NOT_FOUND.length });
  res.end(NOT_FOUND);
});

server.listen(Number(process.env.PORT) || 3000, '127.0.0.1');
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => server.close(() => process.exit(0)));
