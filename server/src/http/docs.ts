import express, { type Router } from 'express';

/**
 * The API reference at /docs: Redoc's standalone bundle and the bundled spec, both served from local files, so the
 * page works with no network (no CDN, no web fonts).
 */
export function docsRouter(specJson: unknown): Router {
  const router = express.Router();
  const redocBundle = require.resolve('redoc/bundles/redoc.standalone.js');
  const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Paid API Marketplace API reference</title>
<style>body { margin: 0; padding: 0; }</style>
</head>
<body>
<div id="redoc"></div>
<script src="/docs/redoc.standalone.js"></script>
<script>
  fetch('/docs/openapi.json').then(function (r) { return r.json(); }).then(function (spec) {
    Redoc.init(spec, {
      disableSearch: false,
      hideDownloadButton: false,
      theme: { typography: { fontFamily: 'system-ui, -apple-system, Segoe UI, Roboto, sans-serif', headings: {
        fontFamily: 'system-ui, -apple-system, Segoe UI, Roboto, sans-serif' }, code: { fontFamily:
        'ui-monospace, Menlo, Consolas, monospace' } } }
    }, document.getElementById('redoc'));
  });
</script>
</body>
</html>`;
  router.get('/', (_req, res) => {
    res.setHeader(
      'Content-Security-Policy',
      "default-src 'self'; script-src 'self' 'unsafe-inline' blob:; style-src 'self' 'unsafe-inline'; img-src " +
        "'self' data:; worker-src 'self' blob:",
    );
    res.type('html').send(page);
  });
  router.get('/redoc.standalone.js', (_req, res) => res.sendFile(redocBundle, { maxAge: '1h' }));
  router.get('/openapi.json', (_req, res) => res.json(specJson));
  return router;
}
