/**
 * Refusals of replication commands that say why and the one remedy that works (issue 50 Low,
 * "every refusal names what is wrong and the one remedy that works"), and the two 503s a leader
 * refuses writes with, built in one place.
 */
import { REPLICA_RETRY_AFTER_SECONDS } from '../../constants.js';
import { ServiceError } from '../../errors.js';
import { leaderHeader } from '../../header-value.js';

/**
 * `replication promote` on a follower that stopped applying because an object in the bucket did
 * not prove (damage, or a record that is not the leader's): 400 UNSUPPORTED_OPERATION (not a
 * 500), naming the follower's last applied record, the object and what to do. Inputs: the
 * bucket URL, the last record this follower applied, and its lastError (the object's name and
 * the proof that failed).
 */
export function stoppedFollowerRefusal(url: string, appliedSeq: number, lastError: string | null): ServiceError {
  return new ServiceError(
    'UNSUPPORTED_OPERATION',
    `this follower cannot be promoted: it stopped applying ${url} after record ${appliedSeq}, because an object there does not prove (${lastError ?? 'reason not recorded'}), ` +
      'so it cannot know it holds everything the bucket has. Promote a follower whose `replication status` says "following" instead; ' +
      `if none is left, stop this server and run \`restore --from ${url} --to-seq ${appliedSeq} --yes\` into a new folder, start it with FORUM_REPLICA_URL set to a new prefix, ` +
      'and repair or replace the damaged object before any server follows this bucket again',
  );
}

/**
 * A leader's 503 REPLICA_UNAVAILABLE (leader.ts): the write was not acknowledged; the client
 * retries after REPLICA_RETRY_AFTER_SECONDS. `message` says why and what was (not) written.
 */
export function replicaUnavailable(message: string): ServiceError {
  return new ServiceError('REPLICA_UNAVAILABLE', message, { 'Retry-After': String(REPLICA_RETRY_AFTER_SECONDS) });
}

/**
 * A leader's 503 REPLICA_FENCED (leader.ts): this server no longer leads and acknowledges no
 * writes. `leaderUrl` (the leader the manifest names, when known) is sent as X-Forum-Leader
 * (header-value.ts drops a value that cannot be a header).
 */
export function replicaFenced(message: string, leaderUrl = ''): ServiceError {
  return new ServiceError('REPLICA_FENCED', message, { 'Retry-After': String(REPLICA_RETRY_AFTER_SECONDS), ...leaderHeader(leaderUrl) });
}

/** The 503 REPLICA_UNAVAILABLE a write gets while a leader's start takes the leadership of the bucket at `url`. */
export function takingLeadershipRefusal(url: string): ServiceError {
  return replicaUnavailable(`this server is taking the leadership of ${url}; nothing was written; retry after Retry-After seconds`);
}

/** The 503 REPLICA_UNAVAILABLE a write gets while a leader's start takes back records from `fromSeq` on from the bucket at `url`. */
export function takingBackRefusal(url: string, fromSeq: number): ServiceError {
  return replicaUnavailable(`this server is taking back records from record ${fromSeq} on from ${url} before it leads; nothing was written; retry after Retry-After seconds`);
}
