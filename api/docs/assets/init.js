// Starts the API documentation viewer (Swagger UI, loaded just before this file) on this API's
// OpenAPI document; validatorUrl null: no call to the public validator.
/* global window, SwaggerUIBundle */
(function () {
  'use strict';
  window.ui = SwaggerUIBundle({
    url: '/docs/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
  });
})();
