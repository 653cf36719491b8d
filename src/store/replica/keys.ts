/**
 * The replica key (issue 50; docs/operate/replication.md#keys-and-the-threat-model): an Ed25519 key
 * pair, through `node:crypto`, that authenticates everything in a replica bucket (format.ts signs
 * and verifies with it). The private (signing) key is held only by the servers that may lead —
 * a PKCS#8 PEM file, FORUM_REPLICA_SIGNING_KEY, default `<data dir>/replica-signing-key.pem`; the
 * public (verify) key, `ed25519:<base64url of its 32 raw bytes>` (FORUM_REPLICA_PUBLIC_KEY), is all
 * a follower or a `restore --from` needs. Bucket write access alone therefore cannot make an
 * object that a follower, a restore or a leader's start accepts.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { writeFileAtomicSync } from '../fsutil.js';

/** The default name of the signing key file in the data folder. */
export const REPLICA_SIGNING_KEY_FILE = 'replica-signing-key.pem';
/** How a public key is written: `ed25519:` and the base64url of its 32 raw bytes. */
export const PUBLIC_KEY_PREFIX = 'ed25519:';

/**
 * A replica key: always the public half (verify), and the private half (sign) when this server
 * holds the signing key file.
 */
export class ReplicaKey {
  /** `ed25519:<base64url>`, as FORUM_REPLICA_PUBLIC_KEY takes it and the leader prints it. */
  readonly text: string;
  /** The first 16 hex digits of the SHA-256 of the raw public key: named in the manifest (`keyId`). */
  readonly keyId: string;

  private constructor(
    private readonly publicKey: KeyObject,
    private readonly privateKey: KeyObject | null,
  ) {
    const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url');
    this.text = `${PUBLIC_KEY_PREFIX}${raw.toString('base64url')}`;
    this.keyId = createHash('sha256').update(raw).digest('hex').slice(0, 16);
  }

  /** The key of a private key (the signing half is kept). */
  static fromPrivate(privateKey: KeyObject): ReplicaKey {
    return new ReplicaKey(createPublicKey(privateKey), privateKey);
  }

  /** The verify-only key of a public key. */
  static fromPublic(publicKey: KeyObject): ReplicaKey {
    return new ReplicaKey(publicKey, null);
  }

  /** True when this key can sign (this server holds the signing key). */
  get canSign(): boolean {
    return this.privateKey !== null;
  }

  /** The Ed25519 signature of `data`, base64url. Throws Error when this server holds only the public key. */
  sign(data: Buffer): string {
    if (this.privateKey === null) throw new Error(`this server holds only the replica public key ${this.text}, not its signing key: it cannot write to the bucket`);
    return sign(null, data, this.privateKey).toString('base64url');
  }

  /** True when `sig` (base64url) is this key's signature of `data`; false for anything else (never throws). */
  verify(data: Buffer, sig: unknown): boolean {
    if (typeof sig !== 'string' || !/^[A-Za-z0-9_-]{86}$/.test(sig)) return false;
    try {
      return verify(null, data, this.publicKey, Buffer.from(sig, 'base64url'));
    } catch {
      return false;
    }
  }

  /** True when `other` is the same public key. */
  sameAs(other: ReplicaKey): boolean {
    return this.text === other.text;
  }
}

/**
 * Parses a public key written as `ed25519:<base64url of 32 bytes>` (FORUM_REPLICA_PUBLIC_KEY,
 * `restore --public-key`). Throws Error naming the rule (the caller names the setting).
 */
export function parsePublicKey(text: string): ReplicaKey {
  const m = /^ed25519:([A-Za-z0-9_-]{43})$/.exec(text.trim());
  const raw = m ? Buffer.from(m[1]!, 'base64url') : null;
  if (raw === null || raw.length !== 32 || raw.toString('base64url') !== m![1]) {
    throw new Error(`a replica public key is ed25519: followed by the base64url of its 32 raw bytes (43 characters), as the leader prints it; got ${JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text)}`);
  }
  try {
    return ReplicaKey.fromPublic(createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: m![1] }, format: 'jwk' }));
  } catch (err) {
    throw new Error(`${text} is not an Ed25519 public key (${(err as Error).message})`);
  }
}

/**
 * Reads the signing key file at `path` (an Ed25519 private key, PKCS#8 PEM). Output: the key, or
 * null when there is no file. Throws Error naming the file (as `label`: the checkpoint key of
 * issue 53 reads its own file with this too) for one that is not such a key or cannot be read
 * (the content is never echoed).
 */
export function readSigningKey(path: string, label = 'replica signing key'): ReplicaKey | null {
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new Error(`the ${label} ${path} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: pem, format: 'pem' });
  } catch {
    throw new Error(`the ${label} ${path} is not a PEM private key (expected an Ed25519 key in PKCS#8 PEM, "-----BEGIN PRIVATE KEY-----")`);
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`the ${label} ${path} is a ${key.asymmetricKeyType ?? 'non-asymmetric'} key, not an Ed25519 key`);
  return ReplicaKey.fromPrivate(key);
}

/**
 * Makes a new signing key and stores it at `path` (PKCS#8 PEM, mode 0600, written to a temp file,
 * fsync'd, renamed into place, its folder fsync'd). A leader creating a new bucket manifest calls
 * it, and a server's first start for its checkpoint key (issue 53). Output: the key. Throws what the file system throws.
 */
export function createSigningKey(path: string): ReplicaKey {
  const { privateKey } = generateKeyPairSync('ed25519');
  writeFileAtomicSync(path, privateKey.export({ format: 'pem', type: 'pkcs8' }) as string);
  return ReplicaKey.fromPrivate(privateKey);
}

/** Where the keys come from: the signing key file's path (and whether it was set), and the public key text if set. */
export interface ReplicaKeySettings {
  /** FORUM_REPLICA_SIGNING_KEY, or `<data dir>/replica-signing-key.pem`. */
  signingKeyPath: string;
  /** FORUM_REPLICA_PUBLIC_KEY (or `restore --public-key`), unparsed; null when unset. */
  publicKey: string | null;
}

/**
 * The keys this server holds: the signing key when its file exists, the key that verifies (the
 * public key given, else the one the signing key derives). Output: { signing, verify } (either
 * may be null). Throws Error when the public key is malformed or is not the signing key's.
 */
export function loadReplicaKeys(settings: ReplicaKeySettings): { signing: ReplicaKey | null; verify: ReplicaKey | null } {
  let given: ReplicaKey | null = null;
  if (settings.publicKey !== null) {
    try {
      given = parsePublicKey(settings.publicKey);
    } catch (err) {
      throw new Error(`FORUM_REPLICA_PUBLIC_KEY: ${(err as Error).message}`);
    }
  }
  const signing = readSigningKey(settings.signingKeyPath);
  if (signing !== null && given !== null && !signing.sameAs(given)) {
    throw new Error(`FORUM_REPLICA_PUBLIC_KEY is ${given.text}, but the signing key ${settings.signingKeyPath} is the key of ${signing.text}: the two must be one key pair (unset the public key, or use the matching key file)`);
  }
  return { signing, verify: given ?? signing };
}

/**
 * The key a follower or a `restore --from` verifies with. Throws Error saying what to set when
 * this server has neither a public key nor the signing key file (or either is malformed).
 */
export function verifyKey(settings: ReplicaKeySettings, who: string): ReplicaKey {
  const { verify: key } = loadReplicaKeys(settings);
  if (key === null) {
    throw new Error(
      `${who} verifies every object in the bucket against the replica key, and none is set: set FORUM_REPLICA_PUBLIC_KEY=ed25519:… ` +
        `(the leader prints it at start and in "replication status" as publicKey), or put the leader's signing key at ${settings.signingKeyPath}`,
    );
  }
  return key;
}
