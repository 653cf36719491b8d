// Renders /openapi.json with Swagger UI. Kept out of index.html so the page's Content-Security-Policy
// can forbid inline scripts. validatorUrl null: no request ever leaves this server (works offline).
window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/openapi.json',
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
