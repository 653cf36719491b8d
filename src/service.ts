/**
 * Starts and stops the whole service: open the app (lock + replay), the admin channel and the
 * public listener. Used by `dist/server.js` and by in-process tests that need an injected clock.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { App } from './app.js';
import type { Clock } from './clock.js';
import type { Config } from './config.js';
import { startAdminChannel } from './admin/channel.js';
import { publicRoutes } from './api/routes.js';
import { createHttpServer, createRequestListener, type Guards, type ServerTimeouts } from './http/server.js';
import type { LogOptions } from './store/log.js';

export interface Service {
  app: App;
  server: Server;
  admin: Server;
  /** Base URL the public listener is bound to (http://host:port). */
  url: string;
  /** Stops accepting, finishes in-flight requests, flushes, releases the lock. */
  close(): Promise<void>;
}

/**
 * Starts the service. Input: configuration, optional clock, log options, guards and server
 * timeouts (tests shorten them).
 * Throws StoreStateError / LogCorruptError when the data folder cannot be opened.
 */
export async function startService(
  config: Config,
  opts: { clock?: Clock; log?: LogOptions; guards?: (app: App) => Guards; timeouts?: ServerTimeouts } = {},
): Promise<Service> {
  const app = await App.open(config, { clock: opts.clock, log: opts.log });
  const admin = await startAdminChannel(app);
  const listener = createRequestListener(app, publicRoutes(), { guards: opts.guards?.(app) });
  const server = createHttpServer(listener, opts.timeouts);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  let closing: Promise<void> | null = null;
  return {
    app,
    server,
    admin,
    url: `http://${host}:${addr.port}`,
    close() {
      closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        await closed;
        await new Promise<void>((resolve) => admin.close(() => resolve()));
        await app.close();
      })();
      return closing;
    },
  };
}
