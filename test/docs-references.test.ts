/**
 * The project's documents live in docs/: nothing in the repository may point
 * at a document outside it (a specification folder beside the repository,
 * numbered decisions, an issue of the tracker).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SKIP = new Set(['node_modules', 'dist', '.git', 'data']);
const TEXT = /\.(ts|mts|mjs|js|md|json|yaml|yml|sh)$|^run$|^inlet$/;

/** Every text file of the repository, by path from its root. */
function files(dir = ROOT): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (SKIP.has(e.name)) return [];
    const path = join(dir, e.name);
    if (e.isDirectory()) return files(path);
    return TEXT.test(e.name) && e.name !== 'package-lock.json' ? [relative(ROOT, path)] : [];
  });
}

// Written in pieces, so that this file does not match itself.
const OUTSIDE = [
  new RegExp(['shared', 'spec'].join('/')),
  new RegExp(['\\.\\.', 'shared'].join('/')),
  new RegExp(`decisions ?${'§'}`),
  new RegExp(`${'decisions'}\\.md|${'batch-api'}\\.md`),
  new RegExp(`\\b${'the'} ${'issue'}\\b`, 'i'),
];

describe('the repository refers only to documents it holds', () => {
  it('no file points at a specification, a decision or an issue outside the repository', () => {
    const all = files();
    expect(all.length).toBeGreaterThan(50);
    const found = all.flatMap((f) =>
      readFileSync(join(ROOT, f), 'utf8')
        .split('\n')
        .flatMap((line, i) => (OUTSIDE.some((p) => p.test(line)) ? [`${f}:${i + 1}: ${line.trim()}`] : [])),
    );
    expect(found).toEqual([]);
  });

  it('every docs/*.md a file names exists', () => {
    const docs = new Set(readdirSync(join(ROOT, 'docs')));
    const named = files().flatMap((f) => [...readFileSync(join(ROOT, f), 'utf8').matchAll(/\bdocs\/([a-z0-9-]+\.md)\b/g)].map((m) => `${f}: docs/${m[1]}`));
    expect(named.length).toBeGreaterThan(5);
    expect(named.filter((n) => !docs.has(n.slice(n.lastIndexOf('docs/') + 5)))).toEqual([]);
  });
});
