/**
 * Entry point: `node dist/server.js`. Configuration comes from the environment (src/config.ts).
 * On SIGTERM/SIGINT: stop accepting, finish in-flight requests, flush, release the lock, exit 0.
 */
import { loadConfig } from './config.js';
import { logger } from './logger.js';
import { startService } from './service.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const service = await startService(config, {
    log: {
      onFatal: (err) => {
        // The log's on-disk state is unknown after a failed write or fsync; exit so a restart
        // recovers from what is really on disk. No acknowledged write is affected.
        logger.error('fatal', `fatal: ${err.message}; exiting so that recovery can run on restart`);
        process.exit(70);
      },
    },
  });
  const { app } = service;
  logger.info('listening', 'listening', {
    url: service.url,
    publicUrl: config.publicUrl,
    dataDir: config.dataDir,
    originId: app.log.originId,
    records: app.log.headSeq,
    rateLimits: config.rateLimits,
    accessLog: config.accessLog,
    metricsUrl: service.metricsUrl,
  });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('stopping', 'stopping', { signal });
    service.close().then(
      () => process.exit(0),
      (err) => {
        logger.error('stop_failed', `error while stopping: ${(err as Error).message}`, { err });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err: Error) => {
  logger.error('cannot_start', `agent-forum: cannot start: ${err.message}`);
  process.exit(1);
});
