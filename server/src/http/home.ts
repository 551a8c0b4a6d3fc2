import type { RequestHandler } from 'express';

/**
 * GET / (issue 32): a small page for whoever opens the service's address in a browser, linking what is here: the API
 * docs, the operator dashboard, health, the version, and where the quickstart is. Static HTML, no data, no script.
 * JSON clients (Accept without text/html) get the same links as JSON.
 */
const LINKS = [
  {
    href: '/docs',
    title: 'API documentation',
    text: 'the OpenAPI contract rendered with Redoc (local files, no network needed)',
  },
  {
    href: '/dashboard',
    title: 'Operator dashboard',
    text: 'settlement, search and job health (asks for the operator key)',
  },
  { href: '/health', title: 'Health', text: 'database, jobs and ledger networks' },
  { href: '/version', title: 'Version', text: 'the running build' },
  { href: '/v1/stats', title: 'Public stats', text: 'settled payments, catalog size, latency' },
  { href: '/v1/discovery/search?q=weather', title: 'Search', text: 'the catalog, as buyers and agents see it' },
] as const;

const QUICKSTART =
  'Quickstart (README.md, "Quickstart"): npm ci && npm start, then npm run quickstart in a second terminal. ' +
  'Agents: the MCP server at POST /mcp. Everything settled here is local simulation unless a real testnet or ' +
  'pubnet RPC is configured.';

const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Paid API Marketplace</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:44rem;margin:2rem auto;padding:0
  1rem}code{background:#f2f2f2;padding:0 .2em}</style>
</head><body>
<h1>Paid API Marketplace</h1>
<p>Catalog, search and x402 payment facilitator for paid HTTP endpoints and MCP tools on Stellar.</p>
<ul>
${LINKS.map((l) => `<li><a href="${l.href}">${l.title}</a>: ${l.text}</li>`).join('\n')}
</ul>
<h2>Quickstart</h2>
<p><code>npm ci &amp;&amp; npm start</code>, then <code>npm run quickstart</code> in a second terminal: a seller, a
  buyer and an agent reach a paid response and a verified receipt (README.md, "Quickstart": the agent, seller and REST
  routes). Agents connect an MCP client to <code>POST /mcp</code>.</p>
<p>Everything settled on the local network is <strong>local simulation</strong>.</p>
</body></html>
`;

export function homePage(): RequestHandler {
  return (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    if (req.accepts(['text/html', 'application/json']) === 'application/json') {
      res.json({
        name: 'Paid API Marketplace',
        links: LINKS.map(({ href, title }) => ({ href, title })),
        quickstart: QUICKSTART,
      });
      return;
    }
    res.setHeader('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'");
    res.type('html').send(html);
  };
}
