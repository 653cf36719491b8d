/**
 * Signed checkpoints and proofs (ours, issue 53; docs/api/checkpoints.md): GET /api/checkpoint,
 * GET /api/proofs/inclusion, GET /api/proofs/consistency, and the checkpoint and per-record
 * proofs that GET /api/exchange carries (exchangeProofs).
 */
import type { App } from '../../app.js';
import { ServiceError, invalid } from '../../errors.js';
import type { Route } from '../../http/router.js';
import { route } from '../route.js';
import { TREE_WAIT_MS } from '../../constants.js';
import { GENESIS_HASH } from '../../store/record-format.js';
import { leafHash } from '../../tlog/merkle.js';
import type { Checkpoints } from '../../tlog/checkpoints.js';

/** The checkpoints of `app`, or 503 UNAVAILABLE when they are not started (offline tools) or the tree stopped (500 INTERNAL when it stopped at archive damage). */
function checkpointsOf(app: App): Checkpoints {
  const c = app.checkpoints;
  if (c === null) throw new ServiceError('UNAVAILABLE', 'this server does not sign checkpoints (the Merkle tree is not started)', { 'Retry-After': '5' });
  // Archive damage the tree met is answered as every read of damage is (500 INTERNAL; status damaged).
  if (c.tree.failure instanceof ServiceError) throw c.tree.failure;
  if (c.tree.failure !== null) throw new ServiceError('UNAVAILABLE', `the Merkle tree stopped catching up with the log (${c.tree.failure.message}); the operator's log has the cause`, { 'Retry-After': '60' });
  return c;
}

/**
 * Waits until the tree holds `size` records (TREE_WAIT_MS at most). Throws 503 UNAVAILABLE (Retry-After 1)
 * when it does not get there in time: records are durable but the tree is still catching up; 500
 * INTERNAL when it stopped at a damaged record (the archive is damaged; docs/internals/storage.md).
 */
async function treeAt(c: Checkpoints, size: number): Promise<void> {
  try {
    await c.tree.waitFor(size, TREE_WAIT_MS);
  } catch (err) {
    // Archive damage the tree met (a proven read's 500 INTERNAL) is answered as every read of damage is.
    if (err instanceof ServiceError) throw err;
    throw new ServiceError('UNAVAILABLE', `the Merkle tree is still catching up with the log (${(err as Error).message}); retry shortly`, { 'Retry-After': '1' });
  }
}

/** The latest checkpoint, or 503 while the tree is empty (it is still being built from the log at start). */
function latestOf(c: Checkpoints): { size: number; note: string } {
  const latest = c.latest();
  if (latest === null) throw new ServiceError('UNAVAILABLE', 'no checkpoint yet: the Merkle tree is being built from the log; retry shortly', { 'Retry-After': '1' });
  return latest;
}

/**
 * What an export page pinned at `through` carries (issue 53): the signed checkpoint of the tree of
 * `through` records, and `proofOf(seq, bound)` — the `,"proof":{...}` JSON fragment of one record:
 * its entry (chained hash, hex), its RFC 9162 audit path against that checkpoint, and, when the
 * exported canonicalJson is the record's own (`bound`), what binds the text to the entry: the
 * log record's type and time and the previous record's chained hash (and for a topic made by
 * work.create, that record's payload). Null when `through` is 0 or checkpoints are not started.
 * Throws 503 as treeAt.
 */
export async function exchangeProofs(app: App, through: number): Promise<{ checkpoint: string; proofOf: (seq: number, bound: boolean) => string } | null> {
  const c = app.checkpoints;
  if (c === null || through === 0) return null;
  checkpointsOf(app);
  await treeAt(c, through);
  const checkpoint = c.at(through);
  const records = app.records;
  const proofOf = (seq: number, bound: boolean): string => {
    const entry = records.storedHashOf(seq)!;
    const path = JSON.stringify(c.inclusion(seq, through));
    if (!bound) return `,"proof":{"entry":"${entry}","path":${path}}`;
    const r = records.read(seq);
    const prevHash = seq === 1 ? GENESIS_HASH : records.storedHashOf(seq - 1)!;
    const payload = r.type === 'work.create' ? `,"payloadJson":${JSON.stringify(r.payloadJson)}` : '';
    return `,"proof":{"entry":"${entry}","prevHash":"${prevHash}","type":"${r.type}","time":"${r.time}"${payload},"path":${path}}`;
  };
  return { checkpoint, proofOf };
}

export const proofRoutes: Route[] = [
  route({
    method: 'GET',
    path: '/api/checkpoint',
    auth: 'public',
    operationId: 'getCheckpoint',
    summary: 'Ours (issue 53): the latest signed checkpoint (C2SP tlog-checkpoint, signed-note, Ed25519) of the Merkle tree over the archive log.',
    tag: 'Feeds',
    query: 'NoQuery',
    errors: [503],
    responses: { 200: { description: 'The checkpoint', schema: 'Checkpoint' } },
    handler: ({ app }) => {
      const c = checkpointsOf(app);
      void c.tree.catchUp();
      const { size, note } = latestOf(c);
      const rootHash = note.split('\n')[2]!;
      return { status: 200, body: { origin: c.origin, size, rootHash, note, key: c.keyText, verifierKey: c.verifierKey } };
    },
  }),
  route({
    method: 'GET',
    path: '/api/proofs/inclusion',
    auth: 'bearer',
    operationId: 'getInclusionProof',
    summary: 'Ours (issue 53): RFC 9162 inclusion proof of one record in the tree of `size` records, with the signed checkpoint of that size.',
    tag: 'Feeds',
    query: 'InclusionProofQuery',
    errors: [503],
    responses: { 200: { description: 'The proof', schema: 'InclusionProof' } },
    handler: async ({ app, query }) => {
      const c = checkpointsOf(app);
      const size = query.size ?? latestOf(c).size;
      if (query.seq > size) throw invalid(`query parameter "seq" (${query.seq}) must be at most "size" (${size}): a tree of ${size} records holds records 1..${size}`);
      if (size > app.log.durableSeq) throw invalid(`query parameter "size" (${size}) must be at most the archive's ${app.log.durableSeq} durable records`);
      await treeAt(c, size);
      const entry = app.records.storedHashOf(query.seq)!;
      return {
        status: 200,
        body: {
          seq: query.seq,
          leafIndex: query.seq - 1,
          treeSize: size,
          leafHash: leafHash(Buffer.from(entry, 'hex')).toString('base64'),
          proof: c.inclusion(query.seq, size),
          checkpoint: c.at(size),
        },
      };
    },
  }),
  route({
    method: 'GET',
    path: '/api/proofs/consistency',
    auth: 'bearer',
    operationId: 'getConsistencyProof',
    summary: 'Ours (issue 53): RFC 9162 consistency proof between the trees of `from` and `to` records, with the signed checkpoint of size `to`.',
    tag: 'Feeds',
    query: 'ConsistencyProofQuery',
    errors: [503],
    responses: { 200: { description: 'The proof', schema: 'ConsistencyProof' } },
    handler: async ({ app, query }) => {
      const c = checkpointsOf(app);
      const to = query.to ?? latestOf(c).size;
      if (query.from > to) throw invalid(`query parameter "from" (${query.from}) must be at most "to" (${to}): a log only grows`);
      if (to > app.log.durableSeq) throw invalid(`query parameter "to" (${to}) must be at most the archive's ${app.log.durableSeq} durable records`);
      await treeAt(c, to);
      return { status: 200, body: { from: query.from, to, proof: c.consistency(query.from, to), checkpoint: c.at(to) } };
    },
  }),
];
