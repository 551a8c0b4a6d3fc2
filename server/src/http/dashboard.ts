import path from 'node:path';
import express, { type Router } from 'express';

/**
 * The operator dashboard: static files from server/public and uPlot from node_modules (no CDN). The page itself
 * holds no data: it asks for the operator key, keeps it in sessionStorage only, and reads
 * GET /v1/operations/dashboard (operator only) every 5 seconds.
 */
export function dashboardRouter(): Router {
  const router = express.Router();
  const uplotDir = path.dirname(require.resolve('uplot/dist/uPlot.iife.min.js'));
  const headers = (res: express.Response) => {
    res.setHeader(
      'Content-Security-Policy',
      "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; " +
        "script-src 'self'; frame-ancestors 'none'",
    );
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('Cache-Control', 'no-store');
  };
  router.use((_req, res, next) => {
    headers(res);
    next();
  });
  router.get('/vendor/uPlot.iife.min.js', (_req, res) => res.sendFile(path.join(uplotDir, 'uPlot.iife.min.js')));
  router.get('/vendor/uPlot.min.css', (_req, res) => res.sendFile(path.join(uplotDir, 'uPlot.min.css')));
  const root = path.resolve(__dirname, '../../public');
  router.get('/', (_req, res) => res.sendFile(path.join(root, 'index.html')));
  router.use(express.static(root, { index: false, redirect: false, fallthrough: true }));
  return router;
}
