/**
 * Globals of the pages the checked JavaScript runs in (scripts/lint/tsconfig.checkjs.json) that
 * no import declares: the API docs page (src/api/docs/ui/index.html) loads Swagger UI's bundle as
 * a classic script, which defines `SwaggerUIBundle`; init.js keeps the instance as `window.ui`.
 */
declare const SwaggerUIBundle: {
  (options: Record<string, unknown>): unknown;
  presets: { apis: unknown };
};

interface Window {
  ui: unknown;
}
