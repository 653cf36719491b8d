import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { RecordLocations } from '../../dist/store/record-locations.js';

test('every located record is found in the segment whose seq range holds it', () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 1, max: 20 }), { minLength: 1, maxLength: 40 }), (segmentSizes) => {
      const locations = new RecordLocations();
      const model = [];
      let seq = 1;
      for (const size of segmentSizes) {
        const first = seq;
        for (let i = 0; i < size; i++, seq++) {
          const loc = { segmentFirstSeq: first, offset: i * 100, length: 50 + i };
          locations.add(seq, loc.segmentFirstSeq, loc.offset, loc.length);
          model.push(loc);
        }
      }
      assert.equal(locations.count, model.length);
      model.forEach((loc, i) => assert.deepEqual(locations.locate(i + 1), loc));
      assert.equal(locations.locate(0), undefined);
      assert.equal(locations.locate(model.length + 1), undefined);
      const restored = new RecordLocations();
      restored.restore(locations.pack());
      model.forEach((loc, i) => assert.deepEqual(restored.locate(i + 1), loc));
    }),
    { numRuns: 100 },
  );
});

test('a record located out of order or beyond 4 GiB is refused', () => {
  const locations = new RecordLocations();
  assert.throws(() => locations.add(2, 1, 0, 10), /out of order/);
  assert.throws(() => locations.add(1, 1, 2 ** 32, 10), /beyond 4 GiB/);
});

test('record locations restore only into an empty table, with the vouched map', () => {
  const locations = new RecordLocations();
  locations.add(1, 1, 0, 10);
  locations.vouched.set(1, 'a'.repeat(64));
  const packed = locations.pack();
  assert.throws(() => locations.restore(packed), /empty table/);
  const restored = new RecordLocations();
  restored.restore(packed);
  assert.equal(restored.vouched.get(1), 'a'.repeat(64));
  assert.throws(() => new RecordLocations().restore({ ...packed, lengths: new Uint32Array(0) }), /damaged record locations/);
});
