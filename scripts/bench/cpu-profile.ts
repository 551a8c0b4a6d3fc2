/**
 * Reads a V8 .cpuprofile (node --cpu-prof) and prints where the time went: the top functions by self time, and the
 * share of samples spent inside each package or server folder (inclusive: a sample counts once for every area on
 * its stack). Run on its own: `npx tsx scripts/bench/cpu-profile.ts <file.cpuprofile> [top]`.
 */
import fs from 'node:fs';
import path from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** A short place for a script URL: the npm package, the repository file, or node's internals. */
function area(url: string): string {
  if (!url) return '';
  const p = url.replace(/^file:\/\//, '');
  const nm = p.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const parts = p.slice(nm + 'node_modules/'.length).split('/');
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  if (p.startsWith('node:')) return 'node internals';
  const src = /\/(server|scripts)\/(.*)$/.exec(p);
  if (src) return `${src[1]}/${src[2]}`;
  return p;
}

function place(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const p = url.replace(/^file:\/\//, '');
  const nm = p.lastIndexOf('node_modules/');
  const src = /\/((?:server|scripts)\/.*)$/.exec(p);
  const short = nm >= 0 ? p.slice(nm + 'node_modules/'.length) : src ? src[1] : p;
  return `${functionName || '(anonymous)'} ${short ? `${short}:${lineNumber + 1}` : ''}`.trim();
}

/** Now on the profiler's clock (CLOCK_MONOTONIC in microseconds, the clock of process.hrtime), for `window`. */
export function profileClockUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/**
 * `window` (from profileClockUs() in any process of this machine) keeps only the samples taken inside it, e.g. the
 * measured run without start-up and warm-up.
 */
export function summarizeCpuProfile(file: string, top = 25, window?: { fromUs: number; toUs: number }): string {
  const prof = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  if (window) {
    let t = prof.startTime;
    const samples: number[] = [];
    const deltas: number[] = [];
    for (let i = 0; i < prof.samples.length; i++) {
      t += prof.timeDeltas[i] ?? 0;
      if (t >= window.fromUs && t <= window.toUs) {
        samples.push(prof.samples[i]);
        deltas.push(prof.timeDeltas[i] ?? 0);
      }
    }
    prof.samples = samples;
    prof.timeDeltas = deltas;
  }
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<number, number>();
  for (let i = 0; i < prof.samples.length; i++)
    self.set(prof.samples[i], (self.get(prof.samples[i]) ?? 0) + (prof.timeDeltas[i] ?? 0));
  const totalUs = prof.timeDeltas.reduce((a, b) => a + Math.max(0, b), 0);

  const selfByPlace = new Map<string, number>();
  let idleUs = 0;
  for (const [id, us] of self) {
    const n = byId.get(id)!;
    if (n.callFrame.functionName === '(idle)') idleUs += us;
    selfByPlace.set(place(n), (selfByPlace.get(place(n)) ?? 0) + us);
  }
  const busyUs = totalUs - idleUs;

  const selfByArea = new Map<string, number>();
  for (const [id, us] of self) {
    const n = byId.get(id)!;
    if (n.callFrame.functionName === '(idle)') continue;
    const a = area(n.callFrame.url) || n.callFrame.functionName;
    selfByArea.set(a, (selfByArea.get(a) ?? 0) + us);
  }

  // Inclusive time per area: walk each sampled node's stack once.
  const inclusive = new Map<string, number>();
  const stackAreas = new Map<number, Set<string>>();
  const areasOf = (id: number): Set<string> => {
    const cached = stackAreas.get(id);
    if (cached) return cached;
    const set = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const a = area(byId.get(cur)!.callFrame.url);
      if (a) set.add(a);
      const fn = byId.get(cur)!.callFrame.functionName;
      if (fn === '(garbage collector)') set.add('(garbage collector)');
    }
    stackAreas.set(id, set);
    return set;
  };
  for (const [id, us] of self) for (const a of areasOf(id)) inclusive.set(a, (inclusive.get(a) ?? 0) + us);

  const pct = (us: number) => `${((100 * us) / Math.max(1, busyUs)).toFixed(1).padStart(5)}%`;
  const lines = [
    `CPU profile ${path.basename(file)}${window ? ' (measured window only)' : ''}: ${prof.samples.length} ` +
      `samples, ${(totalUs / 1e6).toFixed(1)} s sampled, ${(busyUs / 1e6).toFixed(1)} s busy ` +
      `(${((100 * busyUs) / Math.max(1, totalUs)).toFixed(0)}%); shares below are of busy time`,
    `  top ${top} functions by self time:`,
    ...[...selfByPlace.entries()]
      .filter(([k]) => !k.startsWith('(idle)'))
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, us]) => `    ${pct(us)}  ${k}`),
    `  self time by package / server file / native (where the CPU actually ran):`,
    ...[...selfByArea.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, us]) => `    ${pct(us)}  ${k}`),
    `  inclusive share by package / server file (a sample counts once per area on its stack; a middleware that awaits`,
    `  next() also carries what runs after it):`,
    ...[...inclusive.entries()]
      .filter(([k]) => k !== 'node internals')
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, us]) => `    ${pct(us)}  ${k}`),
  ];
  return lines.join('\n');
}

if (require.main === module) {
  const [file, top] = process.argv.slice(2);
  if (!file) {
    console.error('usage: tsx scripts/bench/cpu-profile.ts <file.cpuprofile> [top]');
    process.exit(2);
  }
  console.log(summarizeCpuProfile(file, Number(top ?? 25)));
}
