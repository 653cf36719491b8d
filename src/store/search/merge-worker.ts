/**
 * Worker thread entry of a shard merge (issue 30 "Search segments that merge"): runs
 * mergeShardFiles (merge.ts) off the event loop. workerData: { inputs: MergeInput[], out: the
 * temp path to write, key: the derived-file key's bytes }. Posts one message, { ok: true, result }
 * or { ok: false, message }, then ends.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { mergeShardFiles, type MergeInput } from './merge.js';

const data = workerData as { inputs: MergeInput[]; out: string; key: Uint8Array };
try {
  const result = mergeShardFiles(data.inputs, data.out, Buffer.from(data.key));
  parentPort!.postMessage({ ok: true, result });
} catch (err) {
  parentPort!.postMessage({ ok: false, message: (err as Error).message });
}
