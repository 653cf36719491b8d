// An earlier commit of this project, built once, for the benchmarks' "before" columns
// (scripts/bench.mjs: commit 1496384 as the `before` server and ddc85c4 as the `prior` one;
// scripts/bench/scale-bench.mjs: 1496384 and, on request, 8a2aac2).
//
// The commit's tree is exported with `git archive` (no worktree is registered in the repository)
// into scripts/bench/.baseline-<commit> (ignored by git), then `npm ci --ignore-scripts` and
// `tsc` run there once; later runs reuse the build.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** The commit issue 30 is measured against. */
export const BEFORE_COMMIT = '1496384';

/** The commit issue 39 (the write path) is measured against. */
export const PRIOR_COMMIT = 'ddc85c4';

/** Whether this clone has `commit` (a shallow clone or an exported tree may not). */
export function commitAvailable(commit) {
  return spawnSync('git', ['cat-file', '-e', `${commit}^{commit}`], { cwd: root, stdio: 'ignore' }).status === 0;
}

/**
 * Returns the dist folder of `commit`'s build (it holds server.js), building it first when
 * `dir` (default scripts/bench/.baseline-<commit>) has none. `log` gets progress lines.
 * Throws when git, npm or tsc fail.
 */
export function baselineDist(commit, { dir, log = (line) => console.error(line) } = {}) {
  const target = dir ?? path.join(root, 'scripts', 'bench', `.baseline-${commit}`);
  if (existsSync(path.join(target, 'dist', 'server.js'))) return path.join(target, 'dist');
  log(`[baseline] exporting ${commit} into ${path.relative(root, target)} and building it (about a minute) ...`);
  rmSync(target, { recursive: true, force: true });
  mkdirSync(target, { recursive: true });
  const run = (cmd, args, cwd, input) => {
    const r = spawnSync(cmd, args, { cwd, input, stdio: [input === undefined ? 'ignore' : 'pipe', 'inherit', 'inherit'], maxBuffer: 1 << 30 });
    if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (in ${cwd})`);
    return r;
  };
  const archive = spawnSync('git', ['archive', '--format=tar', commit], { cwd: root, maxBuffer: 1 << 30 });
  if (archive.status !== 0) throw new Error(`git archive ${commit} failed: ${archive.stderr}`);
  run('tar', ['-x', '-f', '-'], target, archive.stdout);
  run('npm', ['ci', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts'], target);
  run('npx', ['tsc', '-p', 'tsconfig.json'], target);
  return path.join(target, 'dist');
}
