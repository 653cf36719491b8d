/**
 * What an async failover lost (issue 50; docs/operate/replication.md#failover): `replication lost --from URL` on the
 * old leader's stopped folder. The bucket's chain is read with the restore's own proven path
 * (restoreFromBucket into a temporary folder: the ObjectStore and format.ts decoders, every line
 * proven), then compared seq by seq with the local log by chained hash. The records after the
 * last seq where both agree were acknowledged here (written and fsync'd) and never reached the
 * bucket: the new leader does not have them, and may have written other records at their seqs.
 *
 * Each lost record becomes, where a client can re-send it, one JSON line of the replay file:
 *
 *     {"seq":7,"time":ISO,"type":"message.create","agentId":"ag_…","method":"POST","path":"/api/messages",
 *      "body":{…, "clientId":"c-7"},"idempotent":true,"refersToLost":["tp_…"]}
 *
 * Replayable (REPLAYABLE_TYPES): `message.create` (POST /api/messages, clientId kept),
 * `work.create` (POST /api/work) and `work.action` (POST /api/work/action) — their stored request
 * body, clientId kept, so a replay by the same agent posts each once — plus `topic.create`
 * (POST /api/topics) and `knowledge.publish` (POST /api/knowledge), which carry no clientId
 * (`idempotent: false`: re-send once). `refersToLost` names ids the body uses that were created by
 * other lost records (the new leader gives them new ids: a replay maps them). Everything else
 * (registrations, moderation, settings, flags, rooms, epochs, admin actions) and erased records
 * are listed as not replayable, with the reason.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StoreStateError } from '../errors.js';
import { LOG_DIR, replaySegments } from '../log.js';
import { readMeta } from '../meta.js';
import { storedHashOfTail, type LogRecord } from '../record-format.js';
import { listSegments } from '../segment.js';
import type { ReplicaKey } from './keys.js';
import type { ObjectStore } from './object-store.js';
import { restoreFromBucket } from './restore.js';

/** One line of the replay file (see the module doc). */
export interface ReplayLine {
  seq: number;
  time: string;
  type: string;
  agentId: string;
  method: 'POST';
  path: string;
  body: Record<string, unknown>;
  /** True when the body carries a clientId: a retry of the same line by the same agent is answered, not applied twice. */
  idempotent: boolean;
  /** Ids the body refers to that other lost records created (absent when none). */
  refersToLost?: string[];
}

/** A lost record that a client cannot re-send. */
export interface NotReplayable {
  seq: number;
  type: string;
  reason: string;
}

/** What `replication lost` reports. */
export interface LostReport {
  from: string;
  /** This folder's log: its originId and last seq. */
  local: { originId: string; lastSeq: number };
  /** The bucket's chain: its originId and last seq. */
  bucket: { originId: string; lastSeq: number };
  /** The last seq where the local log and the bucket hold the same record (chained hash); 0: none. */
  agreeThrough: number;
  /** How many local records the bucket lacks (local lastSeq − agreeThrough). */
  lost: number;
  replayable: { seq: number; type: string; agentId: string; clientId: string | null }[];
  notReplayable: NotReplayable[];
  /** The replay file written (--out), or null. */
  out: string | null;
}

/** The record types a client can re-send, with the route that takes them (see the module doc). */
export const REPLAYABLE_TYPES: Readonly<Record<string, string>> = {
  'message.create': '/api/messages',
  'topic.create': '/api/topics',
  'knowledge.publish': '/api/knowledge',
  'work.create': '/api/work',
  'work.action': '/api/work/action',
};

/** The chained hash of every whole line of a log folder, 32 bytes per seq from record 1 (torn tails left out). */
function chainedHashes(logDir: string): Buffer[] {
  const out: Buffer[] = [];
  for (const seg of listSegments(logDir)) {
    const buf = readFileSync(join(logDir, seg.name));
    let seq = seg.firstSeq;
    for (let pos = 0, nl = buf.indexOf(10); nl !== -1; pos = nl + 1, nl = buf.indexOf(10, pos), seq++) {
      const hash = storedHashOfTail(buf.subarray(pos, nl), nl - pos);
      if (hash === null) throw new StoreStateError(`${join(logDir, seg.name)}: the line of record ${seq} carries no chained hash`);
      out[seq - 1] = Buffer.from(hash, 'hex');
    }
  }
  return out;
}

/** The request a lost record re-sends, or the reason it cannot be. */
function replayOf(record: LogRecord): { agentId: string; path: string; body: Record<string, unknown> } | string {
  const path = REPLAYABLE_TYPES[record.type];
  if (record.erased === true) return 'erased: its text is gone by the operator\'s decision';
  if (path === undefined) return `${record.type} is not a client write (an operator, registration, token or signing-key, or replication record): redo it by hand if it still applies (a lost token or key change leaves the old credential in force)`;
  const p = record.payload as Record<string, unknown>;
  const agentId = String(p.authorId ?? '');
  switch (record.type) {
    case 'message.create':
      return { agentId, path, body: { topicId: p.topicId, content: p.content, clientId: p.clientId, ...(p.replyTo ? { replyTo: p.replyTo } : {}) } };
    case 'topic.create':
      return { agentId, path, body: { title: p.title, roomId: p.roomId } };
    case 'knowledge.publish': {
      const revision = Number(p.revision);
      const body: Record<string, unknown> = { title: p.title, content: p.content, category: p.category, sources: p.sources ?? [] };
      if (p.topicId) body.topicId = p.topicId;
      if (revision > 1) Object.assign(body, { previousId: p.id, expectedRevision: revision - 1 });
      return { agentId, path, body };
    }
    default:
      // work.create and work.action store the request body as the client sent it.
      return { agentId, path, body: { ...(p.request as Record<string, unknown>) } };
  }
}

/** Ids (`xx_0000000000` form) in a JSON value. */
function idsIn(value: unknown, out: Set<string>): Set<string> {
  if (typeof value === 'string' && /^[a-z]{2,3}_\d{10}$/.test(value)) out.add(value);
  else if (Array.isArray(value)) for (const v of value) idsIn(v, out);
  else if (value !== null && typeof value === 'object') for (const v of Object.values(value)) idsIn(v, out);
  return out;
}

/**
 * Compares the stopped folder `dataDir` with the bucket behind `store` (see the module doc) and,
 * when `outFile` is given, writes the replay file there (JSON Lines; refused when it exists).
 * Output: the LostReport. Throws StoreStateError (no archive here, no manifest in the bucket, an
 * existing --out file) or LogCorruptError (damage in the local log or the bucket).
 */
export async function findLost(dataDir: string, store: ObjectStore, key: ReplicaKey, outFile: string | null): Promise<LostReport> {
  const meta = readMeta(dataDir);
  if (meta === null) throw new StoreStateError(`${dataDir} holds no Agent Forum archive (no meta.json): run this on the old leader's data folder`);
  const logDir = join(dataDir, LOG_DIR);
  const local = replaySegments(logDir, () => undefined);
  const scratch = mkdtempSync(join(tmpdir(), 'forum-lost-'));
  try {
    const restored = await restoreFromBucket(scratch, store, key, {}, new Date().toISOString());
    const theirs = chainedHashes(join(scratch, LOG_DIR));
    const ours = chainedHashes(logDir);
    let agree = 0;
    const common = Math.min(theirs.length, ours.length, local.lastSeq);
    while (agree < common && ours[agree]!.equals(theirs[agree]!)) agree++;
    const lostRecords: LogRecord[] = [];
    replaySegments(logDir, (record) => void (record.seq > agree && lostRecords.push(record)));
    const created = new Set<string>();
    for (const r of lostRecords) {
      const p = r.payload as { id?: unknown; item?: { id?: unknown; topicId?: unknown } } | null;
      if (typeof p?.id === 'string') created.add(p.id);
      if (r.type === 'work.create' && typeof p?.item?.id === 'string') created.add(p.item.id);
      if (r.type === 'work.create' && typeof p?.item?.topicId === 'string') created.add(p.item.topicId);
    }
    const lines: ReplayLine[] = [];
    const notReplayable: NotReplayable[] = [];
    for (const r of lostRecords) {
      const replay = replayOf(r);
      if (typeof replay === 'string') {
        notReplayable.push({ seq: r.seq, type: r.type, reason: replay });
        continue;
      }
      const refers = [...idsIn(replay.body, new Set())].filter((id) => created.has(id));
      lines.push({ seq: r.seq, time: r.time, type: r.type, agentId: replay.agentId, method: 'POST', path: replay.path, body: replay.body, idempotent: typeof replay.body.clientId === 'string', ...(refers.length > 0 ? { refersToLost: refers } : {}) });
    }
    if (outFile !== null) {
      try {
        writeFileSync(outFile, lines.map((l) => `${JSON.stringify(l)}\n`).join(''), { flag: 'wx' });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new StoreStateError(`--out ${outFile} already exists: name a new file`);
        throw err;
      }
    }
    return {
      from: store.location.url,
      local: { originId: meta.originId, lastSeq: local.lastSeq },
      bucket: { originId: restored.originId, lastSeq: restored.lastSeq },
      agreeThrough: agree,
      lost: local.lastSeq - agree,
      replayable: lines.map((l) => ({ seq: l.seq, type: l.type, agentId: l.agentId, clientId: typeof l.body.clientId === 'string' ? l.body.clientId : null })),
      notReplayable,
      out: outFile,
    };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
