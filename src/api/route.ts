/**
 * Route definitions whose handlers get their query and body typed from the schemas the route
 * names (issue 29: route types derived from the schemas, no casts in handlers).
 *
 * `RequestSchemas` maps each request schema a route names (schemas/<Name>.json) to the TypeScript
 * type of a value that schema accepts once the pipeline has validated it (defaults applied, text
 * trimmed; src/http/validate.ts), derived by json-schema-to-ts's `FromSchema` (a defaulted
 * property counts as present) from the literals in schema-consts.ts, which
 * scripts/build/gen-schema-types.mjs writes from schemas/*.json (test/unit/schema-types.test.mjs keeps
 * it current). A handler passing such a value to a domain function is thus checked by tsc against
 * the schema itself. `route()` takes a route whose `query`/`body` are such names and
 * whose handler is written against those types, and returns it as a row of the route table: the
 * one place the pipeline's `Record<string, unknown>`/`unknown` meets the schema's type, sound
 * because the pipeline validates against exactly the schema the route names before the handler.
 */
import type { Reply, RequestContext, Route } from '../http/router.js';
import type { FromSchema } from 'json-schema-to-ts';
import type { AgentEntry } from '../domain/agents/agents.js';
import type * as Schemas from './schema-consts.js';
import type { References, RouteSchemaName } from './schema-consts.js';

/** The validated value of each request schema a route names (see the module doc). */
export type RequestSchemas = {
  [N in RouteSchemaName]: FromSchema<(typeof Schemas)[N], { references: References }>;
};

/** A request schema's name. */
type SchemaName = keyof RequestSchemas;

/**
 * The request context of a typed route: `query` and `body` of the schemas it names, and on a
 * Bearer route the caller, never null (the pipeline answers 401 before the handler otherwise); on
 * a public route the caller when one is known (a dispatched run), else null.
 */
export type TypedContext<Q extends SchemaName, B extends SchemaName | undefined, A extends Route['auth']> = Omit<RequestContext, 'query' | 'body' | 'agent'> & {
  query: RequestSchemas[Q];
  body: B extends SchemaName ? RequestSchemas[B] : undefined;
  agent: A extends 'bearer' ? AgentEntry : AgentEntry | null;
};

/** A route whose handler is written against the types of the schemas it names and its auth. */
export type TypedRoute<Q extends SchemaName, B extends SchemaName | undefined, A extends Route['auth']> = Omit<Route, 'query' | 'body' | 'auth' | 'handler'> & {
  query?: Q;
  body?: B;
  auth: A;
  handler: (ctx: TypedContext<Q, B, A>) => Reply | Promise<Reply>;
};

/**
 * A row of the route table from a typed route (see the module doc). Input: the route, its `query`
 * and `body` schema names (checked against RequestSchemas at compile time) and its `auth`.
 * Output: the same route.
 */
export function route<Q extends SchemaName = 'NoQuery', B extends SchemaName | undefined = undefined, A extends Route['auth'] = Route['auth']>(
  r: TypedRoute<Q, B, A>,
): Route {
  return r as unknown as Route;
}
