import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from '../helpers/server.mjs';

// The 'before' column (commit 1496384, built on first use) is left to full runs: the smoke run stays
// self-contained (no second npm ci) and quick.
test('the benchmark runs end to end in smoke mode against ours and both reference servers', { timeout: 15 * 60_000 }, async (t) => {
  const out = await new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [join(ROOT, 'scripts', 'bench.mjs'), '--smoke', '--servers', 'ours,fastify,bare'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    proc.stdout.on('data', (d) => (text += d));
    proc.stderr.on('data', (d) => (text += d));
    proc.on('error', reject);
    proc.on('exit', (code) => resolve({ code, text }));
  });
  t.diagnostic(out.text.split('\n').filter((l) => l.startsWith('|') || l.startsWith('load generator')).join('\n'));
  assert.equal(out.code, 0, out.text.slice(-2000));
  for (const scenario of ['status', 'read', 'write', 'changes', 'work', 'exchange']) {
    assert.match(out.text, new RegExp(`\\| ${scenario} \\| \\d+ \\| ours \\| [\\d,]+ `), `a measured ${scenario} row for ours`);
  }
  assert.match(out.text, /\| status \| \d+ \| bare \|/);
  assert.match(out.text, /\| write \| \d+ \| fastify \|/);
  // The CLI start rows (issue 51): each command measured beside `node -e 0`, with the ratio.
  for (const row of ['--version', '--help', 'agents list \\(admin socket, server running\\)', 'verify \\(archive command, server stopped\\)']) {
    assert.match(out.text, new RegExp(`\\| ${row} \\| \\d+ \\| \\d+ \\| \\d+\\.\\d\\d× \\|`), `a CLI start row for ${row}`);
  }
});
