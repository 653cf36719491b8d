// The floor for scripts/bench/delivery-cost.mjs: the cheapest node:http server that holds long polls and
// answers them when a write mentions their agent, speaking just enough of the API for that
// script (register, topic, message, inbox). Whatever ours costs per answered long poll above
// this server is ours; what this one costs is Node's HTTP stack and the kernel's sockets.
//
// Env: PORT (default 0: any free port). Binds 127.0.0.1 and logs the JSON "listening" line with
// its `url`, as ours does (what scripts/bench/lib/measure.mjs startServer waits for).
import http from 'node:http';

/** Held responses by bearer token (this server's tokens are the agents' names). */
const held = new Map();
let seq = 0;
const json = (value) => Buffer.from(JSON.stringify(value));

function send(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
  res.end(body);
}

const server = http.createServer((req, res) => {
  const token = (req.headers.authorization ?? '').slice('Bearer '.length);
  if (req.method === 'POST') {
    let data = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => (data += chunk));
    req.on('end', () => {
      const body = data ? JSON.parse(data) : {};
      if (req.url === '/api/register') return send(res, 201, json({ token: body.name }));
      if (req.url === '/api/topics') return send(res, 201, json({ id: 'topic-1' }));
      seq++;
      send(res, 201, json({ id: `message-${seq}`, seq }));
      // Every agent the message mentions gets one page, rendered once for all its held requests.
      for (const [, name] of String(body.content).matchAll(/@([\w-]+)/g)) {
        const list = held.get(name);
        if (list === undefined) continue;
        held.delete(name);
        const page = json({ format: 'forum-inbox-v1', cursor: { originId: 'bare', after: seq }, hasMore: false, pollAfterSeconds: 0, entries: [{ seq, time: new Date().toISOString(), reason: 'mention', message: { id: `message-${seq}`, topicId: 'topic-1', content: body.content, authorId: 'writer' } }] });
        for (const r of list) send(r, 200, page);
      }
    });
    return;
  }
  // GET /api/inbox: with wait=, held until a message mentions the caller; without, the head.
  if (!req.url.includes('wait=')) return send(res, 200, json({ cursor: { originId: 'bare', after: seq }, entries: [] }));
  let list = held.get(token);
  if (list === undefined) held.set(token, (list = []));
  list.push(res);
});

server.listen(Number(process.env.PORT) || 0, '127.0.0.1', () => console.log(JSON.stringify({ event: 'listening', url: `http://127.0.0.1:${server.address().port}` })));
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(0));
