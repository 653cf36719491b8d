import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { lowerBound, upperBound } from '../../dist/containers/binary-search.js';
import { U32List } from '../../dist/containers/u32-list.js';
import { RowHashTable } from '../../dist/containers/row-hash-table.js';

const sortedInts = fc.array(fc.integer({ min: -50, max: 50 }), { maxLength: 200 }).map((a) => a.sort((x, y) => x - y));

test('lowerBound is the first index whose value is not less than the one sought', () => {
  fc.assert(
    fc.property(sortedInts, fc.integer({ min: -60, max: 60 }), (a, v) => {
      const expected = a.findIndex((x) => x >= v);
      assert.equal(lowerBound(a.length, (i) => a[i], v), expected === -1 ? a.length : expected);
    }),
    { numRuns: 500 },
  );
});

test('upperBound is the first index whose value is greater than the one sought', () => {
  fc.assert(
    fc.property(sortedInts, fc.integer({ min: -60, max: 60 }), (a, v) => {
      const expected = a.findIndex((x) => x > v);
      assert.equal(upperBound(a.length, (i) => a[i], v), expected === -1 ? a.length : expected);
    }),
    { numRuns: 500 },
  );
});

test('a binary search reads only inside the sequence and at most about log2(length) + 1 values', () => {
  fc.assert(
    fc.property(sortedInts, fc.integer({ min: -60, max: 60 }), (a, v) => {
      for (const search of [lowerBound, upperBound]) {
        let reads = 0;
        search(a.length, (i) => {
          assert.ok(i >= 0 && i < a.length, `index ${i} is inside 0..${a.length - 1}`);
          reads++;
          return a[i];
        }, v);
        assert.ok(reads <= Math.ceil(Math.log2(a.length + 1)) + 1, `${reads} reads for ${a.length} values`);
      }
    }),
    { numRuns: 300 },
  );
});

test('binary searches over an empty sequence answer 0 without reading', () => {
  const never = () => assert.fail('read an empty sequence');
  assert.equal(lowerBound(0, never, 5), 0);
  assert.equal(upperBound(0, never, 5), 0);
});

test('lowerBound and upperBound bracket the run of equal values', () => {
  const a = [1, 3, 3, 3, 7];
  assert.equal(lowerBound(a.length, (i) => a[i], 3), 1);
  assert.equal(upperBound(a.length, (i) => a[i], 3), 4);
  assert.equal(lowerBound(a.length, (i) => a[i], 4), 4);
  assert.equal(upperBound(a.length, (i) => a[i], 4), 4);
});

test('a U32List grows and answers upper bounds in ascending order', () => {
  const list = new U32List(2);
  for (const v of [1, 3, 3, 7, 10]) list.push(v);
  assert.deepEqual([0, 1, 3, 6, 10, 11].map((v) => list.upperBound(v)), [0, 1, 3, 3, 5, 5]);
  assert.equal(list.at(4), 10);
});

test('a U32List holds what an array holds through pushes, sets and truncations', () => {
  const op = fc.oneof(
    fc.record({ push: fc.integer({ min: 0, max: 0xffffffff }) }),
    fc.record({ set: fc.nat(), v: fc.integer({ min: 0, max: 0xffffffff }) }),
    fc.record({ truncate: fc.nat({ max: 300 }) }),
  );
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 8 }), fc.array(op, { maxLength: 400 }), (capacity, ops) => {
      const list = new U32List(capacity);
      const model = [];
      for (const o of ops) {
        if ('push' in o) {
          list.push(o.push);
          model.push(o.push);
        } else if ('set' in o) {
          if (model.length === 0) continue;
          const i = o.set % model.length;
          list.set(i, o.v);
          model[i] = o.v;
        } else {
          list.truncate(o.truncate);
          if (o.truncate < model.length) model.length = o.truncate;
        }
        assert.equal(list.length, model.length);
      }
      assert.deepEqual([...list.toArray()], model);
      model.forEach((v, i) => assert.equal(list.at(i), v));
      assert.ok(list.bytes >= model.length * 4, 'its capacity holds every element');
    }),
    { numRuns: 200 },
  );
});

test('a U32List upper bound matches a linear scan of its ascending elements', () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 1000 }), { maxLength: 300 }), fc.integer({ min: 0, max: 1100 }), (values, v) => {
      values.sort((a, b) => a - b);
      const list = new U32List(1);
      for (const x of values) list.push(x);
      const expected = values.findIndex((x) => x > v);
      assert.equal(list.upperBound(v), expected === -1 ? values.length : expected);
    }),
    { numRuns: 300 },
  );
});

test('a U32List built from an array takes it over and keeps growing', () => {
  const list = U32List.of(Uint32Array.from([4, 5, 6]));
  assert.equal(list.length, 3);
  list.push(7);
  assert.deepEqual([...list.toArray()], [4, 5, 6, 7]);
  const empty = U32List.of(new Uint32Array(0));
  assert.equal(empty.length, 0);
  empty.push(1);
  assert.deepEqual([...empty.toArray()], [1]);
});

test('a copy taken by toArray does not change when the list does', () => {
  const list = new U32List(4);
  list.push(1);
  const copy = list.toArray();
  list.set(0, 9);
  assert.deepEqual([...copy], [1]);
});

test('a small U32List doubles its capacity when full', () => {
  const list = new U32List(4);
  for (let i = 0; i < 5; i++) list.push(i);
  assert.equal(list.bytes, 8 * 4);
});

test('the row hash table finds every row added under a key, newest first, across growth', () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 40 }), { maxLength: 3000 }), (keys) => {
      const table = new RowHashTable();
      keys.forEach((k, row) => table.add(k * 0x9e3779b1, row));
      for (let k = 0; k <= 40; k++) {
        const seen = [];
        table.find(k * 0x9e3779b1, (row) => (seen.push(row), false));
        const expected = keys.map((key, row) => (key === k ? row : -1)).filter((r) => r >= 0).reverse();
        assert.deepEqual(seen, expected);
      }
    }),
    { numRuns: 50 },
  );
});

test('a row hash table lookup stops at the first row the caller confirms and returns it', () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 10 }), { minLength: 1, maxLength: 500 }), fc.nat(), (keys, pick) => {
      const table = new RowHashTable();
      keys.forEach((k, row) => table.add(k, row));
      const wanted = pick % keys.length;
      const visited = [];
      const found = table.find(keys[wanted], (row) => (visited.push(row), row === wanted));
      assert.equal(found, wanted);
      assert.equal(visited.at(-1), wanted, 'no row is visited after the confirmed one');
      assert.equal(table.find(keys[wanted], () => false), undefined, 'no confirmed row answers undefined');
    }),
    { numRuns: 200 },
  );
});

test('a row hash table finds nothing under a key never added, including key 0 and negative hashes', () => {
  const table = new RowHashTable();
  table.add(-1, 0);
  table.add(0, 1);
  const rowsOf = (k) => {
    const seen = [];
    table.find(k, (r) => (seen.push(r), false));
    return seen;
  };
  assert.deepEqual(rowsOf(-1), [0]);
  assert.deepEqual(rowsOf(0xffffffff), [0], 'keys are compared as unsigned 32-bit values');
  assert.deepEqual(rowsOf(0), [1]);
  assert.deepEqual(rowsOf(7), []);
});

test('a row hash table unpacked from its packed form answers every lookup the same', () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 100 }), { maxLength: 2000 }), (keys) => {
      const table = new RowHashTable();
      keys.forEach((k, row) => table.add(k, row));
      const p = table.pack();
      const copy = RowHashTable.unpack({ slots: p.slots.slice(), keys: p.keys.slice(), count: p.count });
      assert.equal(copy.bytes, table.bytes);
      for (let k = 0; k <= 100; k++) {
        const a = [];
        const b = [];
        table.find(k, (r) => (a.push(r), false));
        copy.find(k, (r) => (b.push(r), false));
        assert.deepEqual(b, a);
      }
      copy.add(5, keys.length);
      assert.equal(copy.find(5, (r) => r === keys.length), keys.length, 'an unpacked table keeps growing');
    }),
    { numRuns: 50 },
  );
});

test('a damaged packed row hash table is refused', () => {
  const ok = new RowHashTable().pack();
  assert.throws(() => RowHashTable.unpack({ slots: new Uint32Array(3), keys: new Uint32Array(3), count: 0 }), /damaged row hash table/);
  assert.throws(() => RowHashTable.unpack({ slots: new Uint32Array(1), keys: new Uint32Array(1), count: 0 }), /damaged row hash table/);
  assert.throws(() => RowHashTable.unpack({ slots: ok.slots, keys: new Uint32Array(8), count: 0 }), /damaged row hash table/);
  assert.throws(() => RowHashTable.unpack({ slots: new Uint32Array(8), keys: new Uint32Array(8), count: 7 }), /damaged row hash table/);
});
