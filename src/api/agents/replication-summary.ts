/**
 * The `replication` part of GET /api/status (issue 50, "a fenced leader says so on /api/status";
 * schemas/Status.json; docs/operate/replication.md): present only on a server with FORUM_REPLICA_URL or
 * FORUM_FOLLOW. Four fields of `replication status`, so a client or a load balancer sees which
 * server leads and whether this one may take writes.
 */
import type { App } from '../../app.js';

/** What /api/status shows of replication. */
export interface ReplicationSummary {
  role: 'leader' | 'follower';
  /** The leader's state (connecting, leading, unavailable, fenced, stopped) or the follower's (starting, following, stopped, promoting, promoted). */
  state: string;
  /** The writer epoch this server knows (the manifest's), null before it read one. */
  epoch: number | null;
  /** The leading server's public URL as the manifest names it (text from the bucket: shown, never put in a header), or null. */
  leaderUrl: string | null;
}

/** This server's ReplicationSummary, or null without replication. */
export function replicationSummary(app: App): ReplicationSummary | null {
  const s = app.replication?.status() as Partial<ReplicationSummary> | undefined;
  if (s === undefined || (s.role !== 'leader' && s.role !== 'follower')) return null;
  return {
    role: s.role,
    state: String(s.state),
    epoch: typeof s.epoch === 'number' ? s.epoch : null,
    leaderUrl: typeof s.leaderUrl === 'string' && s.leaderUrl !== '' ? s.leaderUrl : null,
  };
}

/** A key that changes whenever the summary does (the status reply's memo compares it). */
export function summaryKey(s: ReplicationSummary | null): string {
  return s === null ? '' : `${s.role}\n${s.state}\n${s.epoch}\n${s.leaderUrl}`;
}
