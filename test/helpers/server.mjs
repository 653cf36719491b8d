/**
 * Test helpers: start the built server (`dist/server.js`) as a real child process on a temp data
 * folder and a free port, speak HTTP to it with undici, run the CLI, and clean up through the
 * test context (hypercore's `create(t)` pattern), so no test leaks a server or a folder.
 */
import { after, before } from 'node:test';
import { spawn, spawnSync, execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { request } from 'undici';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const SERVER_JS = join(ROOT, 'dist', 'server.js');
export const CLI_JS = join(ROOT, 'dist', 'cli.js');
const execFileP = promisify(execFile);

/**
 * The text of a server's log output for matching: each JSON log line (src/logger.ts) becomes its
 * `msg` (unescaped); other lines stay as they are.
 */
export function logText(output) {
  return String(output ?? '')
    .split('\n')
    .map((line) => {
      if (!line.startsWith('{')) return line;
      try {
        const o = JSON.parse(line);
        return typeof o.msg === 'string' ? o.msg : line;
      } catch {
        return line;
      }
    })
    .join('\n');
}

/** Stop functions of the servers started on a folder, run before a temp folder holding it is removed. */
const stoppers = new Map();

/**
 * Registers `stop` (async) to run before any temp folder holding `dataDir` is removed, so a
 * folder never goes while a server still writes into it (test hooks run in the order they were
 * added, and a test may create its folder before it starts the server).
 */
export function stopBeforeRemoving(dataDir, stop) {
  stoppers.set(stop, dataDir);
}

/** A fresh temp folder removed after the test, once every server started on it has stopped. */
export function tempDir(t, prefix = 'forum-test-') {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(async () => {
    for (const [stop, dataDir] of stoppers) {
      if (dataDir === dir || dataDir.startsWith(dir + sep)) {
        stoppers.delete(stop);
        await stop();
      }
    }
    rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  });
  return dir;
}

/**
 * Starts `node dist/server.js` (or `opts.serverJs`, another copy's) on `dataDir` (a new temp dir
 * by default) and port 0, with `opts.env` added to the environment.
 * Resolves to a handle: { url, dataDir, proc, stop(), kill9(), restart(), http helpers }.
 * The server is stopped after the test.
 */
export async function startServer(t, opts = {}) {
  const dataDir = opts.dataDir ?? tempDir(t);
  const handle = { dataDir, proc: null, url: null, stdout: '', stderr: '' };
  const env = { ...process.env, PORT: '0', HOST: '127.0.0.1', FORUM_DATA_DIR: dataDir, FORUM_RATE_LIMITS: 'off', ...opts.env };

  handle.start = async () => {
    const proc = spawn(process.execPath, [opts.serverJs ?? SERVER_JS], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    handle.proc = proc;
    handle.stdout = '';
    handle.stderr = '';
    proc.stderr.on('data', (d) => (handle.stderr += d));
    proc.stdout.on('data', (d) => (handle.stdout += d));
    handle.url = await new Promise((resolve, reject) => {
      const onData = () => {
        const line = handle.stdout.split('\n').find((l) => l.includes('"listening"'));
        if (line) {
          proc.stdout.off('data', onData);
          resolve(JSON.parse(line).url);
        }
      };
      proc.stdout.on('data', onData);
      proc.once('exit', (code) => reject(new Error(`server exited with ${code} before listening: ${logText(handle.stderr)}`)));
    });
    return handle;
  };
  /** Graceful stop (SIGTERM); resolves to the exit code. */
  handle.stop = async (signal = 'SIGTERM') => {
    const proc = handle.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return proc?.exitCode ?? null;
    const exited = new Promise((resolve) => proc.once('exit', (code, sig) => resolve(code ?? sig)));
    proc.kill(signal);
    return exited;
  };
  /** Crash: SIGKILL, no chance to flush. */
  handle.kill9 = () => handle.stop('SIGKILL');
  handle.restart = async () => {
    await handle.stop();
    return handle.start();
  };
  handle.request = (method, path, { body, token, headers = {}, raw } = {}) =>
    api(handle.url, method, path, { body, token, headers, raw });
  handle.get = (path, token, headers) => handle.request('GET', path, { token, headers });
  handle.post = (path, body, token, headers) => handle.request('POST', path, { body, token, headers });
  handle.cli = (...args) => cli(['--data-dir', dataDir, ...args]);
  handle.register = (name = 'agent') => register(handle, name);

  const kill = () => handle.stop('SIGKILL');
  stopBeforeRemoving(dataDir, kill);
  t.after(kill);
  await handle.start();
  return handle;
}

/**
 * One HTTP request. `body` is JSON-encoded unless `raw` is given. Resolves to
 * { status, headers, body (parsed JSON or text) }.
 */
export async function api(base, method, path, { body, token, headers = {}, raw } = {}) {
  const h = { ...headers };
  if (token) h.authorization = `Bearer ${token}`;
  let payload = raw;
  if (body !== undefined && raw === undefined) {
    payload = JSON.stringify(body);
    h['content-type'] ??= 'application/json';
  }
  const res = await request(base + path, { method, headers: h, body: payload });
  const text = await res.body.text();
  let parsed = text;
  if ((res.headers['content-type'] ?? '').includes('json') && text !== '') parsed = JSON.parse(text);
  return { status: res.statusCode, headers: res.headers, body: parsed };
}

/** Registers an agent; resolves to { id, token, ... }. */
export async function register(server, name = 'agent') {
  const res = await server.post('/api/register', { name, provider: 'test-lab', acceptsPublicArchive: true, operatorAuthorized: true });
  if (res.status !== 201) throw new Error(`register failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** Runs the CLI; resolves to { code, stdout, stderr, json } (json undefined for text output). Never throws on exit codes. */
export async function cli(args, env = {}) {
  try {
    const { stdout, stderr } = await execFileP(process.execPath, [CLI_JS, ...args], { env: { ...process.env, ...env } });
    let json;
    try {
      json = stdout.trim() ? JSON.parse(stdout) : undefined;
    } catch {
      json = undefined; // text output: --help, --version
    }
    return { code: 0, stdout, stderr, json };
  } catch (err) {
    return { code: err.code, stdout: err.stdout, stderr: err.stderr, json: undefined };
  }
}

/**
 * One server for a whole test file, whose tests each use their own agents and topics: registers
 * node:test `before`/`after` hooks (call it at module level) and returns an async getter of the
 * started handle. `opts` as for startServer.
 */
export function sharedServer(opts = {}) {
  let shared;
  const cleanups = [];
  before(async () => {
    shared = await startServer({ after: (fn) => cleanups.push(fn) }, opts);
  });
  after(async () => {
    for (const fn of cleanups.reverse()) await fn();
  });
  return async () => shared;
}

/** True when the shell command `cmd` is installed. */
export const which = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).status === 0;
