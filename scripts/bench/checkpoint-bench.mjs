#!/usr/bin/env node
// Checkpoint and proof latency (issue 53; docs/api/checkpoints.md): builds the Merkle tree of
// store/merkle-tree.ts over N generated records' chained hashes (a leaf file under a temp folder,
// chunk roots in RAM), then prints the p50 and p99 of a signed checkpoint at a random size, an
// inclusion proof and a consistency proof, with the tree's RAM and disk bytes per record.
//
// Usage: npm run build && node scripts/bench/checkpoint-bench.mjs [--records N] [--samples K]
//   --records N   records in the generated archive (default 200000; the target is 10 M)
//   --samples K   requests measured per kind (default 2000)
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { MerkleTree } from '../../dist/store/merkle-tree.js';
import { consistencyProof, inclusionProof, rootHash } from '../../dist/tlog/merkle.js';
import { signCheckpoint } from '../../dist/tlog/note.js';
import { TREE_CHUNK_LEAVES } from '../../dist/constants.js';
import { prng } from '../lib/prng.mjs';

const { values } = parseArgs({ options: { records: { type: 'string', default: '200000' }, samples: { type: 'string', default: '2000' } } });
const n = Number(values.records);
const samples = Number(values.samples);
const dir = mkdtempSync(join(tmpdir(), 'checkpoint-bench-'));
try {
  const tree = new MerkleTree(dir, { durableSeq: 0, readLines: async () => null });
  const t0 = performance.now();
  let prev = Buffer.alloc(32);
  for (let i = 0; i < n; i++) {
    prev = createHash('sha256').update(prev).update(`record ${i + 1}`).digest();
    tree.appendEntry(prev);
  }
  const buildMs = performance.now() - t0;
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x, 'base64url');
  const rand = prng(53);
  const pick = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
  const time = (f) => {
    const ms = [];
    for (let i = 0; i < samples; i++) {
      const s = performance.now();
      f();
      ms.push(performance.now() - s);
    }
    ms.sort((a, b) => a - b);
    return { p50: ms[Math.floor(ms.length / 2)], p99: ms[Math.floor(ms.length * 0.99)] };
  };
  const rows = {
    checkpoint: time(() => {
      const size = pick(1, n);
      signCheckpoint({ origin: 'agent-forum/bench', size, root: rootHash(tree, size) }, (d) => sign(null, d, privateKey), raw);
    }),
    inclusion: time(() => {
      const size = pick(1, n);
      inclusionProof(tree, pick(0, size - 1), size);
    }),
    consistency: time(() => {
      const to = pick(1, n);
      consistencyProof(tree, pick(1, to), to);
    }),
  };
  const diskBytes = statSync(join(dir, 'merkle-leaves')).size;
  const ramBytes = (2 * Math.ceil(n / TREE_CHUNK_LEAVES) + TREE_CHUNK_LEAVES) * 32;
  console.log(`records ${n}: tree built in ${buildMs.toFixed(0)} ms; disk ${(diskBytes / n).toFixed(1)} B/record, RAM about ${(ramBytes / n).toFixed(2)} B/record`);
  for (const [kind, r] of Object.entries(rows)) console.log(`${kind.padEnd(12)} p50 ${r.p50.toFixed(3)} ms  p99 ${r.p99.toFixed(3)} ms  (${samples} samples)`);
  tree.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
