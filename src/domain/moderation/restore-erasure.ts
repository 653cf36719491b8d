/**
 * The erasure a point-in-time restore carries (issue 50: "PITR reaches every point, erased text
 * stays erased in the result"; docs/operate/replication.md#restore-runbook).
 *
 * A restore to record N keeps records 1..N. A record at or before N that an erasure after N
 * erased is in the bucket only as its tombstone (its text is gone for good), and the
 * `moderation.erase` record that vouches for the tombstone and carries its emptied payload is
 * after N. The restore then appends, right after N, one `moderation.erase` record per such
 * erasure, built here from the later one: it names only the records at or before N, so the
 * restored log verifies (every tombstone vouched for) and replays (every erased record's emptied
 * payload known), and what was erased stays erased.
 *
 * What the carried record keeps: the target, operator and reason (prefixed with where it came
 * from), the hide keys of the erased content (records, items, agents at or before N), the erased
 * records, the erased writes' idempotency keys and, for an erase-purge, the erased items at or
 * before N and the purge itself (the agent disabled). What it drops: feed events and work
 * revisions of the original (the restored archive is a new lineage, which readers reread from
 * the start, where erased records already read as erased) and a resolved flag (left open).
 */
import type { ModerationPayload } from './moderation.js';

/**
 * The seq an id or hide key names (`msg_0000000042`, `i:wk_0000000007`, `s:42`, `a:ag_…`): its
 * trailing digits, or null when it has none. Ids are `<prefix>_<seq>` (domain/ids.ts).
 */
function seqNamedBy(idOrKey: string): number | null {
  const m = /(\d+)$/.exec(idOrKey);
  return m === null ? null : Number(m[1]);
}

/**
 * The payload of the `moderation.erase` record a restore to `cutSeq` appends for the later erase
 * record `eraseSeq` (payload `p`). Input: the later record's payload (as read from the bucket),
 * the restore point's seq, the later record's seq. Output: a payload naming only what is at or
 * before `cutSeq` (see the module doc). Never throws for a payload the log accepted.
 */
export function erasureCarriedTo(p: ModerationPayload, cutSeq: number, eraseSeq: number): ModerationPayload {
  const within = (idOrKey: string): boolean => {
    const seq = seqNamedBy(idOrKey);
    return seq !== null && seq <= cutSeq;
  };
  const keys = (p.keys ?? [p.key]).filter(within);
  const out: ModerationPayload = {
    action: p.action,
    target: p.target,
    key: keys[0] ?? p.key,
    keys,
    reason: `point-in-time restore to record ${cutSeq}: erased later by record ${eraseSeq} (${p.reason})`,
    operatorId: p.operatorId,
    events: [],
    workItems: [],
    targets: (p.targets ?? []).filter((t) => t.seq <= cutSeq),
    erased: (p.erased ?? []).filter((e) => e.seq <= cutSeq),
    erasedClients: (p.erasedClients ?? []).filter((c) => c.seq <= cutSeq),
  };
  if (p.mode !== undefined) out.mode = p.mode;
  if (p.erasedItems !== undefined) out.erasedItems = p.erasedItems.filter(within);
  return out;
}
