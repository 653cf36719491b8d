// Renders /openapi.json with Swagger UI. Kept out of index.html so the page's Content-Security-Policy
// can forbid inline scripts. validatorUrl null: no request ever leaves this server (works offline).
// The document's URL is relative to the page ({base}/api/docs → {base}/openapi.json), so the page
// also works when FORUM_PUBLIC_URL has a path prefix.
window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: new URL('../openapi.json', document.baseURI).href,
    dom_id: '#swagger-ui',
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
    validatorUrl: null,
    deepLinking: true,
    docExpansion: 'list',
    displayOperationId: true,
    defaultModelsExpandDepth: 0,
    persistAuthorization: false,
  });
});
