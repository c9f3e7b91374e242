/**
 * Tests wait on the event they mean, assert what must hold, and reach code
 * through its public surface. Every test file (and test helper) is read line
 * by line for the forms that broke those rules before: a timer awaited alone
 * as synchronisation, an elapsed wall-clock time in an expect, an assertion
 * true of any value, a cast that reaches past a type to its internals. A line
 * that must keep one names itself in ALLOWED, with its reason; an entry that
 * no longer matches anything fails too, so the list does not rot.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SELF = relative(ROOT, fileURLToPath(import.meta.url));

type Kind = 'sleep' | 'wall-clock' | 'always-true' | 'private-cast';

const PATTERNS: Record<Kind, RegExp> = {
  // A timer awaited for its own sake: `await new Promise((r) => setTimeout(r, n))`,
  // `await sleep(n)`, `await setTimeout(n)` (timers/promises), page.waitForTimeout(n).
  sleep: /await\s+(?:new\s+Promise\s*(?:<[^>]*>)?\s*\(\s*\(?\s*(\w+)\s*\)?\s*=>\s*setTimeout\s*\(\s*\1\b|(?:sleep|delay|pause|nap|setTimeout)\s*\(|[\w.]*waitForTimeout\s*\()/,
  // An elapsed time read in the expect itself: `expect(Date.now() - started)`.
  'wall-clock': /expect\s*\(\s*(?:Date\.now|performance\.now)\s*\(\s*\)\s*-|process\.hrtime/,
  // True of every number (or of nothing at all).
  'always-true':
    /toBeGreaterThanOrEqual\s*\(\s*-?0n?\s*\)|toBeGreaterThan\s*\(\s*-\s*(?:1|Infinity)\s*\)|toBeLessThan(?:OrEqual)?\s*\(\s*(?:Infinity|Number\.(?:MAX_SAFE_INTEGER|MAX_VALUE|POSITIVE_INFINITY))\s*\)|>=\s*0\s*\)\s*\.toBe\(\s*true\s*\)|expect\s*\(\s*(?:true|1)\s*\)/,
  // `(x as any)`, `x as unknown as { field }`: a cast that claims what the type does not say.
  'private-cast': /\bas\s+any\s*([);,.\]]|$)|\bas\s+unknown\s+as\s+\{/,
};

/** Lines that keep a form on purpose: the file, the kind, a piece of the line, and why. */
const ALLOWED: { file: string; kind: Kind; line: string; reason: string }[] = [
  {
    file: 'test/process/postgres-outage.test.ts', kind: 'sleep', line: "await sleep(answer.status === 202 ? 10 : 50)",
    reason: 'the load itself: each client loop sends at a modest pace and does not spin on quick 503s',
  },
  {
    file: 'test/process/postgres-outage.test.ts', kind: 'sleep', line: 'await sleep(outageMs)',
    reason: 'the outage itself: the database stays away for this long while the load goes on',
  },
  {
    file: 'test/process/redis-outage.test.ts', kind: 'sleep', line: 'await sleep(200)',
    reason: 'the pace of a bounded probe (50 tries): each probe is a request the limit counts, and the pace gives the figure it reports (time back to Redis)',
  },
  {
    file: 'test/sdk/pacing.test.ts', kind: 'sleep', line: 'await delay(3000)',
    reason: "the scenario's gap, not a wait for an event: the server's windows run on the real clock, and the trickle must be seconds older than the job in the window",
  },
  {
    file: 'test/ops/docs-pages.test.ts', kind: 'private-cast', line: 'as unknown as { labelNames: string[] }',
    reason: "prom-client's types do not declare a metric's label names, and a labelled metric with no series yet shows none in the JSON",
  },
  {
    file: 'test/openapi.test.ts', kind: 'private-cast', line: "openApiDocument('http://inlet.test') as any",
    reason: 'the test edits the served JSON document to make a regressed one; it reaches no class, only nested JSON',
  },
  {
    file: 'test/e2e/console.browser.test.ts', kind: 'private-cast', line: 'window as unknown as { notReloaded',
    reason: "a mark set on the page's window to tell a reload from none; the page's globals have no type here",
  },
];

function testFiles(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name === 'dist' || e.name.startsWith('.')) continue;
    const path = join(dir, e.name);
    if (e.isDirectory()) testFiles(path, out);
    else if (/\.test\.ts$/.test(e.name) || (/\.ts$/.test(e.name) && relative(ROOT, path).startsWith('test/helpers/'))) out.push(relative(ROOT, path));
  }
  return out;
}

/** Every line of the test files showing one of the forms, as "file:line kind: text". */
function findings(): { where: string; file: string; kind: Kind; text: string }[] {
  const found: { where: string; file: string; kind: Kind; text: string }[] = [];
  for (const file of testFiles(ROOT)) {
    if (file === SELF) continue;
    const content = readFileSync(join(ROOT, file), 'utf8');
    const lines = content.split('\n');
    lines.forEach((text, i) => {
      for (const [kind, re] of Object.entries(PATTERNS) as [Kind, RegExp][]) {
        if (re.test(text)) found.push({ where: `${file}:${i + 1}`, file, kind, text: text.trim() });
      }
    });
    for (const n of elapsedTimeAsserts(content)) {
      const text = lines[n - 1]!;
      if (!PATTERNS['wall-clock'].test(text)) found.push({ where: `${file}:${n}`, file, kind: 'wall-clock', text: text.trim() });
    }
  }
  return found;
}

const CLOCK = /\b(?:Date\.now|performance\.now)\s*\(\s*\)/;
/**
 * `name = rhs` and `obj.name = rhs` (the right side up to the statement's
 * end), `name: rhs` (a property, up to the property's end), where a statement,
 * an expression or a property begins (never a ternary's `:`).
 */
const BINDINGS = [
  /(?:^|[{,(;]|\b(?:const|let|var)\s)\s*(?:[\w$]+\.)*([\w$]+)\s*=(?![=>])\s*/g,
  /(?:^|[{,(])\s*([\w$]+)\s*:(?!:)\s*/g,
];

/** The right side that starts at `from`: up to a `;`, or a `,` or closing bracket outside the brackets it opens. */
function rightSide(line: string, from: number): string {
  let depth = 0;
  for (let i = from; i < line.length; i++) {
    const c = line[i]!;
    if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') {
      if (depth === 0) return line.slice(from, i);
      depth--;
    } else if (c === ';' || (c === ',' && depth === 0)) return line.slice(from, i);
  }
  return line.slice(from);
}
/** An arrow function's head: the names after it are its parameters, not uses. */
const ARROW = /^\s*(?:async\s*)?(?:\([^)]*\)|[\w$]+)\s*(?::[^=]*)?=>/;
const escaped = (names: Set<string>) => [...names].map((n) => n.replace(/\$/g, '\\$')).join('|');

/**
 * Lines of a file that assert on an elapsed wall-clock time kept in a name
 * first: `const t0 = performance.now(); … const took = performance.now() - t0;
 * … expect(took)…`, or `{ ms: performance.now() - start }` read back as
 * `expect(answer.ms)`. A name bound to a clock read is a mark; one bound to a
 * difference with a mark (or to anything made of such a name) is an elapsed
 * time; an expect line that names an elapsed time or takes a difference with
 * a mark is the finding. Names are followed within the file, whatever their
 * scope: a false finding is a name to change or a line for ALLOWED.
 */
export function elapsedTimeAsserts(text: string): number[] {
  const lines = text.split('\n');
  const marks = new Set<string>();
  const elapsed = new Set<string>();
  const difference = () => {
    if (marks.size === 0) return null;
    const mark = `(?<![\\w$.])(?:[\\w$]+\\.)*(?:${escaped(marks)})(?![\\w$])`;
    return new RegExp(`(?:${CLOCK.source}|${mark})\\s*-\\s*${mark}`);
  };
  const namesAny = (names: Set<string>) => (names.size === 0 ? null : new RegExp(`(?<![\\w$])(?:${escaped(names)})(?![\\w$])`));
  for (let changed = true; changed; ) {
    changed = false;
    const diff = difference();
    const usesElapsed = namesAny(elapsed);
    for (const line of lines) {
      for (const m of BINDINGS.flatMap((re) => [...line.matchAll(re)])) {
        const name = m[1];
        const rhs = rightSide(line, m.index + m[0].length);
        if (name === undefined || ARROW.test(rhs)) continue;
        // An object literal's fields are bindings of their own: the object is not its slowest field.
        const isElapsed = !/^\s*\{/.test(rhs) && ((diff?.test(rhs) ?? false) || (usesElapsed?.test(rhs) ?? false));
        const alias = marks.size > 0 && new RegExp(`^\\s*(?:[\\w$]+\\.)*(?:${escaped(marks)})\\s*$`).test(rhs);
        if (isElapsed && !elapsed.has(name)) {
          elapsed.add(name);
          changed = true;
        } else if (!isElapsed && !elapsed.has(name) && (CLOCK.test(rhs) || alias) && !marks.has(name)) {
          marks.add(name);
          changed = true;
        }
      }
    }
  }
  const diff = difference();
  const usesElapsed = namesAny(elapsed);
  const found: number[] = [];
  lines.forEach((line, i) => {
    if (/\bexpect\s*\(/.test(line) && ((diff?.test(line) ?? false) || (usesElapsed?.test(line) ?? false))) found.push(i + 1);
  });
  return found;
}

const allowed = (f: { file: string; kind: Kind; text: string }) => ALLOWED.some((a) => a.file === f.file && a.kind === f.kind && f.text.includes(a.line));

it('no test sleeps as synchronisation, times the wall clock in an expect, asserts what cannot fail, or casts into internals', () => {
  const bad = findings().filter((f) => !allowed(f)).map((f) => `${f.where} ${f.kind}: ${f.text}`);
  expect(bad).toEqual([]);
});

it('every allowed line still exists, with a reason', () => {
  const found = findings();
  const stale = ALLOWED.filter((a) => !found.some((f) => a.file === f.file && a.kind === f.kind && f.text.includes(a.line)));
  expect(stale).toEqual([]);
  for (const a of ALLOWED) expect(a.reason.length, `${a.file}: ${a.line}`).toBeGreaterThan(20);
});

it('the patterns catch the forms they name', () => {
  const hits = (kind: Kind, line: string) => PATTERNS[kind].test(line);
  expect(hits('sleep', 'await new Promise((r) => setTimeout(r, 20));')).toBe(true);
  expect(hits('sleep', 'await new Promise((resolve) => setTimeout(resolve, 600));')).toBe(true);
  expect(hits('sleep', 'await sleep(1500);')).toBe(true);
  expect(hits('sleep', "await setTimeout(100);")).toBe(true);
  expect(hits('sleep', 'await page.waitForTimeout(50);')).toBe(true);
  expect(hits('sleep', 'const guard = setTimeout(() => proc.kill(), 10_000);')).toBe(false);
  expect(hits('wall-clock', 'expect(Date.now() - started).toBeLessThan(50);')).toBe(true);
  expect(hits('wall-clock', 'expect(performance.now() - t0).toBeGreaterThanOrEqual(140);')).toBe(true);
  expect(hits('always-true', 'expect(seconds).toBeGreaterThanOrEqual(0);')).toBe(true);
  expect(hits('always-true', 'expect(x).toBeLessThan(Infinity);')).toBe(true);
  expect(hits('always-true', 'expect(n >= 0).toBe(true);')).toBe(true);
  expect(hits('always-true', 'expect(n).toBeGreaterThanOrEqual(20);')).toBe(false);
  expect(hits('private-cast', "(store as unknown as { db: Db }).db")).toBe(true);
  expect(hits('private-cast', 'const doc = thing as any;')).toBe(true);
  expect(hits('private-cast', "(probe.address() as { port: number }).port")).toBe(false);
});

it('finds an elapsed time asserted through a name, and leaves a clock read that is not one alone', () => {
  const positive = [
    'const t0 = performance.now();',
    'await work();',
    'const took = performance.now() - t0;',
    'expect(took).toBeLessThan(50);',
    'const start = Date.now();',
    'const answer = { status: 200, ms: Date.now() - start };',
    'expect(answer.ms).toBeLessThan(1500);',
    'const worst = Math.max(...answers.map((a) => a.ms));',
    'expect(worst, "slowest").toBeLessThan(1500);',
    'attempts.push({ begun: t0, end: performance.now() });',
    'expect(Math.max(...attempts.map((a) => a.end - a.begun))).toBeLessThan(1000);',
    'expect(n).toBeLessThanOrEqual(20 * Math.ceil(took / 1000));',
  ].join('\n');
  expect(elapsedTimeAsserts(positive)).toEqual([4, 7, 9, 11, 12]);
  const negative = [
    'const now = Date.now();',
    'const restart = 3;',
    'expect(row.at).toBe(now - 5 * 86_400_000);',
    'expect(restart - 1).toBe(2);',
    'const took = measure();',
    'console.log(`took ${performance.now() - now} ms`);',
    'expect(took.status).toBe(202);',
  ].join('\n');
  expect(elapsedTimeAsserts(negative)).toEqual([]);
});
