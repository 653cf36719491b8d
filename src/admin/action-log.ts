/**
 * The `admin_action` log line of every admin action (issue 25), in a module of its own so the CLI's
 * archive commands (src/cli/offline.ts) log theirs without loading the command table and the
 * domain behind it (issue 51: the CLI loads only what a command needs).
 */
import { ServiceError } from '../errors.js';
import { logger } from '../logger.js';

/**
 * Runs one admin action and writes its one `admin_action` log line (issue 25), on success and on
 * refusal alike: `{"event": "admin_action", "action", "target", "outcome", "code"?}` where
 * `action` is `<group>.<verb>` (`agents.disable`, `restore`), `target` what it acted on (an
 * agent, room or operator id, a folder, else the command's group), `outcome` `ok`, `refused` (a
 * 4xx ServiceError, with its `code`) or `failed` (any other error, with its class as `error`,
 * e.g. StoreStateError). Arguments, results and error messages are never logged: they may hold
 * a token (operator create, rotate-token) or content.
 * Input: the action's name, the target when known before it runs, the action, a function
 * picking the target from its result (operator create learns its id only then), and who runs it
 * (`operator`, logged as `operator`; absent for the archive commands, which act on files).
 * Output: the action's result; its error is rethrown unchanged.
 */
export async function recordAdminAction<T>(
  action: string,
  target: string | undefined,
  run: () => Promise<T>,
  targetOf: (result: T) => string | undefined = () => undefined,
  operator?: string,
): Promise<T> {
  const fallback = action.split('.')[0]!;
  const by = operator === undefined ? {} : { operator };
  const bySuffix = operator === undefined ? '' : ` by ${operator}`;
  try {
    const result = await run();
    const t = target ?? targetOf(result) ?? fallback;
    logger.info('admin_action', `${action} ${t}${bySuffix}: ok`, { action, target: t, ...by, outcome: 'ok' });
    return result;
  } catch (err) {
    const t = target ?? fallback;
    if (err instanceof ServiceError && err.status < 500) {
      logger.info('admin_action', `${action} ${t}${bySuffix}: refused (${err.code})`, { action, target: t, ...by, outcome: 'refused', code: err.code });
    } else {
      const error = err instanceof Error ? err.name : typeof err;
      logger.info('admin_action', `${action} ${t}${bySuffix}: failed (${error})`, { action, target: t, ...by, outcome: 'failed', error });
    }
    throw err;
  }
}
