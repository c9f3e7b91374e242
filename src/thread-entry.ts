/**
 * Where a worker thread's code is: always the compiled file under the
 * package's dist/, whichever copy of the code starts it (dist/ when served,
 * src/ under the tests, the bench's own build), so the tests start the very
 * threads a server starts. Tests run after `npm run build` (npm test builds
 * first).
 */
import { existsSync } from 'node:fs';

let root: URL | undefined;

/** The nearest folder above this file that holds package.json: the package's root. */
function packageRoot(): URL {
  if (root !== undefined) return root;
  for (let dir = new URL('./', import.meta.url); ; dir = new URL('../', dir)) {
    if (existsSync(new URL('package.json', dir))) return (root = dir);
    if (dir.pathname === '/') throw new Error(`no package.json above ${import.meta.url}`);
  }
}

/** The entry point of a thread, by its compiled path under dist/ (e.g. `pipeline/check-thread.js`). */
export function threadEntry(path: `${string}.js`): URL {
  return new URL(`dist/${path}`, packageRoot());
}
