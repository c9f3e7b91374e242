import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import type { Command } from 'commander';
import cliProgress from 'cli-progress';
import { exportEvents } from '../../domain/event-export.js';
import { UsageError, fail, isClosedPipe, openForCommand, parseTime, withCommon } from '../context.js';
import { eventJson } from '../views.js';
import { formatCount } from '../numbers.js';
import { cliIo } from '../io.js';

/** `inlet events export`: NDJSON, oldest first, in constant memory. */
export function registerExport(events: Command): void {
  withCommon(
    events
      .command('export')
      .description("every event of a source or project as NDJSON, one per line, oldest first")
      .option('--source <source>', 'source id')
      .option('--project <project>', 'project id: every source of it')
      .option('--since <time>', 'only events at or after this time (ISO 8601 or epoch ms)')
      .option('--until <time>', 'only events before this time (ISO 8601 or epoch ms)')
      .option('--out <file>', 'write to this file instead of stdout'),
  ).action(async (o) => {
    try {
      await openForCommand(o, async ({ admin, store }) => {
        if ((o.source === undefined) === (o.project === undefined)) throw new UsageError('Give exactly one of --source and --project.');
        const range = { since: o.since === undefined ? undefined : parseTime(o.since, '--since'), until: o.until === undefined ? undefined : parseTime(o.until, '--until') };
        let sourceIds: string[];
        if (o.source !== undefined) {
          await admin.getSource(o.source);
          sourceIds = [o.source];
        } else {
          await admin.getProject(o.project);
          sourceIds = await store.eventPages.sourceIdsOf(o.project);
        }
        const out: Writable = o.out === undefined ? cliIo().stdout : createWriteStream(o.out);
        const n = await writeLines(out, exportEvents(store.eventPages, sourceIds, range));
        if (o.out !== undefined) {
          out.end();
          await once(out, 'finish');
          cliIo().stderr.write(`inlet: exported ${formatCount(n)} events to ${o.out}\n`);
        }
      });
    } catch (e) {
      fail(e);
    }
  });
}

/** Writes each event as a line, waiting whenever the stream asks to; progress on stderr when it is a terminal. */
async function writeLines(out: Writable, events: AsyncIterable<Parameters<typeof eventJson>[0]>): Promise<number> {
  const stderr = cliIo().stderr;
  const bar = stderr.isTTY
    ? new cliProgress.SingleBar({ stream: stderr, format: 'exporting | {value} events | {duration_formatted}', fps: 5, formatValue: (v: number, _o: unknown, type: string) => (type === 'value' ? formatCount(v) : String(v)) }, cliProgress.Presets.shades_classic)
    : null;
  bar?.start(0, 0);
  let n = 0;
  try {
    for await (const e of events) {
      // The reader went away (`| head`): what it read is the export it wanted.
      if (out.destroyed) break;
      if (!out.write(`${JSON.stringify(eventJson(e))}\n`)) await once(out, 'drain');
      if (++n % 1000 === 0) bar?.update(n);
    }
  } catch (e) {
    if (!(out === cliIo().stdout && isClosedPipe(e))) throw e;
  } finally {
    bar?.update(n);
    bar?.stop();
  }
  return n;
}
