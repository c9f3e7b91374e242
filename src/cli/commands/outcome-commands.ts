import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import type { Command } from 'commander';
import { DAY_MS, HOUR_MS } from '../../domain/outcomes/reports.js';
import type { StoredSample } from '../../stores/port-outcomes.js';
import { UsageError, fail, isClosedPipe, openForCommand, parseTime, parseWhole, runWithStore, table, withCommon } from '../context.js';
import { formatCount } from '../numbers.js';
import { type LeftOut, exportLine } from '../refused-export.js';
import { cliIo } from '../io.js';

const BUCKETS: Record<string, number> = { minute: 60_000, hour: HOUR_MS, day: DAY_MS };
/** Samples read per page by an export. */
const EXPORT_PAGE = 500;

/** A line of `inlet outcomes`: counts per bucket, outcome and code. */
interface CountLine {
  at: string;
  source_id: string;
  outcome: string;
  code: string | null;
  count: number;
}

/** A line of `inlet outcomes --by-event`: a plan's counts per event and code over the period. */
interface EventLine {
  source_id: string;
  outcome: string;
  code: string;
  event: string;
  count: number;
}

type OutcomeLine = CountLine | EventLine;

/** `inlet outcomes`, `inlet refused list`, `inlet refused export`: what became of every item. */
export function registerOutcomeCommands(program: Command): void {
  withCommon(
    program
      .command('outcomes')
      .description("what became of a source's or project's items, counted per minute, hour or day: accepted, duplicate, dropped, refused or warned (by a tracking plan a source observes), by code")
      .option('--source <source>', 'source id')
      .option('--project <project>', 'project id: each of its sources')
      .option('--since <time>', 'from this time (ISO 8601 or epoch ms; default 24 hours ago)')
      .option('--until <time>', 'before this time (ISO 8601 or epoch ms; default now)')
      .option('--by <bucket>', 'minute, hour or day', 'hour')
      .option('--by-event', "a tracking plan's warned and refused items (unplanned_event, plan_violation) by event and code, summed over the period (counted per hour)"),
  ).action((o) =>
    runWithStore(
      o,
      async ({ admin, store }): Promise<OutcomeLine[]> => {
        if ((o.source === undefined) === (o.project === undefined)) throw new UsageError('Give exactly one of --source and --project.');
        const bucketMs = o.byEvent === true ? HOUR_MS : BUCKETS[o.by as string];
        if (!Object.hasOwn(BUCKETS, o.by) || bucketMs === undefined) throw new UsageError(`--by takes minute, hour or day, not "${o.by}".`);
        const until = o.until === undefined ? Date.now() : parseTime(o.until, '--until');
        const since = o.since === undefined ? until - DAY_MS : parseTime(o.since, '--since');
        if (o.source !== undefined) await admin.getSource(o.source);
        else await admin.getProject(o.project);
        // The buckets start at multiples of their length: the first is the one `since` falls in (counts by event are kept per hour).
        const from = since - (since % bucketMs);
        if (o.byEvent === true) {
          const byEvent = await store.outcomes.eventOutcomeCounts({ sourceId: o.source, projectId: o.project, since: from, until });
          return byEvent.map((r) => ({ source_id: r.sourceId, outcome: r.outcome, code: r.code, event: r.event, count: r.count }));
        }
        const rows = await store.outcomes.outcomeCounts({ sourceId: o.source, projectId: o.project, since: from, until, bucketMs });
        return rows.map((r) => ({ at: new Date(r.at).toISOString(), source_id: r.sourceId, outcome: r.outcome, code: r.code === '' ? null : r.code, count: r.count }));
      },
      (rows) => {
        if (rows.length === 0) return o.byEvent === true ? 'No items a tracking plan warned or refused in that time.' : 'No items in that time.';
        if (o.byEvent === true) {
          const byEvent = rows as EventLine[];
          return table([['SOURCE', 'OUTCOME', 'CODE', 'EVENT', 'COUNT'], ...byEvent.map((r) => [r.source_id, r.outcome, r.code, r.event, formatCount(r.count)])]);
        }
        const counted = rows as CountLine[];
        return table([['AT', 'SOURCE', 'OUTCOME', 'CODE', 'COUNT'], ...counted.map((r) => [r.at, r.source_id, r.outcome, r.code ?? '-', formatCount(r.count)])]);
      },
    ),
  );

  const refused = program.command('refused').description('items refused or dropped, kept to be looked at and sent again');
  withCommon(
    refused
      .command('list')
      .description("a source's kept refused and dropped items, newest first")
      .requiredOption('--source <source>', 'source id')
      .option('--code <code>', 'only items kept under this error code or drop reason')
      .option('--limit <n>', 'how many, 1 to 10000', '100'),
  ).action((o) =>
    runWithStore(
      o,
      async ({ admin, store }) => {
        const limit = parseWhole(o.limit, '--limit', { min: 1, max: 10_000 });
        await admin.getSource(o.source);
        return (await store.outcomes.samples({ sourceId: o.source, code: o.code, limit })).map(sampleJson);
      },
      (rows) =>
        rows.length === 0
          ? 'No kept items.'
          : table([
            ['RECEIVED', 'REQUEST', 'INDEX', 'OUTCOME', 'CODES', 'CUT'],
            ...rows.map((r) => [r.received_at, r.request_id, String(r.index), r.outcome, r.codes.join(','), r.cut ? 'cut' : '-']),
          ]),
    ),
  );

  withCommon(
    refused
      .command('export')
      .description(
        'kept refused items as NDJSON, one a line, as `inlet send` reads them, each with its errors under "_inlet_errors" and an insert_id (dropped items only with --include-dropped; items cut for their size are left out, and counted on stderr)',
      )
      .requiredOption('--source <source>', 'source id')
      .option('--code <code>', 'only items kept under this error code or drop reason')
      .option('--since <time>', 'only items received at or after this time (ISO 8601 or epoch ms)')
      .option('--include-dropped', 'export dropped items too, each with its reason under "_inlet_dropped"')
      .option('--out <file>', 'write to this file instead of stdout'),
  ).action(async (o) => {
    try {
      await openForCommand(o, async ({ admin, store }) => {
        const since = o.since === undefined ? undefined : parseTime(o.since, '--since');
        await admin.getSource(o.source);
        const out: Writable = o.out === undefined ? cliIo().stdout : createWriteStream(o.out);
        let written = 0;
        const left: Record<LeftOut, number> = { dropped: 0, cut: 0, withheld: 0, not_object: 0, warned: 0 };
        let beforeId: number | undefined;
        try {
          for (;;) {
            const page = await store.outcomes.samples({ sourceId: o.source, code: o.code, since, beforeId, limit: EXPORT_PAGE });
            for (const s of page) {
              if (out.destroyed) break;
              const line = exportLine(s, o.includeDropped === true);
              if ('left' in line) {
                left[line.left]++;
                continue;
              }
              if (!out.write(`${line.line}\n`)) await once(out, 'drain');
              written++;
            }
            if (page.length < EXPORT_PAGE || out.destroyed) break;
            beforeId = page.at(-1)!.id;
          }
        } catch (e) {
          if (!(out === cliIo().stdout && isClosedPipe(e))) throw e;
        }
        if (o.out !== undefined) {
          out.end();
          await once(out, 'finish');
        }
        const leftOut = leftOutText(left);
        if (o.out !== undefined || leftOut !== '') {
          cliIo().stderr.write(`inlet: exported ${formatCount(written)} kept items${o.out === undefined ? '' : ` to ${o.out}`}${leftOut}\n`);
        }
      });
    } catch (e) {
      fail(e);
    }
  });
}

/** What an export left out, for its line on stderr; empty when nothing was. */
function leftOutText(left: Record<LeftOut, number>): string {
  const parts = [
    left.dropped > 0 ? `${formatCount(left.dropped)} dropped (--include-dropped to export them)` : '',
    left.cut > 0 ? `${formatCount(left.cut)} cut for their size (see inlet refused list)` : '',
    left.withheld > 0 ? `${formatCount(left.withheld)} withheld (their person was erased: nothing of them was kept)` : '',
    left.not_object > 0 ? `${formatCount(left.not_object)} not JSON objects (no line inlet send could read)` : '',
    left.warned > 0 ? `${formatCount(left.warned)} warned by a tracking plan (stored already)` : '',
  ].filter((p) => p !== '');
  return parts.length === 0 ? '' : `; left out: ${parts.join(', ')}`;
}

function sampleJson(s: StoredSample) {
  return {
    received_at: new Date(s.receivedAt).toISOString(),
    request_id: s.requestId,
    index: s.index,
    outcome: s.outcome,
    codes: s.codes,
    errors: JSON.parse(s.errors) as unknown[],
    // A cut item is shown as the text kept; a whole one as the item.
    item: s.cut ? s.item : (JSON.parse(s.item) as unknown),
    cut: s.cut,
  };
}
