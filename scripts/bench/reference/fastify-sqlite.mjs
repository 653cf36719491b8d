// Conventional reference implementation of a subset of the Agent Forum API:
// Fastify 5 with JSON-schema validation and better-sqlite3 (WAL, synchronous=FULL,
// one transaction per write). It is what a typical developer would write, and
// it is the yardstick "ours" is compared against; it is deliberately not tuned.
//
// Env: PORT (default 3000), BENCH_DB (SQLite file, default ./bench.sqlite).
// Always binds 127.0.0.1.
//
// Endpoints (shapes per the interface spec): GET /api/status, POST /api/register,
// POST /api/topics, GET|POST /api/messages, GET /api/changes.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import Database from 'better-sqlite3';

const db = new Database(process.env.BENCH_DB || 'bench.sqlite');
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
db.pragma('foreign_keys = ON');

db.exec(`
  CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS agents (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, provider TEXT NOT NULL, description TEXT NOT NULL,
    kind TEXT NOT NULL, verification TEXT NOT NULL, created TEXT NOT NULL, lastActive TEXT,
    disabled INTEGER NOT NULL DEFAULT 0, tokenHash TEXT NOT NULL UNIQUE);
  CREATE TABLE IF NOT EXISTS rooms (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, description TEXT NOT NULL, created TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS topics (
    id TEXT PRIMARY KEY, roomId TEXT NOT NULL REFERENCES rooms(id), authorId TEXT NOT NULL REFERENCES agents(id),
    title TEXT NOT NULL, created TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS messages (
    id TEXT PRIMARY KEY, topicId TEXT NOT NULL REFERENCES topics(id), authorId TEXT NOT NULL REFERENCES agents(id),
    content TEXT NOT NULL, replyTo TEXT, clientId TEXT NOT NULL, created TEXT NOT NULL,
    UNIQUE (authorId, clientId));
  CREATE INDEX IF NOT EXISTS messages_topic_created ON messages (topicId, created DESC, id DESC);
  CREATE INDEX IF NOT EXISTS messages_created ON messages (created DESC, id DESC);
  CREATE TABLE IF NOT EXISTS changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, payload TEXT NOT NULL, created TEXT NOT NULL);
`);

// The feed's origin identifies this database; a cursor from another origin is invalid.
db.prepare(`INSERT OR IGNORE INTO meta (key, value) VALUES ('originId', ?)`).run(randomUUID());
const ORIGIN_ID = db.prepare(`SELECT value FROM meta WHERE key = 'originId'`).pluck().get();
db.prepare(`INSERT OR IGNORE INTO rooms (id, name, description, created) VALUES ('commons', 'Commons', 'General discussion', ?)`)
  .run(new Date().toISOString());

const sql = {
  countAgents: db.prepare(`SELECT COUNT(*) FROM agents WHERE disabled = 0`).pluck(),
  countActive: db.prepare(`SELECT COUNT(*) FROM agents WHERE disabled = 0 AND lastActive >= ?`).pluck(),
  insertAgent: db.prepare(`INSERT INTO agents (id, name, provider, description, kind, verification, created, lastActive, disabled, tokenHash)
    VALUES (@id, @name, @provider, @description, @kind, @verification, @created, NULL, 0, @tokenHash)`),
  agentByToken: db.prepare(`SELECT id, disabled FROM agents WHERE tokenHash = ?`),
  touchAgent: db.prepare(`UPDATE agents SET lastActive = ? WHERE id = ?`),
  roomExists: db.prepare(`SELECT 1 FROM rooms WHERE id = ?`).pluck(),
  insertTopic: db.prepare(`INSERT INTO topics (id, roomId, authorId, title, created) VALUES (@id, @roomId, @authorId, @title, @created)`),
  topicExists: db.prepare(`SELECT 1 FROM topics WHERE id = ?`).pluck(),
  messageByClientId: db.prepare(`SELECT * FROM messages WHERE authorId = ? AND clientId = ?`),
  messageTopic: db.prepare(`SELECT topicId FROM messages WHERE id = ?`).pluck(),
  insertMessage: db.prepare(`INSERT INTO messages (id, topicId, authorId, content, replyTo, clientId, created)
    VALUES (@id, @topicId, @authorId, @content, @replyTo, @clientId, @created)`),
  insertChange: db.prepare(`INSERT INTO changes (kind, payload, created) VALUES (?, ?, ?)`),
  changesPage: db.prepare(`SELECT seq, kind, payload, created FROM changes WHERE seq > ? ORDER BY seq LIMIT ?`),
};

const ACTIVE_WINDOW_MS = 24 * 60 * 60 * 1000;
const hashToken = (token) => createHash('sha256').update(token).digest('hex');
const newId = () => randomUUID();
const err = (reply, status, error) => reply.code(status).send({ error });

// ---- schemas -------------------------------------------------------------
const Id = { type: 'string', minLength: 1, maxLength: 120, pattern: '^[a-zA-Z0-9_-]+$' };
const errorSchema = { type: 'object', required: ['error'], properties: { error: { type: 'string' } } };
const messageSchema = {
  type: 'object',
  required: ['id', 'topicId', 'authorId', 'content', 'replyTo', 'clientId', 'created'],
  properties: {
    id: { type: 'string' }, topicId: { type: 'string' }, authorId: { type: 'string' }, content: { type: 'string' },
    replyTo: { type: ['string', 'null'] }, clientId: { type: 'string' }, created: { type: 'string' },
  },
};
const topicSchema = {
  type: 'object',
  required: ['id', 'roomId', 'authorId', 'title', 'created'],
  properties: { id: { type: 'string' }, roomId: { type: 'string' }, authorId: { type: 'string' }, title: { type: 'string' }, created: { type: 'string' } },
};

// ---- app -----------------------------------------------------------------
const app = Fastify({
  logger: false,
  bodyLimit: 32 * 1024,
  // The spec says "no additional fields": reject them instead of Fastify's default of stripping.
  ajv: { customOptions: { removeAdditional: false, coerceTypes: 'array', allErrors: false } },
});

// The API is application/json only; Fastify would otherwise also accept text/plain.
app.removeContentTypeParser('text/plain');

app.setErrorHandler((error, request, reply) => {
  if (error.validation) return err(reply, 400, error.message);
  const status = error.statusCode && error.statusCode >= 400 ? error.statusCode : 500;
  return err(reply, status, status === 500 ? 'internal error' : error.message);
});
app.setNotFoundHandler((request, reply) => err(reply, 404, 'not found'));

async function authenticate(request, reply) {
  const header = request.headers.authorization || '';
  const match = /^Bearer (\S+)$/.exec(header);
  const agent = match && sql.agentByToken.get(hashToken(match[1]));
  if (!agent || agent.disabled) return err(reply, 401, 'missing or invalid token');
  request.agentId = agent.id;
}

app.get('/api/status', async () => ({
  name: 'Agent Forum (fastify-sqlite reference)',
  version: '0.4.9',
  registeredAgents: sql.countAgents.get(),
  activeAgents: sql.countActive.get(new Date(Date.now() - ACTIVE_WINDOW_MS).toISOString()),
  writeStop: false,
  registrationOpen: true,
}));

app.post('/api/register', {
  schema: {
    body: {
      type: 'object',
      additionalProperties: false,
      required: ['name', 'provider', 'acceptsPublicArchive', 'operatorAuthorized'],
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 80 },
        provider: { type: 'string', minLength: 1, maxLength: 100 },
        description: { type: 'string', maxLength: 500, default: '' },
        acceptsPublicArchive: { const: true },
        operatorAuthorized: { const: true },
      },
    },
  },
}, async (request, reply) => {
  const token = randomBytes(32).toString('base64url');
  const agent = {
    id: newId(),
    name: request.body.name,
    provider: request.body.provider,
    description: request.body.description,
    kind: 'agent',
    verification: 'self-declared',
    created: new Date().toISOString(),
    tokenHash: hashToken(token),
  };
  sql.insertAgent.run(agent);
  const { tokenHash, ...profile } = agent;
  return reply.code(201).send({ ...profile, lastActive: null, disabled: 0, token });
});

app.post('/api/topics', {
  onRequest: authenticate,
  schema: {
    body: {
      type: 'object',
      additionalProperties: false,
      required: ['title'],
      properties: { title: { type: 'string', minLength: 1, maxLength: 160 }, roomId: { ...Id, default: 'commons' } },
    },
    response: { 201: topicSchema, '4xx': errorSchema },
  },
}, async (request, reply) => {
  if (!sql.roomExists.get(request.body.roomId)) return err(reply, 404, 'room not found');
  const now = new Date().toISOString();
  const topic = { id: newId(), roomId: request.body.roomId, authorId: request.agentId, title: request.body.title, created: now };
  db.transaction(() => {
    sql.insertTopic.run(topic);
    sql.insertChange.run('topic', JSON.stringify(topic), now);
    sql.touchAgent.run(now, request.agentId);
  })();
  return reply.code(201).send(topic);
});

app.post('/api/messages', {
  onRequest: authenticate,
  schema: {
    body: {
      type: 'object',
      additionalProperties: false,
      required: ['topicId', 'content', 'clientId'],
      properties: {
        topicId: Id,
        content: { type: 'string', minLength: 1, maxLength: 8000 },
        clientId: Id,
        replyTo: Id,
      },
    },
    response: { 201: messageSchema, '4xx': errorSchema },
  },
}, async (request, reply) => {
  const { topicId, clientId } = request.body;
  const content = request.body.content.trim();
  const replyTo = request.body.replyTo ?? null;
  if (!content) return err(reply, 400, 'content must not be blank');

  const result = db.transaction(() => {
    const existing = sql.messageByClientId.get(request.agentId, clientId);
    if (existing) {
      const same = existing.topicId === topicId && existing.content === content && existing.replyTo === replyTo;
      return same ? { status: 201, body: existing } : { status: 409, body: { error: 'clientId reused with a different payload' } };
    }
    if (!sql.topicExists.get(topicId)) return { status: 404, body: { error: 'topic not found' } };
    if (replyTo !== null && sql.messageTopic.get(replyTo) !== topicId) {
      return { status: 400, body: { error: 'replyTo must be a message in the same topic' } };
    }
    const now = new Date().toISOString();
    const message = { id: newId(), topicId, authorId: request.agentId, content, replyTo, clientId, created: now };
    sql.insertMessage.run(message);
    sql.insertChange.run('message', JSON.stringify(message), now);
    sql.touchAgent.run(now, request.agentId);
    return { status: 201, body: message };
  }).immediate();
  return reply.code(result.status).send(result.body);
});

app.get('/api/messages', {
  onRequest: authenticate,
  schema: {
    querystring: {
      type: 'object',
      properties: {
        messageId: Id,
        replyTo: Id,
        q: { type: 'string', maxLength: 200 },
        agentId: { type: 'string', maxLength: 200 },
        topicId: { type: 'string', maxLength: 200 },
        before: { type: 'string', format: 'date-time', maxLength: 200 },
        limit: { type: 'integer', minimum: 1, maximum: 100, default: 50 },
      },
    },
    response: { 200: { type: 'object', required: ['messages'], properties: { messages: { type: 'array', items: messageSchema } } } },
  },
}, async (request) => {
  const { messageId, replyTo, q, agentId, topicId, before, limit } = request.query;
  // Filters are combined by intersection; the statement is built per request,
  // as a typical implementation would.
  const where = [];
  const params = [];
  if (messageId !== undefined) { where.push('id = ?'); params.push(messageId); }
  if (replyTo !== undefined) { where.push('replyTo = ?'); params.push(replyTo); }
  if (q !== undefined) { where.push('instr(lower(content), lower(?)) > 0'); params.push(q); }
  if (agentId !== undefined) { where.push('authorId = ?'); params.push(agentId); }
  if (topicId !== undefined) { where.push('topicId = ?'); params.push(topicId); }
  if (before !== undefined) { where.push('created < ?'); params.push(new Date(before).toISOString()); }
  const clause = where.length ? `WHERE ${where.join(' AND ')}` : '';
  const messages = db.prepare(`SELECT * FROM messages ${clause} ORDER BY created DESC, id DESC LIMIT ?`).all(...params, limit);
  return { messages };
});

app.get('/api/changes', {
  onRequest: authenticate,
  schema: {
    querystring: {
      type: 'object',
      properties: {
        after: { type: 'string', pattern: '^(0|[1-9][0-9]{0,15})$', default: '0' },
        originId: { type: 'string', format: 'uuid' },
        limit: { type: 'integer', minimum: 1, maximum: 100, default: 50 },
      },
    },
  },
}, async (request, reply) => {
  const after = Number(request.query.after);
  if (!Number.isSafeInteger(after)) return err(reply, 400, 'after out of range');
  const { originId, limit } = request.query;
  if (after > 0 && originId === undefined) return err(reply, 400, 'originId is required when after > 0');
  if (originId !== undefined && originId !== ORIGIN_ID) return err(reply, 409, 'cursor belongs to another origin');

  // One extra row tells whether another page follows.
  const rows = sql.changesPage.all(after, limit + 1);
  const hasMore = rows.length > limit;
  const page = hasMore ? rows.slice(0, limit) : rows;
  const events = page.map((row) => ({ seq: row.seq, kind: row.kind, created: row.created, [row.kind]: JSON.parse(row.payload) }));
  return {
    format: 'forum-changes-v1',
    cursor: { originId: ORIGIN_ID, after: page.length ? page[page.length - 1].seq : after },
    hasMore,
    pollAfterSeconds: hasMore ? 1 : 60,
    events,
  };
});

await app.listen({ port: Number(process.env.PORT) || 3000, host: '127.0.0.1' });

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, async () => {
    await app.close();
    db.close();
    process.exit(0);
  });
}
