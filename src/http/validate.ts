/**
 * Request validation compiled once from the JSON Schemas in `schemas/` — the single source for
 * validation and for /openapi.json (issue 6).
 *
 * Schemas are JSON Schema 2020-12 files named `<Name>.json` with `"$id": "<Name>"`; they refer
 * to each other as `{"$ref": "<Name>"}`. Query schemas describe parameters with their real types
 * (integer, boolean); `parseQuery` turns only canonical strings into numbers and booleans
 * (`0`, `42`, `true`, `false`), so `01`, `+1`, `1e3`, `-1` and `1.0` stay strings and fail the
 * integer type check with a 400 naming the parameter and the rule: a plain non-negative integer,
 * digits only, no leading zero, sign, exponent or decimal point (part 4 "plain non-negative
 * integer strings").
 *
 * Extension keyword `x-trim: true` on a string property: the value is trimmed before validation,
 * so length rules apply to the trimmed text (part 4: content "trimmed").
 *
 * Extension keyword `x-rule: "<text>"` on a schema with a `pattern` or `format`: a value that
 * fails them gets `<field> must <text>` instead of the raw regular expression.
 *
 * `format: "date-time"` query parameters must also denote a real instant: RFC 3339 allows a leap
 * second (`23:59:60`), which JavaScript dates cannot represent, so such a value is refused with a
 * 400 naming the parameter rather than silently matching nothing (our choice: refuse, not
 * normalise to the next second).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { invalid } from '../errors.js';

// ajv-formats ships CommonJS with a default export; under NodeNext the callable sits on .default.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020, formats: string[]) => Ajv2020;

/** Folder holding the schema files (repo root `schemas/`, next to `dist/`). */
export const SCHEMAS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'schemas');

export type JsonSchema = Record<string, unknown>;
export type { ErrorObject };

/** Loads every schema file; returns them by name (file name without .json). */
export function loadSchemas(dir: string = SCHEMAS_DIR): Map<string, JsonSchema> {
  const out = new Map<string, JsonSchema>();
  for (const file of readdirSync(dir).sort()) {
    if (!file.endsWith('.json')) continue;
    const schema = JSON.parse(readFileSync(join(dir, file), 'utf8')) as JsonSchema;
    const name = file.slice(0, -5);
    if (schema.$id !== name) throw new Error(`schema ${file} must have "$id": "${name}"`);
    out.set(name, schema);
  }
  return out;
}

const schemas = loadSchemas();

// Every option we depend on is spelled out rather than left to ajv's defaults.
const ajv = new Ajv2020({
  allErrors: false,
  strict: true,
  strictRequired: false,
  useDefaults: true,
  coerceTypes: false,
  removeAdditional: false,
  discriminator: true,
  messages: true,
  // Errors carry their schema, so `x-rule` can word a pattern or format failure (describeError).
  verbose: true,
  validateFormats: true,
  unicodeRegExp: true,
});
addFormats(ajv, ['date-time', 'uri', 'uuid']);
ajv.addKeyword({ keyword: 'x-trim', schemaType: 'boolean' });
ajv.addKeyword({ keyword: 'x-rule', schemaType: 'string' });
ajv.addKeyword({ keyword: 'x-example', schemaType: ['string', 'number', 'boolean', 'object', 'array'] });
for (const schema of schemas.values()) ajv.addSchema(schema);

/** The loaded schemas (read-only use: OpenAPI generation). */
export function allSchemas(): ReadonlyMap<string, JsonSchema> {
  return schemas;
}

/** Returns a loaded schema by name; throws for an unknown name (a programmer error). */
export function getSchema(name: string): JsonSchema {
  const s = schemas.get(name);
  if (!s) throw new Error(`no schema named ${name} in ${SCHEMAS_DIR}`);
  return s;
}

function compiled(name: string): ValidateFunction {
  getSchema(name);
  const fn = ajv.getSchema(name);
  if (!fn) throw new Error(`schema ${name} did not compile`);
  return fn;
}

/** Top-level properties marked `x-trim`, per schema (including discriminated variants). */
function trimFields(schema: JsonSchema): Set<string> {
  const out = new Set<string>();
  const visit = (s: JsonSchema) => {
    const props = (s.properties ?? {}) as Record<string, JsonSchema>;
    for (const [k, v] of Object.entries(props)) if (v['x-trim'] === true) out.add(k);
    for (const alt of (s.oneOf ?? []) as JsonSchema[]) {
      const ref = alt.$ref as string | undefined;
      visit(ref ? getSchema(ref) : alt);
    }
  };
  visit(schema);
  return out;
}

/** Renders the first ajv error as a sentence naming the field and the rule. */
export function describeError(err: ErrorObject, where: 'body' | 'query'): string {
  const path = err.instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
  const field = (name: string) => (where === 'query' ? `query parameter "${name}"` : `field "${name}"`);
  const subject = path ? field(path) : where === 'query' ? 'query string' : 'body';
  const p = err.params as Record<string, unknown>;
  switch (err.keyword) {
    case 'required':
      return `missing required ${field(path ? `${path}.${String(p.missingProperty)}` : String(p.missingProperty))}`;
    case 'additionalProperties':
      return `unknown ${field(path ? `${path}.${String(p.additionalProperty)}` : String(p.additionalProperty))} (no additional fields are allowed)`;
    case 'const':
      return `${subject} must be ${JSON.stringify(p.allowedValue)}`;
    case 'enum':
      return `${subject} must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'discriminator':
      return `${field(String(p.tag))} must be one of the documented values (${String(err.message)})`;
    case 'type':
      // parseQuery turns only canonical strings into numbers and booleans (see queryValidator), so a
      // query parameter failing its type was given in another spelling: name the accepted one.
      if (where === 'query' && p.type === 'integer') {
        return `${subject} must be a plain non-negative integer: digits only, with no leading zero, sign, exponent or decimal point (e.g. 0 or 42)`;
      }
      if (where === 'query' && p.type === 'boolean') return `${subject} must be true or false`;
      return `${subject} ${err.message ?? 'is invalid'}`;
    case 'pattern':
    case 'format': {
      const rule = (err.parentSchema as JsonSchema | undefined)?.['x-rule'];
      return typeof rule === 'string' ? `${subject} must ${rule}` : `${subject} ${err.message ?? 'is invalid'}`;
    }
    default:
      return `${subject} ${err.message ?? 'is invalid'}`;
  }
}

/** A compiled validator for one schema. */
export interface Validator {
  (data: unknown): unknown;
}

/**
 * Compiles a body validator for schema `name`. The returned function trims `x-trim` fields,
 * applies defaults, and returns the (mutated) body; it throws 400 naming the field and rule.
 */
export function bodyValidator(name: string): Validator {
  const fn = compiled(name);
  const trims = trimFields(getSchema(name));
  return (data: unknown) => {
    if (trims.size > 0 && data !== null && typeof data === 'object' && !Array.isArray(data)) {
      const obj = data as Record<string, unknown>;
      for (const k of trims) if (typeof obj[k] === 'string') obj[k] = (obj[k] as string).trim();
    }
    if (!fn(data)) throw invalid(describeError(fn.errors![0]!, 'body'));
    return data;
  };
}

/**
 * Compiles schema `name` into a check that returns the first failure as a value (an ajv error,
 * whose `instancePath` names the field and `keyword` the rule) instead of throwing 400: for a
 * route that maps failures to its own errors (the A2A envelope, src/api/a2a/dispatch.ts). Same
 * ajv instance and options as `bodyValidator`; no `x-trim`. Returns null when `data` is valid.
 */
export function schemaCheck(name: string): (data: unknown) => ErrorObject | null {
  const fn = compiled(name);
  return (data: unknown) => (fn(data) ? null : fn.errors![0]!);
}

const CANONICAL_INT = /^(0|[1-9][0-9]*)$/;

/**
 * Compiles a query validator for schema `name`: converts canonical integer and boolean strings
 * for properties declared integer/boolean, refuses repeated parameters, applies defaults and
 * validates; a `date-time` parameter must denote a real instant (Date.parse gives a number).
 * Input: the query parameters. Output: the validated parameters by name.
 * Throws 400 naming the parameter and rule.
 */
export function queryValidator(name: string): (params: URLSearchParams) => Record<string, unknown> {
  const fn = compiled(name);
  const props = (getSchema(name).properties ?? {}) as Record<string, JsonSchema>;
  const instants = Object.keys(props).filter((k) => props[k]!.format === 'date-time');
  return (params: URLSearchParams) => {
    const out: Record<string, unknown> = {};
    for (const [key, raw] of params) {
      if (Object.prototype.hasOwnProperty.call(out, key)) {
        throw invalid(`query parameter "${key}" is given more than once`);
      }
      const type = props[key]?.type;
      if (type === 'integer' && CANONICAL_INT.test(raw)) out[key] = Number(raw);
      else if (type === 'boolean' && (raw === 'true' || raw === 'false')) out[key] = raw === 'true';
      else out[key] = raw;
    }
    if (!fn(out)) throw invalid(describeError(fn.errors![0]!, 'query'));
    for (const key of instants) {
      const v = out[key];
      if (typeof v === 'string' && Number.isNaN(Date.parse(v))) {
        throw invalid(`query parameter "${key}" must be a date-time that denotes a real instant (e.g. 2026-06-30T23:59:59Z); leap seconds (second 60) are not accepted`);
      }
    }
    return out;
  };
}
