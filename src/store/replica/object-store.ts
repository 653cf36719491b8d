/**
 * The object store a replica lives in (issue 35): an S3-compatible bucket reached through the
 * official AWS SDK for JavaScript (`@aws-sdk/client-s3`; request signing, retries and endpoint
 * rules are the SDK's, not ours), reduced to the five operations replication needs, each with the
 * outcome a fencing protocol must tell apart:
 *
 * - `get(key)`: the object's bytes and ETag, or null when the key does not exist (404);
 * - `create(key, body)`: create-only PUT (`If-None-Match: *`): `created`, `exists` (412: someone
 *   holds the key) or `unknown` (a 5xx, a timeout or a 409 on the conditional write: the PUT may
 *   or may not have happened — the caller re-reads the key and compares);
 * - `replace(key, body, etag)`: compare-and-swap PUT (`If-Match`): `replaced`, `conflict` (412) or
 *   `unknown` (as above: Ceph RGW 16.2 sometimes answers a losing `If-Match` with 500);
 * - `list(prefix, startAfter)`: every key under a prefix, in key order (paged LIST);
 * - `delete(keys)`: removes keys (missing keys are fine).
 *
 * Configuration is the standard AWS one (docs/operate/replication.md): credentials from the usual
 * environment variables or profile (the SDK's default chain), `AWS_REGION` (default `us-east-1`),
 * an endpoint for R2, B2, MinIO and Ceph (`AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`, read by the
 * SDK), and path-style addressing (`FORUM_REPLICA_PATH_STYLE`, default on when an endpoint is set).
 */
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { REPLICA_REQUEST_TIMEOUT_MS, REPLICA_CONNECT_TIMEOUT_MS } from '../../constants.js';
import { segmentObjectName, type ReplicaLocation } from './format.js';

/** Outcome of a create-only PUT. */
export type CreateOutcome = { outcome: 'created'; etag: string } | { outcome: 'exists' } | { outcome: 'unknown'; reason: string };
/** Outcome of a compare-and-swap PUT. */
export type ReplaceOutcome = { outcome: 'replaced'; etag: string } | { outcome: 'conflict' } | { outcome: 'unknown'; reason: string };

/** Request counters (metrics and `replication status`). */
export interface ObjectStoreCounters {
  puts: number;
  gets: number;
  lists: number;
  deletes: number;
  failures: number;
}

/** The operations replication needs; the S3 implementation below, tests may supply their own. */
export interface ObjectStore {
  readonly location: ReplicaLocation;
  readonly counters: ObjectStoreCounters;
  /** The object at `name` (relative to the prefix), or null when it does not exist. Rejects on other failures. */
  get(name: string): Promise<{ body: Buffer; etag: string } | null>;
  /** Create-only PUT of `name`. Never rejects for a 412/409/5xx (see CreateOutcome); rejects on other failures (403, …). */
  create(name: string, body: Buffer): Promise<CreateOutcome>;
  /** PUT of `name` only if its ETag is still `etag`. Never rejects for a 412/409/5xx; rejects on other failures. */
  replace(name: string, body: Buffer, etag: string): Promise<ReplaceOutcome>;
  /** Every name under `dir` (relative to the prefix, e.g. `chunks/`), in key order, after `startAfter` (a name) when given. */
  list(dir: string, startAfter?: string): Promise<string[]>;
  /** Deletes names (missing ones are fine). */
  delete(names: readonly string[]): Promise<void>;
  /** Closes the client's sockets. */
  close(): void;
}

/**
 * An ETag as `If-Match` must carry it: without its quotes. Ceph RGW 16.2 compares the header with
 * the bare ETag (a quoted one always gets 412); AWS S3 and moto accept the bare form too.
 */
export function bareEtag(etag: string): string {
  return etag.replace(/^W\//, '').replace(/^"|"$/g, '');
}

/** The HTTP status of an SDK error, or null when the request never got an answer. */
function statusOf(err: unknown): number | null {
  if (err instanceof S3ServiceException) return err.$metadata.httpStatusCode ?? null;
  const meta = (err as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata;
  return meta?.httpStatusCode ?? null;
}

/** Whether a failed conditional PUT may have happened after all (no answer, a 409 race or a 5xx). */
function outcomeUnknown(err: unknown): boolean {
  const status = statusOf(err);
  return status === null || status === 409 || status >= 500;
}

/**
 * The S3 implementation over `@aws-sdk/client-s3`. `env` supplies FORUM_REPLICA_PATH_STYLE and
 * tells whether an endpoint is configured (the SDK itself reads AWS_ENDPOINT_URL_S3,
 * AWS_ENDPOINT_URL, AWS_REGION and the credential variables from the process environment).
 */
export class S3ObjectStore implements ObjectStore {
  readonly counters: ObjectStoreCounters = { puts: 0, gets: 0, lists: 0, deletes: 0, failures: 0 };
  private readonly client: S3Client;

  constructor(
    readonly location: ReplicaLocation,
    env: NodeJS.ProcessEnv = process.env,
  ) {
    const endpointSet = Boolean(env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL);
    const pathStyle = env.FORUM_REPLICA_PATH_STYLE === undefined || env.FORUM_REPLICA_PATH_STYLE === '' ? endpointSet : /^(1|on|true|yes)$/i.test(env.FORUM_REPLICA_PATH_STYLE);
    this.client = new S3Client({
      region: env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1',
      forcePathStyle: pathStyle,
      // throwOnRequestTimeout: without it the SDK's handler only logs a warning at the timeout and
      // a PUT the store never answers hangs for ever (a full RGW OSD does that).
      requestHandler: { requestTimeout: REPLICA_REQUEST_TIMEOUT_MS, connectionTimeout: REPLICA_CONNECT_TIMEOUT_MS, throwOnRequestTimeout: true },
      // Checksums only where an operation requires one: Ceph RGW 16.2 refuses the SDK's default
      // aws-chunked bodies with signed trailers (411), and every body here is a Buffer whose
      // chunk lines carry their own hash chain anyway.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      // The SDK's standard retries (3 attempts) cover throttling and 5xx; a conditional PUT
      // retried after a lost answer meets its own first attempt, which the caller recognises.
    });
  }

  private key(name: string): string {
    return this.location.prefix === '' ? name : `${this.location.prefix}/${name}`;
  }

  async get(name: string): Promise<{ body: Buffer; etag: string } | null> {
    this.counters.gets++;
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.location.bucket, Key: this.key(name) }));
      const bytes = await out.Body!.transformToByteArray();
      return { body: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), etag: bareEtag(out.ETag ?? '') };
    } catch (err) {
      if (statusOf(err) === 404) return null;
      this.counters.failures++;
      throw err;
    }
  }

  async create(name: string, body: Buffer): Promise<CreateOutcome> {
    this.counters.puts++;
    try {
      const out = await this.client.send(new PutObjectCommand({ Bucket: this.location.bucket, Key: this.key(name), Body: body, IfNoneMatch: '*', ContentLength: body.length }));
      return { outcome: 'created', etag: bareEtag(out.ETag ?? '') };
    } catch (err) {
      if (statusOf(err) === 412) return { outcome: 'exists' };
      this.counters.failures++;
      if (outcomeUnknown(err)) return { outcome: 'unknown', reason: (err as Error).message };
      throw err;
    }
  }

  async replace(name: string, body: Buffer, etag: string): Promise<ReplaceOutcome> {
    this.counters.puts++;
    try {
      const out = await this.client.send(new PutObjectCommand({ Bucket: this.location.bucket, Key: this.key(name), Body: body, IfMatch: bareEtag(etag), ContentLength: body.length }));
      return { outcome: 'replaced', etag: bareEtag(out.ETag ?? '') };
    } catch (err) {
      if (statusOf(err) === 412) return { outcome: 'conflict' };
      this.counters.failures++;
      if (outcomeUnknown(err)) return { outcome: 'unknown', reason: (err as Error).message };
      throw err;
    }
  }

  async list(dir: string, startAfter?: string): Promise<string[]> {
    const names: string[] = [];
    const strip = this.location.prefix === '' ? 0 : this.location.prefix.length + 1;
    let token: string | undefined;
    do {
      this.counters.lists++;
      let out;
      try {
        out = await this.client.send(
          new ListObjectsV2Command({
            Bucket: this.location.bucket,
            Prefix: this.key(dir),
            ContinuationToken: token,
            StartAfter: token === undefined && startAfter !== undefined ? this.key(startAfter) : undefined,
          }),
        );
      } catch (err) {
        this.counters.failures++;
        throw err;
      }
      for (const o of out.Contents ?? []) if (o.Key !== undefined) names.push(o.Key.slice(strip));
      token = out.IsTruncated ? out.NextContinuationToken : undefined;
    } while (token !== undefined);
    return names;
  }

  async delete(names: readonly string[]): Promise<void> {
    for (let i = 0; i < names.length; i += 1000) {
      this.counters.deletes++;
      try {
        await this.client.send(
          new DeleteObjectsCommand({ Bucket: this.location.bucket, Delete: { Objects: names.slice(i, i + 1000).map((n) => ({ Key: this.key(n) })), Quiet: true } }),
        );
      } catch (err) {
        this.counters.failures++;
        throw err;
      }
    }
  }

  close(): void {
    this.client.destroy();
  }
}

/** Stores a sealed segment's bytes as its object (segmentObjectName): created, or replaced when an earlier copy differs (an erasure since). */
export async function putSegment(store: ObjectStore, firstSeq: number, bytes: Buffer): Promise<void> {
  const name = segmentObjectName(firstSeq);
  for (let attempt = 0; ; attempt++) {
    const r = await store.create(name, bytes);
    if (r.outcome === 'created') return;
    const existing = await store.get(name);
    if (existing === null) {
      if (attempt >= 3) throw new Error(`creating ${name}: the key stays empty`);
      continue;
    }
    if (existing.body.equals(bytes)) return;
    const rr = await store.replace(name, bytes, existing.etag);
    if (rr.outcome === 'replaced') return;
    if (attempt >= 3) throw new Error(`replacing ${name}: ${rr.outcome}`);
  }
}
