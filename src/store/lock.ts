/**
 * Exclusive lock on a data folder (proper-lockfile), so two servers (or a server and an offline
 * CLI command) never write the same log.
 *
 * proper-lockfile detects a stale lock by its mtime, which would keep a server that was killed
 * with SIGKILL from restarting for `stale` ms, and would make a `cp -r` copy of a running
 * server's folder refuse to start. So the holder writes `.lock-owner` ({pid, host, dir}) right
 * after taking the lock (beside it: a file inside the lock directory would change its mtime,
 * which proper-lockfile reads as a compromised lock). A lock is taken over when its owner record
 * names another folder (the lock was copied along with the data) or a process that no longer
 * exists on this host — checked twice, TAKEOVER_RECHECK_MS apart, because a process that has just
 * taken the lock writes its own record a moment later.
 */
import lockfile from 'proper-lockfile';
import { mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { StoreStateError } from './errors.js';
import { isNoSpaceError } from './fsutil.js';
import { logger } from '../logger.js';

const LOCK_STALE_MS = 10_000;
const LOCK_UPDATE_MS = 2_000;

const lockPath = (dataDir: string) => join(dataDir, '.lock');
const ownerPath = (dataDir: string) => join(dataDir, '.lock-owner');
/** Wait before a takeover, so a holder that has just locked can write its owner record. */
const TAKEOVER_RECHECK_MS = 250;

/** True when the lock's owner record names another folder or a dead process on this host. */
function ownerIsStale(dataDir: string): boolean {
  let owner: { pid?: unknown; host?: unknown; dir?: unknown };
  try {
    owner = JSON.parse(readFileSync(ownerPath(dataDir), 'utf8')) as typeof owner;
  } catch {
    return false;
  }
  if (owner.dir !== realpathSync(dataDir)) return true;
  if (typeof owner.pid !== 'number' || owner.host !== hostname() || owner.pid === process.pid) return false;
  try {
    process.kill(owner.pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

function tryLock(dataDir: string) {
  return lockfile.lock(dataDir, {
    lockfilePath: lockPath(dataDir),
    realpath: false,
    stale: LOCK_STALE_MS,
    update: LOCK_UPDATE_MS,
    retries: 0,
    onCompromised: (err) => {
      // Another process took our lock (we stalled past `stale`): writing on would risk two
      // writers on one log, so stop at once rather than corrupt it.
      logger.error('fatal', `fatal: lock on ${dataDir} compromised: ${err.message}`);
      process.exit(70);
    },
  });
}

/**
 * Takes the lock on `dataDir`, creating the folder when it does not exist yet (a first start, or
 * `restore` onto a new machine). Resolves to a release function.
 * Throws StoreStateError naming the folder when another live process holds it.
 */
export async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  mkdirSync(dataDir, { recursive: true });
  let release: () => Promise<void>;
  try {
    release = await tryLock(dataDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ELOCKED') throw err;
    const stale = ownerIsStale(dataDir) && (await new Promise((r) => setTimeout(r, TAKEOVER_RECHECK_MS)), ownerIsStale(dataDir));
    if (!stale) {
      throw new StoreStateError(
        `the data folder ${dataDir} is in use by another Agent Forum process (lock ${lockPath(dataDir)}); ` +
          'stop it first, or use the operator CLI, which talks to the running server',
      );
    }
    // The previous owner died without releasing (SIGKILL, power loss), or the lock was copied
    // here with the data: take it over.
    rmSync(lockPath(dataDir), { recursive: true, force: true });
    release = await tryLock(dataDir);
  }
  try {
    writeFileSync(ownerPath(dataDir), JSON.stringify({ pid: process.pid, host: hostname(), dir: realpathSync(dataDir) }));
  } catch (err) {
    if (!isNoSpaceError(err)) throw err;
    // A full disk must not stop a start that only serves reads (issue 21). Without the record, a
    // lock left by a killed holder is taken over once proper-lockfile sees it stale (LOCK_STALE_MS).
    rmSync(ownerPath(dataDir), { force: true });
  }
  return async () => {
    rmSync(ownerPath(dataDir), { force: true });
    await release();
  };
}

/** True when some live process holds the lock on `dataDir`. */
export async function isDataDirLocked(dataDir: string): Promise<boolean> {
  const locked = await lockfile.check(dataDir, { lockfilePath: lockPath(dataDir), realpath: false, stale: LOCK_STALE_MS });
  return locked && !ownerIsStale(dataDir);
}
