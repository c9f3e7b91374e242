/**
 * The checks' order is the list in src/edge/intake-checks.ts. Comments once
 * named checks by step numbers ("Step 16") that matched no list; a comment
 * names a check by its name in the list instead.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');
const STEP_NUMBER = /\bSteps? \d+/;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(full);
    return e.name.endsWith('.ts') ? [full] : [];
  });
}

it('no source file names a check by a step number', () => {
  const found = sourceFiles(SRC).flatMap((file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .flatMap((line, i) => (STEP_NUMBER.test(line) ? [`${relative(SRC, file)}:${i + 1}: ${line.trim()}`] : [])),
  );
  expect(found).toEqual([]);
});

it('the pattern catches the forms it names', () => {
  expect(STEP_NUMBER.test('/** Step 16: counts the items */')).toBe(true);
  expect(STEP_NUMBER.test(' * Steps 13 to 17 of large bodies')).toBe(true);
  expect(STEP_NUMBER.test('/** The project-rate check */')).toBe(false);
});
