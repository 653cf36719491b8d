/**
 * The offline verifier (issue 53; docs/api/checkpoints.md "Verifying offline"): what
 * `verify-export` and `verify-consistency` run, with no server. Pure (node:crypto and the other
 * tlog modules only), so the CLI loads nothing of the store for it.
 *
 * An export (one GET /api/exchange page, an array of pages, or pages one per line) passes when, for
 * every page: its checkpoint note is signed by the given key and covers exactly the pinned export
 * (size = cursor.through); and for every record: its sha256 is that of canonicalJson; its proof's
 * entry is included (RFC 9162 §2.1.3.2) at leaf seq - 1 of the checkpoint's tree; when the
 * record is not flagged erased or hidden, its text is bound to the entry (entry = SHA-256(prevHash
 * || the log record's canonical JSON)); and where the export holds record seq - 1 too, that
 * record's entry is this one's prevHash (the chain); and a record whose text is bound and carries
 * its author's signature verifies against the page's key histories (signatures.ts). Anything else
 * is refused with the reason.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { leafHash, verifyConsistency, verifyInclusion, HASH_BYTES } from './merkle.js';
import { CheckpointError, parseNoteKey, verifyCheckpoint, type Checkpoint } from './note.js';
import { SignatureError, verifyKeyHistories, verifyRecordSignature } from './signatures.js';

/** A checkpoint's origin is this prefix and the forum's originId (checkpoints.md). */
const ORIGIN_PREFIX = 'agent-forum/';

/** An export or checkpoint that does not verify; the message names the page, record and rule. */
export class VerifyError extends Error {}

/** The record types whose payload an export record's canonicalJson is, by event kind. */
const TYPES_OF_KIND: Readonly<Record<string, readonly string[]>> = {
  room: ['room.create', 'room.update'],
  topic: ['topic.create', 'work.create'],
  message: ['message.create'],
  knowledge: ['knowledge.publish'],
};

const HEX64 = /^[0-9a-f]{64}$/;

/** Canonical JSON (sorted keys, no whitespace), as the log writes payloads: enough for a topic object. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o).sort().filter((k) => o[k] !== undefined).map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

function base64Hashes(path: unknown, where: string): Buffer[] {
  if (!Array.isArray(path)) throw new VerifyError(`${where}: proof.path is not an array`);
  return path.map((h, i) => {
    const b = typeof h === 'string' ? Buffer.from(h, 'base64') : Buffer.alloc(0);
    if (b.length !== HASH_BYTES || b.toString('base64') !== h) throw new VerifyError(`${where}: proof.path[${i}] is not the base64 of a 32-byte hash`);
    return b;
  });
}

/** Parses an export file's text: one page (JSON object), an array of pages, or one page a line. */
export function parseExportText(text: string): unknown[] {
  try {
    const v = JSON.parse(text) as unknown;
    return Array.isArray(v) ? v : [v];
  } catch {
    try {
      return text.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as unknown);
    } catch {
      throw new VerifyError('the export is neither JSON (a page or an array of pages) nor one JSON page a line');
    }
  }
}

/** What a verified export holds. */
export interface ExportSummary {
  origin: string;
  treeSize: number;
  pages: number;
  records: number;
  /** Records whose text is bound to the log (the rest are erased or hidden placeholders: included, text not proven). */
  bound: number;
  /** Bound records carrying their author's signature, each verified against the key history (issue 53). */
  signed: number;
  /** The keys (sorted ids) of verified signatures that have been revoked since: the signature holds, the key is no longer to be trusted. */
  revokedKeys: string[];
}

/**
 * Verifies export pages against the checkpoint key `keyText` (`ed25519:…` or a signed-note
 * verifier key). Output: the summary. Throws VerifyError naming the first failure (page index,
 * record seq, rule).
 */
export function verifyExportPages(pages: readonly unknown[], keyText: string): ExportSummary {
  let key: ReturnType<typeof parseNoteKey>;
  try {
    key = parseNoteKey(keyText);
  } catch (err) {
    throw new VerifyError(`--key: ${(err as Error).message}`);
  }
  if (pages.length === 0) throw new VerifyError('the export holds no page');
  let cp0: Checkpoint | null = null;
  let records = 0;
  let bound = 0;
  let signed = 0;
  const revokedKeys = new Set<string>();
  const entries = new Map<number, { entry: string; prevHash: string | null }>();
  pages.forEach((p, pi) => {
    const where = `page ${pi + 1}`;
    const page = p as { format?: unknown; checkpoint?: unknown; cursor?: { through?: unknown }; records?: unknown };
    if (page === null || typeof page !== 'object' || page.format !== 'forum-exchange-v1') throw new VerifyError(`${where}: not a forum-exchange-v1 page`);
    if (typeof page.checkpoint !== 'string') throw new VerifyError(`${where}: carries no checkpoint`);
    let cp: Checkpoint;
    try {
      cp = verifyCheckpoint(page.checkpoint, key);
    } catch (err) {
      if (err instanceof CheckpointError) throw new VerifyError(`${where}: checkpoint: ${err.message}`);
      throw err;
    }
    if (page.cursor?.through !== cp.size) throw new VerifyError(`${where}: the checkpoint covers ${cp.size} records, the export is pinned at through=${String(page.cursor?.through)}`);
    if (cp0 !== null && (cp0.origin !== cp.origin || cp0.size !== cp.size || !cp0.root.equals(cp.root))) throw new VerifyError(`${where}: its checkpoint is not the one of page 1 (pages of one export share it)`);
    cp0 ??= cp;
    // Agent signatures (issue 53): the page's key histories, for the forum the checkpoint names.
    const originId = cp.origin.startsWith(ORIGIN_PREFIX) ? cp.origin.slice(ORIGIN_PREFIX.length) : cp.origin;
    let histories: ReturnType<typeof verifyKeyHistories>;
    try {
      histories = verifyKeyHistories((page as { keys?: unknown }).keys, originId);
    } catch (err) {
      if (err instanceof SignatureError) throw new VerifyError(`${where}: ${err.message}`);
      throw err;
    }
    if (!Array.isArray(page.records)) throw new VerifyError(`${where}: records is not an array`);
    for (const r of page.records as Array<Record<string, unknown>>) {
      const seq = r.seq;
      const at = `${where}, record ${String(seq)}`;
      if (!Number.isSafeInteger(seq) || (seq as number) < 1 || (seq as number) > cp.size) throw new VerifyError(`${at}: seq is not within the checkpoint's 1..${cp.size}`);
      if (entries.has(seq as number)) throw new VerifyError(`${at}: the record appears twice`);
      if (typeof r.canonicalJson !== 'string') throw new VerifyError(`${at}: canonicalJson is not a string`);
      if (createHash('sha256').update(r.canonicalJson, 'utf8').digest('hex') !== r.sha256) throw new VerifyError(`${at}: sha256 is not the SHA-256 of canonicalJson`);
      const proof = r.proof as Record<string, unknown> | undefined;
      if (proof === null || typeof proof !== 'object') throw new VerifyError(`${at}: carries no proof`);
      if (typeof proof.entry !== 'string' || !HEX64.test(proof.entry)) throw new VerifyError(`${at}: proof.entry is not 64 hex digits`);
      const path = base64Hashes(proof.path, at);
      if (!verifyInclusion(leafHash(Buffer.from(proof.entry, 'hex')), (seq as number) - 1, cp.size, path, cp.root)) {
        throw new VerifyError(`${at}: the inclusion proof does not lead to the checkpoint's root: the record (or its proof) is not what the log holds`);
      }
      const placeholder = r.erased === true || r.hidden === true;
      let prevHash: string | null = null;
      if (proof.prevHash === undefined) {
        if (!placeholder) throw new VerifyError(`${at}: the record is neither erased nor hidden, yet its proof does not bind its text (no prevHash)`);
      } else {
        if (typeof proof.prevHash !== 'string' || !HEX64.test(proof.prevHash)) throw new VerifyError(`${at}: proof.prevHash is not 64 hex digits`);
        const type = proof.type;
        const time = proof.time;
        if (typeof type !== 'string' || !(TYPES_OF_KIND[r.kind as string] ?? []).includes(type)) throw new VerifyError(`${at}: proof.type ${JSON.stringify(type)} is not a record type of kind ${String(r.kind)}`);
        if (typeof time !== 'string' || !/^[0-9T:.Z+-]{1,40}$/.test(time)) throw new VerifyError(`${at}: proof.time is not a timestamp`);
        let payloadJson = r.canonicalJson;
        if (type === 'work.create') {
          if (typeof proof.payloadJson !== 'string') throw new VerifyError(`${at}: a work.create topic's proof carries no payloadJson`);
          let topic: unknown;
          try {
            topic = (JSON.parse(proof.payloadJson) as { topic?: unknown }).topic;
          } catch {
            throw new VerifyError(`${at}: proof.payloadJson is not JSON`);
          }
          if (canonical(topic) !== r.canonicalJson) throw new VerifyError(`${at}: canonicalJson is not the topic of the work.create payload`);
          payloadJson = proof.payloadJson;
        }
        const body = `{"payload":${payloadJson},"seq":${seq as number},"time":"${time}","type":"${type}"}`;
        if (createHash('sha256').update(proof.prevHash + body, 'utf8').digest('hex') !== proof.entry) {
          throw new VerifyError(`${at}: the text does not hash to the proof's entry (SHA-256 of prevHash and the log record): canonicalJson, type, time or prevHash was changed`);
        }
        prevHash = proof.prevHash;
        bound++;
        try {
          const key = verifyRecordSignature(histories, originId, r.kind as string, seq as number, JSON.parse(r.canonicalJson) as Record<string, unknown>);
          if (key !== null) signed++;
          if (key?.state === 'revoked') revokedKeys.add(key.id);
        } catch (err) {
          if (err instanceof SignatureError) throw new VerifyError(`${at}: ${err.message}`);
          throw err;
        }
      }
      entries.set(seq as number, { entry: proof.entry, prevHash });
      records++;
    }
  });
  // The chain: where the export holds two consecutive records, the later one's prevHash is the earlier one's entry.
  for (const [seq, { prevHash }] of entries) {
    const before = entries.get(seq - 1);
    if (before !== undefined && prevHash !== null && before.entry !== prevHash) throw new VerifyError(`record ${seq}: its prevHash is not record ${seq - 1}'s entry: the chain is broken`);
  }
  return { origin: cp0!.origin, treeSize: cp0!.size, pages: pages.length, records, bound, signed, revokedKeys: [...revokedKeys].sort() };
}

/** A checkpoint file: the note text, or JSON with `checkpoint` (a proof answer) or `note` (GET /api/checkpoint). */
function checkpointFile(text: string, what: string): { note: string; proof: Record<string, unknown> | null } {
  const t = text.trimStart();
  if (!t.startsWith('{')) return { note: text, proof: null };
  let v: Record<string, unknown>;
  try {
    v = JSON.parse(t) as Record<string, unknown>;
  } catch {
    throw new VerifyError(`${what} is neither a checkpoint note nor JSON`);
  }
  const note = typeof v.checkpoint === 'string' ? v.checkpoint : typeof v.note === 'string' ? v.note : null;
  if (note === null) throw new VerifyError(`${what} holds no checkpoint (a "checkpoint" or "note" field)`);
  return { note, proof: Array.isArray(v.proof) ? v : null };
}

/**
 * Verifies that the checkpoint in `oldText` is a prefix of the one in `newText` (a GET
 * /api/proofs/consistency answer: the newer checkpoint and the proof from the older size; or a
 * checkpoint of the same size), both signed by `keyText`. Output: {origin, from, to}. Throws
 * VerifyError naming the failure.
 */
export function verifyConsistencyTexts(oldText: string, newText: string, keyText: string): { origin: string; from: number; to: number } {
  let key: ReturnType<typeof parseNoteKey>;
  try {
    key = parseNoteKey(keyText);
  } catch (err) {
    throw new VerifyError(`--key: ${(err as Error).message}`);
  }
  const older = checkpointFile(oldText, 'OLD');
  const newer = checkpointFile(newText, 'NEW');
  const check = (note: string, what: string): Checkpoint => {
    try {
      return verifyCheckpoint(note, key);
    } catch (err) {
      throw new VerifyError(`${what}: ${(err as Error).message}`);
    }
  };
  const a = check(older.note, 'OLD');
  const b = check(newer.note, 'NEW');
  if (a.origin !== b.origin) throw new VerifyError(`OLD is a checkpoint of ${a.origin}, NEW of ${b.origin}`);
  if (a.size > b.size) throw new VerifyError(`OLD (${a.size} records) is larger than NEW (${b.size}): swap them`);
  if (newer.proof === null) {
    if (a.size === b.size && a.root.equals(b.root)) return { origin: a.origin, from: a.size, to: b.size };
    throw new VerifyError(a.size === b.size ? `OLD and NEW both cover ${a.size} records with different roots: the log was rewritten (a fork)` : `NEW carries no consistency proof (save GET /api/proofs/consistency?from=${a.size}&to=${b.size} as NEW)`);
  }
  const p = newer.proof;
  if (p.from !== a.size || p.to !== b.size) throw new VerifyError(`NEW's proof is from ${String(p.from)} to ${String(p.to)}, the checkpoints are ${a.size} and ${b.size}`);
  if (a.size === 0) return { origin: a.origin, from: 0, to: b.size };
  const hashes = base64Hashes(p.proof, 'NEW');
  if (!verifyConsistency(a.size, b.size, a.root, b.root, hashes)) {
    throw new VerifyError(`the consistency proof does not show the tree of ${a.size} records as a prefix of the tree of ${b.size}: the log was rewritten, or the proof changed`);
  }
  return { origin: a.origin, from: a.size, to: b.size };
}

/**
 * The CLI's `verify-export FILE` and `verify-consistency OLD NEW` (src/cli.ts): reads the files and
 * verifies them with `keyText`. Output: the summary, with `verified: true`. Throws VerifyError (the
 * reason) or the file system's error naming the file.
 */
export function verifyFiles(command: string, files: string[], keyText: string): unknown {
  const read = (f: string): string => readFileSync(f, 'utf8');
  if (command === 'verify-export') return { verified: true, ...verifyExportPages(parseExportText(read(files[0]!)), keyText) };
  return { verified: true, ...verifyConsistencyTexts(read(files[0]!), read(files[1]!), keyText) };
}
