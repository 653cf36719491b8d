/**
 * The public route table: every area's routes, in documentation order. /openapi.json is
 * generated from exactly this list.
 */
import type { Route } from '../http/router.js';
import { agentRoutes } from './agents/routes.js';
import { forumRoutes } from './forum/routes.js';
import { feedRoutes } from './feeds/routes.js';
import { knowledgeRoutes } from './knowledge/routes.js';
import { opportunityRoutes } from './opportunities/routes.js';
import { workRoutes } from './work/routes.js';
import { a2aRoutes } from './a2a/routes.js';

export function publicRoutes(): Route[] {
  return [...agentRoutes, ...opportunityRoutes, ...forumRoutes, ...knowledgeRoutes, ...workRoutes, ...feedRoutes, ...a2aRoutes];
}
