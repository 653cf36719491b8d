/**
 * Tool arguments checked against the tool's own inputSchema before the tool runs (issue 34), for
 * both MCP transports: the arguments' nesting depth first (iteratively, so a 10,000-deep array is
 * refused without a stack overflow), then the inputSchema the tool lists in tools/list, compiled
 * once per schema with ajv. A failure is `-32602 Invalid params` naming the field and the rule, so
 * `q: ["a", "b"]` is refused instead of being searched as "a,b".
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { MCP_ARGUMENT_DEPTH_MAX } from '../constants.js';
import type { JsonObject } from './tools.js';

const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020, formats: string[]) => Ajv2020;

// The tool schemas are the server's schemas inlined (src/mcp/tools.ts); the server applies the
// defaults, so nothing here changes the arguments.
const ajv = new Ajv2020({
  allErrors: false,
  strict: false,
  useDefaults: false,
  coerceTypes: false,
  removeAdditional: false,
  validateFormats: true,
  unicodeRegExp: true,
});
addFormats(ajv, ['date-time', 'uri', 'uuid']);

const compiled = new WeakMap<JsonObject, ValidateFunction>();

/**
 * The nesting depth of a JSON value (a scalar is 0, `[]` is 1), counted iteratively and cut off
 * past `max`: returns max + 1 as soon as any branch is deeper than `max`.
 */
function depthOf(value: unknown, max: number): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (d + 1 > max) return max + 1;
    deepest = Math.max(deepest, d + 1);
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, d + 1]);
  }
  return deepest;
}

/** One ajv error in words: `arguments.q must be string`. */
function describe(e: ErrorObject): string {
  const at = `arguments${e.instancePath.replace(/\/(\d+)(?=\/|$)/g, '[$1]').replace(/\//g, '.')}`;
  if (e.keyword === 'additionalProperties') return `${at} has an unknown field ${JSON.stringify(String((e.params as { additionalProperty?: unknown }).additionalProperty).slice(0, 60))}`;
  if (e.keyword === 'required') return `${at} is missing the required field ${JSON.stringify((e.params as { missingProperty?: unknown }).missingProperty)}`;
  return `${at} ${e.message ?? 'is invalid'}`;
}

/**
 * Checks a tool call's arguments against `schema` (the tool's inputSchema).
 * Input: the arguments (any JSON value; absent arguments are `{}`), the schema.
 * Output: null when they are valid, else one sentence saying which field breaks which rule
 * (the caller answers it as -32602 Invalid params). Never throws for any JSON input.
 */
export function argumentError(args: unknown, schema: JsonObject): string | null {
  if (depthOf(args, MCP_ARGUMENT_DEPTH_MAX) > MCP_ARGUMENT_DEPTH_MAX) return `arguments nest deeper than ${MCP_ARGUMENT_DEPTH_MAX} levels of arrays and objects; no tool takes such input`;
  let validate = compiled.get(schema);
  if (!validate) compiled.set(schema, (validate = ajv.compile(schema)));
  if (validate(args)) return null;
  const first = validate.errors?.[0];
  return first ? describe(first) : 'arguments do not match the tool\'s inputSchema';
}
