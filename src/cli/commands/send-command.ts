import type { Command } from 'commander';
import { fail } from '../context.js';
import { formatCount } from '../numbers.js';
import { type SendSummary, sendFile } from '../send/run.js';

/** `inlet send FILE`: NDJSON items through the SDK. */
export function registerSend(program: Command): void {
  program
    .command('send')
    .description('send NDJSON items (one JSON object a line, as in a batch) from FILE, or "-" for stdin')
    .argument('<file>', 'NDJSON file, or - for stdin')
    .option('--key <key>', 'server key (env INLET_KEY)')
    .option('--base-url <url>', 'where Inlet runs (env INLET_BASE_URL, default http://localhost:8080)')
    .option('--import', 'send to /api/v1/import (historical backfill) instead of /api/v1/batch')
    .option('--json', 'print exactly one JSON value on stdout')
    .action(async (file: string, o: { key?: string; baseUrl?: string; import?: boolean; json?: boolean }) => {
      try {
        const summary = await sendFile(file, o, { stderr: process.stderr });
        process.stdout.write(o.json ? `${JSON.stringify(summary)}\n` : `${human(summary)}\n`);
        if (summary.refused + summary.failed > 0) process.exitCode = 1;
      } catch (e) {
        fail(e);
      }
    });
}

function human(s: SendSummary): string {
  const n = formatCount;
  const of = (count: number, noun: string) => `${n(count)} ${noun}${count === 1 ? '' : 's'}`;
  return `sent ${of(s.sent, 'item')}: ${n(s.accepted)} accepted, ${of(s.duplicates, 'duplicate')}, ${n(s.dropped)} dropped, ${n(s.refused)} refused, ${n(s.failed)} failed`;
}
