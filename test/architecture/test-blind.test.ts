/**
 * Code does not know it is tested: no source file asks whether it runs from
 * its TypeScript source (the tests) or from dist/ (a server), or whether a
 * test runner is about. Thread entry points are found one way for both
 * (src/thread-entry.ts).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');

/** What once told the tests apart: a loader branching on its own file's extension, or a test runner's variables. */
export const TELLS = /import\.meta\.url\.endsWith\s*\(|\bprocess\.env\.(?:VITEST\w*|NODE_ENV|JEST_WORKER_ID)\b/;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(full);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [full] : [];
  });
}

it('no source file tells a test run from a served one', () => {
  const telling = sourceFiles(SRC).flatMap((f) =>
    readFileSync(f, 'utf8')
      .split('\n')
      .flatMap((line, i) => (TELLS.test(line) ? [`${relative(SRC, f)}:${i + 1}: ${line.trim()}`] : [])),
  );
  expect(telling).toEqual([]);
});

it('the pattern catches the loaders this project once had', () => {
  expect(TELLS.test("const THREAD_URL = import.meta.url.endsWith('.ts')")).toBe(true);
  expect(TELLS.test("if (process.env.VITEST) return;")).toBe(true);
  expect(TELLS.test("const THREAD_URL = threadEntry('pipeline/check-thread.js');")).toBe(false);
});
