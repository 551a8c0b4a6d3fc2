// `npm test -w server`: the server suite in two Jest runs, then one results file.
//  1. every file not listed below, on parallel Jest workers (TEST_WORKERS, default 3: the machine has 2 cores but
//     most files spend their time waiting on ledger-close timers and PostgreSQL, so a third worker pays);
//  2. the files below, one at a time (--runInBand), each with the machine to itself: they measure calls under load,
//     drive several server processes, or bound a wall-clock time, and would turn flaky beside other files.
// Both runs write their Jest JSON; they are merged into .data/jest-server.json (read by print-test-summary.mjs).
// Extra arguments are passed to both runs (e.g. a path pattern).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

export const SERIAL_TESTS = [
  'test/performance-guards/', // call counts and fast paths under concurrency
  'test/reliability/shutdown-under-load.test.ts', // load generator against a shutting-down service
  'test/reliability/crash-during-settlement.test.ts', // kills and restarts server processes mid-settlement
  'test/reliability/database-restart.test.ts', // its own PostgreSQL, stopped and started under load
  'test/reliability/two-processes.test.ts', // two server processes on one database
  'test/reliability/duplicate-storm.test.ts', // concurrent duplicate storms
  'test/main/cluster.test.ts', // several server processes
  'test/security/facilitator-payment-safety.test.ts', // a dropped submission reply racing ledger closes
  'test/domain-verification/check-dns-txt.test.ts', // bounds a wall-clock time
  'test/domain-verification/safe-fetcher.test.ts', // bounds a wall-clock time
];

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const server = path.join(root, 'server');
const jest = createRequire(import.meta.url).resolve('jest/bin/jest.js');
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const patterns = SERIAL_TESTS.map((p) => escape(`server/${p}`));
const extra = process.argv.slice(2);
const outDir = path.join(root, '.data');
fs.mkdirSync(outDir, { recursive: true });

function jestRun(name, args) {
  const outputFile = path.join(outDir, `jest-server-${name}.json`);
  fs.rmSync(outputFile, { force: true });
  const started = Date.now();
  const r = spawnSync(process.execPath, [jest, '-c', path.join(server, 'jest.config.js'), '--forceExit', '--passWithNoTests', '--json', `--outputFile=${outputFile}`, ...args, ...extra], { cwd: server, stdio: 'inherit' });
  console.error(`server suite, ${name} run: ${((Date.now() - started) / 1000).toFixed(1)} s, exit ${r.status}`);
  return fs.existsSync(outputFile) ? JSON.parse(fs.readFileSync(outputFile, 'utf8')) : null;
}

const workers = process.env.TEST_WORKERS ?? '3';
const runs = [
  jestRun('parallel', [`--maxWorkers=${workers}`, ...patterns.map((p) => `--testPathIgnorePatterns=${p}`)]),
  jestRun('serial', ['--runInBand', `--testPathIgnorePatterns=^(?!.*(${patterns.join('|')}))`]),
];

const sum = (key) => runs.reduce((n, r) => n + (r?.[key] ?? 0), 0);
const merged = {
  ...runs.find(Boolean),
  success: runs.every((r) => r?.success === true),
  startTime: Math.min(...runs.filter(Boolean).map((r) => r.startTime)),
  testResults: runs.flatMap((r) => r?.testResults ?? []),
};
for (const key of ['numTotalTests', 'numPassedTests', 'numFailedTests', 'numPendingTests', 'numTodoTests', 'numTotalTestSuites', 'numPassedTestSuites', 'numFailedTestSuites', 'numPendingTestSuites', 'numRuntimeErrorTestSuites']) merged[key] = sum(key);
// A run that wrote no results (Jest crashed) counts as one failed suite.
merged.numRuntimeErrorTestSuites += runs.filter((r) => !r).length;
fs.writeFileSync(path.join(outDir, 'jest-server.json'), JSON.stringify(merged));
console.error(`server suite: ${merged.numPassedTests} passed, ${merged.numFailedTests} failed, ${merged.numPendingTests} skipped in ${merged.numTotalTestSuites} files`);
process.exit(merged.success ? 0 : 1);
