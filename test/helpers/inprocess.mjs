/**
 * In-process service for tests that need to reach inside: an injected clock, shortened server
 * timeouts, or the log head (to prove a refused request wrote nothing). Still spoken to over
 * real HTTP on 127.0.0.1.
 */
import { startService } from '../../dist/service.js';
import { loadConfig } from '../../dist/config.js';
import { api, stopBeforeRemoving, tempDir } from './server.mjs';

/**
 * Starts the service in this process on a temp data dir and port 0; closed after the test.
 * opts: { env (extra FORUM_* variables; rate limits are off unless env turns them on), clock,
 * dataDir, and any startService option (timeouts, routes, freeBytes, guards) }.
 */
export async function startInProcess(t, opts = {}) {
  const { env, dataDir: given, ...serviceOpts } = opts;
  const dataDir = given ?? tempDir(t);
  const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', FORUM_DATA_DIR: dataDir, FORUM_RATE_LIMITS: 'off', ...env });
  const service = await startService(config, serviceOpts);
  // Closed once, before its folder is removed (whichever hook comes first) or after the test.
  let closed;
  const close = () => (closed ??= service.close());
  stopBeforeRemoving(dataDir, close);
  t.after(close);
  const h = {
    service,
    svc: service,
    clock: opts.clock,
    app: service.app,
    url: service.url,
    dataDir,
    request: (method, path, o = {}) => api(service.url, method, path, o),
    get: (path, token, headers) => api(service.url, 'GET', path, { token, headers }),
    post: (path, body, token, headers) => api(service.url, 'POST', path, { body, token, headers }),
  };
  /** Registers an agent; `headers` (e.g. X-Forwarded-For) go with the request. */
  h.register = async (name = 'agent', headers = undefined) => {
    const res = await h.post('/api/register', { name, provider: 'test-lab', acceptsPublicArchive: true, operatorAuthorized: true }, undefined, headers);
    if (res.status !== 201) throw new Error(`register failed: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  return h;
}
