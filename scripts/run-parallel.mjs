// Runs each argument as a shell command, all at once, and exits 1 when any of them fails (after all have ended, so
// every failure is printed). `npm test` uses it for work that fits beside each other on two cores: the two SDK suites
// (one file at a time each), and the type check beside them.
// Usage: node scripts/run-parallel.mjs "<command>" "<command>" ...
import { spawn } from 'node:child_process';

const commands = process.argv.slice(2);
const codes = await Promise.all(
  commands.map(
    (command) =>
      new Promise((resolve) =>
        spawn(command, { shell: true, stdio: 'inherit' }).on('exit', (code, signal) => resolve(signal ? 1 : code)),
      ),
  ),
);
commands.forEach(
  (command, i) => codes[i] !== 0 && console.error(`run-parallel: "${command}" failed (exit ${codes[i]})`),
);
process.exit(codes.every((c) => c === 0) ? 0 : 1);
