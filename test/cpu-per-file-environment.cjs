/**
 * A measuring tool, not part of any suite's configuration: Jest's node environment that appends one line per test
 * file to `.data/cpu-per-file.jsonl` (or CPU_PER_FILE_OUT): the file, the worker's CPU (user + system, ms) and wall
 * time (ms) from the environment's creation to its teardown (module loading, every hook and test, the service's
 * background work while the file runs). Children a file starts (main.ts through tsx) and PostgreSQL are not counted.
 * Usage: `npx jest -c server/jest.config.js --testEnvironment=<repo>/test/cpu-per-file-environment.cjs <files>`.
 */
const fs = require('node:fs');
const path = require('node:path');
const NodeEnvironment = require('jest-environment-node').TestEnvironment;

const out = process.env.CPU_PER_FILE_OUT ?? path.join(__dirname, '../.data/cpu-per-file.jsonl');

class CpuPerFileEnvironment extends NodeEnvironment {
  constructor(config, context) {
    super(config, context);
    this.file = path.relative(path.join(__dirname, '..'), context.testPath);
    this.cpu = process.cpuUsage();
    this.started = Date.now();
  }

  async teardown() {
    const { user, system } = process.cpuUsage(this.cpu);
    const line = {
      file: this.file,
      pid: process.pid,
      cpuMs: Math.round((user + system) / 1000),
      wallMs: Date.now() - this.started,
      load: fs.readFileSync('/proc/loadavg', 'utf8').split(' ')[0],
    };
    fs.mkdirSync(path.dirname(out), { recursive: true });
    fs.appendFileSync(out, `${JSON.stringify(line)}\n`);
    await super.teardown();
  }
}

module.exports = CpuPerFileEnvironment;
