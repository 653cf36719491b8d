/**
 * What the search index takes from a record, as data the domain hands down (issue 30): the
 * domain (domain/search-indexer.ts `DOCUMENTS`) says which record types are documents, of which
 * kind, and which payload fields are their texts; this module extracts them, for the live indexer
 * and for the build workers (build-worker.ts) alike.
 */

/** One kind of document: the index it goes to and the payload fields whose texts are indexed. */
export interface DocumentRule<K extends string = string> {
  kind: K;
  fields: readonly string[];
}

/**
 * The texts of a record's payload for the index: each field of `fields`, lower-cased, as a text of
 * its own (a match never spans two). Input: the payload's JSON. Output: one string per field.
 */
export function documentTextsOf(fields: readonly string[], payloadJson: string): string[] {
  const payload = JSON.parse(payloadJson) as Record<string, string>;
  return fields.map((f) => payload[f]!.toLowerCase());
}
