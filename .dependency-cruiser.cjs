/**
 * The import rule of the server (`npm run check:layers`, part of `npm test`): layers point one way.
 *
 *   domain/                       rules, use cases and the ports they need
 *   data/  ledger/  net/          adapters: repositories, the Stellar ledger, network I/O (each on its own)
 *   jobs/  http/                  drivers: background workers, the HTTP face (handlers, x402, MCP)
 *   areas/                        wiring of services and workers
 *   compose.ts  main.ts  config.ts  cluster-primary.ts   the composition root
 *
 * A file may import its own layer and the layers below it, never one above, never a sibling adapter or driver.
 * `generated/` (contract types), `logger.ts` and `metrics/` are leaves every layer above domain may use; domain
 * may use `generated/` types only.
 *
 * The local Stellar network (local-network/, its own workspace package, cruised too) is a separate program: the
 * service reaches it through an RPC URL like any network, and only the composition root starts it in process as the
 * development default, through the package's public entry. The package imports nothing of the server or the SDKs.
 */
const SRC = '^server/src/';
const layer = (name) => `${SRC}${name}/`;
const ROOT = `${SRC}(compose|main|config|cluster-primary|app)\\.ts$`;

/** name: [the layer's path pattern, the paths it must not import]. */
const rules = {
  'domain-stays-pure': [
    layer('domain'),
    [layer('(data|ledger|net|jobs|http|areas|metrics)'), ROOT, `${SRC}logger\\.ts$`],
  ],
  'data-is-an-adapter': [layer('data'), [layer('(ledger|net|jobs|http|areas)'), ROOT]],
  'ledger-is-an-adapter': [layer('ledger'), [layer('(data|net|jobs|http|areas)'), ROOT]],
  'net-is-an-adapter': [layer('net'), [layer('(data|ledger|jobs|http|areas|metrics)'), ROOT]],
  'jobs-drive-the-domain': [layer('jobs'), [layer('(data|ledger|net|http|areas)'), ROOT]],
  'http-drives-the-domain': [layer('http'), [layer('(data|ledger|net|jobs|areas)'), ROOT]],
  'areas-are-wiring': [layer('areas'), [ROOT]],
  'leaves-import-nothing-above': [
    `${SRC}(metrics/|logger\\.ts$|generated/)`,
    [layer('(domain|data|ledger|net|jobs|http|areas)'), ROOT],
  ],
};

const LOCAL_NETWORK = '^local-network/';
const LOCAL_NETWORK_ENTRY = '^local-network/src/index\\.ts$';

module.exports = {
  forbidden: [
    ...Object.entries(rules).map(([name, [from, to]]) => ({
      name,
      severity: 'error',
      comment: `${from} must not import ${to.join(' or ')}`,
      from: { path: from },
      to: { path: to },
    })),
    {
      name: 'local-network-is-a-development-default',
      severity: 'error',
      comment: 'only the composition root (main.ts, cluster-primary.ts) starts the local network in process',
      from: { path: SRC, pathNot: `${SRC}(main|cluster-primary)\\.ts$` },
      to: { path: LOCAL_NETWORK },
    },
    {
      name: 'local-network-public-entry-only',
      severity: 'error',
      comment: 'the server imports the local network by its package name (@paid-api-marketplace/local-network) only',
      from: { path: SRC },
      to: { path: LOCAL_NETWORK, pathNot: LOCAL_NETWORK_ENTRY },
    },
    {
      name: 'local-network-stands-alone',
      severity: 'error',
      comment: 'the local network package imports nothing of the server, the SDKs or the contract package',
      from: { path: LOCAL_NETWORK },
      to: { path: '^(server|sdk-buyer|sdk-seller|openapi)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(node_modules|/dist/|/test/)' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.base.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
