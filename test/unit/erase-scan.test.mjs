/**
 * Issue 25: the byte scan for erasure records (store/erase.ts `scanEraseRecordPayloads`) that seeds
 * a whole replay meeting a tombstone before its erasure record (App.open), instead of a parsing
 * and hashing pass over every record.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { Log } from '../../dist/store/log.js';
import { listSegments } from '../../dist/store/segment.js';
import { scanEraseRecordPayloads } from '../../dist/store/erase.js';
import { tempDir } from '../helpers/server.mjs';

const MARK_IN_TEXT = ',"type":"moderation.erase","hash":"';

test('the erasure-record scan finds every moderation.erase payload in log order, across segments, and nothing that only mentions one', async (t) => {
  const dir = tempDir(t);
  // Small segments: every record after the first few bytes starts a new segment.
  const log = await Log.open(dir, () => undefined, { segmentBytesMax: 200 });
  const at = (i) => Date.UTC(2026, 0, 1, 0, 0, i);
  // Text that spells out an erasure line's ending is escaped in the record, so it never matches.
  log.append('message.create', { content: `looks like ${MARK_IN_TEXT}`, topicId: 'tp_1' }, at(1));
  log.append('message.create', { content: 'plain', topicId: 'tp_1' }, at(2));
  await log.sync();
  log.append('moderation.erase', { targets: [{ seq: 2, hash: log.records.storedHashOf(2) }], erased: [{ seq: 2, type: 'message.create', time: 'T', payloadJson: '{}' }], reason: 'first' }, at(3));
  await log.sync();
  log.append('moderation.erase', { targets: [], erased: [], reason: 'second' }, at(4));
  await log.sync();
  await log.close();
  const logDir = join(dir, 'log');
  assert.ok(listSegments(logDir).length >= 2, 'two segments');
  assert.deepEqual(scanEraseRecordPayloads(logDir).map((p) => p.reason), ['first', 'second']);

  // An unfinished last line (a torn write) is not a record: skipped.
  const last = listSegments(logDir).at(-1).name;
  appendFileSync(join(logDir, last), `{"payload":{"reason":"torn"},"seq":5,"time":"T"${MARK_IN_TEXT}${'0'.repeat(20)}`);
  assert.deepEqual(scanEraseRecordPayloads(logDir).map((p) => p.reason), ['first', 'second']);
});
