#!/usr/bin/env node
/**
 * Operator CLI: `node dist/cli.js [--data-dir DIR] <group> <verb> [ARG] [--option value ...]`.
 *
 * Prints JSON on stdout; on error prints `agent-forum: <message>` on stderr and exits 1 (2 for
 * usage errors). With the server running on the folder, commands go through its local admin
 * channel (a Unix socket in the folder, never the public port); with it stopped, the CLI takes
 * the folder's lock and applies the same command itself.
 */
import { resolve } from 'node:path';
import { Client } from 'undici';
import { App } from './app.js';
import { loadConfig } from './config.js';
import { adminSocketPath } from './admin/channel.js';
import { commands } from './admin/commands.js';
import { HttpError, type ErrorCode } from './http/errors.js';
import { setLogSink } from './logger.js';
import { isDataDirLocked } from './store/lock.js';
import { hasArchive } from './store/meta.js';
import { offlineCommands } from './cli/offline.js';

const USAGE = `usage: node dist/cli.js [--data-dir DIR] COMMAND

Server commands (through the running server, or directly on a stopped data folder):
  operator create --name NAME          create an operator identity; prints {id, token}
  rooms create --id ID --name NAME [--description TEXT]
  agents list | agents disable ID | agents enable ID
  registration close | registration open
  writes stop | writes resume
  opportunities set --file FILE | opportunities clear
Archive commands:
  verify                               check every record's framing and hash chain
  backup DIR                           consistent copy of the data folder (server running or not)
  restore DIR                          install a backup into this (stopped) data folder, new lineage
  repair --truncate | repair --new-lineage
                                       operator-approved recovery; see README "Recovery"

--data-dir defaults to FORUM_DATA_DIR, else ./data.`;

export interface ParsedArgs {
  dataDir: string;
  words: string[];
  options: Record<string, string | boolean>;
}

/** Parses argv (without node and script). Throws Error with a usage message. */
export function parseArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): ParsedArgs {
  const words: string[] = [];
  const options: Record<string, string | boolean> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a.startsWith('--')) {
      const key = a.slice(2);
      const next = argv[i + 1];
      if (next !== undefined && !next.startsWith('--')) {
        options[key] = next;
        i++;
      } else options[key] = true;
    } else words.push(a);
  }
  const dataDir = resolve(typeof options['data-dir'] === 'string' ? options['data-dir'] : env.FORUM_DATA_DIR || 'data');
  delete options['data-dir'];
  return { dataDir, words, options };
}

class UsageError extends Error {}

async function viaChannel(dataDir: string, name: string, args: Record<string, unknown>): Promise<unknown> {
  const socketPath = adminSocketPath(dataDir);
  const client = new Client('http://localhost', { socketPath });
  try {
    let res;
    try {
      res = await client.request({
        method: 'POST',
        path: `/${name}`,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(args),
      });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ECONNREFUSED' && code !== 'ENOENT') throw err;
      // The lock's owner is alive, but its admin channel is not open: it is replaying the log
      // at startup or shutting down.
      throw new Error(
        `a server holds the data folder ${dataDir}, but its admin channel (${socketPath}) does not answer: it is probably ` +
          'still starting (replaying the log) or stopping; try again in a moment',
      );
    }
    const body = (await res.body.json()) as { error?: string; code?: ErrorCode };
    if (res.statusCode !== 200) throw new HttpError(res.statusCode, body.code ?? 'INTERNAL', body.error ?? `admin channel answered ${res.statusCode}`);
    return body;
  } finally {
    await client.close();
  }
}

/**
 * Runs a command on a stopped data folder. Refuses a folder that holds no archive, so a mistyped
 * --data-dir (or a CLI run from the wrong directory) never creates a new, empty archive and
 * reports success for a command the real server never saw.
 */
async function directly(dataDir: string, name: string, args: Record<string, unknown>): Promise<unknown> {
  if (!hasArchive(dataDir)) {
    throw new Error(
      `${resolve(dataDir)} holds no Agent Forum archive (no meta.json): check --data-dir or FORUM_DATA_DIR ` +
        '(default ./data), or start the server once on that folder to create it',
    );
  }
  const config = { ...loadConfig({ ...process.env, FORUM_DATA_DIR: dataDir }), dataDir };
  const app = await App.open(config);
  try {
    return await commands[name]!(app, args);
  } finally {
    await app.close();
  }
}

/**
 * Runs one CLI invocation; resolves to the JSON result to print. Stdout carries only that result:
 * log lines of the archive code it runs (replay, repairs, search index) go to stderr.
 */
export async function run(argv: string[]): Promise<unknown> {
  setLogSink((_level, line) => process.stderr.write(`${line}\n`));
  const { dataDir, words, options } = parseArgs(argv);
  const [group, verb, arg] = words;
  if (!group || options.help) throw new UsageError(USAGE);
  const offline = offlineCommands[group];
  if (offline) return offline(dataDir, words.slice(1), options, (name, args) => viaChannel(dataDir, name, args));
  const name = `${group}.${verb ?? ''}`;
  if (!commands[name]) throw new UsageError(`unknown command "${words.join(' ')}"\n\n${USAGE}`);
  const args: Record<string, unknown> = { ...options };
  if (arg !== undefined) args.id = arg;
  if (typeof options.file === 'string') args.file = resolve(options.file);
  return (await isDataDirLocked(dataDir)) ? viaChannel(dataDir, name, args) : directly(dataDir, name, args);
}

run(process.argv.slice(2)).then(
  (result) => {
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
  },
  (err: Error) => {
    process.stderr.write(`agent-forum: ${err.message}\n`);
    process.exit(err instanceof UsageError ? 2 : 1);
  },
);
