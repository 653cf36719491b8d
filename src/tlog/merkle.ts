/**
 * RFC 9162 §2 Merkle tree hashing and proofs (issue 53, docs/api/checkpoints.md), over any
 * source of complete subtree hashes. Pure: node:crypto only, no store, so the offline verifier
 * (src/tlog/verify.ts, `verify-export`) loads it alone.
 *
 * - A leaf's hash is SHA-256(0x00 || entry); here the entry is the 32 raw bytes of the record's
 *   chained hash (record-format.ts), which a tombstone keeps: an erased record keeps its leaf.
 * - An interior node's hash is SHA-256(0x01 || left || right).
 * - MTH(D[n]) splits at k, the largest power of two smaller than n (§2.1.1).
 * - Inclusion proofs: PATH (§2.1.3.1) and its verification (§2.1.3.2); consistency proofs:
 *   SUBPROOF (§2.1.4.1) and its verification (§2.1.4.2).
 */
import { createHash, hash } from 'node:crypto';

/** Bytes of one hash (SHA-256). */
export const HASH_BYTES = 32;

/**
 * SHA-256(0x00 || entry): the hash of a leaf whose entry is `entry` (RFC 9162 §2.1.1). A 32-byte
 * entry (every entry of ours) is hashed in one call over a reused buffer, without a Hash object
 * (the tree hashes one leaf and about one node per record).
 */
export function leafHash(entry: Uint8Array): Buffer {
  if (entry.length !== HASH_BYTES) return createHash('sha256').update(LEAF_PREFIX).update(entry).digest();
  LEAF_INPUT.set(entry, 1);
  return hash('sha256', LEAF_INPUT, 'buffer');
}

/** SHA-256(0x01 || left || right): an interior node (RFC 9162 §2.1.1); one call over a reused buffer for 32-byte children. */
export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  if (left.length !== HASH_BYTES || right.length !== HASH_BYTES) return createHash('sha256').update(NODE_PREFIX).update(left).update(right).digest();
  NODE_INPUT.set(left, 1);
  NODE_INPUT.set(right, 1 + HASH_BYTES);
  return hash('sha256', NODE_INPUT, 'buffer');
}

const LEAF_PREFIX = Buffer.from([0x00]);
const NODE_PREFIX = Buffer.from([0x01]);
/** 0x00 || entry and 0x01 || left || right, refilled by each call (single-threaded, not reentrant). */
const LEAF_INPUT = Buffer.concat([LEAF_PREFIX, Buffer.alloc(HASH_BYTES)]);
const NODE_INPUT = Buffer.concat([NODE_PREFIX, Buffer.alloc(2 * HASH_BYTES)]);

/** The hash of the empty tree: SHA-256 of nothing (RFC 9162 §2.1.1). */
export const EMPTY_ROOT: Buffer = createHash('sha256').digest();

/**
 * Where the tree's hashes come from: `aligned(start, size)` is the hash of the complete subtree
 * of `size` leaves (a power of two) starting at leaf index `start` (a multiple of `size`), within
 * the tree's current leaves. Throws what the source throws (a leaf file that cannot be read).
 */
export interface SubtreeSource {
  aligned(start: number, size: number): Buffer;
}

/** The largest power of two smaller than n (n ≥ 2). */
export function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/**
 * MTH(D[lo:hi]) (RFC 9162 §2.1.1) for 0 ≤ lo < hi, where [lo, hi) is a subtree of some tree (lo
 * is a multiple of the split above it): complete aligned parts come from `src`, the ragged right
 * edge is hashed down its O(log n) spine.
 */
export function rangeHash(src: SubtreeSource, lo: number, hi: number): Buffer {
  const n = hi - lo;
  if (n <= 0) return EMPTY_ROOT;
  if ((n & (n - 1)) === 0 && lo % n === 0) return src.aligned(lo, n);
  const k = splitPoint(n);
  return nodeHash(rangeHash(src, lo, lo + k), rangeHash(src, lo + k, hi));
}

/** The root of the tree of the first `size` leaves (the empty tree's for 0). */
export function rootHash(src: SubtreeSource, size: number): Buffer {
  return rangeHash(src, 0, size);
}

/**
 * The inclusion proof of leaf `index` in the tree of `size` leaves (RFC 9162 §2.1.3.1 PATH), from
 * the leaf up. Requires 0 ≤ index < size (the caller checks; throws RangeError otherwise).
 */
export function inclusionProof(src: SubtreeSource, index: number, size: number): Buffer[] {
  if (!(index >= 0 && index < size)) throw new RangeError(`leaf ${index} is not in a tree of ${size}`);
  const out: Buffer[] = [];
  const path = (m: number, lo: number, hi: number): void => {
    const n = hi - lo;
    if (n === 1) return;
    const k = splitPoint(n);
    if (m < k) {
      path(m, lo, lo + k);
      out.push(rangeHash(src, lo + k, hi));
    } else {
      path(m - k, lo + k, hi);
      out.push(rangeHash(src, lo, lo + k));
    }
  };
  path(index, 0, size);
  return out;
}

/**
 * The consistency proof between the trees of `from` and `to` leaves (RFC 9162 §2.1.4.1
 * SUBPROOF(m, D[n], true)). Requires 0 < from ≤ to (throws RangeError otherwise); empty when
 * from = to.
 */
export function consistencyProof(src: SubtreeSource, from: number, to: number): Buffer[] {
  if (!(from > 0 && from <= to)) throw new RangeError(`no consistency proof from ${from} to ${to}`);
  const out: Buffer[] = [];
  const sub = (m: number, lo: number, hi: number, whole: boolean): void => {
    const n = hi - lo;
    if (m === n) {
      if (!whole) out.push(rangeHash(src, lo, hi));
      return;
    }
    const k = splitPoint(n);
    if (m <= k) {
      sub(m, lo, lo + k, whole);
      out.push(rangeHash(src, lo + k, hi));
    } else {
      sub(m - k, lo + k, hi, false);
      out.push(rangeHash(src, lo, lo + k));
    }
  };
  sub(from, 0, to, true);
  return out;
}

/**
 * RFC 9162 §2.1.3.2: whether `proof` shows the leaf hash `leaf` at `index` in the tree of `size`
 * leaves whose root is `root`. Never throws; false for any malformed input.
 */
export function verifyInclusion(leaf: Uint8Array, index: number, size: number, proof: readonly Uint8Array[], root: Uint8Array): boolean {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) return false;
  let fn = index;
  let sn = size - 1;
  let r: Buffer = Buffer.from(leaf);
  for (const p of proof) {
    if (p.length !== HASH_BYTES || sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && r.equals(Buffer.from(root));
}

/**
 * RFC 9162 §2.1.4.2: whether `proof` shows that the tree of `from` leaves with root `fromRoot` is
 * a prefix of the tree of `to` leaves with root `toRoot`. Equal sizes need an empty proof and
 * equal roots. Never throws; false for any malformed input.
 */
export function verifyConsistency(from: number, to: number, fromRoot: Uint8Array, toRoot: Uint8Array, proof: readonly Uint8Array[]): boolean {
  if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to) || from < 1 || from > to) return false;
  if (proof.some((p) => p.length !== HASH_BYTES)) return false;
  if (from === to) return proof.length === 0 && Buffer.from(fromRoot).equals(Buffer.from(toRoot));
  const path = [...proof];
  // A power-of-two `from` is itself a complete subtree: the proof leaves its root out.
  if ((from & (from - 1)) === 0) path.unshift(fromRoot);
  if (path.length === 0) return false;
  let fn = from - 1;
  let sn = to - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr: Buffer = Buffer.from(path[0]!);
  let sr: Buffer = Buffer.from(path[0]!);
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && fr.equals(Buffer.from(fromRoot)) && sr.equals(Buffer.from(toRoot));
}
