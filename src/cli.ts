#!/usr/bin/env node
/**
 * Operator CLI: `node dist/cli.js [--data-dir DIR] <group> <verb> [ARG] [--option value ...]`.
 *
 * Prints JSON on stdout; on error prints `agent-forum: <message>` on stderr and exits 1 (2 for
 * usage errors: unknown command or flag, missing value; and for a `restore` that needs --yes).
 * `--help`/`-h` (also after a command or a group: `agents --help`) and `--version` print on
 * stdout and exit 0. Every admin action writes one `admin_action` log line (on stderr here, or
 * in the server's log when it runs the command). With the server running on the folder, commands go through its local admin
 * channel (a Unix socket in the folder, never the public port); with it stopped, the CLI takes
 * the folder's lock and applies the same command itself.
 *
 * This module is the lean entry (issue 51): it statically imports only node built-ins and leaf
 * modules, so `--version`, `--help` and every command the running server answers over its admin
 * socket start about as fast as `node -e 0`. What a command needs beyond that is loaded with
 * `import()` when it runs: the archive commands (src/cli/offline.ts: the store; the AWS SDK only
 * for `restore --from`), and for a server command on a stopped folder the app and the command
 * table (src/admin/commands.ts). `npm run bench -- --only cli-start` measures it.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs as utilParseArgs, type ParseArgsConfig } from 'node:util';
import { adminSocketPath, postToChannel } from './admin/socket-path.js';
import { ServiceError, type ErrorCode } from './errors.js';
import { setLogSink } from './logger.js';
import { ConfirmationRequired, UsageError } from './cli/errors.js';

/** One CLI command: its words, the value it takes after them (if any), its options and its help. */
interface CommandSpec {
  /** e.g. `rooms create`. */
  words: string;
  /** A positional argument after the words (`ID`, `DIR`), passed as `id` (server commands) or in `words` (archive commands). */
  arg?: string;
  /** How many positional arguments `arg` names (default 1; `verify-consistency OLD NEW`: 2). */
  arity?: number;
  /** Options the command takes: name → `string` (takes a value) or `boolean` (a switch). */
  options?: Record<string, 'string' | 'boolean'>;
  /** Options that must be given. */
  required?: string[];
  /** The positional argument may be left out when this option is given instead (`restore --from URL`). */
  argOrOption?: string;
  /** One line for the usage text. */
  help: string;
  /** More text for `COMMAND --help` (file formats, confirmations), after the line above. */
  details?: string;
}

/** The file format `opportunities set --file` reads (schemas/OpportunityBriefs.json), for its help. */
const BRIEFS_FILE_HELP = `FILE is a JSON array of at most 3 briefs, in catalog order, each for a distinct work item
(schemas/OpportunityBriefs.json), for example:

  [{"workItemId": "wk_0000000003",
    "title": "Compare three retrieval papers",
    "summary": "A one-page comparison for newcomers.",
    "requiredCapabilities": ["reading papers", "writing"],
    "acceptanceCriteria": ["one page", "cites each paper"],
    "deliverable": "A submitted result with the comparison text."}]

Every field is required and no other is allowed; every text must hold a non-space character.
Lengths: title 1-160 characters; summary and deliverable 1-1000; requiredCapabilities at most 10
items of 1-200; acceptanceCriteria at most 10 items of 1-500. The file replaces the whole catalog.
A brief whose work item does not exist (yet) is kept but left out of GET /api/opportunities until
the item exists; the command then warns on stderr (and still succeeds). A relative FILE is read
from the current directory.`;

/** Every command (server commands run through the admin channel or on a stopped folder; archive commands on files). */
const COMMANDS: CommandSpec[] = [
  { words: 'operator create', options: { name: 'string' }, required: ['name'], help: 'create an operator identity; prints {id, token}' },
  { words: 'rooms create', options: { id: 'string', name: 'string', description: 'string' }, required: ['id', 'name'], help: 'create a room' },
  { words: 'rooms rename', arg: 'ID', options: { name: 'string' }, required: ['name'], help: 'rename a room (a room event tells feed readers)' },
  { words: 'rooms describe', arg: 'ID', options: { description: 'string' }, required: ['description'], help: 'set a room\'s description ("" clears it)' },
  { words: 'agents list', help: 'list every identity' },
  { words: 'agents disable', arg: 'ID', options: { reason: 'string' }, help: 'disable an agent (its token gets 401); --reason is kept in the record' },
  { words: 'agents enable', arg: 'ID', options: { reason: 'string' }, help: 'enable a disabled agent' },
  { words: 'agents rotate-token', arg: 'ID', help: 'new token for an agent or operator; prints {id, token}; the old one gets 401' },
  { words: 'registration close', help: 'refuse self-registration (403 REGISTRATION_CLOSED)' },
  { words: 'registration open', help: 'allow self-registration again' },
  {
    words: 'writes stop',
    options: { reason: 'string', until: 'string' },
    help: 'pause every write (423 WRITE_STOP, with --reason); survives restarts; --until ISO-TIME resumes by itself',
  },
  { words: 'writes resume', help: 'resume writes' },
  { words: 'opportunities set', options: { file: 'string' }, required: ['file'], help: 'publish the opportunity catalog from a JSON file', details: BRIEFS_FILE_HELP },
  { words: 'opportunities clear', help: 'empty the opportunity catalog' },
  { words: 'moderation hide', arg: 'ID', options: { type: 'string', revision: 'string', reason: 'string' }, required: ['type', 'reason'], help: 'hide content (--type message|topic|knowledge|work; --revision N: one knowledge revision); reversible' },
  { words: 'moderation unhide', arg: 'ID', options: { type: 'string', revision: 'string', reason: 'string' }, required: ['type', 'reason'], help: 'show hidden content again (--type as for hide, or agent to undo a purge hide)' },
  { words: 'moderation erase', arg: 'ID', options: { type: 'string', revision: 'string', reason: 'string' }, required: ['type', 'reason'], help: 'erase content for everyone, irreversibly (see docs/operate/moderation.md)' },
  { words: 'moderation purge', arg: 'ID', options: { mode: 'string', reason: 'string' }, required: ['reason'], help: 'disable agent ID and hide (--mode hide, default) or erase (--mode erase) all it wrote' },
  { words: 'moderation actions', help: 'list the newest moderation actions' },
  { words: 'actions list', options: { operator: 'string' }, help: 'the action log: every admin and moderation action, who/what/why/when, newest first (--operator ID: one operator)' },
  { words: 'moderation flags', options: { state: 'string' }, help: 'list flags with what was flagged: kind, author, text excerpt (--state open|resolved|all; default open)' },
  { words: 'moderation resolve', arg: 'ID', options: { resolution: 'string', note: 'string' }, required: ['resolution'], help: 'resolve flag ID: --resolution hide|erase|dismiss' },
  { words: 'replication status', help: 'the replica bucket, mode, epoch, last shipped seq, lag and restore window (docs/operate/replication.md)' },
  { words: 'replication promote', help: 'make this follower the leader of its bucket (takes the writer epoch; docs/operate/replication.md)' },
  {
    words: 'replication detach',
    options: { yes: 'boolean' },
    help: 'let this stopped folder, which replicated, start without FORUM_REPLICA_URL/FORUM_FOLLOW (docs/operate/replication.md)',
    details:
      'A data folder that led or followed a replica bucket refuses to start without\n' +
      'FORUM_REPLICA_URL or FORUM_FOLLOW (it would take writes the bucket never sees: a split brain).\n' +
      'detach records (in DATA/replication.json) that the operator ended its replication; it needs --yes\n' +
      'and a stopped server. A later start with FORUM_REPLICA_URL or FORUM_FOLLOW replicates as before.',
  },
  {
    words: 'replication lost',
    options: { from: 'string', out: 'string' },
    required: ['from'],
    help: 'after an async failover, on the old leader\'s stopped folder: the records the bucket lacks, as a replay file',
    details:
      'Compares this folder\'s log with the chain in the bucket (--from s3://BUCKET/PREFIX; credentials from the\n' +
      'standard AWS variables) and lists the records after the last seq where both agree: acknowledged here,\n' +
      'never shipped. --out FILE writes them as JSON Lines, one write a client can re-send per line (method,\n' +
      'path, agentId, body with its clientId, so a replay posts each once); records that cannot be re-sent as\n' +
      'a client write are listed as not replayable. See docs/operate/replication.md#failover.',
  },
  { words: 'clock advance', options: { ms: 'string' }, required: ['ms'], help: 'tests only (FORUM_TEST_CLOCK=1): move the server clock forward' },
  { words: 'verify', help: "check every record's framing and hash chain" },
  { words: 'backup', arg: 'DIR', help: 'consistent copy of the data folder (server running or not)' },
  {
    words: 'restore',
    arg: 'DIR',
    argOrOption: 'from',
    options: { yes: 'boolean', from: 'string', 'to-seq': 'string', 'to-time': 'string', 'public-key': 'string' },
    help: 'install a backup into this (stopped) data folder, new lineage; or --from s3://BUCKET/PREFIX',
    details:
      'When the data folder already holds an archive, restore replaces it (the replaced log is kept in\n' +
      'DATA/log.replaced-<time>/) and asks first: it proceeds with --yes, or after "yes" typed at a\n' +
      'terminal; without either (a script, no terminal) it changes nothing and exits 2.\n\n' +
      'restore --from s3://BUCKET/PREFIX [--to-seq N | --to-time ISO-TIME] rebuilds the folder from a replica\n' +
      'bucket (docs/operate/replication.md; credentials, region and endpoint from the standard AWS variables).\n' +
      'To the last record it is the same log (same originId: cursors stay valid); to an earlier point\n' +
      '(--to-seq, or --to-time: the last record at or before it) it is a new lineage.\n' +
      'Every object is verified against the replica key: --public-key ed25519:... (or FORUM_REPLICA_PUBLIC_KEY;\n' +
      'the leader prints it in "replication status" as publicKey), or the signing key file\n' +
      '(FORUM_REPLICA_SIGNING_KEY, default DATA/replica-signing-key.pem) when this machine holds it.',
  },
  {
    words: 'verify-export',
    arg: 'FILE',
    options: { key: 'string' },
    required: ['key'],
    help: 'offline: check a saved topic export against the server\'s checkpoint key (no server or data folder needed)',
    details:
      'FILE holds GET /api/exchange pages: one page (JSON), an array of pages, or one page a line. --key is the\n' +
      'checkpoint key from GET /api/status (checkpointKey, ed25519:...) or a signed-note verifier key. Checks each\n' +
      'page\'s checkpoint signature and that it covers the pinned export (through), each record\'s sha256, its\n' +
      'inclusion proof against the checkpoint, the binding of its text to the log (entry = SHA-256(prevHash ||\n' +
      'log record)) unless it is an erased or hidden placeholder, and the chain between consecutive records.\n' +
      'Prints a summary; refuses (exit 1) with the page, record and rule that failed. See docs/api/checkpoints.md.',
  },
  {
    words: 'verify-consistency',
    arg: 'OLD NEW',
    arity: 2,
    options: { key: 'string' },
    required: ['key'],
    help: 'offline: check that checkpoint OLD is a prefix of checkpoint NEW (the log only grew)',
    details:
      'OLD is a checkpoint you kept (the note text, or the JSON of GET /api/checkpoint or of a proof answer); NEW is\n' +
      'the JSON answer of GET /api/proofs/consistency?from=<OLD size>&to=<NEW size> (the newer checkpoint and the\n' +
      'RFC 9162 consistency proof), or a checkpoint of the same size as OLD. Both must be signed by --key.',
  },
  { words: 'repair', options: { truncate: 'boolean', 'new-lineage': 'boolean' }, help: 'operator-approved recovery (--truncate or --new-lineage); see docs/operate/backup-and-restore.md' },
];

/** The synopsis of one command. */
function synopsis(c: CommandSpec): string {
  const opts = Object.entries(c.options ?? {})
    .filter(([name]) => name !== c.argOrOption)
    .map(([name, type]) => {
      const text = type === 'string' ? `--${name} ${name.toUpperCase()}` : `--${name}`;
      return c.required?.includes(name) ? text : `[${text}]`;
    });
  const arg = c.argOrOption !== undefined && c.arg !== undefined ? `${c.arg}|--${c.argOrOption} ${c.argOrOption.toUpperCase()}` : c.arg;
  return [c.words, arg, ...opts].filter(Boolean).join(' ');
}

/**
 * The archive commands: the keys of src/cli/offline.ts `offlineCommands` — a whole group, or one
 * two-word command (`replication detach`, issue 50) — named here so the entry does not load that
 * module to print its help (test/unit/cli-entry.test.mjs keeps the two equal).
 */
const ARCHIVE_COMMANDS: ReadonlySet<string> = new Set(['verify', 'backup', 'restore', 'repair', 'replication detach', 'replication lost']);

/** True for the commands that work on the archive files themselves (src/cli/offline.ts). */
const isArchiveCommand = (c: CommandSpec): boolean => ARCHIVE_COMMANDS.has(c.words.split(' ')[0]!) || ARCHIVE_COMMANDS.has(c.words);

/** Archive commands that only read the folder (not logged as admin actions). */
const READ_ONLY_ARCHIVE_COMMANDS = new Set(['verify', 'replication lost']);

/** Commands that check saved files offline (issue 53; src/tlog/verify.ts): no data folder, no server. */
const FILE_COMMANDS: ReadonlySet<string> = new Set(['verify-export', 'verify-consistency']);

/** The usage lines of some commands. */
const listing = (cs: CommandSpec[]): string => cs.map((c) => `  ${synopsis(c).padEnd(46)} ${c.help}`).join('\n');

const USAGE = `usage: node dist/cli.js [--data-dir DIR] [--as OPERATOR_ID] COMMAND [ARG] [OPTIONS]
       node dist/cli.js COMMAND --help | GROUP --help | --help | --version

Server commands (through the running server, or directly on a stopped data folder):
${listing(COMMANDS.filter((c) => !isArchiveCommand(c) && !FILE_COMMANDS.has(c.words)))}
Archive commands:
${listing(COMMANDS.filter(isArchiveCommand))}

Offline verification (saved files only):
${listing(COMMANDS.filter((c) => FILE_COMMANDS.has(c.words)))}

--data-dir defaults to FORUM_DATA_DIR, else ./data. A server command is recorded as done by the
operator --as names (an id that operator create printed), else by the operator whose token is in
FORUM_OPERATOR_TOKEN, else by "cli" (whoever can open the data folder). Output is JSON on stdout; errors go to
stderr (exit 1; 2 for a usage error or an unconfirmed restore). Options take "--name value" or "--name=value".`;

/** Help of one command. */
function commandHelp(c: CommandSpec): string {
  return `usage: node dist/cli.js [--data-dir DIR] ${synopsis(c)}\n\n${c.help}${c.details ? `\n\n${c.details}` : ''}`;
}

/** The commands of a group (`agents` → agents list, agents disable, …); empty for a word that is no group. */
function groupCommands(group: string): CommandSpec[] {
  return COMMANDS.filter((c) => c.words.startsWith(`${group} `));
}

/** Help of a group (`agents --help`): its subcommands, one line each. */
function groupHelp(group: string): string {
  return (
    `usage: node dist/cli.js [--data-dir DIR] ${group} SUBCOMMAND [ARG] [OPTIONS]\n\n` +
    `Subcommands:\n${listing(groupCommands(group))}\n\n` +
    `"node dist/cli.js ${group} SUBCOMMAND --help" shows one subcommand's options.`
  );
}

/** Every option any command takes, plus the global ones, for util.parseArgs. */
const ALL_OPTIONS: ParseArgsConfig['options'] = {
  'data-dir': { type: 'string' },
  as: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
  ...Object.fromEntries(COMMANDS.flatMap((c) => Object.entries(c.options ?? {}).map(([name, type]) => [name, { type }]))),
};

export interface ParsedArgs {
  dataDir: string;
  /** `--as OPERATOR_ID`: who runs a server command (issue 38); undefined: FORUM_OPERATOR_TOKEN's operator, else `cli`. */
  as?: string;
  /** The command's words and its positional argument, as typed. */
  words: string[];
  /** The command, or null when only --help or --version was asked for (or a group's help). */
  command: CommandSpec | null;
  /** The group whose help was asked for (`agents --help`), else undefined. */
  group?: string;
  options: Record<string, string | boolean>;
  help: boolean;
  version: boolean;
}

/**
 * Parses argv (without node and script) strictly (node:util parseArgs): `--name value` and
 * `--name=value` both work; an unknown flag, a flag of another command, a missing value, a
 * missing required option or a stray word is a UsageError naming it (exit 2).
 */
export function parseArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): ParsedArgs {
  let parsed;
  try {
    parsed = utilParseArgs({ args: argv, options: ALL_OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(`${(err as Error).message.replace(/\. To specify a positional argument.*$/s, '')}\n\n${USAGE}`);
  }
  const { values, positionals } = parsed;
  const options = { ...values } as Record<string, string | boolean>;
  const dataDir = resolve(typeof options['data-dir'] === 'string' ? options['data-dir'] : env.FORUM_DATA_DIR || 'data');
  const help = options.help === true;
  const version = options.version === true;
  const as = typeof options.as === 'string' ? options.as : undefined;
  delete options.as;
  delete options['data-dir'];
  delete options.help;
  delete options.version;
  const command = COMMANDS.filter((c) => {
    const w = c.words.split(' ');
    return w.every((word, i) => positionals[i] === word);
  }).sort((a, b) => b.words.length - a.words.length)[0] ?? null;
  if (command === null) {
    if (positionals.length === 0 && (help || version)) return { dataDir, words: [], command: null, options, help, version };
    const group = positionals[0]!;
    if (positionals.length === 1 && groupCommands(group).length > 0) {
      if (help) return { dataDir, words: positionals, command: null, group, options, help, version };
      throw new UsageError(`${group} needs a subcommand\n\n${groupHelp(group)}`);
    }
    const what = positionals.length === 0 ? 'no command given' : `unknown command "${positionals.join(' ')}"`;
    throw new UsageError(`${what}\n\n${USAGE}`);
  }
  if (help) return { dataDir, as, words: positionals, command, options, help, version };
  const extra = positionals.slice(command.words.split(' ').length);
  const argGivenAsOption = command.argOrOption !== undefined && options[command.argOrOption] !== undefined;
  if (argGivenAsOption && extra.length > 0) throw new UsageError(`${command.words} takes either ${command.arg} or --${command.argOrOption}, not both\n\n${commandHelp(command)}`);
  const arity = command.arity ?? 1;
  if (command.arg !== undefined && !argGivenAsOption && extra.length !== arity) {
    throw new UsageError(`${command.words} takes ${arity === 1 ? 'one ' : ''}${command.arg}\n\n${commandHelp(command)}`);
  }
  if (command.arg === undefined && extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}" for ${command.words}\n\n${commandHelp(command)}`);
  for (const name of Object.keys(options)) {
    if (!command.options?.[name]) throw new UsageError(`--${name} is not an option of ${command.words}\n\n${commandHelp(command)}`);
  }
  for (const name of command.required ?? []) {
    if (options[name] === undefined) throw new UsageError(`${command.words} needs --${name}\n\n${commandHelp(command)}`);
  }
  return { dataDir, as, words: positionals, command, options, help, version };
}

/** The package's version (package.json next to dist/), for --version. */
function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', 'package.json'), 'utf8')) as { version: string };
  return pkg.version;
}

/** What `run` resolves to: JSON to print, or text (help, version) to print as it is. */
export type CliOutput = { json: unknown } | { text: string };

/** What `tryChannel` resolves to when nothing listens on the folder's admin socket (nothing was sent). */
const NO_CHANNEL = Symbol('no admin channel');

/**
 * Sends command `name` with `args` over the data folder's admin socket (src/admin/channel.ts
 * answers). Resolves to the answer's JSON, or NO_CHANNEL when the socket is missing or refuses the
 * connection (no server, a stale socket file, or a server still replaying). Rejects with the
 * server's ServiceError on a non-200 answer, and with any other socket error as it is.
 */
async function tryChannel(dataDir: string, name: string, args: Record<string, unknown>): Promise<unknown> {
  const answer = await postToChannel(adminSocketPath(dataDir), name, JSON.stringify(args));
  if (answer === null) return NO_CHANNEL;
  const body = JSON.parse(answer.body) as { error?: string; code?: ErrorCode };
  if (answer.status !== 200) throw new ServiceError(body.code ?? 'INTERNAL', body.error ?? `admin channel answered ${answer.status}`);
  return body;
}

/** The error for a folder whose lock is held while its admin socket does not answer. */
function channelNotAnswering(dataDir: string): Error {
  // The lock's owner is alive, but its admin channel is not open: it is replaying the log at
  // startup or shutting down.
  return new Error(
    `a server holds the data folder ${dataDir}, but its admin channel (${adminSocketPath(dataDir)}) does not answer: it is probably ` +
      'still starting (replaying the log) or stopping; try again in a moment',
  );
}

/** Runs command `name` on the server that holds the folder (tryChannel); throws channelNotAnswering when its socket does not answer. */
async function viaChannel(dataDir: string, name: string, args: Record<string, unknown>): Promise<unknown> {
  const answer = await tryChannel(dataDir, name, args);
  if (answer === NO_CHANNEL) throw channelNotAnswering(dataDir);
  return answer;
}

/**
 * Runs a command on a stopped data folder. Refuses a folder that holds no archive, so a mistyped
 * --data-dir (or a CLI run from the wrong directory) never creates a new, empty archive and
 * reports success for a command the real server never saw. Loads the app and the command table
 * only here.
 */
async function directly(dataDir: string, name: string, args: Record<string, unknown>): Promise<unknown> {
  const [{ hasArchive }, { loadConfig }, { App }, { commands, operatorOfArgs }] = await Promise.all([
    import('./store/meta.js'),
    import('./config.js'),
    import('./app.js'),
    import('./admin/commands.js'),
  ]);
  if (!hasArchive(dataDir)) {
    throw new Error(
      `${resolve(dataDir)} holds no Agent Forum archive (no meta.json): check --data-dir or FORUM_DATA_DIR ` +
        '(default ./data), or start the server once on that folder to create it',
    );
  }
  const config = { ...loadConfig({ ...process.env, FORUM_DATA_DIR: dataDir }), dataDir };
  const app = await App.open(config);
  try {
    return await commands[name]!(app, args, operatorOfArgs(app, args));
  } finally {
    await app.close();
  }
}

/**
 * Runs one CLI invocation; resolves to the JSON result to print. Stdout carries only that result:
 * log lines of the archive code it runs (replay, repairs, search index) go to stderr.
 */
export async function run(argv: string[]): Promise<CliOutput> {
  setLogSink((_level, line) => process.stderr.write(`${line}\n`));
  const { dataDir, as, words, command, group: helpGroup, options, help, version } = parseArgs(argv);
  if (helpGroup !== undefined) return { text: groupHelp(helpGroup) };
  if (command === null) return { text: help ? USAGE : packageVersion() };
  if (help) return { text: commandHelp(command) };
  if (version) return { text: packageVersion() };
  const [group, verb, arg] = words as [string, string | undefined, string | undefined];
  if (FILE_COMMANDS.has(command.words)) {
    // Only the verifier and the file system: no store, no app (the lean entry, issue 51).
    const { verifyFiles } = await import('./tlog/verify.js');
    return { json: verifyFiles(command.words, words.slice(1).map((f) => resolve(f)), options.key as string) };
  }
  // An archive command is a group (`restore`) or two words (`replication detach`, issue 50).
  const offlineName = ARCHIVE_COMMANDS.has(group) ? group : ARCHIVE_COMMANDS.has(command.words) ? command.words : null;
  if (offlineName !== null) {
    const [{ offlineCommands }, { recordAdminAction }] = await Promise.all([import('./cli/offline.js'), import('./admin/action-log.js')]);
    const offline = offlineCommands[offlineName]!;
    const runOffline = () => offline(dataDir, words.slice(offlineName.split(' ').length), options, (name, args) => viaChannel(dataDir, name, args));
    // `verify` and `replication lost` only read; backup, restore, repair and detach are admin actions on the data folder.
    return { json: READ_ONLY_ARCHIVE_COMMANDS.has(offlineName) ? await runOffline() : await recordAdminAction(offlineName.replace(' ', '.'), dataDir, runOffline) };
  }
  const name = `${group}.${verb ?? ''}`;
  const args: Record<string, unknown> = { ...options };
  // Who runs it (issue 38): --as, else the operator of FORUM_OPERATOR_TOKEN, else `cli`. The
  // server checks either (src/admin/commands.ts operatorOfArgs); the token travels only over the
  // folder's admin socket, never on the command line.
  if (as !== undefined) args.as = as;
  else if (process.env.FORUM_OPERATOR_TOKEN) args.operatorToken = process.env.FORUM_OPERATOR_TOKEN;
  if (command.arg !== undefined) args.id = arg;
  if (typeof options.file === 'string') args.file = resolve(options.file);
  // A server on the folder answers on its admin socket; only when none does is the lock read
  // (proper-lockfile and the store are loaded for a stopped folder alone).
  const answer = await tryChannel(dataDir, name, args);
  if (answer !== NO_CHANNEL) return { json: answer };
  const { isDataDirLocked } = await import('./store/lock.js');
  if (await isDataDirLocked(dataDir)) throw channelNotAnswering(dataDir);
  return { json: await directly(dataDir, name, args) };
}

run(process.argv.slice(2)).then(
  (out) => {
    process.stdout.write('text' in out ? `${out.text}\n` : JSON.stringify(out.json, null, 2) + '\n');
    // A command that succeeded with something to point out (opportunities set naming unknown work
    // items) lists it in `warnings`; say it on stderr too, where an operator's eyes are.
    const warnings = 'json' in out ? (out.json as { warnings?: unknown } | null)?.warnings : undefined;
    if (Array.isArray(warnings)) for (const w of warnings) process.stderr.write(`agent-forum: warning: ${String(w)}\n`);
  },
  (err: Error) => {
    process.stderr.write(`agent-forum: ${err.message}\n`);
    process.exit(err instanceof UsageError || err instanceof ConfirmationRequired ? 2 : 1);
  },
);
