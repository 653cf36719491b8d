/**
 * What the server knows about damage to its archive (issue 28): the background scrub
 * (store/scrub.ts) and proven reads report each record they found damaged here, once per place,
 * and `/api/status` says the archive is damaged while any finding stands. Findings live in memory
 * only: the damage itself stays on disk, so the next scrub pass (or read) after a restart finds
 * it again, and `node dist/cli.js verify` names it with what to do.
 */
import { logger } from './logger.js';
import { INTEGRITY_FINDINGS_MAX } from './constants.js';

/** One place where the log's bytes are not what the hash chain proves. */
export interface DamageFinding {
  /** Segment file (path as the reporter gave it). */
  file: string;
  /** Byte offset in the file of the damaged line (or where damage starts). */
  offset: number;
  /** The record expected there, or null when unknown. */
  seq: number | null;
  /** What check failed, in words. */
  reason: string;
  /** Who found it: `scrub`, `read`, … */
  source: string;
  /** When it was reported (ISO 8601 UTC). */
  found: string;
}

/** Called with each new finding (metrics count them). */
export type DamageListener = (finding: DamageFinding) => void;

/** The archive's integrity state; one per app (`app.integrity`). */
export class Integrity {
  private readonly list: DamageFinding[] = [];
  private readonly seen = new Set<string>();
  private readonly listeners: DamageListener[] = [];
  private dropped = 0;

  /** True once any damage was reported. */
  get damaged(): boolean {
    return this.list.length > 0 || this.dropped > 0;
  }

  /** The findings so far, oldest first (at most INTEGRITY_FINDINGS_MAX; `omitted` counts the rest). */
  get findings(): readonly DamageFinding[] {
    return this.list;
  }

  /** Findings not kept because INTEGRITY_FINDINGS_MAX were already held. */
  get omitted(): number {
    return this.dropped;
  }

  /** Adds a listener told about each new finding. */
  onDamage(listener: DamageListener): void {
    this.listeners.push(listener);
  }

  /**
   * Records damage at `file`:`offset` (record `seq` when known). The first report of a place logs
   * one `error` line naming file, offset and seq, and tells the listeners; a repeat (the next scrub
   * pass, another read) changes nothing. Output: true when the finding was new. Never throws.
   */
  reportDamage(d: { file: string; offset: number; seq?: number | null; reason: string; source?: string }, now: Date = new Date()): boolean {
    const key = `${d.file}\u0000${d.offset}`;
    if (this.seen.has(key)) return false;
    this.seen.add(key);
    const finding: DamageFinding = { file: d.file, offset: d.offset, seq: d.seq ?? null, reason: d.reason, source: d.source ?? 'read', found: now.toISOString() };
    if (this.list.length < INTEGRITY_FINDINGS_MAX) this.list.push(finding);
    else this.dropped++;
    logger.error(
      'archive_damaged',
      `archive damaged: ${finding.file} at byte ${finding.offset}${finding.seq === null ? '' : ` (record ${finding.seq})`}: ${finding.reason} ` +
        `(found by ${finding.source}; run node dist/cli.js verify with the server stopped, then restore a backup or repair)`,
      { file: finding.file, offset: finding.offset, seq: finding.seq, source: finding.source },
    );
    for (const l of this.listeners) {
      try {
        l(finding);
      } catch {
        // a listener (metrics) failing must not hide the finding
      }
    }
    return true;
  }

  /** The status view: `{damaged, findings}` (findings as held; see `omitted`). */
  toJSON(): { damaged: boolean; findings: readonly DamageFinding[]; omitted: number } {
    return { damaged: this.damaged, findings: this.list, omitted: this.dropped };
  }
}
