/**
 * Route definitions whose handlers get their query and body typed from the schemas the route
 * names (issue 29: route types derived from the schemas, no casts in handlers).
 *
 * `RequestSchemas` maps each request schema a route names (schemas/<Name>.json) to the TypeScript
 * type of a value that schema accepts once the pipeline has validated it (defaults applied, text
 * trimmed; src/http/validate.ts). `route()` takes a route whose `query`/`body` are such names and
 * whose handler is written against those types, and returns it as a row of the route table: the
 * one place the pipeline's `Record<string, unknown>`/`unknown` meets the schema's type, sound
 * because the pipeline validates against exactly the schema the route names before the handler.
 */
import type { Reply, RequestContext, Route } from '../http/router.js';
import type { AgentEntry, RegisterInput } from '../domain/agents/agents.js';
import type { CursorQuery, ExchangeQuery } from '../domain/feeds/pages.js';
import type { MessageInput, MessageQuery } from '../domain/forum/forum.js';
import type { KnowledgeInput, KnowledgeQuery } from '../domain/knowledge/knowledge.js';
import type { FlagInput, ModerationInput } from '../domain/moderation/decide.js';
import type { ReceiptKind } from '../domain/receipts/receipts.js';
import type { WorkActionInput, WorkCreateInput, WorkHistoryQuery, WorkListQuery } from '../domain/work/work.js';

/** The validated value of each request schema a typed route names (see the module doc). */
export interface RequestSchemas {
  NoQuery: Record<never, never>;
  ChangesQuery: CursorQuery;
  ExchangeQuery: ExchangeQuery;
  ReceiptQuery: { kind: ReceiptKind; clientId: string };
  TopicInput: { title: string; roomId: string };
  MessagesQuery: MessageQuery;
  MessageInput: MessageInput;
  KnowledgeQuery: KnowledgeQuery;
  KnowledgeInput: KnowledgeInput;
  SearchQuery: { q?: string; agentId?: string; topicId?: string; before?: string; id?: string; history: boolean; limit: number };
  WorkListQuery: WorkListQuery;
  WorkHistoryQuery: WorkHistoryQuery;
  WorkCreateInput: WorkCreateInput;
  WorkActionInput: WorkActionInput;
  RegisterInput: RegisterInput;
  OpportunityBriefQuery: { workItemId: string };
  ModerationActionInput: ModerationInput;
  ModerationListQuery: { limit: number };
  FlagInput: FlagInput;
  FlagsQuery: { state: 'open' | 'resolved' | 'all'; limit: number };
  FlagResolveInput: { flagId: string; resolution: 'hide' | 'erase' | 'dismiss'; note: string };
}

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
