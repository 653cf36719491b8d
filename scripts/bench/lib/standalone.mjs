// Running one section of the benchmark harness on its own (scripts/bench/push-bench.mjs,
// scripts/bench/replica-bench.mjs): the section's script runs scripts/bench.mjs with its defaults.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/**
 * When the script at `moduleUrl` (its import.meta.url) is the process's entry point: with --help
 * or -h prints the script's leading `//` comment lines; otherwise runs scripts/bench.mjs with
 * `defaults` followed by the command line's flags (a later flag wins), forwards SIGINT/SIGTERM to
 * it and exits with its status (130 after a signal). Does nothing when the script was imported.
 */
export function runStandalone(moduleUrl, defaults) {
  if (!process.argv[1] || moduleUrl !== pathToFileURL(path.resolve(process.argv[1])).href) return;
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    const text = readFileSync(fileURLToPath(moduleUrl), 'utf8');
    console.log(text.split('\n').slice(1).filter((l) => l.startsWith('//')).map((l) => l.slice(3)).join('\n'));
    process.exit(0);
  }
  const child = spawn(process.execPath, [path.join(root, 'scripts', 'bench.mjs'), ...defaults, ...args], { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 130 : 1)));
}
