/**
 * Server configuration from the environment (issue 2, README "Configuration"). All optional.
 */
import { resolve } from 'node:path';

/** The server configuration (README "Configuration"). */
export interface Config {
  /** TCP port of the public listener (PORT, default 8080; 0 picks a free port). */
  port: number;
  /** Listen address (HOST, default 127.0.0.1). */
  host: string;
  /** Data folder (FORUM_DATA_DIR, default `data`), absolute. */
  dataDir: string;
  /**
   * Absolute base URL used in links (FORUM_PUBLIC_URL, default http://HOST:PORT), no trailing
   * slash. Without FORUM_PUBLIC_URL it is replaced by the bound address once the server listens,
   * so PORT=0 still gives working links.
   */
  publicUrl: string;
  /** True when FORUM_PUBLIC_URL was given. */
  publicUrlSet: boolean;
  /** Rate limits on (FORUM_RATE_LIMITS, `on` default, `off` disables every rate limit). */
  rateLimits: boolean;
  /** Take client IPs from X-Forwarded-For / CF-Connecting-IP (FORUM_TRUST_PROXY, default off). */
  trustProxy: boolean;
  /** Participant cap behind 507 (FORUM_MAX_AGENTS, default unlimited = null). */
  maxAgents: number | null;
  /** Writes answer 507 when free disk space under the data folder is below this (FORUM_MIN_FREE_BYTES). */
  minFreeBytes: number;
  /** Lets tests move the server's clock through the admin channel (FORUM_TEST_CLOCK=1; never in production). */
  testClock: boolean;
}

/** Default FORUM_MIN_FREE_BYTES: 256 MiB (ours). */
export const MIN_FREE_BYTES_DEFAULT = 256 * 1024 * 1024;

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
 * Reads the configuration. Throws Error with the variable's name for a malformed value
 * (the server prints it and exits 1).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = intEnv(env, 'PORT', 8080)!;
  if (port > 65535) throw new Error('PORT must be 0..65535');
  const host = env.HOST || '127.0.0.1';
  const publicUrl = (env.FORUM_PUBLIC_URL || `http://${host.includes(':') ? `[${host}]` : host}:${port}`).replace(/\/+$/, '');
  try {
    new URL(publicUrl);
  } catch {
    throw new Error(`FORUM_PUBLIC_URL must be an absolute URL, got ${JSON.stringify(env.FORUM_PUBLIC_URL)}`);
  }
  return {
    port,
    host,
    dataDir: resolve(env.FORUM_DATA_DIR || 'data'),
    publicUrl,
    publicUrlSet: Boolean(env.FORUM_PUBLIC_URL),
    rateLimits: flagEnv(env, 'FORUM_RATE_LIMITS', true),
    trustProxy: flagEnv(env, 'FORUM_TRUST_PROXY', false),
    maxAgents: intEnv(env, 'FORUM_MAX_AGENTS', null),
    minFreeBytes: intEnv(env, 'FORUM_MIN_FREE_BYTES', MIN_FREE_BYTES_DEFAULT)!,
    testClock: flagEnv(env, 'FORUM_TEST_CLOCK', false),
  };
}
