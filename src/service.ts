/**
 * Starts and stops the whole service: open the app (lock + replay), the admin channel and the
 * public listener. Used by `dist/server.js` and by in-process tests that need an injected clock.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { App } from './app.js';
import type { Clock } from './clock.js';
import type { Config } from './config.js';
import { startAdminChannel } from './admin/channel.js';
import { publicRoutes } from './api/routes.js';
import { mcpOriginGuard } from './api/mcp/routes.js';
import { countStreamPages, feedSample, releaseFeedWaiters } from './api/feeds/routes.js';
import { reportRateLimits } from './api/limits/routes.js';
import { createRequestListener, type Guards } from './http/server.js';
import { createHttpServer, type ServerTimeouts } from './http/connections.js';
import { clientIpResolver } from './http/client-ip.js';
import { composeGuards, DiskGuard, ShutdownGate } from './http/guards.js';
import { RateLimits } from './http/rate-limit.js';
import type { Route } from './http/router.js';
import { DISK_CHECK_INTERVAL_MS, METRICS_HOST, START_GC_LOG_MS } from './constants.js';
import { DiskSpace, statfsFreeBytes, type FreeBytesProbe } from './store/disk.js';
import { logger } from './logger.js';
import { LOG_DIR, type LogOptions } from './store/log.js';
import { listSegments } from './store/segment.js';
import { Metrics } from './metrics.js';
import { collectGarbageNow } from './memory.js';
import { hashToken } from './domain/agents/agents.js';
import { Replication, prepareFollowerFolder } from './replication.js';

/** Whether `req` carries the token of an enabled operator (issue 38: operators are not counted against the public total). */
function operatorToken(app: App, req: IncomingMessage): boolean {
  const m = /^Bearer +(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  const entry = m ? app.state.agents.byTokenHash.get(hashToken(m[1]!)) : undefined;
  return entry !== undefined && !entry.disabled && entry.profile.role === 'operator';
}

/** A running service: the app, both listeners, the bound URL and its protections. */
export interface Service {
  app: App;
  server: Server;
  admin: Server;
  /** Base URL the public listener is bound to (http://host:port). */
  url: string;
  /** URL of the metrics (http://127.0.0.1:port/metrics), or null when FORUM_METRICS_PORT is unset. */
  metricsUrl: string | null;
  /** The operator protections in front of the routes (issue 7); exposed for tests and status. */
  protections: {
    /** The rate limits, or null when FORUM_RATE_LIMITS=off. */
    rateLimits: RateLimits | null;
    /** The cached free-space measurement behind the low-disk 507. */
    disk: DiskSpace;
    /** Set by close(): requests still arriving get 503. */
    shutdown: ShutdownGate;
  };
  /**
   * Marks the service as stopping (requests still arriving get 503), stops accepting, finishes
   * in-flight requests, flushes, releases the lock.
   */
  close(): Promise<void>;
}

/**
 * Starts the service. Input: configuration and options:
 * - `clock`: time source (tests pass a ManualClock); rate limits and the disk cache use it too;
 * - `log`: log options;
 * - `guards`: extra guards, run after the built-in protections (shutdown 503, rate limits 429
 *   unless `config.rateLimits` is false, low disk 507);
 * - `routes`: the route table (default `publicRoutes()`; tests may add routes);
 * - `freeBytes`: free-space probe for the low-disk 507 (default `statfs` of the data folder;
 *   tests simulate a full disk with it);
 * - `timeouts`: server timeouts (tests shorten them).
 * Throws StoreStateError / LogCorruptError when the data folder cannot be opened.
 */
export async function startService(
  config: Config,
  opts: {
    clock?: Clock;
    log?: LogOptions;
    guards?: (app: App) => Guards;
    routes?: readonly Route[];
    freeBytes?: FreeBytesProbe;
    timeouts?: ServerTimeouts;
    /** Most connections held open at once (default CONNECTIONS_MAX); tests lower it. */
    connectionsMax?: number;
  } = {},
): Promise<Service> {
  // Metrics exist only when their listener is configured; the log's hook is bound before they are.
  let metrics: Metrics | null = null;
  const logOptions: LogOptions = {
    ...opts.log,
    onFsync: (records, bytes, fsyncMs) => {
      metrics?.groupCommit(records, bytes, fsyncMs);
      opts.log?.onFsync?.(records, bytes, fsyncMs);
    },
  };
  await prepareFollowerFolder(config);
  const app = await App.open(config, { clock: opts.clock, log: logOptions });
  let replica: Replication | null;
  try {
    app.startCheckpoints();
    replica = await Replication.open(app, config);
  } catch (err) {
    await app.close();
    throw err;
  }
  // The load's garbage (a deserialized snapshot or a replay) goes back to the OS before the
  // first request, not whenever V8 next needs a full GC (src/memory.ts; issue 17's RSS target).
  const gcMs = collectGarbageNow();
  if (gcMs !== null && gcMs >= START_GC_LOG_MS) logger.info('start_gc', `start: one full garbage collection after loading took ${Math.round(gcMs)} ms`, { ms: Math.round(gcMs) });
  const admin = await startAdminChannel(app);
  const now = () => app.now();
  const onLimited = (limit: string) => metrics?.rateLimited(limit);
  const protections = {
    rateLimits: config.rateLimits
      ? new RateLimits(now, {
          onLimited,
          clientSharePercent: config.clientSharePercent,
          isOperator: (req) => operatorToken(app, req),
          // Only behind a trusted proxy is a loopback client address the operator's own machine;
          // without one, the tunnel itself connects from loopback on behalf of everyone.
          exemptLoopback: config.trustProxy !== 'off',
        })
      : null,
    disk: new DiskSpace(opts.freeBytes ?? (() => statfsFreeBytes(config.dataDir)), DISK_CHECK_INTERVAL_MS),
    shutdown: new ShutdownGate(),
  };
  // A feed stream's pages after its first count as change reads of its agent (issue 37, part 8).
  const limits = protections.rateLimits;
  if (limits !== null) {
    countStreamPages(app, (agentId) => limits.takeChangeRead(agentId));
    reportRateLimits(app, limits);
  }
  const free = protections.disk.freeBytes(now());
  if (free !== null && free < config.minFreeBytes) {
    logger.warn(
      'read_only_start',
      `the disk under ${config.dataDir} has ${free} bytes free, below FORUM_MIN_FREE_BYTES (${config.minFreeBytes}): ` +
        'serving reads only; every write gets 507 until space is freed (no restart needed)',
    );
  }
  const guards = composeGuards(
    protections.shutdown,
    protections.rateLimits,
    replica?.guard(),
    new DiskGuard(protections.disk, config.minFreeBytes, now),
    // POST /mcp: a foreign Origin is 403 before authentication (MCP transport spec, DNS rebinding).
    mcpOriginGuard(app),
    opts.guards?.(app),
  );
  if (config.metricsPort !== null) {
    metrics = new Metrics({
      headSeq: () => app.log.headSeq,
      durableSeq: () => app.log.durableSeq,
      loneFsyncs: () => app.log.stats.loneFsyncs,
      logBytes: () => listSegments(join(config.dataDir, LOG_DIR)).reduce((n, seg) => n + seg.sizeBytes, 0),
      diskFreeBytes: () => protections.disk.freeBytes(now()),
      evictions: () => protections.rateLimits?.evictions() ?? {},
      scrub: () => app.scrubCounters(),
      replication: replica === null ? undefined : () => replica.sample(),
      feeds: () => feedSample(app),
    });
  }
  const metricsServer = metrics === null ? null : await metrics.listen(config.metricsPort!, METRICS_HOST);
  const listener = createRequestListener(app, opts.routes ?? publicRoutes(), {
    metrics,
    guards,
    clientIp: clientIpResolver(config.trustProxy),
    accessLog: config.accessLog,
    accessLogClientAddress: config.accessLogClientAddress,
  });
  const server = createHttpServer(listener, {
    timeouts: opts.timeouts,
    connectionsMax: opts.connectionsMax,
    connectionsPerAddress: config.connectionsPerAddress,
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  // No request has been handled yet (this runs in the same turn as 'listening'), so links built
  // from publicUrl never show the configured port 0.
  if (!config.publicUrlSet) app.config.publicUrl = `http://${host}:${addr.port}`;
  if (replica !== null) {
    try {
      await replica.startLeader();
    } catch (err) {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await new Promise<void>((resolve) => admin.close(() => resolve()));
      if (metricsServer) await new Promise<void>((resolve) => metricsServer.close(() => resolve()));
      await replica.close().catch(() => undefined);
      await app.close();
      throw err;
    }
  }
  app.startScrub();
  let closing: Promise<void> | null = null;
  return {
    app,
    server,
    admin,
    url: `http://${host}:${addr.port}`,
    metricsUrl: metricsServer === null ? null : `http://${METRICS_HOST}:${(metricsServer.address() as AddressInfo).port}/metrics`,
    protections,
    close() {
      // Requests that still arrive on kept-alive connections get 503 + Connection: close.
      protections.shutdown.stopping = true;
      // Held feed requests (long polls) are answered now, with the page they would get now.
      releaseFeedWaiters(app);
      closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        await closed;
        await new Promise<void>((resolve) => admin.close(() => resolve()));
        if (metricsServer) await new Promise<void>((resolve) => metricsServer.close(() => resolve()));
        await replica?.close();
        await app.close();
      })();
      return closing;
    },
  };
}
