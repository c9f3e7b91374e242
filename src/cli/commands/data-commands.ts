import type { Command } from 'commander';
import { AdminError } from '../../domain/admin.js';
import { monthOf } from '../../domain/month.js';
import type { FieldCheck } from '../../domain/items/fields/field-error.js';
import { checkAnonymousId, checkDistinctId } from '../../domain/items/fields/identity-fields.js';
import { UsageError, parseWhole, runWithStore, table, withCommon } from '../context.js';
import { eventJson, personJson } from '../views.js';
import { registerErasure } from './erasure-commands.js';
import { registerExport } from './export-command.js';
import { formatCount } from '../numbers.js';
import { outputColumns } from '../output-width.js';

/** `inlet events list`, `inlet person show`, `inlet usage`, `inlet browser identify`. */
export function registerDataCommands(program: Command): void {
  const events = program.command('events').description('stored events');
  withCommon(
    events
      .command('list')
      .description("a source's stored events, newest first")
      .requiredOption('--source <source>', 'source id')
      .option('--limit <n>', 'how many, 1 to 10000', '100')
      .option('--before <event_id>', 'page backwards: only events older than this one')
      .option('--event <name>', 'only events of this name')
      .option('--distinct-id <id>', 'only events with this distinct_id'),
  ).action((o) =>
    runWithStore(
      o,
      async ({ admin, store }) => {
        const limit = parseWhole(o.limit, '--limit', { min: 1, max: 10_000 });
        await admin.getSource(o.source);
        const after = o.before === undefined ? null : await store.eventPages.eventCursor(o.source, o.before);
        if (o.before !== undefined && after === null) throw new UsageError(`No event ${o.before} in source ${o.source}; give an id printed by events list.`);
        const page = await store.eventPages.eventPage({ sourceId: o.source, order: 'desc', after, event: o.event, distinctId: o.distinctId, limit });
        return page.events.map(eventJson);
      },
      (rows) =>
        table(
          [
            // The id first: it is what --before takes. Properties last, cut to the terminal: they may be 8 KiB.
            ['ID', 'TIMESTAMP', 'EVENT', 'DISTINCT ID', 'PERSON', 'SESSION', 'INSERT ID', 'PROPERTIES'],
            ...rows.map((e) => [e.id, e.timestamp, e.event, e.distinct_id ?? '-', e.person_id, e.session_id ?? 'server', e.insert_id ?? '-', JSON.stringify(e.properties)]),
          ],
          outputColumns(),
        ),
    ),
  );

  registerExport(events);

  const person = program.command('person').description('people');
  withCommon(
    person
      .command('show')
      .description('a person, found by a distinct_id or a person id')
      .requiredOption('--project <project>', 'project id')
      .option('--distinct-id <id>', "the customer's user id")
      .option('--person-id <per_id>', 'a person id'),
  ).action((o) =>
    runWithStore(
      o,
      async ({ admin, store }) => {
        if ((o.distinctId === undefined) === (o.personId === undefined)) throw new UsageError('Give exactly one of --distinct-id and --person-id.');
        await admin.getProject(o.project);
        const p = await store.findPerson(o.project, o.distinctId !== undefined ? { distinctId: o.distinctId } : { personId: o.personId });
        if (p === null) throw new AdminError(`No person with ${o.distinctId !== undefined ? `distinct_id "${o.distinctId}"` : `id ${o.personId}`} in project ${o.project}.`);
        return personJson(p);
      },
      (p) =>
        `person ${p.id}\n  distinct ids: ${p.distinct_ids.join(', ') || '-'}\n  traits: ${JSON.stringify(p.traits)}\n` +
        `  groups: ${p.groups.map((g) => `${g.group_type} ${g.group_key}`).join(', ') || '-'}\n  created: ${p.created_at}`,
    ),
  );

  registerErasure(person);

  withCommon(
    program
      .command('usage')
      .description("a project's metered events in a calendar month (UTC)")
      .requiredOption('--project <project>', 'project id')
      .option('--month <yyyy-mm>', 'month (default: this month)'),
  ).action((o) =>
    runWithStore(
      o,
      async ({ admin, store }) => {
        const month = o.month ?? monthOf(Date.now());
        if (!/^\d{4}-(0[1-9]|1[0-2])$/.test(month)) throw new UsageError(`--month takes YYYY-MM, such as 2026-11, not "${month}".`);
        const p = await admin.getProject(o.project);
        return { project_id: p.id, month, events: await store.usage(p.id, month), monthly_event_limit: p.monthlyEventLimit };
      },
      (u) => `${u.project_id} ${u.month}: ${formatCount(u.events)} event${u.events === 1 ? '' : 's'}${u.monthly_event_limit === null ? '' : ` of ${formatCount(u.monthly_event_limit)}`}`,
    ),
  );

  const browser = program.command('browser').description('stand-ins for the browser collection pipeline');
  withCommon(
    browser
      .command('identify')
      .description('link a customer id to a browser person, as the browser pipeline does')
      .requiredOption('--project <project>', 'project id')
      .requiredOption('--anonymous-id <per_id>', 'the browser person key')
      .requiredOption('--distinct-id <id>', "the customer's user id"),
  ).action((o) =>
    runWithStore(
      o,
      async ({ admin }) => {
        // The API's own rules: the browser pipeline takes no id a batch item could not carry.
        const anonymousId = flagValue('--anonymous-id', checkAnonymousId(o.anonymousId));
        const distinctId = flagValue('--distinct-id', checkDistinctId(o.distinctId));
        return personJson(await admin.browserIdentify(o.project, anonymousId, distinctId));
      },
      // An id another browser person holds stays with it: say so, rather than seem to have linked it.
      (p) =>
        p.id === o.anonymousId
          ? `person ${p.id} now holds ${p.distinct_ids.join(', ')}`
          : `${o.distinctId} stays with browser person ${p.id}, which held it first; ${o.anonymousId} is unchanged`,
    ),
  );
}

/** A flag's value once it passed the API's rule for its field, else a usage error quoting that rule. */
function flagValue(flag: string, r: FieldCheck): string {
  if (r.ok) return r.value;
  throw new UsageError(`${flag} is refused: ${r.error.message}`);
}
