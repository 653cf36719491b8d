/**
 * The record line format (`agent-forum-log-v1`): the one module that knows how a log line is
 * built, split, hashed and proven. log.ts (append, replay), replay-worker.ts (checking segments
 * on worker threads), records.ts (read-back) and erase.ts (tombstones) all go through it.
 *
 * A record line:
 *
 *     {"payload":{...},"seq":7,"time":"2026-01-01T00:00:00.000Z","type":"message.create","hash":"<64 hex>"}\n
 *
 * Everything before `,"hash"`, closed with `}`, is the record's canonical JSON (sorted keys, no
 * whitespace; fast-json-stable-stringify); call the line up to `,"hash"` its "record text".
 * `hash` is SHA-256 over the previous record's hash (hex; 64 zeros for the first record)
 * followed by the canonical JSON.
 *
 * A tombstone line (issue 25, erasure; the erasure contract) replaces an erased record's line
 * with one of the same byte length, so every record location stays valid:
 *
 *     {"erased":true,"seq":7,"time":"T","type":"message.create"<N spaces>,"hash":"<H>"}\n
 *
 * `H` is the record's original chained hash, so the chain after it is unchanged. A tombstone
 * cannot be proven by hashing (its text is gone); it is valid exactly when a later
 * `moderation.erase` record names `{seq, hash: H}` (the "vouched" map).
 */
import { hash } from 'node:crypto';
import { LogCorruptError } from './errors.js';

/** The first bytes of every record line. */
export const PAYLOAD_PREFIX = '{"payload":';
/** The first bytes of every tombstone line. */
export const ERASED_PREFIX = '{"erased":true';
/** The hash field's key, which follows the record text on its line. */
export const HASH_PREFIX = ',"hash":"';
/** Length of a chained hash in hex. */
export const HASH_HEX_LENGTH = 64;
/** `,"hash":"` + 64 hex + `"}` — the fixed-length suffix of every line before its newline. */
export const HASH_SUFFIX_LENGTH = HASH_PREFIX.length + HASH_HEX_LENGTH + 2;
/** The chained hash "before" the first record. */
export const GENESIS_HASH = '0'.repeat(HASH_HEX_LENGTH);
/** The record type whose payload's `targets` vouch for tombstones (the erasure contract). */
export const ERASE_RECORD_TYPE = 'moderation.erase';
/** The record a replication leader appends when it takes the writer epoch (issue 35; store/replica/leader.ts). */
export const REPLICATION_EPOCH_TYPE = 'replication.epoch';

/** One record of the log, as replayed and as appended. */
export interface LogRecord<P = unknown> {
  /**
   * Log seq, from 1, without gaps. The topic export, proofs and receipts use it; feed cursors and
   * ids use the record's position, which equals it until a change of writer (domain/positions.ts).
   */
  seq: number;
  /** ISO 8601 UTC time the record was appended. */
  time: string;
  /** Record type, `<area>.<verb>` (e.g. `message.create`). */
  type: string;
  payload: P;
  /** True for an erased record (its line is a tombstone): `payload` is null then. */
  erased?: boolean;
}

/** A record as the index needs it back: its payload's canonical JSON, its time (ISO 8601) and type. */
export interface StoredRecord {
  payloadJson: string;
  time: string;
  type: string;
  /** True for an erased record: `payloadJson` is `'null'` then. */
  erased?: boolean;
}

/** One target of a `moderation.erase` record: a record's seq and its original chained hash. */
export interface EraseTarget {
  seq: number;
  hash: string;
}

/**
 * The canonical JSON of a record whose payload is already canonical: sorted keys put `payload`
 * first and `seq`, `time`, `type` last, so the record is assembled around the payload's text.
 * Equal to stableStringify(record); `type` and `time` are ASCII tokens.
 */
export function recordJson(payloadJson: string, seq: number, time: string, type: string): string {
  return `${PAYLOAD_PREFIX}${payloadJson},"seq":${seq},"time":"${time}","type":"${type}"}`;
}

/** Computes the chained hash of a record body (canonical JSON) after `prevHash`. */
export function chainHash(prevHash: string, body: string): string {
  return hash('sha256', prevHash + body);
}

/**
 * Reusable scratch buffer for hashing `prevHash + body` during replay without building strings:
 * the record's bytes are copied next to the previous hash and hashed in one call.
 */
let scratch = Buffer.allocUnsafe(64 * 1024);

/** chainHash over the record text `buf[start, end)` (closed with `}`), without building a string. */
export function chainHashBytes(prevHash: string, buf: Buffer, start: number, end: number): string {
  const n = HASH_HEX_LENGTH + (end - start) + 1;
  if (scratch.length < n) scratch = Buffer.allocUnsafe(Math.max(n, scratch.length * 2));
  scratch.write(prevHash, 0, HASH_HEX_LENGTH, 'latin1');
  buf.copy(scratch, HASH_HEX_LENGTH, start, end);
  scratch[n - 1] = 0x7d; // '}' closes the body where the hash field was cut off
  return hash('sha256', scratch.subarray(0, n));
}

/**
 * Encodes a record for the log in one UTF-8 pass (issue 39): `body` (the record's canonical
 * JSON) is written once, next to `prevHash`, into the scratch buffer; its chained hash is taken
 * over those bytes (the same value as `chainHash(prevHash, body)`), and the line (the record text, `,"hash":"<hash>"}`
 * and a newline) is assembled from them. Output: the line's bytes and the chained hash.
 */
export function encodeRecordLine(prevHash: string, body: string): { line: Buffer; hash: string } {
  // A UTF-16 code unit takes at most 3 bytes in UTF-8 (a surrogate pair: 4 bytes for 2 units).
  const max = HASH_HEX_LENGTH + body.length * 3;
  if (scratch.length < max) scratch = Buffer.allocUnsafe(Math.max(max, scratch.length * 2));
  scratch.write(prevHash, 0, HASH_HEX_LENGTH, 'latin1');
  const bodyBytes = scratch.write(body, HASH_HEX_LENGTH, 'utf8');
  const chained = hash('sha256', scratch.subarray(0, HASH_HEX_LENGTH + bodyBytes));
  const textBytes = bodyBytes - 1; // the record text: the body without its closing '}'
  const line = Buffer.allocUnsafe(textBytes + HASH_SUFFIX_LENGTH + 1);
  scratch.copy(line, 0, HASH_HEX_LENGTH, HASH_HEX_LENGTH + textBytes);
  line.write(HASH_PREFIX + chained + '"}\n', textBytes, 'latin1');
  return { line, hash: chained };
}

/**
 * The record fields after the payload, as the canonical form writes them (ASCII only): sorted
 * keys put `seq`, `time` and `type` last, right before the hash field:
 * `,"seq":<digits>,"time":"<[0-9T:.Z+-]>","type":"<[a-z0-9_.-]>"`. Read backwards from the
 * hash field, byte by byte, with these keys and bounds.
 */
const SEQ_KEY = Buffer.from(',"seq":', 'latin1');
const TIME_KEY = Buffer.from(',"time":"', 'latin1');
const TYPE_KEY = Buffer.from('","type":"', 'latin1');
const PAYLOAD_PREFIX_BYTES = Buffer.from(PAYLOAD_PREFIX, 'latin1');
const ERASED_PREFIX_BYTES = Buffer.from(ERASED_PREFIX, 'latin1');
const HASH_PREFIX_BYTES = Buffer.from(HASH_PREFIX, 'latin1');
const SEQ_DIGITS_MAX = 16;
const TIME_BYTES_MAX = 40;
const TYPE_BYTES_MAX = 60;

/** Whether `buf` holds the bytes of `expected` at offset `at`. */
export function bytesAt(buf: Buffer, at: number, expected: Buffer): boolean {
  if (at < 0 || at + expected.length > buf.length) return false;
  for (let i = 0; i < expected.length; i++) if (buf[at + i] !== expected[i]) return false;
  return true;
}

/** Whether the line at `buf[pos..]` is a tombstone (starts with `{"erased":true`). */
export function isTombstoneAt(buf: Buffer, pos: number): boolean {
  return bytesAt(buf, pos, ERASED_PREFIX_BYTES);
}

/** Whether `buf[pos..]` starts like a record line (`{"payload":`), or is a proper prefix of that. */
export function startsLikeRecord(buf: Buffer, pos: number): boolean {
  const compared = Math.min(buf.length - pos, PAYLOAD_PREFIX_BYTES.length);
  return buf.compare(PAYLOAD_PREFIX_BYTES, 0, compared, pos, pos + compared) === 0;
}

function isTypeByte(b: number): boolean {
  return (b >= 0x61 && b <= 0x7a) || (b >= 0x30 && b <= 0x39) || b === 0x5f || b === 0x2e || b === 0x2d;
}

function isTimeByte(b: number): boolean {
  return (b >= 0x30 && b <= 0x39) || b === 0x54 || b === 0x3a || b === 0x2e || b === 0x5a || b === 0x2b || b === 0x2d;
}

/** Start of the run of bytes before `end` (at most `max`, not before `floor`) that pass `accept`. */
function runStart(buf: Buffer, floor: number, end: number, max: number, accept: (b: number) => boolean): number {
  let i = end;
  while (i > floor && end - i < max && accept(buf[i - 1]!)) i--;
  return i;
}

/**
 * An ASCII token decoded from a segment, reused while consecutive records repeat it: records of
 * one group commit share their time, and runs of records share their type.
 */
class TokenCache {
  private text = '';
  private bytes = Buffer.alloc(0);

  /** The token `buf[start, end)` as a string (latin1). */
  get(buf: Buffer, start: number, end: number): string {
    const known = this.bytes;
    if (end - start === known.length) {
      let i = 0;
      while (i < known.length && buf[start + i] === known[i]) i++;
      if (i === known.length) return this.text;
    }
    this.text = buf.toString('latin1', start, end);
    this.bytes = Buffer.from(buf.subarray(start, end));
    return this.text;
  }
}
const times = new TokenCache();
const types = new TokenCache();

/** The fields of a line found by `scanLine`: byte positions within the buffer. */
export interface LineFields {
  /** True for a tombstone. */
  erased: boolean;
  /** Where the record text ends: the `,` of `,"hash"`. */
  cut: number;
  /** Payload JSON `[payloadStart, payloadEnd)`; empty for a tombstone. */
  payloadStart: number;
  payloadEnd: number;
  /** End of the ASCII fields (after `"type":"X"`); for a tombstone, padding follows up to `cut`. */
  fieldsEnd: number;
  seq: number;
  timeStart: number;
  timeEnd: number;
  typeStart: number;
  typeEnd: number;
}

/**
 * Finds the fields of the line `buf[pos, end)` (without its newline), checking its framing only
 * (not its hash). Output: the fields, or null when the bytes are not framed as a record line or a
 * tombstone line.
 */
export function scanLine(buf: Buffer, pos: number, end: number): LineFields | null {
  const cut = end - HASH_SUFFIX_LENGTH;
  if (cut < pos || !bytesAt(buf, cut, HASH_PREFIX_BYTES) || buf[end - 2] !== 0x22 || buf[end - 1] !== 0x7d) return null;
  let erased = false;
  let floor: number;
  if (bytesAt(buf, pos, PAYLOAD_PREFIX_BYTES)) floor = pos + PAYLOAD_PREFIX_BYTES.length;
  else if (bytesAt(buf, pos, ERASED_PREFIX_BYTES)) {
    erased = true;
    floor = pos + ERASED_PREFIX_BYTES.length;
  } else return null;
  if (cut < floor) return null;
  let fieldsEnd = cut;
  if (erased) while (fieldsEnd > floor && buf[fieldsEnd - 1] === 0x20) fieldsEnd--;
  const typeEnd = fieldsEnd - 1;
  const typeStart = runStart(buf, floor, typeEnd, TYPE_BYTES_MAX, isTypeByte);
  const timeEnd = typeStart - TYPE_KEY.length;
  if (buf[typeEnd] !== 0x22 || typeStart === typeEnd || !bytesAt(buf, timeEnd, TYPE_KEY)) return null;
  const timeStart = runStart(buf, floor, timeEnd, TIME_BYTES_MAX, isTimeByte);
  const digitsEnd = timeStart - TIME_KEY.length;
  if (timeStart === timeEnd || !bytesAt(buf, digitsEnd, TIME_KEY)) return null;
  const digitsStart = runStart(buf, floor, digitsEnd, SEQ_DIGITS_MAX, (b) => b >= 0x30 && b <= 0x39);
  const payloadEnd = digitsStart - SEQ_KEY.length;
  if (digitsStart === digitsEnd || payloadEnd < floor || !bytesAt(buf, payloadEnd, SEQ_KEY)) return null;
  // A tombstone has nothing between `{"erased":true` and `,"seq":`.
  if (erased && payloadEnd !== floor) return null;
  let seq = 0;
  for (let i = digitsStart; i < digitsEnd; i++) seq = seq * 10 + (buf[i]! - 0x30);
  return { erased, cut, payloadStart: floor, payloadEnd, fieldsEnd, seq, timeStart, timeEnd, typeStart, typeEnd };
}

/** The stored chained hash of a line whose record text ends at `cut` (64 hex, latin1). */
export function storedHashAt(buf: Buffer, cut: number): string {
  return buf.toString('latin1', cut + HASH_PREFIX.length, cut + HASH_PREFIX.length + HASH_HEX_LENGTH);
}

/** A line parsed at replay: the record, its payload JSON as stored, its chained hash. */
export interface ParsedLine {
  record: LogRecord;
  payloadJson: string;
  /** The chained hash (computed and compared for a record; the stored one for a tombstone). */
  hash: string;
  /** True for a tombstone, whose hash is only proven by a later vouching erase record. */
  erased: boolean;
}

/**
 * Checks the line `buf[pos, nl)` at replay without building its record: framing, the hash (for a
 * record line, computed over the line's bytes up to the hash field, closed with `}` — the
 * record's canonical JSON — without building that string, and compared with the stored hex in
 * place), the seq, and for a tombstone that its stored hash is hex (a tombstone is not hashed:
 * the caller must see it vouched). Output: the line's fields and its chained hash. Throws
 * LogCorruptError (file, pos) for bad framing, a hash mismatch or an unexpected seq, in that order.
 */
export function checkLine(buf: Buffer, pos: number, nl: number, prevHash: string, expectedSeq: number, file: string): { fields: LineFields; hash: string } {
  const f = scanLine(buf, pos, nl);
  if (f === null) {
    throw new LogCorruptError(file, pos, `record ${expectedSeq} is not framed as {"payload":...,"seq":...,"time":...,"type":...,"hash":"<64 hex>"}`);
  }
  let chained: string;
  if (f.erased) chained = storedHashAt(buf, f.cut);
  else {
    chained = chainHashBytes(prevHash, buf, pos, f.cut);
    const storedAt = f.cut + HASH_PREFIX.length;
    for (let i = 0; i < HASH_HEX_LENGTH; i++) {
      if (chained.charCodeAt(i) !== buf[storedAt + i]) {
        throw new LogCorruptError(file, pos, `record ${expectedSeq} fails its hash check (damaged bytes or broken chain)`);
      }
    }
  }
  if (f.seq !== expectedSeq) throw new LogCorruptError(file, pos, `record has seq ${f.seq} but ${expectedSeq} was expected`);
  if (f.erased) {
    for (let i = 0; i < HASH_HEX_LENGTH; i++) if (!isHexByte(buf[f.cut + HASH_PREFIX.length + i]!)) throw new LogCorruptError(file, pos, `tombstone ${expectedSeq} has no valid hash`);
  }
  return { fields: f, hash: chained };
}

/**
 * The record of a line checked by `checkLine` (its fields `f`, the line at `buf[pos..]` of
 * `file`), and its payload JSON as stored: only the payload's bytes are decoded into a string
 * (the one the index keeps); seq, time and type come from the ASCII fields. A tombstone gives
 * `erased: true`, payload null and payload JSON `'null'`.
 */
export function lineRecord(buf: Buffer, pos: number, f: LineFields, file: string): { record: LogRecord; payloadJson: string } {
  if (f.erased) {
    const record: LogRecord = { seq: f.seq, time: times.get(buf, f.timeStart, f.timeEnd), type: types.get(buf, f.typeStart, f.typeEnd), payload: null, erased: true };
    return { record, payloadJson: 'null' };
  }
  const payloadJson = buf.toString('utf8', f.payloadStart, f.payloadEnd);
  return { record: new ReplayedRecord(f.seq, times.get(buf, f.timeStart, f.timeEnd), types.get(buf, f.typeStart, f.typeEnd), payloadJson, file, pos), payloadJson };
}

/**
 * Checks and parses the line `buf[pos, nl)` at replay (`checkLine`, then `lineRecord`).
 * `strict` also checks canonical form (verify). Throws LogCorruptError (file, pos) for bad
 * framing, a hash mismatch, an unexpected seq, and (strict) a payload that is not valid JSON or
 * a record not in canonical form.
 */
export function parseLine(
  buf: Buffer,
  pos: number,
  nl: number,
  prevHash: string,
  expectedSeq: number,
  file: string,
  strict: boolean,
  canonical: (value: unknown) => string,
): ParsedLine {
  const { fields: f, hash: chained } = checkLine(buf, pos, nl, prevHash, expectedSeq, file);
  const { record, payloadJson } = lineRecord(buf, pos, f, file);
  if (f.erased) return { record, payloadJson, hash: chained, erased: true };
  if (strict) {
    void record.payload; // parses: throws LogCorruptError for JSON that is not valid
    if (canonical((record as ReplayedRecord).toJSON()) !== `${PAYLOAD_PREFIX}${payloadJson}${buf.toString('latin1', f.payloadEnd, f.cut)}}`) {
      throw new LogCorruptError(file, pos, `record ${expectedSeq} is not in canonical JSON form`);
    }
  }
  return { record, payloadJson, hash: chained, erased: false };
}

function isHexByte(b: number): boolean {
  return (b >= 0x30 && b <= 0x39) || (b >= 0x61 && b <= 0x66);
}

/**
 * A record read back from a segment. Its payload is parsed from `payloadJson` on first access:
 * an area that reads its record from the canonical JSON (messages, most of a large log) costs no
 * JSON.parse at startup. The bytes are already proven intact by the hash chain; an invalid
 * payload throws LogCorruptError (file, byte offset) when read, and `verify` (strict) reads all.
 */
class ReplayedRecord implements LogRecord {
  private parsed: unknown = UNPARSED;

  constructor(
    readonly seq: number,
    readonly time: string,
    readonly type: string,
    private readonly payloadJson: string,
    private readonly file: string,
    private readonly offset: number,
  ) {}

  get payload(): unknown {
    if (this.parsed === UNPARSED) {
      try {
        this.parsed = JSON.parse(this.payloadJson);
      } catch {
        throw new LogCorruptError(this.file, this.offset, `record ${this.seq} is not valid JSON`);
      }
    }
    return this.parsed;
  }

  /** The plain record `{payload, seq, time, type}` (what stableStringify and JSON.stringify see). */
  toJSON(): LogRecord {
    return { payload: this.payload, seq: this.seq, time: this.time, type: this.type };
  }
}
const UNPARSED: unique symbol = Symbol('unparsed');

/**
 * The targets named by a `moderation.erase` record's payload (`{targets: [{seq, hash}, ...]}`),
 * keeping only well-formed ones (a positive integer seq and 64 lower-case hex). Output: [] for
 * any other payload.
 */
export function eraseTargetsOf(payload: unknown): EraseTarget[] {
  const targets = (payload as { targets?: unknown } | null)?.targets;
  if (!Array.isArray(targets)) return [];
  const out: EraseTarget[] = [];
  for (const t of targets as unknown[]) {
    const { seq, hash: h } = (t ?? {}) as { seq?: unknown; hash?: unknown };
    if (Number.isSafeInteger(seq) && (seq as number) > 0 && typeof h === 'string' && /^[0-9a-f]{64}$/.test(h)) out.push({ seq: seq as number, hash: h });
  }
  return out;
}

/**
 * The tombstone line replacing the record line `line` (with its newline) of record `seq` whose
 * stored hash is `chained`: the same byte length, `{"erased":true,"seq":…,"time":…,"type":…`,
 * space padding, and the original hash field. Throws Error when `line` is not record `seq`'s
 * line framed as a record, or is too short to hold the tombstone.
 */
export function tombstoneLine(line: Buffer, seq: number): Buffer {
  const nl = line.length - 1;
  const f = line[nl] === 0x0a ? scanLine(line, 0, nl) : null;
  if (f === null || f.seq !== seq) throw new Error(`record ${seq}: the line to erase is not framed as that record`);
  const head = `${ERASED_PREFIX},"seq":${seq},"time":"${line.toString('latin1', f.timeStart, f.timeEnd)}","type":"${line.toString('latin1', f.typeStart, f.typeEnd)}"`;
  const padding = f.cut - Buffer.byteLength(head, 'latin1');
  if (padding < 0) throw new Error(`record ${seq} is too short to be replaced by a tombstone of the same length`);
  const out = Buffer.alloc(line.length, 0x20);
  out.write(head, 0, 'latin1');
  line.copy(out, f.cut, f.cut);
  return out;
}

/**
 * A line read back for serving, proven: the record (or tombstone) and its stored hash.
 * `damage` is set instead when the line is not proven (bad framing, wrong seq, hash mismatch,
 * a tombstone nobody vouched for).
 */
export type ProvenLine = { record: StoredRecord; hash: string; damage: null } | { record: null; hash: null; damage: string };

/**
 * Proves and splits the line of record `seq` held in `buf[at, at + textLength + HASH_SUFFIX_LENGTH + 1)`
 * (record text, hash field, newline) after `prevHash` (the stored hash of record seq − 1, or
 * GENESIS_HASH). A record line is proven when sha256(prevHash + canonical JSON) equals its stored
 * hash; a tombstone when `vouched` (the hash a later erase record names for `seq`, if any) equals
 * its stored hash. `buf[at - 64, at)` must be free scratch space: the previous hash is written
 * there so the hash input is hashed in place, and `buf[at + textLength]` is overwritten.
 */
export function proveLine(buf: Buffer, at: number, textLength: number, seq: number, prevHash: string, vouched: string | undefined): ProvenLine {
  const cut = at + textLength;
  const nl = cut + HASH_SUFFIX_LENGTH;
  if (buf[nl] !== 0x0a) return { record: null, hash: null, damage: 'its line does not end where the index located it' };
  const f = scanLine(buf, at, nl);
  if (f === null || f.cut !== cut) return { record: null, hash: null, damage: 'its line is not framed as a record' };
  if (f.seq !== seq) return { record: null, hash: null, damage: `its line holds seq ${f.seq}` };
  const stored = storedHashAt(buf, cut);
  const time = buf.toString('latin1', f.timeStart, f.timeEnd);
  const type = buf.toString('latin1', f.typeStart, f.typeEnd);
  if (f.erased) {
    if (vouched !== stored) return { record: null, hash: null, damage: 'it is a tombstone no erase record vouches for' };
    return { record: { payloadJson: 'null', time, type, erased: true }, hash: stored, damage: null };
  }
  const payloadJson = buf.toString('utf8', f.payloadStart, f.payloadEnd);
  buf.write(prevHash, at - HASH_HEX_LENGTH, HASH_HEX_LENGTH, 'latin1');
  buf[cut] = 0x7d;
  const computed = hash('sha256', buf.subarray(at - HASH_HEX_LENGTH, cut + 1));
  if (computed !== stored) return { record: null, hash: null, damage: 'it fails its hash check (damaged bytes or broken chain)' };
  return { record: { payloadJson, time, type }, hash: stored, damage: null };
}

/**
 * The stored hash at the end of a line whose last bytes (before the newline) are `buf[0, n)`
 * ending in `"}`: the 64 hex before them, or null when they are not a hash field.
 */
export function storedHashOfTail(buf: Buffer, n: number): string | null {
  const cut = n - HASH_SUFFIX_LENGTH;
  if (cut < 0 || !bytesAt(buf, cut, HASH_PREFIX_BYTES) || buf[n - 2] !== 0x22 || buf[n - 1] !== 0x7d) return null;
  for (let i = 0; i < HASH_HEX_LENGTH; i++) if (!isHexByte(buf[cut + HASH_PREFIX.length + i]!)) return null;
  return storedHashAt(buf, cut);
}

const SEQ_KEY_TEXT = ',"seq":';
const TIME_KEY_TEXT = ',"time":"';
const TYPE_KEY_TEXT = '","type":"';

/**
 * Splits a record text `{"payload":<json>,"seq":N,"time":"T","type":"X"` (the line up to its hash
 * field) into payload JSON, time and type, checking that it is record `seq`. The keys after the payload
 * are found from the end: the payload cannot contain them unescaped after its last byte. Framing
 * only: it proves nothing (see proveLine).
 * Throws Error when the text is not that record (a segment changed under the server).
 */
export function splitRecordText(text: string, seq: number): StoredRecord {
  const typeAt = text.lastIndexOf(TYPE_KEY_TEXT);
  const timeAt = typeAt === -1 ? -1 : text.lastIndexOf(TIME_KEY_TEXT, typeAt);
  const seqAt = timeAt === -1 ? -1 : text.lastIndexOf(SEQ_KEY_TEXT, timeAt);
  if (seqAt === -1 || !text.startsWith(PAYLOAD_PREFIX) || text.slice(seqAt + SEQ_KEY_TEXT.length, timeAt) !== String(seq)) {
    throw new Error(`record ${seq} is not where the index located it (was a segment file changed while the server ran?)`);
  }
  return {
    payloadJson: text.slice(PAYLOAD_PREFIX.length, seqAt),
    time: text.slice(timeAt + TIME_KEY_TEXT.length, typeAt),
    type: text.slice(typeAt + TYPE_KEY_TEXT.length, text.length - 1),
  };
}
