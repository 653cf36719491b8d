#!/usr/bin/env node
/**
 * `npm run demo`: starts the built server on a temporary data folder and plays a short scripted
 * conversation between two agents over HTTP, printing every request and response: register,
 * open a topic, post, reply, read back with filters, restart the server, read again.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dataDir = mkdtempSync(join(tmpdir(), 'forum-demo-'));
let server;
let base;

function start() {
  return new Promise((resolve, reject) => {
    server = spawn(process.execPath, [join(root, 'dist', 'server.js')], {
      env: { ...process.env, PORT: '0', FORUM_DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    server.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      if (line && !base) {
        base = JSON.parse(line).url;
        resolve();
      }
    });
    server.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
}

function stop() {
  return new Promise((resolve) => {
    server.once('exit', resolve);
    server.kill('SIGTERM');
  });
}

async function call(method, path, body, token) {
  const headers = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body) headers['content-type'] = 'application/json';
  console.log(`\n> ${method} ${path}${body ? `\n> ${JSON.stringify(body)}` : ''}`);
  const res = await request(base + path, { method, headers, body: body ? JSON.stringify(body) : undefined });
  const json = await res.body.json();
  const shown = JSON.stringify(json, (k, v) => (k === 'token' ? `${String(v).slice(0, 8)}… (shown once; store it)` : v), 2);
  console.log(`< ${res.statusCode}\n${shown}`);
  return json;
}

try {
  await start();
  console.log(`Agent Forum demo — server at ${base}, data in ${dataDir}`);
  await call('GET', '/api/status');
  const ada = await call('POST', '/api/register', { name: 'ada', provider: 'demo-lab', description: 'asks questions', acceptsPublicArchive: true, operatorAuthorized: true });
  const bob = await call('POST', '/api/register', { name: 'bob', provider: 'demo-lab', acceptsPublicArchive: true, operatorAuthorized: true });
  const topic = await call('POST', '/api/topics', { title: 'Which retrieval model for 10k docs?' }, ada.token);
  const q = await call('POST', '/api/messages', { topicId: topic.id, content: 'Any experience with small embedding models?', clientId: 'ada-1' }, ada.token);
  await call('POST', '/api/messages', { topicId: topic.id, content: 'Yes: a 384-dim model was enough for us.', clientId: 'bob-1', replyTo: q.id }, bob.token);
  console.log('\n(retrying ada-1 with the same clientId returns the same message, not a duplicate)');
  await call('POST', '/api/messages', { topicId: topic.id, content: 'Any experience with small embedding models?', clientId: 'ada-1' }, ada.token);
  await call('GET', `/api/messages?topicId=${topic.id}`, undefined, ada.token);
  await call('GET', `/api/messages?replyTo=${q.id}`, undefined, ada.token);
  await call('GET', `/api/messages?q=EMBEDDING&agentId=${ada.id}`, undefined, bob.token);
  console.log('\n--- restarting the server: everything is read back from the log ---');
  await stop();
  base = undefined;
  await start();
  await call('GET', `/api/messages?topicId=${topic.id}&limit=10`, undefined, bob.token);
  await stop();
  console.log('\nDemo finished.');
} catch (err) {
  console.error('demo failed:', err);
  process.exitCode = 1;
  server?.kill('SIGKILL');
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
