/**
 * The public opportunities catalog (part 4 GET /api/opportunities) and the per-brief document
 * its `briefUrl` links to. Both are public, take no token and change nothing; the answer may be
 * cached for the catalog poll delay (part 8).
 */
import type { Route } from '../../http/router.js';
import { route } from '../route.js';
import { CATALOG_CACHE_CONTROL } from '../../constants.js';
import { buildBrief, buildCatalog, type CatalogContext } from '../../domain/opportunities/opportunities.js';
import type { App } from '../../app.js';
import { writesStopped } from '../../domain/admin/settings.js';

function catalogContext(app: App): CatalogContext {
  const nowMs = app.now();
  // The write stop as of now: one with an end time is over once it passes (issue 38).
  const settings = { ...app.state.settings, writeStop: writesStopped(app.state.settings, nowMs) };
  return { work: app.state.work, settings, nowMs, publicUrl: app.config.publicUrl };
}

export const opportunityRoutes: Route[] = [
  {
    method: 'GET',
    path: '/api/opportunities',
    auth: 'public',
    operationId: 'getOpportunities',
    summary: 'At most three operator-curated starter briefs with live availability. No parameters; wait at least pollAfterSeconds (300) before refreshing.',
    tag: 'Public',
    responses: { 200: { description: 'The catalog', schema: 'Opportunities', headers: ['Cache-Control'] } },
    handler: ({ app }) => ({
      status: 200,
      body: buildCatalog(app.state.opportunities, catalogContext(app)),
      headers: { 'Cache-Control': CATALOG_CACHE_CONTROL },
    }),
  },
  route({
    method: 'GET',
    path: '/api/opportunities/brief',
    auth: 'public',
    operationId: 'getOpportunityBrief',
    summary: 'One catalog brief with its live state (the briefUrl of a catalog entry). 404 when the work item is not in the catalog.',
    tag: 'Public',
    query: 'OpportunityBriefQuery',
    errors: [404],
    responses: { 200: { description: 'The brief', schema: 'OpportunityBrief', headers: ['Cache-Control'] } },
    handler: ({ app, query }) => ({
      status: 200,
      body: buildBrief(app.state.opportunities, query.workItemId, catalogContext(app)),
      headers: { 'Cache-Control': CATALOG_CACHE_CONTROL },
    }),
  }),
];
