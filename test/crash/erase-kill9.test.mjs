/**
 * kill -9 in the middle of an erasure (issue 25, the erasure contract; slow tier, issue 52): a
 * child process appends erase records and rewrites their segments until it is killed at one of
 * several moments; the store then opens, every acknowledged erasure is complete on disk and every
 * other record is intact. The erasure's other cases are unit tests (test/unit/erase.test.mjs).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Log, replaySegments } from '../../dist/store/log.js';
import { tempDir, ROOT } from '../helpers/server.mjs';
import { filesContaining } from '../helpers/files.mjs';

test('kill -9 at any moment of an erasure loses nothing: the store starts, every acknowledged erasure is complete, every other record intact', async (t) => {
  const logUrl = pathToFileURL(join(ROOT, 'dist', 'store', 'log.js')).href;
  // The child writes a few MiB so that a rewrite takes long enough to be hit mid-way.
  const child = `
    const { Log } = await import(${JSON.stringify(logUrl)});
    const dir = process.argv[1];
    const log = await Log.open(dir, () => undefined);
    const pad = 'p'.repeat(2000);
    for (let i = 1; i <= 3000; i++) log.append('message.create', { content: 'secret-' + i + '-' + pad }, Date.UTC(2026, 0, 1) + i);
    await log.sync();
    process.stdout.write('ready\\n');
    for (let seq = 10; ; seq += 97) {
      const hash = log.records.storedHashOf(seq);
      log.append('moderation.erase', { targets: [{ seq, hash }] }, Date.UTC(2026, 0, 2));
      await log.sync();
      process.stdout.write('acked ' + seq + '\\n');
      await log.erase([{ seq, hash }]);
      process.stdout.write('erased ' + seq + '\\n');
    }
  `;
  for (const delayMs of [0, 7, 23, 61, 150]) {
    const dir = tempDir(t);
    const proc = spawn(process.execPath, ['--input-type=module', '-e', child, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    proc.stderr.on('data', (d) => (err += d));
    await new Promise((resolve, reject) => {
      proc.stdout.on('data', (d) => {
        out += d;
        if (out.includes('ready\n')) resolve();
      });
      proc.once('exit', () => reject(new Error(`child exited before ready: ${err}`)));
    });
    await new Promise((r) => setTimeout(r, delayMs));
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGKILL');
    await exited;
    const acked = [...out.matchAll(/acked (\d+)/g)].map((m) => Number(m[1]));
    const records = [];
    const log = await Log.open(dir, (r) => records.push(r));
    assert.ok(log.headSeq >= 3000 + acked.length, `delay ${delayMs}: every acknowledged record is there`);
    assert.equal(readdirSync(join(dir, 'log')).filter((n) => n.includes('.tmp-')).length, 0, 'no temp file is left');
    for (const seq of acked) {
      assert.equal(log.records.read(seq).erased, true, `delay ${delayMs}: acknowledged erasure of ${seq} is complete`);
      assert.deepEqual(filesContaining(dir, `secret-${seq}-p`), [], `delay ${delayMs}: record ${seq}'s text is gone`);
    }
    for (const seq of [1, 9, 11, 2999]) if (!acked.includes(seq)) assert.match(log.records.read(seq).payloadJson, new RegExp(`secret-${seq}-p`));
    await log.close();
    const verified = replaySegments(join(dir, 'log'), () => undefined, { strict: true });
    assert.equal(verified.lastSeq, log.headSeq);
  }
});
