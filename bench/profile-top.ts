/**
 * `node dist/bench/bench/profile-top.js FILE.cpuprofile… [N]`: where V8 CPU
 * profiles (from BENCH_CPU_PROF) spent their time: the top functions by self
 * time, and by total time (self and callees) for Inlet's own code. The server
 * writes one profile per thread; the largest, shown first, is its main thread.
 */
import { readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

const argv = process.argv.slice(2);
const files = argv.filter((a) => a.endsWith('.cpuprofile')).sort((a, b) => statSync(b).size - statSync(a).size);
if (files.length === 0) throw new Error('usage: profile-top FILE.cpuprofile… [N]');
const top = Number(argv.find((a) => /^\d+$/.test(a)) ?? 25);
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
for (const file of files) {
  process.stdout.write(`\n== ${file}\n`);
  analyse(JSON.parse(readFileSync(file, 'utf8')) as Profile);
}

function analyse(p: Profile): void {

  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfUs = new Map<number, number>();
  p.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));
  const totalUs = [...selfUs.values()].reduce((a, b) => a + b, 0);

  /** The file a frame runs in, relative to the repository when inside it. */
  const fileOf = (n: Node): string => {
    const path = n.callFrame.url.replace(/^file:\/\//, '');
    return path.startsWith(ROOT) ? path.slice(ROOT.length) : path;
  };
  const isInlet = (n: Node): boolean => fileOf(n).startsWith('dist/') && !fileOf(n).startsWith('dist/bench/');
  const label = (n: Node): string => {
    const file = fileOf(n);
    return `${n.callFrame.functionName || '(anonymous)'} ${file ? `${file}:${n.callFrame.lineNumber + 1}` : ''}`.trim();
  };

  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const n = byId.get(id)!;
    self.set(label(n), (self.get(label(n)) ?? 0) + us);
    // Each frame on the stack counts once per sample, however deep the recursion.
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur)!;
      if (!isInlet(f)) continue;
      const l = label(f);
      if (!seen.has(l)) inclusive.set(l, (inclusive.get(l) ?? 0) + us);
      seen.add(l);
    }
  }

  const print = (title: string, m: Map<string, number>): void => {
    process.stdout.write(`\n${title}\n`);
    for (const [l, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      process.stdout.write(`${((100 * us) / totalUs).toFixed(1).padStart(5)}%  ${l}\n`);
    }
  };
  process.stdout.write(`${(totalUs / 1e6).toFixed(1)} s sampled\n`);
  print('self time', self);
  print("total time, Inlet's own functions (dist/)", inclusive);
}
