/** `node:fs` with glob's `globSync` added (see conformance-node20.mjs). */
export * from 'node:fs';
export { default } from 'node:fs';
export { globSync } from 'glob';
