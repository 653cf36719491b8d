// Where a write's main-thread CPU goes (issue 39): a per-stage breakdown from a V8 CPU profile
// (`node --cpu-prof`) of the server taken while a write cell runs, scaled to the main thread's
// CPU time read from /proc/<pid>/task/<pid>/stat (utime + stime of the main thread only: the
// thread pool's fdatasync and the GC helper threads are not in it) and divided by the writes
// the cell completed.
//
// Each profile sample is one stack. A sample goes to the first stage of STAGES (in that order)
// one of whose frames it holds anywhere in its stack — so the SHA-256 under `authenticate` is
// "auth", the one under `chainHash` or `encodeRecordLine` (the record's one UTF-8 encoding and its hash) is "hash", and node's stream code under `sendReply` is
// "response" — and to "other" when none matches. GC and "(program)" (native code outside JS)
// are leaf nodes of their own. "(idle)" samples (the event loop waiting) are not CPU and are left
// out of the shares.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';

/** Clock ticks per second of /proc's utime and stime (USER_HZ; 100 on Linux). */
const CLOCK_TICKS_PER_SECOND = 100;

/**
 * Main-thread CPU time of process `pid` in µs (utime + stime of its main thread, whose tid is the
 * pid), or null when /proc cannot be read (not Linux, the process is gone). Resolution: 10 ms.
 */
export function mainThreadCpuUs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
    // Fields after the command (which may hold spaces) start after the last ')'; utime and stime
    // are fields 14 and 15 of the whole line, so 12 and 13 of the rest (state is the first).
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(rest[11]) + Number(rest[12])) * 1e6) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return null;
  }
}

/** Now on the clock V8's CPU profiles use (CLOCK_MONOTONIC), in µs. */
export function monotonicUs() {
  return Number(process.hrtime.bigint() / 1000n);
}

const file = (part) => (f) => f.url.includes(part);
const fn = (...names) => (f) => names.includes(f.functionName);

/**
 * The stages, in the order a sample's stack is matched against them (the first one with a
 * matching frame wins). `frames`: predicates on a call frame ({functionName, url}).
 */
export const STAGES = [
  { name: 'GC', leaf: fn('(garbage collector)') },
  { name: 'native, outside JS ((program))', leaf: fn('(program)') },
  { name: 'search indexing', frames: [file('/store/search/'), file('/domain/search-indexer.')] },
  { name: 'hash (SHA-256 chain)', frames: [fn('chainHash', 'chainHashBytes', 'encodeRecordLine')] },
  { name: 'auth (token lookup)', frames: [fn('authenticate', 'hashToken')] },
  { name: 'serialise (canonical JSON, line)', frames: [file('fast-json-stable-stringify'), fn('recordJson', 'encodeLine', 'stableStringify')] },
  { name: 'schema validation', frames: [file('/http/validate.'), file('/node_modules/ajv'), (f) => f.url === '' && /^validate\d*$/.test(f.functionName)] },
  { name: 'body read + JSON parse', frames: [file('/http/body.')] },
  { name: 'response', frames: [fn('sendReply', 'sendError'), file('node:_http_outgoing')] },
  { name: 'log write / flush bookkeeping', frames: [file('/store/')] },
  { name: 'domain decide + apply', frames: [file('/domain/'), file('/api/'), file('/app.')] },
  { name: 'HTTP parse + routing', frames: [file('/http/'), file('node:_http_'), file('node:net'), file('node:internal/streams')] },
];
const OTHER = 'other';
const IDLE = '(idle)';

/** The stage of one stack (call frames leaf first), or null for an idle sample. */
export function stageOf(stack) {
  const leaf = stack[0];
  if (leaf?.functionName === IDLE) return null;
  for (const stage of STAGES) {
    if (stage.leaf ? stage.leaf(leaf ?? {}) : stack.some((f) => stage.frames.some((p) => p(f)))) return stage.name;
  }
  return OTHER;
}

/**
 * Counts a V8 CPU profile's samples per stage, only those taken between `fromUs` and `toUs`
 * (monotonicUs clock; default: all). Output: { stage name → samples } without idle samples,
 * and `busy`, their total.
 */
export function stageSamples(profile, { fromUs = -Infinity, toUs = Infinity } = {}) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const stageOfNode = new Map();
  const nodeStage = (id) => {
    if (stageOfNode.has(id)) return stageOfNode.get(id);
    const stack = [];
    for (let at = id; at !== undefined; at = parent.get(at)) stack.push(byId.get(at).callFrame);
    const s = stageOf(stack);
    stageOfNode.set(id, s);
    return s;
  };
  const counts = {};
  let busy = 0;
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    if (t < fromUs || t > toUs) continue;
    const s = nodeStage(profile.samples[i]);
    if (s === null) continue;
    counts[s] = (counts[s] ?? 0) + 1;
    busy++;
  }
  return { counts, busy };
}

/** Reads the one .cpuprofile file `dir` holds (the server's, written when it exits). */
export function readProfile(dir) {
  const name = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (name === undefined) throw new Error(`no .cpuprofile in ${dir} (did the server exit cleanly?)`);
  return JSON.parse(readFileSync(path.join(dir, name), 'utf8'));
}

/**
 * Per-stage µs of main-thread CPU per write: each stage's share of the busy samples times the
 * cell's main-thread CPU µs, divided by `writes`. Output: rows {stage, usPerWrite, share} in
 * STAGES order then other, and totalUsPerWrite.
 */
export function perWrite({ counts, busy }, cpuUs, writes) {
  const total = cpuUs / writes;
  const rows = [...STAGES.map((s) => s.name), OTHER].map((stage) => {
    const share = busy > 0 ? (counts[stage] ?? 0) / busy : 0;
    return { stage, share, usPerWrite: share * total };
  });
  return { rows, totalUsPerWrite: total };
}

/**
 * Markdown lines of the breakdown: one column per server (`results`: [{kind, rows,
 * totalUsPerWrite, writes, rps, samples}], or {kind, failed}).
 */
export function renderStages(results, { connections, seconds, targetUs }) {
  const ok = results.filter((r) => !r.failed);
  const out = ['', `## Main-thread CPU per write, by stage (write at ${connections} connections, ${seconds} s, under --cpu-prof)`, ''];
  for (const r of results.filter((x) => x.failed)) out.push(`${r.kind}: not measured (${r.failed})`, '');
  if (ok.length === 0) return out;
  out.push(`| stage | ${ok.map((r) => `${r.kind} µs/write (share)`).join(' | ')} |`, `|---|${ok.map(() => '---:|').join('')}`);
  ok[0].rows.forEach((row, i) => {
    out.push(`| ${row.stage} | ${ok.map((r) => `${r.rows[i].usPerWrite.toFixed(1)} (${(r.rows[i].share * 100).toFixed(1)}%)`).join(' | ')} |`);
  });
  out.push(`| **total main-thread CPU per write** | ${ok.map((r) => `**${r.totalUsPerWrite.toFixed(1)}**`).join(' | ')} |`);
  out.push(`| writes in the cell (req/s, profiled) | ${ok.map((r) => `${r.writes} (${Math.round(r.rps)})`).join(' | ')} |`);
  out.push(`| busy samples | ${ok.map((r) => r.samples).join(' | ')} |`);
  const ours = ok.find((r) => r.kind === 'ours');
  if (ours) out.push('', `target (issue 39): ours ≤ ${targetUs} µs of main-thread CPU per write: ${ours.totalUsPerWrite <= targetUs ? 'met' : 'MISSED'}. The profiler's own cost is in these figures (about the same for every server).`);
  return out;
}
