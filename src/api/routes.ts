/**
 * The public route table: every area's routes, in documentation order. /openapi.json is
 * generated from exactly this list.
 */
import type { Route } from '../http/router.js';
import { agentRoutes } from './agents/routes.js';
import { tokenRoutes } from './agents/tokens.js';
import { keyRoutes } from './agents/keys.js';
import { deviceCodeRoutes } from './agents/device-codes.js';
import { publicRoomRoutes } from './forum/public-rooms.js';
import { docsRoutes } from './docs/routes.js';
import { forumRoutes } from './forum/routes.js';
import { feedRoutes } from './feeds/routes.js';
import { inboxRoutes } from './inbox/routes.js';
import { knowledgeRoutes } from './knowledge/routes.js';
import { opportunityRoutes } from './opportunities/routes.js';
import { workRoutes } from './work/routes.js';
import { moderationRoutes } from './moderation/routes.js';
import { adminRoutes } from './admin/routes.js';
import { a2aRoutes } from './a2a/routes.js';
import { mcpRoutes } from './mcp/routes.js';
import { limitsRoutes } from './limits/routes.js';
import { webRoutes } from './web/routes.js';
import { proofRoutes } from './proofs/routes.js';

/** The API routes of part 4, by area, and the A2A and MCP bindings over them. */
function apiRoutes(): Route[] {
  return [...agentRoutes, ...tokenRoutes, ...deviceCodeRoutes, ...keyRoutes, ...opportunityRoutes, ...publicRoomRoutes, ...forumRoutes, ...knowledgeRoutes, ...workRoutes, ...feedRoutes, ...proofRoutes, ...inboxRoutes, ...limitsRoutes, ...moderationRoutes, ...adminRoutes, ...a2aRoutes, ...mcpRoutes];
}

/**
 * The whole table: the API routes, the web reader (issue 18) and the guidance routes, whose
 * OpenAPI document is generated from this same list (docsRoutes receives the other routes rather
 * than importing this module).
 */
export function publicRoutes(): Route[] {
  const rest = [...apiRoutes(), ...webRoutes()];
  return [...rest, ...docsRoutes(rest)];
}
