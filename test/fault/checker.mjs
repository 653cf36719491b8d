/**
 * The fault suite's history checker (issue 50): a pure function of what the clients saw (their
 * request logs), what the harness did (its event log) and what the bucket holds at the end, that
 * returns every violation of the replication's promises, with evidence, and counts.
 *
 * Inputs (all plain data; harness.mjs records them, the unit tests hand-make them):
 *  - client entries, one per request a client sent (recorder in harness.mjs):
 *    `{ client, server, op, method, path, start, end, request, status, body, error }` — `start`
 *    and `end` in ms (Date.now()), `server` the name of the server asked, `op` one of `message`,
 *    `work` (writes: POST /api/messages, POST /api/work), `changes`, `work-changes` (reads),
 *    `request` the write's body (its `clientId` and content), `status` the HTTP status (0: no
 *    answer), `body` the answer (a change page compacted by `compactPage`), `error` why no answer;
 *  - harness events: `{ t, kind: 'fault', id, fault, server, start, end, losesLeader }` (a fault
 *    from `start` to `end`, ms; `losesLeader`: the old leader's folder is given up — a failover
 *    or a takeover — so an async leader's last shipping interval may be lost),
 *    `{ t, kind: 'kill', server, pid, signal }` (the schedule sent the signal),
 *    `{ t, kind: 'exit', server, pid, code, signal, stderr }`, and `{ t, kind: 'end' }` (the load
 *    stopped);
 *  - the bucket, as `parseBucket` reads it from its objects (manifest.json, segments/, chunks/;
 *    src/store/replica/format.ts), chain-checked here without the code under test.
 *
 * Rules (each violation is `{ rule, evidence }`):
 *  - `bucket-chain`: the bucket's records form one hash chain from seq 1 without gaps;
 *  - `sync-ack-lost`: in sync mode every acknowledged (2xx) write is in the bucket;
 *  - `ack-duplicated`: an acknowledged write is in the bucket at most once (by author and clientId);
 *  - `ack-mismatch`: an acknowledged write in the bucket is the record its answer named (same id,
 *    same content);
 *  - `async-loss-unbounded`: in async mode an acknowledged write missing from the bucket was
 *    sent to a leader from `asyncLossBeforeMs` before the start of a fault that gave that leader
 *    up (or before the store faults and pauses on that leader that ran into it back to back:
 *    `outageBefore`, the backlog an outage leaves) until `epochCheckMs + asyncLossAfterMs` after its end — the old leader acknowledges
 *    locally until it sees the new epoch (at most REPLICA_EPOCH_CHECK_MS after the promotion took
 *    it, or after a paused leader resumes); judged by when the write was sent; every missing write
 *    is reported in `asyncLosses` either way, with its answer's time relative to that fault;
 *  - `id-conflict`: no object id (msg_, wk_, tp_ …) and no feed position `(originId, seq)` names
 *    two different records in anything any client received — not even where one of the two is an
 *    acknowledged async write a failover lost: a writer that takes the epoch from another gives
 *    its records positions past a gap (src/domain/positions.ts), so the lost records' ids and
 *    positions are never given again (issue 50);
 *  - `epoch-two-writers`: the acknowledged writes committed in one writer epoch (its
 *    `replication.epoch` record up to the next) were acknowledged by one server only, the one
 *    that took the epoch (its `leaderUrl`, mapped to a server name by `serverOf`); replays of an
 *    earlier commit — an answer whose `created` precedes the request — are not counted;
 *  - `no-recovery`: after each fault ended, some write was acknowledged within `recoveryBoundMs`
 *    (faults that start within that bound of the previous one's end are judged together, after
 *    the last of them; a window past the end of the load is not judged);
 *  - `promote-bound`: `replication promote` answered (success or a refusal) within
 *    `promoteBoundMs` (events `{ kind: 'promote', server, status, ms, answer }`);
 *  - `end-state`: at the end (events `{ kind: 'final-status', server, role, state, lastError }`
 *    from each live server's `replication status`, after a quiet tail) exactly one server leads
 *    and no follower has stopped;
 *  - `crash`: no server process exited without the schedule having signalled it.
 */
import { createHash } from 'node:crypto';

/** Chained hash "before" the first record (src/store/record-format.ts GENESIS_HASH). */
const GENESIS_HASH = '0'.repeat(64);
const PAYLOAD_PREFIX = Buffer.from('{"payload":', 'latin1');
const ERASED_PREFIX = Buffer.from('{"erased":true', 'latin1');
const HASH_KEY = Buffer.from(',"hash":"', 'latin1');
const CLOSE_BRACE = Buffer.from('}', 'latin1');
/** Record types of the writes the suite sends, and where their (author, clientId) lie. */
const WRITE_TYPES = {
  'message.create': (p) => ({ op: 'message', id: p.id, authorId: p.authorId, clientId: p.clientId, identity: identityOf(p.id, p) }),
  'work.create': (p) => ({ op: 'work', id: p.item?.id, authorId: p.authorId, clientId: p.clientId, identity: identityOf(p.item?.id, p.item ?? {}) }),
};
const WRITE_OPS = new Set(['message', 'work']);

/**
 * Default bounds (ms), docs/operate/replication.md and docs/operate/fault-suite.md: an async leader may
 * lose what it acknowledged in its last shipping interval before it is given up (and, in a
 * takeover, until its next chunk PUT finds itself fenced); writes succeed again within the
 * ack timeout plus 5 s after a fault ends; a promotion answers within 10 s.
 */
export const DEFAULT_BOUNDS = Object.freeze({ asyncLossBeforeMs: 1000, asyncLossAfterMs: 1000, epochCheckMs: 1000, recoveryBoundMs: 6000, promoteBoundMs: 10_000 });


/**
 * How long, in ms before fault `f` (a failover or take-over of server `f.server`) started, that
 * server's store was failing or it was paused, back to back: the proxy faults and SIGSTOPs on it
 * that ended at most `gapMs` before the next one (or `f`) began. An async leader keeps serving
 * through them and ships the backlog only when the store answers again (docs/operate/replication.md),
 * so a failover right after loses what they left unshipped. 0 when none ran into `f`.
 * @param {Array<any>} events the harness's events
 * @param {any} f the fault that gave the leader up
 * @param {number} gapMs how far apart two faults may be and still count as one outage
 * @returns {number}
 */
export function outageBefore(events, f, gapMs) {
  const stalls = events
    .filter((e) => e.kind === 'fault' && e.server === f.server && e.start < f.start && (String(e.fault).startsWith('proxy:') || e.fault === 'sigstop'))
    .sort((x, y) => y.start - x.start);
  let from = f.start;
  for (const e of stalls) {
    if (e.end < from - gapMs) break;
    from = Math.min(from, e.start);
  }
  return f.start - from;
}

/**
 * What makes two records "the same" for the id rule: the fields a record keeps for life, by the
 * id's prefix (`msg_`: author, clientId, content, topic, created; `wk_`: author, title,
 * description, created; `tp_`: author, title, room, created; other ids: created).
 * @param {string} id an object id
 * @param {object} o the object as an answer, a feed event or a record payload shows it
 * @returns {string}
 */
export function identityOf(id, o) {
  const prefix = String(id).split('_')[0];
  if (prefix === 'msg') return JSON.stringify([o.authorId, o.clientId, o.content, o.topicId, o.created]);
  if (prefix === 'wk') return JSON.stringify([o.authorId, o.title, o.description, o.created]);
  if (prefix === 'tp') return JSON.stringify([o.authorId, o.title, o.roomId, o.created]);
  return JSON.stringify([o.created]);
}

/** The fields of an object a change page keeps for the checker. */
const KEPT_FIELDS = ['id', 'authorId', 'clientId', 'content', 'topicId', 'title', 'description', 'roomId', 'created', 'revision'];

/**
 * A change page (`forum-changes-v1` or `forum-work-changes-v1`) cut down to what the checker
 * needs: `{ cursor, events: [{ seq, kind, object: {id, authorId, …} }] }`. Other bodies are
 * returned as they are.
 * @param {unknown} body a parsed answer
 * @returns {unknown}
 */
export function compactPage(body) {
  if (body === null || typeof body !== 'object' || !Array.isArray(body.events)) return body;
  return {
    cursor: body.cursor,
    events: body.events.map((e) => {
      const o = e.message ?? e.topic ?? e.room ?? e.knowledge ?? e.workItem ?? {};
      return { seq: e.seq, kind: e.kind, object: Object.fromEntries(KEPT_FIELDS.filter((k) => k in o).map((k) => [k, o[k]])) };
    }),
  };
}

/** Splits JSONL text into values (blank lines skipped; a torn last line, as a killed writer leaves, too). */
export function parseJsonl(text) {
  const out = [];
  const lines = String(text).split('\n');
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    try {
      out.push(JSON.parse(line));
    } catch (err) {
      if (i < lines.length - 1) throw new Error(`line ${i + 1} is not JSON: ${err.message}`);
    }
  });
  return out;
}

/** The first seq of a `chunks/<16 digits>` or `segments/<16 digits>.jsonl` name, or null. */
function firstSeqOf(name) {
  const m = /^(?:chunks\/(\d{16})|segments\/(\d{16})\.jsonl)$/.exec(name);
  return m ? Number(m[1] ?? m[2]) : null;
}

/**
 * Proves a run of log lines from `seq` after `prevHash` (SHA-256 over the previous hash and the
 * record's canonical JSON: the line up to `,"hash"` closed with `}`), appending records to `out`.
 * A tombstone is taken at its stored hash; a line that is neither a record nor a tombstone (a
 * newer format's extra line) is skipped. Returns { seq (next), hash, problem }.
 */
function proveRun(lines, seq, prevHash, where, out) {
  let pos = 0;
  let hash = prevHash;
  while (pos < lines.length) {
    let nl = lines.indexOf(10, pos);
    if (nl === -1) nl = lines.length;
    const line = lines.subarray(pos, nl);
    pos = nl + 1;
    const isRecord = line.subarray(0, PAYLOAD_PREFIX.length).equals(PAYLOAD_PREFIX);
    const isTombstone = line.subarray(0, ERASED_PREFIX.length).equals(ERASED_PREFIX);
    if (!isRecord && !isTombstone) continue;
    const cut = line.lastIndexOf(HASH_KEY);
    if (cut === -1) return { seq, hash, problem: `${where}: record ${seq} has no hash field` };
    const stored = line.toString('latin1', cut + HASH_KEY.length, cut + HASH_KEY.length + 64);
    const text = Buffer.concat([line.subarray(0, cut), CLOSE_BRACE]);
    let record;
    try {
      record = JSON.parse(text.toString('utf8'));
    } catch {
      return { seq, hash, problem: `${where}: record ${seq} is not JSON` };
    }
    if (record.seq !== seq) return { seq, hash, problem: `${where}: expected seq ${seq}, found ${record.seq}` };
    if (isRecord) {
      const computed = createHash('sha256').update(hash, 'latin1').update(text).digest('hex');
      if (computed !== stored) return { seq, hash, problem: `${where}: record ${seq} does not prove (hash chain broken)` };
    }
    out.push({ seq, type: record.type, time: record.time, payload: record.payload ?? null, erased: isTombstone });
    hash = stored;
    seq++;
  }
  return { seq, hash, problem: null };
}

/**
 * Reads a replica bucket's objects into its records and writer epochs, checking the chain
 * without the code under test: the manifest's sealed segments in order, then the chunks after
 * the last of them (chunks a segment already covers — left by a compaction cut short — are
 * skipped), each linking to the record before it. Unknown header and manifest fields (a `sig`)
 * are ignored.
 * @param {{ key: string, body: Buffer }[]} objects the objects under the prefix, keys relative to it
 * @returns {{ originId: string | null, manifest: object | null, records: object[], epochs: { epoch: number, seq: number, leaderUrl: string, writer: string }[], problems: string[] }}
 */
export function parseBucket(objects) {
  const byKey = new Map(objects.map((o) => [o.key, o.body]));
  const problems = [];
  const records = [];
  let manifest = null;
  const mBody = byKey.get('manifest.json');
  if (mBody === undefined) problems.push('manifest.json is missing');
  else {
    try {
      manifest = JSON.parse(mBody.toString('utf8'));
    } catch {
      problems.push('manifest.json is not JSON');
    }
  }
  let seq = 1;
  let hash = GENESIS_HASH;
  let broken = false;
  const segments = [...(manifest?.segments ?? [])].sort((a, b) => a.firstSeq - b.firstSeq);
  for (const s of segments) {
    const name = `segments/${String(s.firstSeq).padStart(16, '0')}.jsonl`;
    const body = byKey.get(name);
    if (body === undefined) {
      problems.push(`${name}: listed in the manifest but missing`);
      broken = true;
      break;
    }
    if (s.firstSeq !== seq) {
      problems.push(`${name}: starts at ${s.firstSeq}, expected ${seq}`);
      broken = true;
      break;
    }
    const r = proveRun(body, seq, hash, name, records);
    ({ seq, hash } = r);
    if (r.problem !== null) {
      problems.push(r.problem);
      broken = true;
      break;
    }
  }
  const chunks = objects
    .filter((o) => o.key.startsWith('chunks/'))
    .map((o) => ({ key: o.key, firstSeq: firstSeqOf(o.key), body: o.body }))
    .filter((c) => c.firstSeq !== null)
    .sort((a, b) => a.firstSeq - b.firstSeq);
  for (const c of broken ? [] : chunks) {
    const nl = c.body.indexOf(10);
    let header;
    try {
      header = JSON.parse(c.body.toString('utf8', 0, nl === -1 ? c.body.length : nl));
    } catch {
      problems.push(`${c.key}: no JSON header line`);
      break;
    }
    if (header.lastSeq < seq) continue; // covered by a sealed segment, not yet deleted
    if (c.firstSeq !== seq || header.firstSeq !== c.firstSeq) {
      problems.push(`${c.key}: expected the chunk starting at ${seq} (header says ${header.firstSeq}..${header.lastSeq})`);
      break;
    }
    if (header.prevHash !== hash) {
      problems.push(`${c.key}: prevHash does not link to record ${seq - 1}`);
      break;
    }
    if (manifest !== null && header.originId !== manifest.originId) {
      problems.push(`${c.key}: originId ${header.originId} is not the manifest's ${manifest.originId}`);
      break;
    }
    const r = proveRun(c.body.subarray(nl + 1), seq, hash, c.key, records);
    ({ seq, hash } = r);
    if (r.problem !== null) {
      problems.push(r.problem);
      break;
    }
    if (seq - 1 !== header.lastSeq) {
      problems.push(`${c.key}: header says last seq ${header.lastSeq}, the lines end at ${seq - 1}`);
      break;
    }
  }
  const epochs = records
    .filter((r) => r.type === 'replication.epoch' && r.payload !== null)
    .map((r) => ({ epoch: r.payload.epoch, seq: r.seq, leaderUrl: r.payload.leaderUrl, writer: r.payload.writer }));
  return { originId: manifest?.originId ?? null, manifest, records, epochs, problems };
}

/** The server name a leader URL stands for: the first label of a `*.fault.test` host (harness.mjs sets FORUM_PUBLIC_URL so), else the URL. */
export function serverOfLeaderUrl(url) {
  try {
    const host = new URL(url).hostname;
    return host.endsWith('.fault.test') ? host.split('.')[0] : url;
  } catch {
    return String(url);
  }
}

const isAck = (e) => WRITE_OPS.has(e.op) && e.status >= 200 && e.status < 300 && e.body !== null && typeof e.body === 'object';
const writeKey = (authorId, clientId) => `${authorId}\u0000${clientId}`;
const brief = (e) => ({ client: e.client, server: e.server, op: e.op, start: e.start, end: e.end, status: e.status, clientId: e.request?.clientId });

/**
 * Checks a run (see the file comment for the inputs and rules).
 * @param {object} run
 * @param {'sync' | 'async'} run.mode the replication mode of the run
 * @param {object[]} run.entries every client's log entries
 * @param {object[]} run.events the harness's events
 * @param {ReturnType<typeof parseBucket>} run.bucket the final bucket
 * @param {Partial<typeof DEFAULT_BOUNDS>} [run.bounds]
 * @param {(url: string) => string} [run.serverOf] a leader URL → the server name clients logged
 * @returns {{ violations: { rule: string, evidence: object }[], asyncLosses: object[], counts: object }}
 */
export function checkHistory({ mode, entries, events, bucket, bounds = {}, serverOf = serverOfLeaderUrl }) {
  const b = { ...DEFAULT_BOUNDS, ...bounds };
  const violations = [];
  const violate = (rule, evidence) => violations.push({ rule, evidence });

  for (const p of bucket.problems) violate('bucket-chain', { problem: p });

  // The writes in the bucket, by (author, clientId).
  const inBucket = new Map();
  for (const r of bucket.records) {
    const pick = WRITE_TYPES[r.type];
    if (pick === undefined || r.payload === null) continue;
    const w = { ...pick(r.payload), seq: r.seq };
    const k = writeKey(w.authorId, w.clientId);
    if (!inBucket.has(k)) inBucket.set(k, []);
    inBucket.get(k).push(w);
  }
  const epochOfSeq = (seq) => {
    let found = null;
    for (const e of bucket.epochs) if (e.seq <= seq) found = e;
    return found;
  };

  // Acknowledged writes against the bucket.
  const acks = entries.filter(isAck);
  const acksOf = new Map();
  for (const a of acks) {
    const k = writeKey(a.body.authorId, a.request?.clientId);
    if (!acksOf.has(k)) acksOf.set(k, []);
    acksOf.get(k).push(a);
  }
  const firstAck = new Map([...acksOf].map(([k, list]) => [k, list[0]]));
  const losers = events.filter((e) => e.kind === 'fault' && e.losesLeader);
  const asyncLosses = [];
  const epochServers = new Map();
  for (const [k, a] of firstAck) {
    const found = inBucket.get(k) ?? [];
    if (found.length > 1) violate('ack-duplicated', { write: brief(a), seqs: found.map((w) => w.seq) });
    if (found.length === 0) {
      if (mode === 'sync') {
        violate('sync-ack-lost', { write: brief(a), id: a.body.id });
        continue;
      }
      const near = losers
        .filter((f) => f.server === a.server)
        .map((f) => ({ fault: f, relativeMs: a.end - f.start }))
        .sort((x, y) => Math.abs(x.relativeMs) - Math.abs(y.relativeMs))[0];
      const loss = { write: brief(a), id: a.body.id, fault: near?.fault.id ?? null, faultKind: near?.fault.fault ?? null, relativeMs: near?.relativeMs ?? null };
      asyncLosses.push(loss);
      // The old leader goes on acknowledging locally until it sees the new epoch: at most
      // epochCheckMs (src/constants.ts REPLICA_EPOCH_CHECK_MS) after the promotion took it, which
      // is before the fault's end (the promotion's answer; a paused leader resumes then).
      const sentMs = near === undefined ? null : a.start - near.fault.start;
      const lastMs = near === undefined ? 0 : near.fault.end - near.fault.start + b.epochCheckMs + b.asyncLossAfterMs;
      // What an outage of the store left unshipped goes with the leader too: the window opens at
      // the start of the store faults and pauses that ran into the failover back to back.
      const firstMs = near === undefined ? 0 : -b.asyncLossBeforeMs - outageBefore(events, near.fault, b.asyncLossBeforeMs);
      if (sentMs === null || sentMs < firstMs || sentMs > lastMs) violate('async-loss-unbounded', { ...loss, sentRelativeMs: sentMs, boundMs: lastMs, fromMs: firstMs });
      continue;
    }
    const rec = found[0];
    for (const ack of acksOf.get(k)) {
      if (ack.body.id !== rec.id || identityOf(ack.body.id, ack.body) !== rec.identity) {
        violate('ack-mismatch', { write: brief(ack), answered: { id: ack.body.id, identity: identityOf(ack.body.id, ack.body) }, inBucket: { id: rec.id, seq: rec.seq, identity: rec.identity } });
      }
      // A fresh commit (not the answer to a retry of an earlier commit) is attributed to the epoch holding its seq.
      const created = Date.parse(ack.body.created);
      if (!(created >= ack.start)) continue;
      const epoch = epochOfSeq(rec.seq);
      if (epoch === null) continue;
      if (!epochServers.has(epoch.epoch)) epochServers.set(epoch.epoch, { holder: serverOf(epoch.leaderUrl), ackers: new Map() });
      const { ackers } = epochServers.get(epoch.epoch);
      if (!ackers.has(ack.server)) ackers.set(ack.server, { ...brief(ack), seq: rec.seq });
    }
  }
  for (const [epoch, { holder, ackers }] of epochServers) {
    const servers = new Set([holder, ...ackers.keys()]);
    if (servers.size > 1) violate('epoch-two-writers', { epoch, holder, servers: [...servers], firstAcks: [...ackers.values()] });
  }

  // No id and no feed position names two different records.
  const names = new Map();
  const see = (key, identity, e) => {
    const prior = names.get(key);
    if (prior === undefined) names.set(key, { identity, e });
    else if (prior.identity !== identity && !prior.reported) {
      prior.reported = true;
      violate('id-conflict', { name: key, first: { identity: prior.identity, seenBy: brief(prior.e) }, then: { identity, seenBy: brief(e) } });
    }
  };
  for (const e of [...entries].sort((x, y) => x.end - y.end)) {
    if (!(e.status >= 200 && e.status < 300) || e.body === null || typeof e.body !== 'object') continue;
    if (WRITE_OPS.has(e.op) && typeof e.body.id === 'string') see(`id ${e.body.id}`, identityOf(e.body.id, e.body), e);
    if (Array.isArray(e.body.events)) {
      const origin = e.body.cursor?.originId ?? '?';
      for (const ev of e.body.events) {
        const o = ev.object ?? {};
        if (typeof o.id !== 'string') continue;
        const identity = identityOf(o.id, o);
        see(`id ${o.id}`, identity, e);
        see(`position ${origin}:${ev.seq} (${e.op})`, `${o.id}@${o.revision ?? ''} ${identity}`, e);
      }
    }
  }

  // Liveness: after each fault, writes succeed again within the bound. Faults that start within
  // the bound of the one before form one cluster, judged after its last fault ends.
  const faults = events.filter((e) => e.kind === 'fault').sort((x, y) => x.start - y.start);
  const endT = events.find((e) => e.kind === 'end')?.t ?? Math.max(0, ...entries.map((e) => e.end));
  const ackEnds = acks.map((a) => a.end).sort((x, y) => x - y);
  const clusters = [];
  for (const f of faults) {
    const last = clusters.at(-1);
    if (last !== undefined && f.start < last.end + b.recoveryBoundMs) {
      last.faults.push(f);
      last.end = Math.max(last.end, f.end);
    } else clusters.push({ faults: [f], end: f.end });
  }
  let recoveryChecked = 0;
  for (const c of clusters) {
    const until = c.end + b.recoveryBoundMs;
    if (until > endT) continue;
    recoveryChecked++;
    if (!ackEnds.some((t) => t >= c.end && t <= until)) {
      const next = ackEnds.find((t) => t >= c.end);
      violate('no-recovery', { faults: c.faults.map((f) => `${f.id} ${f.fault} on ${f.server}`), endedAt: c.end, boundMs: b.recoveryBoundMs, nextAckAfterMs: next === undefined ? null : next - c.end });
    }
  }

  // A promotion answers within its bound (a refusal that says why is an answer).
  const promotions = events.filter((e) => e.kind === 'promote');
  for (const p of promotions) {
    if (p.status === 0 || p.ms > b.promoteBoundMs) violate('promote-bound', { server: p.server, ms: p.ms, boundMs: b.promoteBoundMs, answer: p.answer });
  }

  // The forum ends with exactly one leader, and no follower stopped.
  const finals = events.filter((e) => e.kind === 'final-status');
  if (finals.length > 0) {
    const leading = finals.filter((f) => f.role === 'leader' && f.state === 'leading');
    if (leading.length !== 1) violate('end-state', { problem: `${leading.length} servers lead at the end`, servers: finals });
    for (const f of finals.filter((x) => x.role === 'follower' && x.state === 'stopped')) violate('end-state', { problem: `follower ${f.server} stopped`, status: f });
  }

  // No process exited unless the schedule signalled it.
  const killed = new Set(events.filter((e) => e.kind === 'kill').map((e) => `${e.server}/${e.pid}`));
  for (const x of events.filter((e) => e.kind === 'exit')) {
    if (!killed.has(`${x.server}/${x.pid}`)) violate('crash', { server: x.server, pid: x.pid, at: x.t, code: x.code, signal: x.signal, stderr: x.stderr });
  }

  // Counts.
  const writes = entries.filter((e) => WRITE_OPS.has(e.op));
  const perOp = {};
  for (const w of writes) {
    perOp[w.op] ??= { sent: 0, acked: 0, failed: 0, statuses: {} };
    const c = perOp[w.op];
    c.sent++;
    if (isAck(w)) c.acked++;
    else c.failed++;
    const s = w.status === 0 ? (w.error ?? 'no answer') : String(w.status);
    c.statuses[s] = (c.statuses[s] ?? 0) + 1;
  }
  const faultCounts = {};
  for (const f of faults) faultCounts[f.fault] = (faultCounts[f.fault] ?? 0) + 1;
  return {
    violations,
    asyncLosses,
    counts: {
      writes: perOp,
      distinctAcked: firstAck.size,
      reads: entries.filter((e) => !WRITE_OPS.has(e.op)).length,
      faults: faultCounts,
      promotions: promotions.map((p) => `${p.server}: ${p.ok ? 'leading' : 'not leading'} after ${p.ms} ms`),
      kills: events.filter((e) => e.kind === 'kill').length,
      exits: events.filter((e) => e.kind === 'exit').length,
      bucketRecords: bucket.records.length,
      epochs: bucket.epochs.length,
      asyncLosses: asyncLosses.length,
      recoveryChecked,
      violations: violations.length,
    },
  };
}
