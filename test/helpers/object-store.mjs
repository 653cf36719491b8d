/**
 * Test helper: an S3-compatible object store and a fresh, empty bucket for one test.
 *
 * Where the store comes from, in order:
 *  1. `AWS_ENDPOINT_URL_S3` is set: a store someone else started — in CI the Ceph RADOS Gateway
 *     of `scripts/dev/rgw.sh start` (.ci/run evals its exports) — used with the env credentials;
 *  2. `moto_server` (Python moto) is on PATH: one started by this helper on a free 127.0.0.1 port,
 *     once per test process and shared by its tests, killed by pid when the process exits (a test
 *     process killed by a signal leaves it behind, listening on loopback only);
 *  3. neither: `objectStore` throws under FORUM_REQUIRE_S3=1 (.ci/run, so CI cannot skip), else
 *     resolves to null and the test skips, saying what did not run.
 *
 * Requests go through the official AWS SDK (`@aws-sdk/client-s3`), the same client the replication
 * uses, so signing and header handling are the real thing.
 *
 * Behaviour observed on Ceph RGW 16.2.15 (Debian 12, scripts/dev/rgw.sh) and moto 5.2.1, through this
 * SDK (test/replication/object-store.test.mjs checks the parts the replication relies on):
 *  - `PutObject` with `IfNoneMatch: '*'` (create-only) is honoured by both, atomically: of
 *    concurrent writers of one new key exactly one gets 200 and every other 412
 *    PreconditionFailed (300 rounds of 8 and of 32 writers on each store; no 409 or 500 seen).
 *  - `PutObject` with `IfMatch` (compare-and-swap): RGW compares the header with the bare hex
 *    ETag, so the quoted form responses carry (`"abc…"`, as the SDK returns it) never matches and
 *    always gets 412; moto strips quotes on both sides and takes either. Send
 *    `etagForIfMatch(etag)`. A stale ETag gets 412 on both. Of concurrent writers holding the same
 *    current ETag exactly one wins on both, but RGW answers many losers 500 (ECANCELED from its
 *    atomic compare in RADOS, "err_no=125 resorting to 500" in its log) instead of 412.
 *  - `IfMatch` on a missing key: RGW 412, moto 404 NoSuchKey. `IfMatch: '*'`: RGW 200 when the
 *    key exists, moto 412. `IfNoneMatch: <etag>` on a PUT: RGW 412 when it matches, moto ignores it.
 *  - `DeleteObject` with a stale `IfMatch`: moto 412, RGW deletes anyway (204): no conditional
 *    delete on RGW 16.2.
 *  - A single PUT's ETag is the quoted MD5 hex of the body on both.
 *  - RGW error bodies carry no Message, so SDK errors read "UnknownError": branch on `err.name`
 *    (`PreconditionFailed`, `NoSuchKey`) and `err.$metadata.httpStatusCode`, not the message.
 *  - With the SDK's default request checksums (SDK >= 3.729), a stream body is sent aws-chunked
 *    with a signed trailer, which RGW 16.2 refuses (411 MissingContentLength, even with
 *    ContentLength set); strings and Buffers go through. Clients here compute checksums only
 *    when an operation requires one (`requestChecksumCalculation: 'WHEN_REQUIRED'`).
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import {
  S3Client,
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  ListObjectVersionsCommand,
  ListObjectsV2Command,
} from '@aws-sdk/client-s3';

/** Credentials given to the helper's own moto server (moto accepts any). */
const MOTO_CREDENTIALS = { accessKeyId: 'motoaccess', secretAccessKey: 'motosecret' };
/** How long a started moto_server may take to answer before the helper gives up. */
const MOTO_START_TIMEOUT_MS = 30_000;

/**
 * The ETag in the form an `If-Match` header must carry to match on both stores: without the
 * surrounding double quotes. RGW 16.2 compares `If-Match` byte for byte with the unquoted hex
 * digest, so a quoted ETag (as S3 returns it, and as the SDK hands it back) always gets 412;
 * moto 5.2.1 strips quotes from both sides before comparing, so it accepts either form.
 * @param {string} etag an ETag as returned in a response (`"d41d8…"`) or already bare
 * @returns {string} the ETag without surrounding quotes
 */
export function etagForIfMatch(etag) {
  return etag.length >= 2 && etag.startsWith('"') && etag.endsWith('"') ? etag.slice(1, -1) : etag;
}

/** The full path of `cmd` on PATH, or null. */
function onPath(cmd) {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    const p = join(dir, cmd);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // not in this PATH entry
    }
  }
  return null;
}

/** A port free on 127.0.0.1 right now (the kernel's pick). */
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {import('node:net').AddressInfo} */ (srv.address());
      srv.close(() => resolve(port));
    });
  });
}

/** The running moto server of this process: a promise of { endpoint } (one start, shared). */
let moto = null;

/**
 * Starts `moto_server` (at `bin`) on a free port and resolves once it answers HTTP. The child is
 * unref'd (it does not keep the test process alive) and killed by its pid when the process exits.
 */
async function startMoto(bin) {
  const port = await freePort();
  const child = spawn(bin, ['-H', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (s) => {
    stderr = (stderr + s).slice(-4000);
  });
  let exited = null;
  child.once('exit', (code, signal) => {
    exited = `exited (code ${code}, signal ${signal})`;
  });
  const kill = () => {
    if (exited === null && child.pid !== undefined) {
      try {
        process.kill(child.pid, 'SIGTERM');
      } catch {
        // already gone
      }
    }
  };
  process.once('exit', kill);
  child.unref();
  child.stderr.unref();

  const endpoint = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + MOTO_START_TIMEOUT_MS;
  for (;;) {
    if (exited !== null) throw new Error(`moto_server ${exited} before answering on ${endpoint}:\n${stderr}`);
    try {
      await fetch(`${endpoint}/moto-api/`, { signal: AbortSignal.timeout(2000) });
      return { endpoint };
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      kill();
      throw new Error(`moto_server did not answer on ${endpoint} within ${MOTO_START_TIMEOUT_MS} ms:\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A bucket name unique to this call: lowercase, digits and dashes, under 63 characters. */
function bucketName() {
  return `forum-test-${process.pid}-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
}

/** Runs `fn` over `items` at most 16 at a time (a 1,000-key page at once queued hundreds of requests behind the SDK's 50 sockets). */
async function inBatches(items, fn) {
  for (let i = 0; i < items.length; i += 16) await Promise.all(items.slice(i, i + 16).map(fn));
}

/** Deletes every object (and version) in `bucket`, then the bucket; errors are ignored. */
async function removeBucket(client, bucket) {
  try {
    let token;
    do {
      const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }));
      await inBatches(page.Contents ?? [], (o) => client.send(new DeleteObjectCommand({ Bucket: bucket, Key: o.Key })));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    // A test may have turned versioning on; a bucket with versions left cannot be deleted.
    const versions = await client.send(new ListObjectVersionsCommand({ Bucket: bucket })).catch(() => ({}));
    const left = [...(versions.Versions ?? []), ...(versions.DeleteMarkers ?? [])];
    await inBatches(left, (v) => client.send(new DeleteObjectCommand({ Bucket: bucket, Key: v.Key, VersionId: v.VersionId })));
    await client.send(new DeleteBucketCommand({ Bucket: bucket }));
  } catch {
    // best effort: a throwaway store, and a failed cleanup must not fail the test
  }
}

/**
 * @typedef {object} ObjectStore
 * @property {'rgw' | 'moto'} kind which store answers: the helper's own moto server, or one from
 *   the environment (`rgw` unless FORUM_TEST_S3=moto says the env endpoint is a moto server)
 * @property {string} endpoint the S3 endpoint URL (`http://127.0.0.1:PORT`)
 * @property {string} bucket a bucket created for this call, empty, removed after the test
 * @property {string} region the signing region
 * @property {string} accessKeyId
 * @property {string} secretAccessKey
 * @property {{ AWS_ENDPOINT_URL_S3: string, AWS_ACCESS_KEY_ID: string, AWS_SECRET_ACCESS_KEY: string, AWS_REGION: string }} env
 *   the variables a child server process needs to reach the same store
 * @property {S3Client} client an SDK client for the store: path-style addressing, no retries
 *   (every status reaches the test as the store sent it), checksums only where required
 */

/**
 * Gives a test an S3 endpoint and a fresh, empty bucket on it (see the file comment for where the
 * store comes from). The bucket and its objects are deleted after the test (best effort).
 * @param {import('node:test').TestContext} t the test context (`t.after` cleans up)
 * @returns {Promise<ObjectStore | null>} null when no store is available and FORUM_REQUIRE_S3 is
 *   not 1: the test should `t.skip()` saying what did not run
 */
export async function objectStore(t) {
  let kind, endpoint, accessKeyId, secretAccessKey;
  const region = process.env.AWS_REGION || 'us-east-1';
  if (process.env.AWS_ENDPOINT_URL_S3) {
    endpoint = process.env.AWS_ENDPOINT_URL_S3;
    accessKeyId = process.env.AWS_ACCESS_KEY_ID ?? '';
    secretAccessKey = process.env.AWS_SECRET_ACCESS_KEY ?? '';
    kind = process.env.FORUM_TEST_S3 === 'moto' ? 'moto' : 'rgw';
  } else {
    const bin = onPath('moto_server');
    if (bin === null) {
      const why = 'no S3 object store: AWS_ENDPOINT_URL_S3 is unset (scripts/dev/rgw.sh start prints it) and moto_server is not on PATH (pip install "moto[server]")';
      if (process.env.FORUM_REQUIRE_S3 === '1') throw new Error(`${why}, and FORUM_REQUIRE_S3=1 requires one`);
      return null;
    }
    moto ??= startMoto(bin).catch((err) => {
      moto = null;
      throw err;
    });
    ({ endpoint } = await moto);
    ({ accessKeyId, secretAccessKey } = MOTO_CREDENTIALS);
    kind = 'moto';
  }

  const client = new S3Client({
    endpoint,
    region,
    credentials: { accessKeyId, secretAccessKey },
    forcePathStyle: true,
    maxAttempts: 1,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  const bucket = bucketName();
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  t.after(async () => {
    await removeBucket(client, bucket);
    client.destroy();
  });
  return {
    kind,
    endpoint,
    bucket,
    region,
    accessKeyId,
    secretAccessKey,
    env: { AWS_ENDPOINT_URL_S3: endpoint, AWS_ACCESS_KEY_ID: accessKeyId, AWS_SECRET_ACCESS_KEY: secretAccessKey, AWS_REGION: region },
    client,
  };
}
