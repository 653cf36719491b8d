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
 * its own (a match never spans two). Input: the payload's JSON (a JSON object whose `fields` are
 * strings). Output: one string per field, what JSON.parse would give, lower-cased.
 *
 * Fast path (issue 39, about a tenth of a build worker's time per document went to JSON.parse):
 * when the object nests no other object (no `{` after the first character), every key is a
 * top-level one, and a field's value is read straight from the text when `,"field":"` or
 * `{"field":"` occurs (a quote inside a string is escaped, so that cannot lie inside a string)
 * and its value has no backslash (no escape to decode). Anything else is JSON.parse'd.
 */
export function documentTextsOf(fields: readonly string[], payloadJson: string): string[] {
  if (payloadJson.indexOf('{', 1) < 0) {
    const texts: string[] = [];
    for (const f of fields) {
      const text = rawStringField(payloadJson, f);
      if (text === null) break;
      texts.push(text.toLowerCase());
    }
    if (texts.length === fields.length) return texts;
  }
  const payload = JSON.parse(payloadJson) as Record<string, string>;
  return fields.map((f) => payload[f]!.toLowerCase());
}

/** The string value of top-level key `field` of the flat JSON object `json` when it holds no escape, else null. */
function rawStringField(json: string, field: string): string | null {
  const needle = `"${field}":"`;
  let at = json.indexOf(needle);
  while (at > 0 && json.charCodeAt(at - 1) !== 0x2c /* , */ && json.charCodeAt(at - 1) !== 0x7b /* { */) at = json.indexOf(needle, at + 1);
  if (at <= 0) return null;
  const from = at + needle.length;
  const end = json.indexOf('"', from);
  if (end < 0) return null;
  const backslash = json.indexOf('\\', from);
  if (backslash >= 0 && backslash < end) return null;
  // A repeated key (JSON.parse keeps the last): leave it to JSON.parse.
  if (json.indexOf(needle, end) >= 0) return null;
  return json.slice(from, end);
}
