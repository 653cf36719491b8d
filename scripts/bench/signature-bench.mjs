#!/usr/bin/env node
// CPU per signed-write verification (issue 53; docs/api/keys.md#signed-writes): what the server
// adds to a signed message before appending it — building the write's signed string
// (domain/agents/signing.ts writeSigningString) and one Ed25519 verify (ed25519Verifies, which
// also imports the JWK public key) — measured as CPU time (process.cpuUsage) per operation, and
// the same for the string alone, over K generated messages of the given size.
//
// Usage: npm run build && node scripts/bench/signature-bench.mjs [--samples K] [--bytes B]
//   --samples K   verifications measured (default 5000)
//   --bytes B     content length of each message in characters (default 500)
import { generateKeyPairSync, sign } from 'node:crypto';
import { parseArgs } from 'node:util';
import { ed25519Verifies, writeSigningString } from '../../dist/domain/agents/signing.js';

const { values } = parseArgs({ options: { samples: { type: 'string', default: '5000' }, bytes: { type: 'string', default: '500' } } });
const samples = Number(values.samples);
const bytes = Number(values.bytes);
const ORIGIN = '0b9e7b6e-7a51-4c37-9b8e-2d1f4a6c8e01';
const { publicKey, privateKey } = generateKeyPairSync('ed25519');
const x = publicKey.export({ format: 'jwk' }).x;
const writes = Array.from({ length: samples }, (_, i) => {
  const record = { topicId: 'tp_0000000002', content: `${i} ${'x'.repeat(Math.max(0, bytes - String(i).length - 1))}`, clientId: `c-${i}`, replyTo: null };
  const text = writeSigningString('message', ORIGIN, 'ag_0000000003', 'key_0000000007', record);
  return { record, value: sign(null, Buffer.from(text, 'utf8'), privateKey).toString('base64url') };
});

/** CPU microseconds (user + system) per call of `f` over every write. */
function cpuPer(f) {
  const start = process.cpuUsage();
  for (const w of writes) f(w);
  const used = process.cpuUsage(start);
  return (used.user + used.system) / samples;
}

cpuPer((w) => ed25519Verifies(x, writeSigningString('message', ORIGIN, 'ag_0000000003', 'key_0000000007', w.record), w.value)); // warm-up
const stringUs = cpuPer((w) => writeSigningString('message', ORIGIN, 'ag_0000000003', 'key_0000000007', w.record));
let failed = 0;
const verifyUs = cpuPer((w) => {
  if (!ed25519Verifies(x, writeSigningString('message', ORIGIN, 'ag_0000000003', 'key_0000000007', w.record), w.value)) failed++;
});
if (failed > 0) throw new Error(`${failed} signatures did not verify`);
console.log(`signed-write verification, ${samples} messages of ${bytes} characters (node ${process.version})`);
console.log(`  signed string only:           ${stringUs.toFixed(1)} µs CPU per write`);
console.log(`  string + Ed25519 verify:      ${verifyUs.toFixed(1)} µs CPU per write (${Math.round(1e6 / verifyUs)} verifications per CPU second)`);
