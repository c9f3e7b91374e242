import { basename, isAbsolute, relative, sep } from 'node:path';

/** How to call this program again from `cwd`: bin/inlet by its path when it lies under `cwd`, else `inlet`. */
export function commandName(script: string | undefined, cwd: string): string {
  if (script === undefined || basename(script) !== 'inlet') return 'inlet';
  const rel = relative(cwd, script);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) return 'inlet';
  return `./${rel.split(sep).join('/')}`;
}
