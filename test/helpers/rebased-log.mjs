/**
 * A data folder whose log has a change of writer (issue 50, src/domain/positions.ts), without an
 * object store or a second server: the records before it are written by the built server over
 * HTTP, then — the server stopped — the folder's log gets the `replication.epoch` record a writer
 * that took the epoch from another writes (with `positionBase`, as src/replication.ts gives it),
 * and the server is started again on the same folder for the records after it.
 *
 * What the folder then looks like to a client: records up to the fork keep position = log seq;
 * the epoch record has position `base` (2e9 on a log of fewer than 1e9 records) and the records
 * after it `base + 1`, `base + 2`, …; the positions `fork + 1` … `base − 1` are the gap, where an
 * async leader that was replaced would have put the records a failover lost. So a cursor
 * `after = fork + k` (k ≥ 1, below the gap's end) is one from that lost branch, and an id with
 * such a position (`msg_<fork + 1>`) names nothing.
 *
 * Used by test/http/feed-positions.test.mjs; reusable wherever a rebased log is needed.
 */
import { App } from '../../dist/app.js';
import { loadConfig } from '../../dist/config.js';
import { nextPositionBase } from '../../dist/domain/positions.js';
import { startServer } from './server.mjs';

/**
 * Appends the epoch record of a change of writer to the log of `dataDir`, on which no server may
 * be running: `replication.epoch` `{epoch, writer, leaderUrl, positionBase}` with positionBase =
 * nextPositionBase(position of the last record), as a promoted follower writes it.
 * Output: `{ fork, base, epochSeq }` — the last position before the jump (the fork point), the
 * epoch record's position, and its log seq.
 */
export async function rebaseFolder(dataDir, { epoch = 2 } = {}) {
  const app = await App.open(loadConfig({ FORUM_DATA_DIR: dataDir }));
  try {
    const fork = app.state.positions.positionOf(app.log.headSeq);
    const base = nextPositionBase(fork);
    const record = app.commit('replication.epoch', { epoch, writer: 'rebased-log-helper', leaderUrl: 'http://127.0.0.1:1', positionBase: base });
    return { fork, base, epochSeq: record.seq };
  } finally {
    await app.close();
  }
}

/**
 * Starts the built server (a real process, test/helpers/server.mjs `startServer`; `env` added to
 * its environment) on a fresh folder, runs `before(server)` (writes over HTTP; its result is kept),
 * stops the server, rebases the folder (`rebaseFolder`), starts the server again on it and runs
 * `after(server, before's result)`. The server is stopped after the test `t`.
 * Output: `{ server, fork, base, epochSeq, before, after }` (`before`/`after`: the callbacks' results).
 */
export async function startRebasedServer(t, { before = async () => undefined, after = async () => undefined, env } = {}) {
  const server = await startServer(t, { env });
  const early = await before(server);
  await server.stop();
  const jump = await rebaseFolder(server.dataDir);
  await server.start();
  const late = await after(server, early);
  return { server, ...jump, before: early, after: late };
}
