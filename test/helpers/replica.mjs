/**
 * Shared set-up of the replication tests (issue 35): a fresh bucket prefix on the test's object
 * store (RGW in CI, moto locally; test/helpers/object-store.mjs), optionally behind the
 * fault-injecting proxy (s3-proxy.mjs), the server environment that points a leader at it, and
 * ways to look into the bucket and restore from it.
 */
import { Agent, request } from 'undici';
import { adminSocketPath } from '../../dist/admin/socket-path.js';
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { objectStore } from './object-store.mjs';
import { s3Proxy } from './s3-proxy.mjs';
import { cli, tempDir } from './server.mjs';

/**
 * A new replica key pair (issue 50) in a temp folder: { signingKeyPath (PKCS#8 PEM, mode 0600),
 * publicKey (`ed25519:<base64url>`), privateKey (a KeyObject, to sign test objects) }.
 */
export function replicaKeyPair(t) {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const signingKeyPath = join(tempDir(t, 'forum-replica-key-'), 'replica-signing-key.pem');
  writeFileSync(signingKeyPath, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
  return { signingKeyPath, publicKey: `ed25519:${publicKey.export({ format: 'jwk' }).x}`, privateKey };
}

/**
 * A replica target for one test, or null (the test is skipped with a message saying what did
 * not run) when no object store is available. `mode`: FORUM_REPLICA_MODE; `proxy`: put the
 * fault-injecting proxy between the server and the store; `env`: more server variables.
 * Each target has its own replica key pair (issue 50): `storeEnv` (followers, restores) and
 * `serverEnv` (leaders) carry both FORUM_REPLICA_SIGNING_KEY and FORUM_REPLICA_PUBLIC_KEY, so a
 * follower may be promoted; `readerEnv` carries only the public key (a read-only follower).
 * Resolves to { store, url, prefix, proxy, serverEnv, storeEnv, readerEnv, keys }.
 */
export async function replicaTarget(t, { mode = 'async', proxy = false, env = {} } = {}) {
  const store = await objectStore(t);
  if (store === null) {
    t.skip('no object store (neither AWS_ENDPOINT_URL_S3 nor moto_server): the replication test did not run');
    return null;
  }
  const prefix = `forum-${randomUUID().slice(0, 8)}`;
  const url = `s3://${store.bucket}/${prefix}`;
  const px = proxy ? await s3Proxy(t, store.endpoint) : null;
  const keys = replicaKeyPair(t);
  const readerEnv = { ...store.env, FORUM_REPLICA_PUBLIC_KEY: keys.publicKey, FORUM_REPLICA_SIGNING_KEY: '' };
  const storeEnv = { ...readerEnv, FORUM_REPLICA_SIGNING_KEY: keys.signingKeyPath };
  const serverEnv = {
    ...storeEnv,
    AWS_ENDPOINT_URL_S3: px?.endpoint ?? store.endpoint,
    FORUM_REPLICA_URL: url,
    FORUM_REPLICA_MODE: mode,
    ...env,
  };
  return { store, url, prefix, proxy: px, serverEnv, storeEnv, readerEnv, keys };
}

/** Every object under the target's prefix: [{ key, body: Buffer }], in key order (one deleted between the LIST and its GET is left out). */
export async function bucketObjects(target) {
  const { client, bucket } = target.store;
  const out = [];
  let token;
  do {
    const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: `${target.prefix}/`, ContinuationToken: token }));
    for (const o of page.Contents ?? []) {
      let got;
      try {
        got = await client.send(new GetObjectCommand({ Bucket: bucket, Key: o.Key }));
      } catch (err) {
        // Deleted since it was listed (the leader compacts chunks into segments meanwhile).
        if (err.$metadata?.httpStatusCode === 404) continue;
        throw err;
      }
      out.push({ key: o.Key.slice(target.prefix.length + 1), body: Buffer.from(await got.Body.transformToByteArray()) });
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token !== undefined);
  return out;
}

/** Runs `restore --from` into a new temp folder (extra CLI args after it); resolves to { dir, result, run }. */
export async function restoreFrom(t, target, ...args) {
  const dir = tempDir(t, 'forum-restored-');
  const run = await cli(['--data-dir', dir, 'restore', '--from', target.url, '--yes', ...args], target.storeEnv);
  return { dir, result: run.json, run };
}

/** The segment files of a data folder: { name → their records' bytes }. */
export function segmentFiles(dataDir) {
  const dir = join(dataDir, 'log');
  return Object.fromEntries(readdirSync(dir).filter((n) => n.endsWith('.jsonl')).sort().map((n) => [n, recordBytes(readFileSync(join(dir, n)))]));
}

/** A segment file's bytes without the zeros a running server writes ahead of its appends (issue 56): its records. */
function recordBytes(buf) {
  let end = buf.length;
  while (end > 0 && buf[end - 1] === 0) end--;
  return end === buf.length ? buf : buf.subarray(0, end);
}

/** Polls `fn` every 50 ms until it returns a truthy value; rejects after `ms` with `what`. */
export async function waitFor(fn, ms, what) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * `replication promote` sent straight to a running server's admin channel (a Unix socket in its
 * data folder; what the CLI uses), so promotions sent together overlap. Resolves to
 * { status, body }.
 */
export async function promoteOverChannel(s) {
  const res = await request('http://localhost/replication.promote', {
    method: 'POST',
    dispatcher: new Agent({ connect: { socketPath: adminSocketPath(s.dataDir) } }),
    headers: { 'content-type': 'application/json' },
    body: '{}',
  });
  return { status: res.statusCode, body: await res.body.json() };
}

/** `replication status` of a running server (its JSON). */
export async function replicationStatus(s) {
  const r = await s.cli('replication', 'status');
  assert.equal(r.code, 0, r.stderr);
  return r.json;
}

/** Waits until each of `followers` has applied everything `leader` has shipped; resolves to that seq. */
export async function followersCaughtUp(leader, followers) {
  const head = await waitFor(async () => {
    const s = await replicationStatus(leader);
    return s.lag.records === 0 ? s.shippedSeq : null;
  }, 10_000, 'the leader to ship everything');
  for (const f of followers) await waitFor(async () => (await replicationStatus(f)).appliedSeq >= head, 10_000, `a follower to reach record ${head}`);
  return head;
}
