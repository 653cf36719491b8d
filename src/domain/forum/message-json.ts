/**
 * Reading a message's index fields from its stored canonical JSON without parsing all of it
 * (replay reads millions of these; issue 17).
 *
 * Canonical message JSON (fast-json-stable-stringify: sorted keys, no whitespace) is
 *
 *     {"authorId":"…","clientId":"…","content":"…","created":"…","id":"…","replyTo":null|"…","topicId":"…"}
 *
 * Inside a JSON string every `"` is escaped, so a text such as `","created":"` (a quote after a
 * comma) can only be the structure between two fields, never part of a value: the readers below
 * find fields by such texts. JSON of any other shape is handed back to JSON.parse.
 */

const AUTHOR_KEY = '{"authorId":"';
const CLIENT_ID_KEY = '","clientId":"';
/** The JSON text before the content's string (its opening quote included). */
export const CONTENT_KEY = ',"content":"';
const ID_KEY = '","id":"';
const REPLY_TO_KEY = '","replyTo":';
const TOPIC_ID_KEY = ',"topicId":"';

/** The fields of a message the forum index keeps (part 2 Message), read from its canonical JSON. */
export interface MessageFields {
  id: string;
  topicId: string;
  authorId: string;
  replyTo: string | null;
  clientId: string;
  created: string;
}

/**
 * Reads the index fields of message JSON `json` by locating the field boundaries of the canonical
 * shape, without JSON.parse (replay reads a million of these). Ids, times and the clientId are
 * sliced out; a value that holds a quote or backslash (an escaped clientId, or JSON of another
 * shape) sends the whole JSON to JSON.parse instead, so the result is always the parsed fields.
 * Throws SyntaxError only for JSON that is not valid.
 */
export function readMessageFields(json: string): MessageFields {
  if (!json.startsWith(AUTHOR_KEY) || !json.endsWith('"}')) return fieldsOfParsed(json);
  const clientAt = json.indexOf(CLIENT_ID_KEY, AUTHOR_KEY.length);
  const contentAt = clientAt === -1 ? -1 : json.indexOf(CONTENT_KEY, clientAt);
  const createdAt = contentAt === -1 ? -1 : json.indexOf(AFTER_CONTENT, contentAt);
  const idAt = createdAt === -1 ? -1 : json.indexOf(ID_KEY, createdAt);
  const replyAt = idAt === -1 ? -1 : json.indexOf(REPLY_TO_KEY, idAt);
  const topicAt = replyAt === -1 ? -1 : json.indexOf(TOPIC_ID_KEY, replyAt);
  if (topicAt === -1 || json.charCodeAt(contentAt - 1) !== 0x22) return fieldsOfParsed(json);
  const authorId = json.slice(AUTHOR_KEY.length, clientAt);
  const clientId = json.slice(clientAt + CLIENT_ID_KEY.length, contentAt - 1);
  const created = json.slice(createdAt + AFTER_CONTENT.length, idAt);
  const id = json.slice(idAt + ID_KEY.length, replyAt);
  const replyRaw = json.slice(replyAt + REPLY_TO_KEY.length, topicAt);
  const topicId = json.slice(topicAt + TOPIC_ID_KEY.length, json.length - 2);
  const replyTo = replyRaw === 'null' ? null : replyRaw.length > 2 && replyRaw.startsWith('"') && replyRaw.endsWith('"') ? replyRaw.slice(1, -1) : undefined;
  if (
    replyTo === undefined ||
    QUOTE_OR_BACKSLASH.test(authorId) ||
    QUOTE_OR_BACKSLASH.test(clientId) ||
    QUOTE_OR_BACKSLASH.test(created) ||
    QUOTE_OR_BACKSLASH.test(id) ||
    (replyTo !== null && QUOTE_OR_BACKSLASH.test(replyTo)) ||
    QUOTE_OR_BACKSLASH.test(topicId)
  ) {
    return fieldsOfParsed(json);
  }
  return { id, topicId, authorId, replyTo, clientId, created };
}

/**
 * The `created` time of canonical message JSON `json` (ISO 8601), read without parsing the rest
 * (the `before` filter's binary search). JSON of another shape is parsed.
 */
export function createdOf(json: string): string {
  const at = json.indexOf(AFTER_CONTENT, json.indexOf(CONTENT_KEY));
  const end = at === -1 ? -1 : json.indexOf('"', at + AFTER_CONTENT.length);
  return end === -1 ? (JSON.parse(json) as { created: string }).created : json.slice(at + AFTER_CONTENT.length, end);
}

/** A quote or backslash in a sliced value: escaped text, or JSON of another shape. */
const QUOTE_OR_BACKSLASH = /["\\]/;

/** The fields of message JSON `json` through JSON.parse (any shape). */
function fieldsOfParsed(json: string): MessageFields {
  const m = JSON.parse(json) as MessageFields;
  return { id: m.id, topicId: m.topicId, authorId: m.authorId, replyTo: m.replyTo, clientId: m.clientId, created: m.created };
}

/** The JSON text right after the content's string (its closing quote included; the next sorted key is `created`). */
export const AFTER_CONTENT = '","created":"';
