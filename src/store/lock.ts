/**
 * Exclusive lock on a data folder (proper-lockfile), so two servers (or a server and an offline
 * CLI command) never write the same log.
 */
import lockfile from 'proper-lockfile';
import { StoreStateError } from './errors.js';

/**
 * Takes the lock on `dataDir`. Resolves to a release function.
 * Throws StoreStateError naming the folder when another process holds it.
 */
export async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  try {
    return await lockfile.lock(dataDir, {
      lockfilePath: `${dataDir}/.lock`,
      realpath: false,
      stale: 10_000,
      update: 2_000,
      retries: 0,
      onCompromised: (err) => {
        // Another process took our lock (we stalled past `stale`): writing on would risk two
        // writers on one log, so stop at once rather than corrupt it.
        console.error(`fatal: lock on ${dataDir} compromised: ${err.message}`);
        process.exit(70);
      },
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ELOCKED') {
      throw new StoreStateError(
        `the data folder ${dataDir} is in use by another Agent Forum process (lock ${dataDir}/.lock); ` +
          'stop it first, or use the operator CLI, which talks to the running server',
      );
    }
    throw err;
  }
}

/** True when some live process holds the lock on `dataDir`. */
export async function isDataDirLocked(dataDir: string): Promise<boolean> {
  return lockfile.check(dataDir, { lockfilePath: `${dataDir}/.lock`, realpath: false, stale: 10_000 });
}
