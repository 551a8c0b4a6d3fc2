#!/usr/bin/env node
// Some tests need programs npm cannot provide: promtool and prometheus (alert rule unit tests and a real Prometheus
// scraping the service) and chromium (the operator dashboard in a headless browser). They come from Debian's
// `prometheus` and `chromium` packages. When one is missing and this runs as root on a machine with apt-get, it
// installs them; otherwise it stops with one line saying what to install. Never downloads a browser of its own.
import { execFileSync, spawnSync } from 'node:child_process';

const needed = [
  { command: 'promtool', pkg: 'prometheus' },
  { command: 'prometheus', pkg: 'prometheus' },
  { command: 'chromium', pkg: 'chromium' },
];
const has = (command) => spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
const missing = needed.filter((n) => !has(n.command));
if (missing.length === 0) process.exit(0);

const packages = [...new Set(missing.map((m) => m.pkg))];
const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
if (!isRoot || !has('apt-get')) {
  console.error(
    `Missing ${missing.map((m) => m.command).join(', ')}: install the Debian package(s) ${packages.join(' ')} ` +
      `(apt-get install -y ${packages.join(' ')}) and run the tests again.`,
  );
  process.exit(1);
}
console.log(`Installing Debian package(s) ${packages.join(' ')} for the tests (apt-get)...`);
const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
execFileSync('apt-get', ['update'], { stdio: 'inherit', env });
execFileSync('apt-get', ['install', '-y', ...packages], { stdio: 'inherit', env });
const still = needed.filter((n) => !has(n.command));
if (still.length > 0) {
  console.error(`Still missing after apt-get: ${still.map((m) => m.command).join(', ')}`);
  process.exit(1);
}
