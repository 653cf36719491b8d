/**
 * Replication in the running service (issues 35 and 36; docs/operate/replication.md): ties the leader
 * (store/replica/leader.ts) or the follower (store/replica/follower.ts) to the App, and turns a
 * follower into the leader on `replication promote`.
 *
 * - FORUM_REPLICA_URL: this server leads the bucket. The async shipper wakes after each group
 *   commit, erasures reach the bucket, sync mode bounds a write's wait, writes are refused while
 *   fenced (and, in sync mode, while the store is unreachable) before their body is read.
 * - FORUM_FOLLOW: this server follows the bucket read-only. An empty data folder is first restored
 *   from the bucket (same originId); every write gets 503 FOLLOWER_READ_ONLY naming the leader.
 *   `replication promote` applies what the bucket holds, takes the writer epoch, and from then on
 *   this server leads (FORUM_REPLICA_MODE, default async); losing the epoch race leaves it a
 *   follower.
 *
 * The replica key (issue 50; store/replica/keys.ts): a leader signs with the signing key file
 * (created for a new bucket); a follower verifies with FORUM_REPLICA_PUBLIC_KEY or the signing
 * key, and needs the signing key only to be promoted.
 *
 * The AWS SDK is loaded only when replication is configured, so a server without it never pays
 * for it.
 */
import type { App } from './app.js';
import type { Config } from './config.js';
import { FOLLOW_RESTORE_ATTEMPTS, REPLICA_RETRY_AFTER_SECONDS } from './constants.js';
import { ServiceError } from './errors.js';
import { leaderHeader, shownText } from './header-value.js';
import type { Guards } from './http/server.js';
import { logger } from './logger.js';
import type { ReplicationSample } from './metrics.js';
import { lockDataDir } from './store/lock.js';
import { hasArchive } from './store/meta.js';
import { REPLICATION_EPOCH_TYPE } from './store/record-format.js';
import { MANIFEST_NAME, decodeManifest, parseReplicaUrl, quietSdkNodeWarning } from './store/replica/format.js';
import { ReplicaFollower } from './store/replica/follower.js';
import { assertMayStartAlone, ledAtEpoch, markReplicated } from './store/replica/marker.js';
import { nextPositionBase } from './domain/positions.js';
import { ReplicaLeader, type LeaderKeys, type ReplicaMode } from './store/replica/leader.js';
import { loadReplicaKeys, verifyKey, type ReplicaKey, type ReplicaKeySettings } from './store/replica/keys.js';
import type { ObjectStore } from './store/replica/object-store.js';
import { BucketChangedError, restoreFromBucket, type BucketRestoreResult } from './store/replica/restore.js';

/** The object store behind a replica URL (the SDK is imported on first use). */
async function openStore(url: string): Promise<ObjectStore> {
  quietSdkNodeWarning();
  const { S3ObjectStore } = await import('./store/replica/object-store.js');
  return new S3ObjectStore(parseReplicaUrl(url));
}

/** The key a follower verifies with. Throws Error saying what to set when there is none (or it is malformed). */
function followerKey(settings: ReplicaKeySettings) {
  return verifyKey(settings, 'a follower (FORUM_FOLLOW)');
}

/** A leader's keys: the signing key if its file exists, its path, the public key given. Throws Error when the two do not match. */
function leaderKeys(settings: ReplicaKeySettings): LeaderKeys {
  const { signing, verify } = loadReplicaKeys(settings);
  return { signing, path: settings.signingKeyPath, publicKey: settings.publicKey === null ? null : verify };
}

/**
 * Before the App opens its folder: a folder that replicated and is started without
 * FORUM_REPLICA_URL or FORUM_FOLLOW is refused (StoreStateError naming the bucket and
 * `replication detach`; store/replica/marker.ts). A follower on an empty data folder restores it
 * from the bucket (to the last record: the leader's originId), holding the folder's lock
 * meanwhile. Throws what the restore throws (no manifest, damage, an object that does not
 * authenticate), or Error when there is no replica key to verify with.
 */
export async function prepareFollowerFolder(config: Config): Promise<void> {
  // The split-brain guard (issue 50): a folder that replicated starts only with replica settings or detached.
  if (config.replica === null && config.follow === null) assertMayStartAlone(config.dataDir);
  const follow = config.follow;
  if (follow === null) return;
  const key = followerKey(config.replica!);
  if (hasArchive(config.dataDir)) return;
  const store = await openStore(follow.url);
  const release = await lockDataDir(config.dataDir);
  try {
    const r = await restoreChangingBucket(config.dataDir, store, key);
    logger.info('follower_restored', `follower: restored ${r.records} records from ${follow.url} in ${r.ms} ms (${r.objectsRead} objects)`, { records: r.records, ms: r.ms });
  } finally {
    await release();
    store.close();
  }
}

/**
 * A follower's restore, tried again when the bucket changed under it (BucketChangedError: the
 * leader compacted or erased meanwhile; nothing in the folder changed), at most
 * FOLLOW_RESTORE_ATTEMPTS times (issue 50: a leader compacts every REPLICA_SEAL_CHUNKS chunks).
 * Output and errors as restoreFromBucket's.
 */
async function restoreChangingBucket(dataDir: string, store: ObjectStore, key: ReplicaKey): Promise<BucketRestoreResult> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await restoreFromBucket(dataDir, store, key, {}, new Date().toISOString());
    } catch (err) {
      if (!(err instanceof BucketChangedError) || attempt >= FOLLOW_RESTORE_ATTEMPTS) throw err;
      logger.info('follower_restore_retry', `follower: ${err.message} (attempt ${attempt} of ${FOLLOW_RESTORE_ATTEMPTS})`);
    }
  }
}

/** The leader or follower of a running service. */
export class Replication {
  private leader: ReplicaLeader | null = null;
  private follower: ReplicaFollower | null = null;
  private promoting: Promise<unknown> | null = null;

  private constructor(
    private readonly app: App,
    private readonly mode: ReplicaMode,
    private readonly shipIntervalMs: number,
    private readonly ackTimeoutMs: number,
    private readonly keySettings: ReplicaKeySettings,
    private readonly bucketCheckMs: number,
  ) {}

  /**
   * Builds the replication the configuration asks for (null when neither FORUM_REPLICA_URL nor
   * FORUM_FOLLOW is set). A follower starts tailing now (before the listener opens, so its first
   * reads are current); a leader starts with `startLeader` once the public URL is known.
   */
  static async open(app: App, config: Config): Promise<Replication | null> {
    const settings = config.replica;
    const follow = config.follow;
    if (settings === null && follow === null) return null;
    const r = new Replication(app, settings!.mode, settings!.shipIntervalMs, settings!.ackTimeoutMs, settings!, settings!.bucketCheckMs);
    app.replication = { status: () => r.status(), promote: () => r.promote(), following: () => r.follower !== null };
    if (follow !== null) {
      const store = await openStore(follow.url);
      const follower = new ReplicaFollower(store, followerKey(settings!), follow.pollMs);
      r.follower = follower;
      markReplicated(config.dataDir, app.log.originId, follow.url, 'follower', new Date().toISOString());
      app.writeRefusal = () => {
        const leaderUrl = follower.status().leaderUrl;
        return new ServiceError(
          'FOLLOWER_READ_ONLY',
          `this server is a read-only follower of ${follow.url}: it takes no writes${leaderUrl ? `; send them to the leader at ${shownText(leaderUrl)}` : ''}`,
          { 'Retry-After': String(REPLICA_RETRY_AFTER_SECONDS), ...leaderHeader(leaderUrl) },
        );
      };
      await follower.start({
        log: app.log,
        apply: (record, payloadJson) => app.applyProven(record, payloadJson),
        seedErased: (payload) => app.seedErased(payload),
        erase: (targets) => app.eraseRecords(targets),
      });
      return r;
    }
    const keys = leaderKeys(settings!);
    r.leader = r.attachLeader(await openStore(settings!.url), keys);
    return r;
  }

  /** Ties a new leader to the app (see the module doc). */
  private attachLeader(store: ObjectStore, keys: LeaderKeys): ReplicaLeader {
    const leader = new ReplicaLeader(store, this.mode, this.shipIntervalMs || 1, keys, this.bucketCheckMs);
    this.app.afterGroupCommit.add(() => leader.kick());
    this.app.afterErase.add(() => void leader.erased());
    if (this.mode === 'sync') {
      const ms = this.ackTimeoutMs;
      this.app.log.ackTimeout = {
        ms,
        error: () =>
          new ServiceError(
            'REPLICA_UNAVAILABLE',
            `the object store did not confirm this write within ${ms} ms (FORUM_REPLICA_MODE=sync): it is not acknowledged, and may still be committed once the store answers; retry with the same clientId after Retry-After seconds`,
            { 'Retry-After': String(REPLICA_RETRY_AFTER_SECONDS) },
          ),
      };
    }
    return leader;
  }

  /** Starts the leader (takes the epoch, ships). Rejects with ReplicaStartError when this server must not lead. */
  async startLeader(expectEpoch?: number): Promise<void> {
    const leader = this.leader;
    if (leader === null) return;
    const app = this.app;
    await leader.start({
      log: app.log,
      // The fence record: encoded here, placed in the bucket, then appended (leader.ts placeFence).
      encodeEpoch: (p, rebase) => {
        // The folder is about to hold an epoch record: from here on it starts only with replica settings.
        markReplicated(app.config.dataDir, app.log.originId, leader.store.location.url, 'leader', new Date(app.now()).toISOString());
        // Issue 50: taken from another writer, the epoch record's position clears the gap (domain/positions.ts).
        const payload = rebase ? { ...p, positionBase: nextPositionBase(app.state.positions.positionOf(app.log.headSeq)) } : p;
        return app.log.encodeNext(REPLICATION_EPOCH_TYPE, payload, app.now());
      },
      wasWriterOf: (epoch) => ledAtEpoch(app.config.dataDir, app.log.originId, leader.store.location.url, epoch),
      leading: (epoch) => markReplicated(app.config.dataDir, app.log.originId, leader.store.location.url, 'leader', new Date(app.now()).toISOString(), epoch),
      publicUrl: () => app.config.publicUrl,
      now: () => app.now(),
      apply: (record, payloadJson) => app.applyProven(record, payloadJson),
      seedErased: (payload) => app.seedErased(payload),
      erase: (targets) => app.eraseRecords(targets),
      holdWrites: async (refusal, task) => {
        const before = app.writeRefusal;
        app.writeRefusal = () => refusal;
        try {
          return await task();
        } finally {
          app.writeRefusal = before;
        }
      },
    }, { expectEpoch });
  }

  /** Refuses writes with the leader's refusal (503 REPLICA_FENCED / REPLICA_UNAVAILABLE) before their body is read. */
  guard(): Guards {
    return {
      afterAuth: (route) => {
        if (route.method !== 'POST' || this.leader === null) return;
        const refusal = this.leader.refusal();
        if (refusal !== null) throw refusal;
      },
    };
  }

  /** What the replication gauges read (metrics.ts). */
  sample(): ReplicationSample {
    if (this.leader !== null) {
      const s = this.leader.status();
      return { lagRecords: s.lag.records, lagSeconds: s.lag.seconds, shippedSeq: s.shippedSeq, epoch: s.epoch ?? 0, fenced: s.state === 'fenced', requests: s.requests, missingObjects: s.bucketCheck?.missing.length ?? 0 };
    }
    const f = this.follower!.status();
    return { lagRecords: 0, lagSeconds: 0, shippedSeq: f.appliedSeq, epoch: f.epoch ?? 0, fenced: false, requests: f.requests, missingObjects: 0 };
  }

  /** `replication status`: the leader's or the follower's. */
  status(): unknown {
    return this.leader?.status() ?? this.follower!.status();
  }

  /**
   * `replication promote` (issue 36): a follower applies what the bucket holds, takes the writer
   * epoch and leads from the next seq. Output: the new leader's status. Throws 400
   * UNSUPPORTED_OPERATION on a server that is not a follower, 503 REPLICA_FENCED when another
   * server won the epoch (this one stays a follower).
   */
  promote(): Promise<unknown> {
    this.promoting ??= this.promoteOnce().finally(() => {
      this.promoting = null;
    });
    return this.promoting;
  }

  private async promoteOnce(): Promise<unknown> {
    const follower = this.follower;
    if (follower === null) throw new ServiceError('UNSUPPORTED_OPERATION', 'this server is not a follower (FORUM_FOLLOW is not set): there is nothing to promote');
    const started = Date.now();
    // Only a holder of the signing key may lead (read when promoted: it may have been copied here since the start).
    let keys: LeaderKeys;
    try {
      keys = leaderKeys(this.keySettings);
    } catch (err) {
      throw new ServiceError('UNSUPPORTED_OPERATION', `this follower cannot lead: ${(err as Error).message}`);
    }
    if (keys.signing === null || !keys.signing.sameAs(follower.key)) {
      throw new ServiceError(
        'UNSUPPORTED_OPERATION',
        `this follower cannot lead: it holds ${keys.signing === null ? 'no replica signing key' : `the signing key of ${keys.signing.text}, not of the bucket's ${follower.key.text},`} at ${this.keySettings.signingKeyPath}; copy the leader's signing key file there (mode 0600) or set FORUM_REPLICA_SIGNING_KEY, then promote again. It stays a follower`,
      );
    }
    // The epoch this promotion takes over from: a server that takes it first wins the race.
    const manifest = await follower.store.get(MANIFEST_NAME);
    if (manifest === null) throw new ServiceError('REPLICA_FENCED', `${follower.store.location.url} has no ${MANIFEST_NAME}: nothing to take over`);
    const expectEpoch = decodeManifest(manifest.body, MANIFEST_NAME, follower.key).epoch;
    // A stopped follower is refused here (400 UNSUPPORTED_OPERATION, saying why), before anything changes.
    await follower.stopForPromotion();
    const leader = this.attachLeader(follower.store, keys);
    this.leader = leader;
    try {
      await this.startLeader(expectEpoch);
    } catch (err) {
      // Nothing of this promotion is in the bucket, or a later leader won: keep following.
      this.leader = null;
      this.app.log.ackTimeout = null;
      this.app.log.replicate = null;
      follower.resume(`promotion failed: ${(err as Error).message}`);
      throw new ServiceError('REPLICA_FENCED', `promotion failed, this server stays a follower: ${(err as Error).message}`, { 'Retry-After': String(REPLICA_RETRY_AFTER_SECONDS) });
    }
    follower.promoted();
    this.follower = null;
    this.app.writeRefusal = null;
    if (leader.state !== 'leading') {
      // It holds the epoch but the store stopped answering before the fence record was placed:
      // the previous leader stops at its next look at the manifest, so this server must finish
      // the take-over; it retries in the background and takes writes once it leads.
      const why = leader.status().lastError ?? 'no answer';
      logger.warn('promoted', `replication: took the epoch, but the object store stopped answering before the take-over finished (${why}); retrying`);
      throw new ServiceError(
        'REPLICA_UNAVAILABLE',
        `this server took the leadership of ${follower.store.location.url} but the object store stopped answering before the take-over finished (${why}); it retries on its own and takes writes once the store answers (replication status shows state leading)`,
        { 'Retry-After': String(REPLICA_RETRY_AFTER_SECONDS) },
      );
    }
    logger.info('promoted', `replication: promoted to leader in ${Date.now() - started} ms`, { ms: Date.now() - started });
    return { promoted: true, ms: Date.now() - started, ...leader.status() };
  }

  /** Stops shipping or tailing (at shutdown). */
  async close(): Promise<void> {
    await this.promoting?.catch(() => undefined);
    await this.follower?.close();
    await this.leader?.close();
    if (this.leader === null) this.follower?.store.close();
  }
}
