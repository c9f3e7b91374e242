import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import { UsageError, runWithStore, withCommon } from '../context.js';
import { formatCount } from '../numbers.js';

/** `inlet backup --to FILE`: a consistent copy of the embedded store, taken while servers run. */
export function registerBackup(program: Command): void {
  withCommon(
    program
      .command('backup')
      .description('copy the embedded store (SQLite) to one file, consistently, while servers keep writing')
      .requiredOption('--to <file>', 'the new file to write (must not exist)'),
  ).action((o) =>
    runWithStore(
      o,
      async ({ store }) => {
        const path = resolve(o.to);
        if (existsSync(path)) throw new UsageError(`${o.to} already exists; give the backup a new file name.`);
        if (!existsSync(dirname(path))) throw new UsageError(`The directory of ${o.to} does not exist; create it first.`);
        if (store.backup === undefined) throw new UsageError(notFileStore());
        return { path, bytes: await store.backup(path) };
      },
      (r) => `backed up to ${r.path} (${formatCount(r.bytes)} bytes)`,
    ),
  );
}

function notFileStore(): string {
  return 'inlet backup copies the embedded SQLite store only. With INLET_DATABASE_URL set, the data lives in PostgreSQL: back it up with pg_dump (for example pg_dump --format=custom --file=inlet.dump "$INLET_DATABASE_URL"), or with your provider\'s snapshots.';
}

