/**
 * The parts every area's `pack` and `unpack` share (issue 29: each area packs and unpacks its own
 * index beside its `apply`; domain/snapshot.ts only composes them). A packed area is a plain
 * object for `v8.serialize` whose typed arrays are stored apart, as body parts of their own
 * (store/snapshot.ts), and referred to by index.
 */
import { RowHashTable } from '../containers/row-hash-table.js';
import { U32List } from '../containers/u32-list.js';

/**
 * The Uint32Arrays of a packed state, stored as body parts of their own; the packed objects refer
 * to them by index. Packing appends; unpacking takes each once.
 */
export class PackedArrays {
  constructor(readonly list: Uint32Array[] = []) {}

  /** Stores `a` (trimmed by the caller); returns its index. */
  put(a: Uint32Array): number {
    return this.list.push(a) - 1;
  }

  /** Array `i`. Throws Error for an index the body does not hold (damaged data). */
  take(i: number): Uint32Array {
    const a = Number.isInteger(i) ? this.list[i] : undefined;
    if (a === undefined) throw new Error(`the snapshot refers to array ${i}, which it does not hold`);
    return a;
  }

  /** Stores a U32List's used part; returns its index. */
  putList(list: U32List): number {
    return this.put(list.toArray());
  }

  /** The U32List stored at index `i` (see `take`). */
  takeList(i: number): U32List {
    return U32List.of(this.take(i));
  }
}

/** Map of string keys to U32Lists, packed: [key, array index]. */
export type PackedLists = Array<[string, number]>;

/** Packs a map of U32Lists (each list an array of its own). */
export function packLists(map: Map<string, U32List>, arrays: PackedArrays): PackedLists {
  return [...map].map(([k, list]) => [k, arrays.putList(list)]);
}

/** The map packed by `packLists`. Throws Error for damaged data. */
export function unpackLists(packed: PackedLists, arrays: PackedArrays): Map<string, U32List> {
  return new Map(packed.map(([k, i]) => [k, arrays.takeList(i)]));
}

/** A packed RowHashTable: its two arrays by index. */
export type PackedTable = { slots: number; keys: number; count: number };

/** Packs a RowHashTable. */
export function packTable(t: RowHashTable, arrays: PackedArrays): PackedTable {
  const p = t.pack();
  return { slots: arrays.put(p.slots), keys: arrays.put(p.keys), count: p.count };
}

/** The table packed by `packTable`. Throws Error for damaged data. */
export function unpackTable(p: PackedTable, arrays: PackedArrays): RowHashTable {
  return RowHashTable.unpack({ slots: arrays.take(p.slots), keys: arrays.take(p.keys), count: p.count });
}
