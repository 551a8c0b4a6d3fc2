// Runs one Jest suite of `npm test` and writes one results file, .data/<results>.json (read by
// scripts/print-test-summary.mjs). A suite with a `serial` list runs in two Jest runs:
//  1. every file not in the suite's `serial` list, on parallel Jest workers (TEST_WORKERS, default 3: the machine
//     has 2 cores, but most files spend their time waiting on ledger-close timers, PostgreSQL and child processes,
//     so a third worker pays);
//  2. the `serial` files, after the parallel run and never beside it, at most TEST_SERIAL_WORKERS at a time (default
//     2, one per core; 1 runs them one by one). Three were tried (session 9): on fresh clones the lane took 116.1 and
//     159.9 s on three workers against 128.1, 129.8 and 132.6 s on two, and three put the files that race short ledger
//     windows beside two others (README, "How the suites run").
// Usage: node scripts/run-jest.mjs <server|sdk-buyer|sdk-seller|e2e|local-network> [extra Jest arguments, e.g. a
// path pattern].
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const SUITES = {
  server: {
    config: 'server/jest.config.js',
    results: 'jest-server',
    // Files that measure calls or wall-clock time under load, drive several server processes or their own
    // PostgreSQL, or race ledger closes: beside the parallel files (3 workers on 2 cores) they would turn flaky.
    // Not here: reliability/crash-during-settlement.test.ts and crash-with-channels-leased.test.ts. They assert where
    // every payment ends, never how fast (their waits are bounds), and spend their time waiting on kills, restarts
    // and lease expiry: on a parallel worker they take no core from the others. (The first used to fail under load
    // when a kill landed while the process held the settlement-confirmation job: that job stayed locked for Agenda's
    // 10 minutes; now 30 s.)
    // In this order (scripts/jest-ordered-sequencer.cjs), longest first, so that no long file starts last beside an
    // idle worker (seconds: each file on the fresh-clone run of d1928c4; README, "How the suites run").
    serial: [
      // two server processes, a restart, RPC stalls past time bounds (47.1 s; its starts now run inside the stalls)
      'server/test/reliability/x402-settlement-pending.test.ts',
      'server/test/operations/dashboard.test.ts', // headless Chromium against live traffic (28.9 s)
      'server/test/main/cluster.test.ts', // two clusters of three processes, one with its own PostgreSQL (28.7 s)
      'server/test/reliability/database-restart.test.ts', // its own PostgreSQL, stopped and started under load (23.8 s)
      // a load generator against a shutting-down service (21.8 s)
      'server/test/reliability/shutdown-under-load.test.ts',
      'server/test/reliability/two-processes.test.ts', // two server processes on one database (15.3 s)
      'server/test/reliability/duplicate-storm.test.ts', // concurrent duplicate storms (15.0 s)
      'server/test/facilitator/settlement.test.ts', // 50 concurrent settles racing 5 s transaction time bounds (11.9 s)
      // a dropped submission reply racing ledger closes (10.7 s)
      'server/test/security/facilitator-payment-safety.test.ts',
      'server/test/facilitator/pubnet-fees.test.ts', // a settle must land within two 1 s ledgers (8.8 s)
      'server/test/main/shutdown.test.ts', // starts main.ts through tsx and gives it 60 s to serve /health (7.7 s)
      // two instances settling in parallel against 40 ms ledgers (6.8 s)
      'server/test/facilitator/channel-pool.test.ts',
      'server/test/main/compiled-start.test.ts', // starts the build (npm start) and stops it (5.3 s)
      'server/test/performance-guards/', // call counts and fast paths under concurrency (6 files; 5 took 16.1 s)
    ],
  },
  // The SDK and end-to-end suites run one file at a time (`serial: 'all'`): their payments are bounded by ledger
  // counts on 200 ms ledgers (validForLedgers 40: 8 s) and their clients by rate-limit windows, and beside other
  // files on 2 shared cores those expired (measured: buyer-attacks.test.ts "authorization expired" and client.test.ts's
  // 429 test failed on 3 workers at load 12-18). The two SDK suites run side by side (`npm run test:sdk`,
  // scripts/run-parallel.mjs: one file each at a time, one per core); the end-to-end suite runs beside the type check
  // (no test rebuilds an SDK's dist/: npm test's pretest does, scripts/build-sdks-if-stale.mjs).
  'sdk-buyer': { config: 'sdk-buyer/jest.config.js', results: 'jest-sdk-buyer', serial: 'all' },
  'sdk-seller': { config: 'sdk-seller/jest.config.js', results: 'jest-sdk-seller', serial: 'all' },
  e2e: { config: 'test/jest.config.js', results: 'jest-e2e', serial: 'all' },
  // The local Stellar network's package (no PostgreSQL, no server): its files close their own ledgers and run on
  // parallel workers, in one run (no serial files).
  'local-network': { config: 'local-network/jest.config.js', results: 'jest-local-network', serial: [] },
};

const [suiteName, ...extra] = process.argv.slice(2);
const suite = SUITES[suiteName];
if (!suite) {
  console.error(`usage: run-jest.mjs <${Object.keys(SUITES).join('|')}> [jest args]`);
  process.exit(2);
}
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const jest = path.join(path.dirname(createRequire(import.meta.url).resolve('jest')), '../bin/jest.js');
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const serial = suite.serial === 'all' ? [] : suite.serial.map(escape);
const outDir = path.join(root, '.data');
fs.mkdirSync(outDir, { recursive: true });

// The caller's arguments go first: Jest's array options (--testPathIgnorePatterns) would swallow path patterns after
// them.
function jestRun(name, args, env = {}) {
  const outputFile = path.join(outDir, `${suite.results}-${name}.json`);
  fs.rmSync(outputFile, { force: true });
  const started = Date.now();
  const r = spawnSync(
    process.execPath,
    [
      jest,
      '-c',
      path.join(root, suite.config),
      ...extra,
      '--forceExit',
      '--passWithNoTests',
      '--json',
      `--outputFile=${outputFile}`,
      ...args,
    ],
    { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } },
  );
  console.error(`${suiteName} suite, ${name} run: ${((Date.now() - started) / 1000).toFixed(1)} s, exit ${r.status}`);
  return fs.existsSync(outputFile) ? JSON.parse(fs.readFileSync(outputFile, 'utf8')) : null;
}

const runs =
  suite.serial === 'all'
    ? [jestRun('serial', ['--runInBand'])]
    : !serial.length
      ? [jestRun('parallel', [`--maxWorkers=${process.env.TEST_WORKERS ?? '3'}`])]
      : [
          // synchronous_commit and fsync off on the parallel run's PostgreSQL (server/test/support/global-setup.ts);
          // the serial files keep the shipped settings.
          jestRun(
            'parallel',
            [`--maxWorkers=${process.env.TEST_WORKERS ?? '3'}`, ...serial.map((p) => `--testPathIgnorePatterns=${p}`)],
            { TEST_POSTGRES_ASYNC_COMMIT: '1' },
          ),
          jestRun(
            'serial',
            [
              `--maxWorkers=${process.env.TEST_SERIAL_WORKERS ?? '2'}`,
              `--testPathIgnorePatterns=^(?!.*(${serial.join('|')}))`,
              `--testSequencer=${path.join(root, 'scripts/jest-ordered-sequencer.cjs')}`,
            ],
            { TEST_ORDER: JSON.stringify(suite.serial) },
          ),
        ];

const sum = (key) => runs.reduce((n, r) => n + (r?.[key] ?? 0), 0);
const merged = {
  ...runs.find(Boolean),
  success: runs.every((r) => r?.success === true),
  startTime: Math.min(...runs.filter(Boolean).map((r) => r.startTime)),
  testResults: runs.flatMap((r) => r?.testResults ?? []),
};
for (const key of [
  'numTotalTests',
  'numPassedTests',
  'numFailedTests',
  'numPendingTests',
  'numTodoTests',
  'numTotalTestSuites',
  'numPassedTestSuites',
  'numFailedTestSuites',
  'numPendingTestSuites',
  'numRuntimeErrorTestSuites',
])
  merged[key] = sum(key);
// A run that wrote no results (Jest crashed) counts as one failed suite.
merged.numRuntimeErrorTestSuites += runs.filter((r) => !r).length;
fs.writeFileSync(path.join(outDir, `${suite.results}.json`), JSON.stringify(merged));
console.error(
  `${suiteName} suite: ${merged.numPassedTests} passed, ${merged.numFailedTests} failed, ` +
    `${merged.numPendingTests} skipped in ${merged.numTotalTestSuites} files`,
);
process.exit(merged.success ? 0 : 1);
