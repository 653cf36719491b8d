/**
 * The tiered merge policy of the n-gram index's shard files (issue 30 "Search segments that
 * merge"; docs/internals/search-index.md). Pure: no I/O.
 *
 * Shard files cover contiguous seq ranges, oldest first, so a merged file must replace a run of
 * neighbours. A file's tier is its size class: documents in [base · F^t, base · F^(t+1)) are tier t
 * (smaller files are tier 0), with base = the shard size and F = the merge factor. The policy
 * merges the oldest run of F neighbours of one tier into one file of the next tier, never a file
 * of `maxDocs` documents or more and never into one above `maxDocs`. Seals append tier-0 files at
 * the end, so tiers never increase towards the newest file and at most F − 1 files stay in each
 * tier: after N sealed documents about (F − 1) · log_F(N / base) files, plus N / maxDocs files
 * too large to merge. Each document is rewritten once per tier it climbs: write amplification
 * about 1 + log_F(maxDocs / base).
 */

/** How the policy is tuned. */
export interface MergePolicy {
  /** Documents of a freshly sealed shard (tier 0 ends at base · factor). */
  baseDocs: number;
  /** Files merged at once and the size ratio between tiers (≥ 2). */
  factor: number;
  /** Files of this many documents or more are never merged, and no merge makes one larger. */
  maxDocs: number;
}

/** The size tier of a file of `docs` documents (0 for anything under baseDocs · factor). */
export function tierOf(docs: number, policy: MergePolicy): number {
  let tier = 0;
  for (let bound = policy.baseDocs * policy.factor; docs >= bound; bound *= policy.factor) tier++;
  return tier;
}

/**
 * The next merge for files of `docs` documents each (oldest first): the index range [start, end)
 * of the oldest run of `factor` neighbours of one tier whose merged size stays at most maxDocs,
 * or null when no merge is due. Throws a RangeError for a policy with factor < 2 or non-positive
 * sizes (programmer errors).
 */
export function planMerge(docs: readonly number[], policy: MergePolicy): { start: number; end: number } | null {
  if (!Number.isInteger(policy.factor) || policy.factor < 2 || !(policy.baseDocs > 0) || !(policy.maxDocs > 0)) {
    throw new RangeError('planMerge: factor must be an integer ≥ 2 and sizes positive');
  }
  let runStart = 0;
  let runTier = -1;
  for (let i = 0; i < docs.length; i++) {
    const d = docs[i]!;
    const tier = d >= policy.maxDocs ? -1 : tierOf(d, policy);
    if (tier !== runTier || tier < 0) {
      runStart = i;
      runTier = tier;
    }
    if (tier >= 0 && i - runStart + 1 === policy.factor) {
      let sum = 0;
      for (let j = runStart; j <= i; j++) sum += docs[j]!;
      if (sum <= policy.maxDocs) return { start: runStart, end: i + 1 };
      // Too large together: slide the run by one file.
      runStart++;
    }
  }
  return null;
}
