/**
 * Server configuration from the environment (issue 2, docs/operate/configuration.md). All optional.
 */
import { join, resolve } from 'node:path';
import { parseReplicaUrl } from './store/replica/format.js';
import { CLIENT_SHARE_PERCENT_DEFAULT, CONNECTIONS_PER_ADDRESS_DEFAULT, LONE_WRITE_SYNC_MAX_US_DEFAULT, FEED_PAGE_CACHE_BYTES_DEFAULT, MIN_FREE_BYTES_DEFAULT, NGRAM_MERGE_FACTOR, NGRAM_SHARD_DOCS_MAX, PUBLIC_REQUESTS_PER_MINUTE, RECORD_CACHE_BYTES_DEFAULT, REPLAY_WORKERS_BYTES_MIN, SCRUB_MB_PER_MINUTE_DEFAULT, SCRUB_START_DELAY_S_DEFAULT, SEARCH_BUILD_WORKERS_DEFAULT, SEGMENT_BYTES_MAX, SEGMENT_ZERO_AHEAD_BYTES, REPLICA_ACK_TIMEOUT_MS, REPLICA_MODE_DEFAULT, REPLICA_SHIP_INTERVAL_MS, FOLLOW_POLL_MS, REPLICA_SHIP_MS_RANGE, REPLICA_ACK_TIMEOUT_MS_RANGE, FOLLOW_POLL_MS_RANGE, REPLICA_BUCKET_CHECK_MS, REPLICA_BUCKET_CHECK_MS_RANGE, CHECKPOINT_KEY_FILE } from './constants.js';
import { urlHeaderValue } from './header-value.js';
import { REPLICA_SIGNING_KEY_FILE, parsePublicKey } from './store/replica/keys.js';

const MIB = 1024 * 1024;

/**
 * Where the client IP of a request comes from (FORUM_TRUST_PROXY, docs/api/limits.md):
 * - `off`: the TCP peer address; forwarding headers are ignored (any client can send them);
 * - `xff`: the right-most `X-Forwarded-For` address, the one the operator's proxy appended;
 * - `cloudflare`: `CF-Connecting-IP`, which Cloudflare overwrites on every request.
 */
export type TrustProxyMode = 'off' | 'xff' | 'cloudflare';

/** The accepted FORUM_TRUST_PROXY values. */
export const TRUST_PROXY_MODES: readonly TrustProxyMode[] = ['off', 'xff', 'cloudflare'];

/** The server configuration (docs/operate/configuration.md). */
export interface Config {
  /** TCP port of the public listener (PORT, default 8080; 0 picks a free port). */
  port: number;
  /** Listen address (HOST, default 127.0.0.1). */
  host: string;
  /** Data folder (FORUM_DATA_DIR, default `data`), absolute. */
  dataDir: string;
  /**
   * The checkpoint signing key's file (issue 53; FORUM_CHECKPOINT_KEY, default
   * `<data dir>/checkpoint-key.pem`), absolute; created at the first start when missing. Followers
   * given the leader's key serve byte-identical exports (docs/api/checkpoints.md).
   */
  checkpointKeyPath?: string;
  /**
   * Absolute base URL used in links (FORUM_PUBLIC_URL, default http://HOST:PORT), no trailing
   * slash. Without FORUM_PUBLIC_URL it is replaced by the bound address once the server listens,
   * so PORT=0 still gives working links.
   */
  publicUrl: string;
  /** True when FORUM_PUBLIC_URL was given. */
  publicUrlSet: boolean;
  /**
   * Port of the metrics listener on 127.0.0.1 (FORUM_METRICS_PORT; unset = no metrics listener;
   * 0 picks a free port). Never the public listener. Issue 20.
   */
  metricsPort: number | null;
  /** One JSON line per request on stdout (FORUM_ACCESS_LOG, `off` default). Issue 20. */
  accessLog: boolean;
  /** Rate limits on (FORUM_RATE_LIMITS, `on` default, `off` disables every rate limit). */
  rateLimits: boolean;
  /** Where client IPs come from (FORUM_TRUST_PROXY: `off` default, `xff` or `cloudflare`). */
  trustProxy: TrustProxyMode;
  /**
   * Participant cap behind 507 (FORUM_MAX_AGENTS, default unlimited = null): counts identities
   * created by POST /api/register only, not operators created with the CLI.
   */
  maxAgents: number | null;
  /**
   * FORUM_CLIENT_SHARE_PERCENT (1..100, default CLIENT_SHARE_PERCENT_DEFAULT): the share of the
   * public total one client address may take per minute (issue 38 fair share).
   */
  clientSharePercent: number;
  /**
   * Most connections one peer address holds open at once (FORUM_CONNECTIONS_PER_ADDRESS, default
   * CONNECTIONS_PER_ADDRESS_DEFAULT = 256; 0 = no cap). Issue 21.
   */
  connectionsPerAddress: number;
  /** Writes answer 507 when free disk space under the data folder is below this (FORUM_MIN_FREE_BYTES). */
  minFreeBytes: number;
  /**
   * Size of the cache of records read back from the log, bytes (FORUM_RECORD_CACHE_MB, in MiB;
   * default RECORD_CACHE_BYTES_DEFAULT, 64 MiB; 0 disables it). Issue 17.
   */
  recordCacheBytes: number;
  /**
   * A lone write (one record, nothing else to do) calls fdatasync on the main thread only while the
   * last fdatasync took at most this many µs (FORUM_LONE_WRITE_SYNC_MAX_US; default
   * LONE_WRITE_SYNC_MAX_US_DEFAULT, 1,000; 0: every fdatasync runs on the thread pool). Issue 56.
   */
  loneWriteSyncMaxUs: number;
  /**
   * A write past the active segment's end first extends it by this many bytes of zeros
   * (FORUM_SEGMENT_ZERO_AHEAD_KB, in KiB; default SEGMENT_ZERO_AHEAD_BYTES, 4 MiB; 0: the file
   * grows with each write). Issue 56.
   */
  segmentZeroAheadBytes: number;
  /**
   * Size of the cache of encoded complete feed pages, both feeds together, bytes
   * (FORUM_FEED_CACHE_MB, in MiB; default FEED_PAGE_CACHE_BYTES_DEFAULT, 16 MiB; 0 disables it).
   * Issue 28 item 4.
   */
  feedCacheBytes: number;
  /**
   * Documents per n-gram search index shard (FORUM_SEARCH_SHARD_DOCS, default
   * NGRAM_SHARD_DOCS_MAX = 32768): a tuning knob; small values make many small shard files
   * (tests use it to cross shard boundaries with few messages). Issue 17.
   */
  searchShardDocs: number;
  /**
   * Neighbouring search shard files of one size tier merged into one (FORUM_SEARCH_MERGE_FACTOR,
   * default NGRAM_MERGE_FACTOR = 8; 0 turns merging off): the tuning knob of the tiered merge
   * policy (docs/internals/search-index.md). Small values with small shards make merges frequent (the
   * crash test uses 2). Issue 30.
   */
  searchMergeFactor: number;
  /**
   * Worker threads that build missing search index shards at a start (FORUM_SEARCH_BUILD_WORKERS,
   * default SEARCH_BUILD_WORKERS_DEFAULT = 2; 0 = on the main thread, in slices). Issue 30.
   */
  searchBuildWorkers: number;
  /**
   * Segment roll-over size, bytes (FORUM_SEGMENT_KB, in KiB; default SEGMENT_BYTES_MAX, 64 MiB;
   * at least 1 KiB). A tuning knob: the crash test uses small segments so that a whole replay
   * has many to check on worker threads. Issue 30.
   */
  segmentBytes: number;
  /**
   * A whole replay checks segments on worker threads only when the segments before the last hold
   * at least this many bytes (FORUM_REPLAY_WORKERS_MIN_KB, in KiB; default
   * REPLAY_WORKERS_BYTES_MIN, 16 MiB; 0 = whenever there are segments before the last). The crash
   * test sets 0 so its small logs replay in workers too. Issue 30.
   */
  replayWorkersBytesMin: number;
  /**
   * Pace of the background scrub that re-verifies sealed segments, MB (10^6 bytes) per minute
   * (FORUM_SCRUB_MB_PER_MINUTE, default SCRUB_MB_PER_MINUTE_DEFAULT = 256; 0 = off). Issue 28.
   */
  scrubMbPerMinute: number;
  /** Seconds after a start before the scrub's first pass (FORUM_SCRUB_START_DELAY_S, default 60). Issue 28. */
  scrubStartDelayS: number;
  /** Lets tests move the server's clock through the admin channel (FORUM_TEST_CLOCK=1; never in production). */
  testClock: boolean;
  /**
   * Access-log lines carry `clientAddress`, the client IP as FORUM_TRUST_PROXY resolves it
   * (FORUM_ACCESS_LOG_CLIENT_ADDRESS, `off` default: an address is personal data). Issue 25.
   */
  accessLogClientAddress: boolean;
  /**
   * Continuous replication of the log (issue 35, docs/operate/replication.md): the bucket and prefix
   * (FORUM_REPLICA_URL, `s3://bucket/prefix`; unset = off), the acknowledgement mode
   * (FORUM_REPLICA_MODE: `async` default, or `sync`), the async shipping interval in ms
   * (FORUM_REPLICA_SHIP_MS, default REPLICA_SHIP_INTERVAL_MS) and the sync mode's longest wait for
   * the bucket in ms (FORUM_REPLICA_ACK_TIMEOUT_MS, default REPLICA_ACK_TIMEOUT_MS).
   * Credentials, region and endpoint are the standard AWS variables (store/replica/object-store.ts).
   * The replica key (issue 50; store/replica/keys.ts): the signing key file
   * (FORUM_REPLICA_SIGNING_KEY, default `<data dir>/replica-signing-key.pem`; a leader of a new
   * bucket creates it) and the public key (FORUM_REPLICA_PUBLIC_KEY, `ed25519:<base64url>`; null
   * when unset) that followers and restores verify with.
   */
  replica: { url: string; mode: 'async' | 'sync'; shipIntervalMs: number; ackTimeoutMs: number; bucketCheckMs: number; signingKeyPath: string; publicKey: string | null } | null;
  /**
   * A read-only follower of a replica bucket (issue 36, docs/operate/replication.md): FORUM_FOLLOW
   * (`s3://bucket/prefix`; unset = not a follower) and its poll interval in ms
   * (FORUM_FOLLOW_POLL_MS, default FOLLOW_POLL_MS). After `replication promote` it leads with
   * `replica`'s mode and intervals (FORUM_REPLICA_MODE …), on the same bucket.
   */
  follow: { url: string; pollMs: number } | null;
}

function intEnv(env: NodeJS.ProcessEnv, name: string, fallback: number | null): number | null {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new Error(`${name} must be a non-negative integer, got ${JSON.stringify(raw)}`);
  return Number(raw);
}

function flagEnv(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (['on', '1', 'true', 'yes'].includes(raw.toLowerCase())) return true;
  if (['off', '0', 'false', 'no'].includes(raw.toLowerCase())) return false;
  throw new Error(`${name} must be on or off, got ${JSON.stringify(raw)}`);
}

/**
 * Reads FORUM_TRUST_PROXY: `off` (default, also when empty), `xff` or `cloudflare`, any case.
 * Throws for any other value, including `on`, which would not say which header to trust.
 */
function trustProxyEnv(env: NodeJS.ProcessEnv): TrustProxyMode {
  const raw = env.FORUM_TRUST_PROXY;
  if (raw === undefined || raw.trim() === '') return 'off';
  const mode = raw.trim().toLowerCase();
  if ((TRUST_PROXY_MODES as readonly string[]).includes(mode)) return mode as TrustProxyMode;
  throw new Error(
    `FORUM_TRUST_PROXY must be one of ${TRUST_PROXY_MODES.join(', ')}, got ${JSON.stringify(raw)}: ` +
      'off = use the TCP peer address; xff = right-most X-Forwarded-For (only behind your own proxy, e.g. nginx or ngrok); ' +
      'cloudflare = CF-Connecting-IP (only behind Cloudflare)',
  );
}

/** FORUM_CLIENT_SHARE_PERCENT: an integer 1..100, default CLIENT_SHARE_PERCENT_DEFAULT. Throws Error naming the rule. */
function percentEnv(env: NodeJS.ProcessEnv): number {
  const value = intEnv(env, 'FORUM_CLIENT_SHARE_PERCENT', CLIENT_SHARE_PERCENT_DEFAULT)!;
  if (value < 1 || value > 100) throw new Error(`FORUM_CLIENT_SHARE_PERCENT must be 1..100 (percent of the ${PUBLIC_REQUESTS_PER_MINUTE} public requests per minute one client address may take; 100 = no per-client cap), got ${value}`);
  return value;
}

/**
 * An integer setting that must lie in `range` (issue 50 Low: 0 and 10^14 made a leader refuse most
 * writes or overflow setTimeout). Unset or empty: `fallback`. Throws Error naming the variable
 * and the range for a non-integer or a value outside it.
 */
function rangeEnv(env: NodeJS.ProcessEnv, name: string, fallback: number, range: { readonly min: number; readonly max: number }): number {
  const raw = env[name];
  const rule = `${name} must be an integer number of milliseconds from ${range.min} to ${range.max}`;
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d{1,16}$/.test(raw)) throw new Error(`${rule}, got ${JSON.stringify(raw.slice(0, 40))}`);
  const value = Number(raw);
  if (value < range.min || value > range.max) throw new Error(`${rule}, got ${value}`);
  return value;
}

/**
 * Checks FORUM_PUBLIC_URL, the base of every published link (agent card, catalog, guides,
 * OpenAPI servers): an absolute http: or https: URL with a host and nothing a base URL must not
 * carry — no user name or password (they would be published to every reader), no query and no
 * fragment (links are built by appending paths). A path prefix is allowed.
 * Input: the URL without trailing slashes, and the raw variable for the message.
 * Output: its ASCII form (issue 50 High item 4): an IDN host as punycode, the path
 * percent-encoded, no trailing slash — valid in every published link and in `X-Forum-Leader`.
 * Throws Error naming the variable and the rule (the server prints it and exits 1); control
 * characters are refused (WHATWG `URL` would silently drop a tab or newline).
 */
function checkPublicUrl(publicUrl: string, raw: string | undefined): string {
  const shown = JSON.stringify(raw);
  if (/[\u0000-\u001f\u007f-\u009f]/.test(publicUrl)) throw new Error(`FORUM_PUBLIC_URL must not hold control characters (tab, newline, …), got ${shown}`);
  let url: URL;
  try {
    url = new URL(publicUrl);
  } catch {
    throw new Error(`FORUM_PUBLIC_URL must be an absolute URL, got ${shown}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`FORUM_PUBLIC_URL must start with http:// or https://, got ${shown}`);
  if (url.host === '') throw new Error(`FORUM_PUBLIC_URL must name a host, got ${shown}`);
  if (url.username !== '' || url.password !== '') throw new Error('FORUM_PUBLIC_URL must not carry a user name or password (it is published in the agent card and every link)');
  if (publicUrl.includes('?')) throw new Error(`FORUM_PUBLIC_URL must not carry a query ("?…"): it is a base that paths are appended to, got ${shown}`);
  if (publicUrl.includes('#')) throw new Error(`FORUM_PUBLIC_URL must not carry a fragment ("#…"): it is a base that paths are appended to, got ${shown}`);
  const ascii = urlHeaderValue(publicUrl);
  if (ascii === null) throw new Error(`FORUM_PUBLIC_URL must be an absolute http(s) URL that can be written as ASCII, got ${shown}`);
  return ascii.replace(/\/+$/, '');
}

/**
 * The replication settings (Config.replica, Config.follow). A follower's `replica` names the same
 * bucket (FORUM_FOLLOW), for after its promotion. Throws Error naming the variable and the rule.
 */
function replicationEnv(env: NodeJS.ProcessEnv, dataDir: string): Pick<Config, 'replica' | 'follow'> {
  const leadUrl = env.FORUM_REPLICA_URL || undefined;
  const followUrl = env.FORUM_FOLLOW || undefined;
  for (const [name, url] of [['FORUM_REPLICA_URL', leadUrl], ['FORUM_FOLLOW', followUrl]] as const) {
    if (url === undefined) continue;
    try {
      parseReplicaUrl(url);
    } catch (err) {
      throw new Error(`${name}: ${(err as Error).message}`);
    }
  }
  if (leadUrl !== undefined && followUrl !== undefined && leadUrl !== followUrl) {
    throw new Error('FORUM_REPLICA_URL and FORUM_FOLLOW name different buckets: a server leads one bucket or follows it (set one of them)');
  }
  const url = followUrl ?? leadUrl;
  if (url === undefined) return { replica: null, follow: null };
  const follow = followUrl === undefined ? null : { url: followUrl, pollMs: rangeEnv(env, 'FORUM_FOLLOW_POLL_MS', FOLLOW_POLL_MS, FOLLOW_POLL_MS_RANGE) };
  return { replica: replicaSettings(env, url, dataDir), follow };
}

/** FORUM_REPLICA_MODE, the intervals and the replica key settings for the bucket at `url`. Throws Error naming the variable. */
function replicaSettings(env: NodeJS.ProcessEnv, url: string, dataDir: string): NonNullable<Config['replica']> {
  const mode = (env.FORUM_REPLICA_MODE || REPLICA_MODE_DEFAULT).toLowerCase();
  if (mode !== 'async' && mode !== 'sync') throw new Error(`FORUM_REPLICA_MODE must be async or sync, got ${JSON.stringify(env.FORUM_REPLICA_MODE)}`);
  return {
    url,
    mode,
    shipIntervalMs: rangeEnv(env, 'FORUM_REPLICA_SHIP_MS', REPLICA_SHIP_INTERVAL_MS, REPLICA_SHIP_MS_RANGE),
    ackTimeoutMs: rangeEnv(env, 'FORUM_REPLICA_ACK_TIMEOUT_MS', REPLICA_ACK_TIMEOUT_MS, REPLICA_ACK_TIMEOUT_MS_RANGE),
    bucketCheckMs: rangeEnv(env, 'FORUM_REPLICA_CHECK_MS', REPLICA_BUCKET_CHECK_MS, REPLICA_BUCKET_CHECK_MS_RANGE),
    ...replicaKeyEnv(env, dataDir),
  };
}

/**
 * The replica key settings (issue 50): FORUM_REPLICA_SIGNING_KEY (a path; default
 * `<dataDir>/replica-signing-key.pem`) and FORUM_REPLICA_PUBLIC_KEY (checked for its form here).
 * Also used by `restore --from`. Throws Error naming the variable and the rule.
 */
export function replicaKeyEnv(env: NodeJS.ProcessEnv, dataDir: string): { signingKeyPath: string; publicKey: string | null } {
  const publicKey = env.FORUM_REPLICA_PUBLIC_KEY?.trim() || null;
  if (publicKey !== null) {
    try {
      parsePublicKey(publicKey);
    } catch (err) {
      throw new Error(`FORUM_REPLICA_PUBLIC_KEY: ${(err as Error).message}`);
    }
  }
  return { signingKeyPath: resolve(env.FORUM_REPLICA_SIGNING_KEY || join(dataDir, REPLICA_SIGNING_KEY_FILE)), publicKey };
}

/**
 * Reads the configuration. Throws Error with the variable's name for a malformed value
 * (the server prints it and exits 1).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = intEnv(env, 'PORT', 8080)!;
  if (port > 65535) throw new Error('PORT must be 0..65535');
  const host = env.HOST || '127.0.0.1';
  const publicUrl = (env.FORUM_PUBLIC_URL || `http://${host.includes(':') ? `[${host}]` : host}:${port}`).replace(/\/+$/, '');
  const dataDir = resolve(env.FORUM_DATA_DIR || 'data');
  return {
    port,
    host,
    dataDir,
    checkpointKeyPath: resolve(env.FORUM_CHECKPOINT_KEY || join(dataDir, CHECKPOINT_KEY_FILE)),
    publicUrl: checkPublicUrl(publicUrl, env.FORUM_PUBLIC_URL),
    publicUrlSet: Boolean(env.FORUM_PUBLIC_URL),
    rateLimits: flagEnv(env, 'FORUM_RATE_LIMITS', true),
    accessLog: flagEnv(env, 'FORUM_ACCESS_LOG', false),
    metricsPort: intEnv(env, 'FORUM_METRICS_PORT', null),
    trustProxy: trustProxyEnv(env),
    maxAgents: intEnv(env, 'FORUM_MAX_AGENTS', null),
    clientSharePercent: percentEnv(env),
    connectionsPerAddress: intEnv(env, 'FORUM_CONNECTIONS_PER_ADDRESS', CONNECTIONS_PER_ADDRESS_DEFAULT)!,
    minFreeBytes: intEnv(env, 'FORUM_MIN_FREE_BYTES', MIN_FREE_BYTES_DEFAULT)!,
    recordCacheBytes: intEnv(env, 'FORUM_RECORD_CACHE_MB', RECORD_CACHE_BYTES_DEFAULT / MIB)! * MIB,
    loneWriteSyncMaxUs: intEnv(env, 'FORUM_LONE_WRITE_SYNC_MAX_US', LONE_WRITE_SYNC_MAX_US_DEFAULT)!,
    segmentZeroAheadBytes: Math.max(0, intEnv(env, 'FORUM_SEGMENT_ZERO_AHEAD_KB', SEGMENT_ZERO_AHEAD_BYTES / 1024)!) * 1024,
    feedCacheBytes: intEnv(env, 'FORUM_FEED_CACHE_MB', FEED_PAGE_CACHE_BYTES_DEFAULT / MIB)! * MIB,
    searchShardDocs: Math.max(1, intEnv(env, 'FORUM_SEARCH_SHARD_DOCS', NGRAM_SHARD_DOCS_MAX)!),
    searchMergeFactor: intEnv(env, 'FORUM_SEARCH_MERGE_FACTOR', NGRAM_MERGE_FACTOR)!,
    searchBuildWorkers: Math.max(0, intEnv(env, 'FORUM_SEARCH_BUILD_WORKERS', SEARCH_BUILD_WORKERS_DEFAULT)!),
    segmentBytes: Math.max(1, intEnv(env, 'FORUM_SEGMENT_KB', SEGMENT_BYTES_MAX / 1024)!) * 1024,
    replayWorkersBytesMin: Math.max(0, intEnv(env, 'FORUM_REPLAY_WORKERS_MIN_KB', REPLAY_WORKERS_BYTES_MIN / 1024)!) * 1024,
    testClock: flagEnv(env, 'FORUM_TEST_CLOCK', false),
    accessLogClientAddress: flagEnv(env, 'FORUM_ACCESS_LOG_CLIENT_ADDRESS', false),
    scrubMbPerMinute: intEnv(env, 'FORUM_SCRUB_MB_PER_MINUTE', SCRUB_MB_PER_MINUTE_DEFAULT)!,
    scrubStartDelayS: intEnv(env, 'FORUM_SCRUB_START_DELAY_S', SCRUB_START_DELAY_S_DEFAULT)!,
    ...replicationEnv(env, dataDir),
  };
}
