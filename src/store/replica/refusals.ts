/**
 * Refusals of replication commands that say why and the one remedy that works (issue 50 Low,
 * "every refusal names what is wrong and the one remedy that works").
 */
import { ServiceError } from '../../errors.js';

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
