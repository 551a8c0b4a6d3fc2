#!/usr/bin/env node
// The contract pipeline: redocly lint -> redocly bundle -> openapi-typescript.
//
//   node scripts/generate.mjs                 lint, bundle, generate; write what changed
//   node scripts/generate.mjs --check         regenerate in a temp dir and exit 1 listing every committed file
//                                             that differs (stale, missing or unexpected); the tree is not touched
//   node scripts/generate.mjs --bundle-only   lint and write the bundles in openapi/dist/ only
//   node scripts/generate.mjs --shared-only   write the SDK core's copies only (no lint, no bundle): the root
//                                             `prepare` (so `npm ci`) and the seller SDK's `prebuild` run it
//
// Outputs (all deterministic; all committed except the SDK core's copies, which are build output, see SHARED):
//   openapi/dist/openapi.yaml, openapi/dist/openapi.json   the full bundle (the server's validator and the docs
//                                                            read the JSON one)
//   openapi/dist/buyer.json, openapi/dist/seller.json      operations whose x-audience contains buyer / seller,
//                                                            unused components removed (redocly filter-in and
//                                                            remove-unused-components, see openapi/redocly.yaml)
//   server/src/generated/openapi.ts                         types of the full bundle
//   sdk-buyer/src/generated/openapi.ts                      types of the buyer bundle
//   sdk-seller/src/generated/openapi.ts                     types of the seller bundle
//   <each generated folder>/README.md                       says it is generated
//   docs/index.html                                         the Redoc page (scripts/build-docs.mjs), so that a
//                                                            stale copy is caught by --check too
//   the one SDK core, copied (see SHARED below)              sdk-buyer/src/core/* and sdk-buyer/src/receipts/* are
//                                                            the sources; sdk-seller/src/core/*,
//                                                            sdk-seller/src/receipts/* and server/src/domain/amount.ts
//                                                            are generated copies with a "do not edit" header (the
//                                                            seller SDK's not committed, .gitignore): written by
//                                                            --shared-only at install and build time, compared by
//                                                            --check
//   the local network's copies (see SHARED below)           local-network/src/amount.ts (of the SDK core's amounts)
//                                                            and local-network/src/cap71-xdr.ts, js-xdr.d.ts (of the
//                                                            server's CAP-71 XDR types), committed
import { performance } from 'node:perf_hooks';
import { execFile } from 'node:child_process';
import { mkdtemp, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SPEC_DIR = join(ROOT, 'openapi');
const REDOCLY = join(ROOT, 'node_modules', '.bin', 'redocly');
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const COMPONENT_SECTIONS = ['schemas', 'parameters', 'responses', 'examples', 'headers'];

// Named APIs of openapi/redocly.yaml and where their bundles go.
const BUNDLES = [
  { api: 'full', file: 'openapi/dist/openapi.yaml' },
  { api: 'full', file: 'openapi/dist/openapi.json' },
  { api: 'buyer', file: 'openapi/dist/buyer.json', audience: 'buyer' },
  { api: 'seller', file: 'openapi/dist/seller.json', audience: 'seller' },
];
// openapi-typescript targets: which bundle each one is generated from.
const TYPES = [
  { bundle: 'openapi/dist/openapi.json', dir: 'server/src/generated', what: 'the full contract (every operation)' },
  {
    bundle: 'openapi/dist/buyer.json',
    dir: 'sdk-buyer/src/generated',
    what: 'the buyer bundle (operations whose x-audience contains buyer)',
  },
  {
    bundle: 'openapi/dist/seller.json',
    dir: 'sdk-seller/src/generated',
    what: 'the seller bundle (operations whose x-audience contains seller)',
  },
];
// The one SDK core: each source file has a single home (the buyer SDK, which uses all of them) and is copied, with
// a generated-file header, into the packages that need it. Each SDK stands alone when installed (no shared runtime
// package), and the server's domain takes the amounts module without depending on an SDK.
// A folder is copied whole (every file in it, so a file added to the source folder is copied too). The copies are
// build output like dist/: ignored by git, so the tree holds one copy of each file; `npm ci` writes them (root
// `prepare`), and the seller SDK's build writes them again before it compiles.
const SHARED = [
  { from: 'sdk-buyer/src/core', to: 'sdk-seller/src/core' },
  { from: 'sdk-buyer/src/receipts', to: 'sdk-seller/src/receipts' },
  { from: 'sdk-buyer/src/core/amounts.ts', to: 'server/src/domain/amount.ts' },
  // The local Stellar network (its own workspace package, which imports nothing of the server): the same amounts
  // module, and the CAP-71 XDR types it shares with the service's facilitator (one definition of the wire format).
  // Committed, like the server's copy, so a reader can open them.
  { from: 'sdk-buyer/src/core/amounts.ts', to: 'local-network/src/amount.ts' },
  { from: 'server/src/domain/facilitator/cap71-xdr.ts', to: 'local-network/src/cap71-xdr.ts' },
  { from: 'server/src/domain/facilitator/js-xdr.d.ts', to: 'local-network/src/js-xdr.d.ts' },
];
// Folders that hold nothing but generated files: a file in them that the pipeline does not produce is stale.
const GENERATED_DIRS = [
  'openapi/dist',
  ...TYPES.map((t) => t.dir),
  ...SHARED.filter((s) => !s.from.endsWith('.ts')).map((s) => s.to),
];
const DOCS = 'docs/index.html';
// 26 + operations (stats, conformance runs x3, dashboard data) + seller wallet challenge + MCP (POST /mcp) + x402 face
// (supported, verify, settle, Bazaar list) + receipt keys (JWKS) + seller fees (issue #18) + seller API keys (create,
// list, delete; issue #19) + seller receipt keys (get, update; issue #20) + the facilitator's /.well-known/x402 (issue
// #30) + the Bazaar search (issue #30) + a seller confirming a changed price or payout (issue #33)
const EXPECTED_OPERATIONS = 47;

const args = new Set(process.argv.slice(2));
const CHECK = args.has('--check');
const BUNDLE_ONLY = args.has('--bundle-only');
const SHARED_ONLY = args.has('--shared-only');
for (const a of args) {
  if (!['--check', '--bundle-only', '--shared-only'].includes(a)) {
    process.stderr.write(
      `generate: unknown argument ${a}\nusage: node scripts/generate.mjs [--check] [--bundle-only | --shared-only]\n`,
    );
    process.exit(2);
  }
}

const env = {
  ...process.env,
  REDOCLY_TELEMETRY: 'off',
  REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
  NO_COLOR: '1',
  FORCE_COLOR: '0',
};
const timings = [];
const t0 = performance.now();

class GenerateError extends Error {}
function fail(message) {
  throw new GenerateError(message);
}

async function timed(label, fn) {
  const start = performance.now();
  const result = await fn();
  timings.push(`${label} ${((performance.now() - start) / 1000).toFixed(2)}s`);
  return result;
}

async function redocly(argv) {
  try {
    return await run(REDOCLY, argv, { cwd: SPEC_DIR, env, maxBuffer: 64 * 1024 * 1024 });
  } catch (err) {
    // Non-zero exit: keep stdout/stderr for the caller to report.
    return { stdout: err.stdout ?? '', stderr: err.stderr ?? String(err), code: err.code ?? 1 };
  }
}

// 1. Lint: zero errors and zero warnings (and nothing hidden by an ignore file).
async function lint() {
  const { stdout, stderr } = await redocly(['lint', 'openapi.yaml', '--config', 'redocly.yaml', '--format', 'json']);
  let report;
  try {
    report = JSON.parse(stdout);
  } catch {
    fail(`redocly lint did not produce a report:\n${stdout}\n${stderr}`);
  }
  const { errors = 0, warnings = 0, ignored = 0 } = report.totals ?? {};
  if (errors + warnings + ignored > 0) {
    const lines = (report.problems ?? []).map((p) => {
      const loc = p.location?.[0];
      const where = loc ? `${relative(ROOT, resolve(SPEC_DIR, loc.source?.ref ?? ''))}${loc.pointer ?? ''}` : '';
      return `  ${p.severity} ${p.ruleId}: ${p.message}\n    at ${where}`;
    });
    fail(
      `redocly lint: ${errors} error(s), ${warnings} warning(s), ${ignored} ignored (all must be ` +
        `0)\n${lines.join('\n')}`,
    );
  }
  return report;
}

// 2. Bundle every named API into the staging directory.
async function bundle(stage) {
  await Promise.all(
    BUNDLES.map(async (b) => {
      const out = join(stage, b.file);
      await mkdir(dirname(out), { recursive: true });
      const res = await redocly(['bundle', b.api, '--config', 'redocly.yaml', '--output', out]);
      if (res.code || !existsSync(out))
        fail(`redocly bundle ${b.api} -> ${b.file} failed:\n${res.stdout}\n${res.stderr}`);
      // Byte-stable: always exactly one trailing newline.
      const text = (await readFile(out, 'utf8')).replace(/\s*$/, '\n');
      await writeFile(out, text);
    }),
  );
}

function operations(doc) {
  const ops = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const m of HTTP_METHODS) if (item[m]) ops.push({ path, method: m, op: item[m] });
  }
  return ops;
}

async function listFiles(dir) {
  try {
    const entries = await readdir(dir, { withFileTypes: true, recursive: true });
    return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath ?? e.path, e.name));
  } catch (err) {
    if (err.code === 'ENOENT') return [];
    throw err;
  }
}

// Checks the lint rules cannot make on split files.
async function checkBundles(stage) {
  const full = JSON.parse(await readFile(join(stage, 'openapi/dist/openapi.json'), 'utf8'));
  const ops = operations(full);
  if (ops.length !== EXPECTED_OPERATIONS)
    fail(`the full bundle has ${ops.length} operations, expected ${EXPECTED_OPERATIONS}`);

  // Every component file must end up in the bundle; a file nothing refers to is an unused component.
  const orphans = [];
  for (const section of COMPONENT_SECTIONS) {
    const files = (await readdir(join(SPEC_DIR, 'components', section)).catch(() => [])).filter((f) =>
      f.endsWith('.yaml'),
    );
    const bundled = new Set(Object.keys(full.components?.[section] ?? {}));
    for (const f of files)
      if (!bundled.has(f.replace(/\.yaml$/, ''))) orphans.push(`openapi/components/${section}/${f}`);
  }
  if (orphans.length) fail(`unused component files (nothing refers to them):\n  ${orphans.join('\n  ')}`);

  // The filtered bundles hold exactly the operations of their audience.
  for (const b of BUNDLES.filter((x) => x.audience)) {
    const doc = JSON.parse(await readFile(join(stage, b.file), 'utf8'));
    const got = operations(doc)
      .map((o) => o.op.operationId)
      .sort();
    const want = ops
      .filter((o) => o.op['x-audience'].includes(b.audience))
      .map((o) => o.op.operationId)
      .sort();
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      fail(`${b.file}: operations ${got.join(', ')}\nexpected ${want.join(', ')}`);
    }
  }
}

function generatedReadme(t) {
  return `# Generated code: do not edit

Everything in this folder is generated by \`scripts/generate.mjs\` from \`${t.bundle}\`, ${t.what}, which is
bundled from the split OpenAPI contract in \`openapi/\`. Hand edits are overwritten, and CI
(\`npm run check:generated\`) fails when these files do not match the spec.

To change the types, edit the spec under \`openapi/\` and run \`npm run generate\` from the repository root.
`;
}

// 3. openapi-typescript, in process, from the bundles (never from the split files).
async function generateTypes(stage) {
  const { default: openapiTS, astToString } = await import('openapi-typescript');
  for (const t of TYPES) {
    const source = JSON.parse(await readFile(join(stage, t.bundle), 'utf8'));
    const ast = await openapiTS(source, { silent: true, alphabetize: false });
    const header =
      `/**\n` +
      ` * GENERATED FILE: DO NOT EDIT.\n` +
      ` * Generated by scripts/generate.mjs (openapi-typescript) from ${t.bundle},\n` +
      ` * ${t.what}, bundled from the OpenAPI contract in openapi/.\n` +
      ` * Change the spec under openapi/ and run \`npm run generate\`.\n` +
      ` */\n\n`;
    const out = join(stage, t.dir, 'openapi.ts');
    await mkdir(dirname(out), { recursive: true });
    await writeFile(out, header + astToString(ast).replace(/\s*$/, '\n'));
    await writeFile(join(stage, t.dir, 'README.md'), generatedReadme(t));
  }
}

// 4. The documentation page, from the staged full bundle.
async function buildDocs(stage) {
  try {
    await run(
      process.execPath,
      [
        join(ROOT, 'scripts', 'build-docs.mjs'),
        '--spec',
        join(stage, 'openapi/dist/openapi.json'),
        '--out',
        join(stage, DOCS),
        '--quiet',
      ],
      { cwd: ROOT, env, maxBuffer: 16 * 1024 * 1024 },
    );
  } catch (err) {
    fail(`scripts/build-docs.mjs failed:\n${err.stderr ?? err.message}`);
  }
}

// 5. The shared SDK core: every copy is its source behind a header that names the source.
function copyHeader(source) {
  return (
    `/**\n` +
    ` * GENERATED FILE: DO NOT EDIT. Source: ${source}, copied by scripts/generate.mjs.\n` +
    ` * Change the source and run \`npm run generate\` (\`npm run check:generated\` fails when this copy differs).\n` +
    ` */\n`
  );
}

async function copyShared(stage) {
  for (const { from, to } of SHARED) {
    const folder = from.endsWith('.ts') ? null : await listFiles(join(ROOT, from));
    const pairs = folder
      ? folder.map((f) => [relative(ROOT, f), join(to, relative(join(ROOT, from), f))])
      : [[from, to]];
    if (!pairs.length) fail(`the shared SDK core source ${from} has no files`);
    for (const [source, target] of pairs) {
      await mkdir(dirname(join(stage, target)), { recursive: true });
      await writeFile(join(stage, target), copyHeader(source) + (await readFile(join(ROOT, source), 'utf8')));
    }
  }
}

// 6. Compare the staging directory with the tree; write (or, with --check, report) every difference.
async function sync(stage, dirs) {
  const produced = new Map();
  for (const f of await listFiles(stage)) produced.set(relative(stage, f), f);
  const changed = [];
  for (const [rel, abs] of [...produced].sort(([a], [b]) => a.localeCompare(b))) {
    const next = await readFile(abs);
    const target = join(ROOT, rel);
    const current = await readFile(target).catch(() => null);
    if (current && current.equals(next)) continue;
    changed.push(`${current ? 'stale' : 'missing'}: ${rel}`);
    if (!CHECK) {
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, next);
    }
  }
  for (const dir of dirs) {
    for (const f of await listFiles(join(ROOT, dir))) {
      const rel = relative(ROOT, f);
      if (produced.has(rel)) continue;
      changed.push(`unexpected: ${rel}`);
      if (!CHECK) await rm(f);
    }
  }
  return changed;
}

const stage = await mkdtemp(join(tmpdir(), 'generate-'));
if (SHARED_ONLY) {
  try {
    await copyShared(stage);
    const changed = await sync(
      stage,
      SHARED.filter((s) => !s.from.endsWith('.ts')).map((s) => s.to),
    );
    if (changed.length)
      process.stdout.write(`generate --shared-only: wrote ${changed.length} file(s) of the SDK core copies\n`);
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
  process.exit(process.exitCode ?? 0);
}
try {
  await timed('lint', lint);
  await timed('bundle', () => bundle(stage));
  await timed('check bundles', () => checkBundles(stage));
  if (!BUNDLE_ONLY) {
    await timed('openapi-typescript', () => generateTypes(stage));
    await timed('docs', () => buildDocs(stage));
    await timed('shared core', () => copyShared(stage));
  }
  const changed = await sync(stage, BUNDLE_ONLY ? ['openapi/dist'] : GENERATED_DIRS);
  const total = ((performance.now() - t0) / 1000).toFixed(2);
  if (CHECK) {
    if (changed.length) {
      process.stderr.write(
        `generate --check: ${changed.length} generated file(s) differ from the spec or their sources:\n  ` +
          `${changed.join('\n  ')}\n` +
          `Run \`npm run generate\` and commit the result.\n`,
      );
      process.exitCode = 1;
    } else {
      process.stdout.write(
        `generate --check: lint clean, all generated files are up to date (${total}s: ${timings.join(', ')})\n`,
      );
    }
  } else {
    process.stdout.write(
      `generate: lint clean (0 errors, 0 warnings); ` +
        `${changed.length ? `updated ${changed.length} file(s):\n  ${changed.join('\n  ')}` : 'nothing changed'}\n` +
        `generate: done in ${total}s (${timings.join(', ')})\n`,
    );
  }
} catch (err) {
  if (!(err instanceof GenerateError)) throw err;
  process.stderr.write(`generate: ${err.message}\n`);
  process.exitCode = 1;
} finally {
  await rm(stage, { recursive: true, force: true });
}
