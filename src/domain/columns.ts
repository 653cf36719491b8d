/**
 * Helpers of the typed-column areas (forum messages, knowledge revisions, work items; issues 17
 * and 30): an id string interned as a small number, and a row appended to a per-key list.
 */
import { U32List } from '../containers/u32-list.js';

/** The interning table of an area: every id string it has seen, and each one's number. */
export interface NameTable {
  names: string[];
  nameIds: Map<string, number>;
}

/** The number of id `id` in `s.names` (added on first sight). */
export function nameId(s: NameTable, id: string): number {
  const known = s.nameIds.get(id);
  if (known !== undefined) return known;
  s.nameIds.set(id, s.names.length);
  s.names.push(id);
  return s.names.length - 1;
}

/** Appends `value` to the list of `key` in `map` (a new list on first sight). */
export function pushTo(map: Map<string, U32List>, key: string, value: number): void {
  const list = map.get(key);
  if (list) list.push(value);
  else {
    const l = new U32List(4);
    l.push(value);
    map.set(key, l);
  }
}
