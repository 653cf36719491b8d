/**
 * Signed checkpoints and proofs, server side (issue 53; docs/api/checkpoints.md): the server's
 * checkpoint key, the Merkle tree over its log (store/merkle-tree.ts), the checkpoint cadence and
 * the proofs the routes serve.
 *
 * The key is its own file, `<data>/checkpoint-key.pem` (CHECKPOINT_KEY_FILE; Ed25519, PKCS#8 PEM,
 * mode 0600), created at the first start with the replica key's helpers (store/replica/keys.ts).
 * It is not the replica signing key: that one is optional, may live outside the folder
 * (FORUM_REPLICA_SIGNING_KEY), is created only by a leader making a bucket, and authenticates a
 * bucket to the operator's own servers; the checkpoint key is the archive's public identity for
 * outsiders, pinned by readers and mirrors. Separate files let either be rotated or kept offline
 * without touching the other.
 */
import { join } from 'node:path';
import { createSigningKey, readSigningKey, type ReplicaKey } from '../store/replica/keys.js';
import { MerkleTree, type TreeLogSource } from '../store/merkle-tree.js';
import { consistencyProof, inclusionProof, rootHash } from './merkle.js';
import { signCheckpoint, verifierKey } from './note.js';
import { CHECKPOINT_CACHE_MAX, CHECKPOINT_INTERVAL_MS, CHECKPOINT_INTERVAL_RECORDS, CHECKPOINT_KEY_FILE } from '../constants.js';

/** The checkpoint origin (and signed-note key name) of the archive with lineage `originId`. */
export function checkpointOrigin(originId: string): string {
  return `agent-forum/${originId}`;
}

/**
 * The checkpoint key of the data folder `dataDir`: read from `path` (FORUM_CHECKPOINT_KEY; default
 * CHECKPOINT_KEY_FILE in `dataDir`), or created there
 * (mode 0600) when the file is missing. Throws Error naming the file when it is not an Ed25519
 * private key or cannot be read or written.
 */
export function loadCheckpointKey(dataDir: string, path = join(dataDir, CHECKPOINT_KEY_FILE)): ReplicaKey {
  return readSigningKey(path, 'checkpoint signing key') ?? createSigningKey(path);
}

/** A signed checkpoint: its tree size and note text. */
export interface SignedCheckpoint {
  size: number;
  note: string;
  /** When it was signed, ms since the epoch (the cadence's clock). */
  signedMs: number;
}

/** Checkpoints and proofs over one log (see the module doc). */
export class Checkpoints {
  /** The raw Ed25519 public key (32 bytes). */
  readonly publicKey: Buffer;
  /** The checkpoint origin, also the key's name. */
  readonly origin: string;
  private latestValue: SignedCheckpoint | null = null;
  private readonly bySize = new Map<number, string>();

  /**
   * Input: the tree (owned: closed by `close`), the signing key, the archive's originId and the
   * clock (ms since the epoch) that paces the cadence.
   */
  constructor(
    readonly tree: MerkleTree,
    private readonly key: ReplicaKey,
    originId: string,
    private readonly now: () => number,
  ) {
    this.publicKey = Buffer.from(key.text.slice('ed25519:'.length), 'base64url');
    this.origin = checkpointOrigin(originId);
  }

  /** Opens the tree (its leaf file under `indexDir`) and starts catching up with `log`. */
  static open(indexDir: string, log: TreeLogSource, key: ReplicaKey, originId: string, now: () => number): Checkpoints {
    const c = new Checkpoints(new MerkleTree(indexDir, log), key, originId, now);
    void c.tree.catchUp();
    return c;
  }

  /** `ed25519:<base64url>`: the public key as /api/status shows it and `--key` takes it. */
  get keyText(): string {
    return this.key.text;
  }

  /**
   * The Ed25519 signature (64 bytes) of `data` by the checkpoint key. Besides the checkpoint notes,
   * it signs the agent card's JWS (src/api/a2a/card-signature.ts, which explains why the two
   * kinds of signed bytes cannot be confused).
   */
  sign(data: Buffer): Buffer {
    return Buffer.from(this.key.sign(data), 'base64url');
  }

  /** The signed-note verifier key (`<origin>+<key id>+<base64>`), as Go's note package takes it. */
  get verifierKey(): string {
    return verifierKey(this.origin, this.publicKey);
  }

  /**
   * The latest checkpoint under the cadence (docs/api/checkpoints.md "Cadence"): a new one is
   * signed when the tree has grown by CHECKPOINT_INTERVAL_RECORDS since the latest, or has grown
   * at all and the latest is CHECKPOINT_INTERVAL_MS old. Null while the tree is empty.
   */
  latest(): SignedCheckpoint | null {
    const size = this.tree.size;
    const now = this.now();
    const l = this.latestValue;
    if (size === 0) return null;
    if (l === null || (size > l.size && (size - l.size >= CHECKPOINT_INTERVAL_RECORDS || now - l.signedMs >= CHECKPOINT_INTERVAL_MS))) {
      this.latestValue = { size, note: this.at(size), signedMs: now };
    }
    return this.latestValue;
  }

  /**
   * The signed checkpoint of the tree's first `size` records (1 ≤ size ≤ tree size; the caller
   * checks): kept for reuse (CHECKPOINT_CACHE_MAX sizes), so every page of an export pinned at one
   * size carries the same note.
   */
  at(size: number): string {
    let note = this.bySize.get(size);
    if (note === undefined) {
      note = signCheckpoint({ origin: this.origin, size, root: rootHash(this.tree, size) }, (data) => this.sign(data), this.publicKey);
      if (this.bySize.size >= CHECKPOINT_CACHE_MAX) this.bySize.delete(this.bySize.keys().next().value!);
      this.bySize.set(size, note);
    }
    return note;
  }

  /** The inclusion proof of record `seq` in the tree of `size` records (1 ≤ seq ≤ size ≤ tree size), standard base64 hashes. */
  inclusion(seq: number, size: number): string[] {
    return inclusionProof(this.tree, seq - 1, size).map((h) => h.toString('base64'));
  }

  /** The consistency proof between the trees of `from` and `to` records (1 ≤ from ≤ to ≤ tree size), standard base64 hashes. */
  consistency(from: number, to: number): string[] {
    return consistencyProof(this.tree, from, to).map((h) => h.toString('base64'));
  }

  /** Stops the tree. */
  close(): void {
    this.tree.close();
  }
}
