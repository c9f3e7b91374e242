import type { Command } from 'commander';
import { fail, parseWhole } from '../context.js';
import { formatCount } from '../numbers.js';
import { DEFAULT_UNREACHABLE_SECONDS, type SendSummary, sendFile } from '../send/run.js';
import { cliIo, setExitCode } from '../io.js';

interface SendFlags {
  key?: string;
  baseUrl?: string;
  import?: boolean;
  resume?: boolean;
  state?: string;
  unreachableTimeout: string;
  json?: boolean;
}

/** `inlet send FILE`: NDJSON items through the SDK. */
export function registerSend(program: Command): void {
  program
    .command('send')
    .description('send NDJSON items (one JSON object a line, as in a batch) from FILE, or "-" for stdin')
    .argument('<file>', 'NDJSON file, or - for stdin')
    .option('--key <key>', 'server key (env INLET_KEY)')
    .option('--base-url <url>', 'where Inlet runs (env INLET_BASE_URL, default http://localhost:8080)')
    .option('--import', 'send to /api/v1/import (historical backfill) instead of /api/v1/batch')
    .option('--resume', 'send only what a send of FILE that stopped early left, as its state file says')
    .option('--state <file>', 'where the state for --resume is kept (default FILE.inlet-send.json)')
    .option('--unreachable-timeout <seconds>', 'stop once the server has been out of reach this long', String(DEFAULT_UNREACHABLE_SECONDS))
    .option('--json', 'print exactly one JSON value on stdout')
    .action(async (file: string, o: SendFlags) => {
      try {
        const unreachableSeconds = parseWhole(o.unreachableTimeout, '--unreachable-timeout', { min: 1, max: 86_400 });
        const summary = await sendFile(file, { ...o, unreachableSeconds }, { stderr: cliIo().stderr });
        cliIo().stdout.write(o.json ? `${JSON.stringify(summary)}\n` : `${human(summary)}\n`);
        if (summary.refused + summary.failed + summary.unreadable > 0) setExitCode(1);
      } catch (e) {
        fail(e);
      }
    });
}

function human(s: SendSummary): string {
  const n = formatCount;
  const of = (count: number, noun: string) => `${n(count)} ${noun}${count === 1 ? '' : 's'}`;
  const line = `sent ${of(s.sent, 'item')}: ${n(s.accepted)} accepted, ${of(s.duplicates, 'duplicate')}, ${n(s.dropped)} dropped, ${n(s.refused)} refused, ${n(s.failed)} failed`;
  return s.unreadable === 0 ? line : `${line}; ${of(s.unreadable, 'unreadable line')}`;
}
