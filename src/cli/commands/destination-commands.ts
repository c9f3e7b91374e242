import { type Command, Option } from 'commander';
import { loadConfig } from '../../config.js';
import { DESTINATION_KINDS, checkDestination } from '../../destinations/registry.js';
import { LAG_COUNT_CAP } from '../../domain/delivery/deliverer.js';
import { destinationAdmin } from '../../domain/delivery/destination-admin.js';
import { kindChoice, madeOnce, offeredFields, whereShown } from '../../domain/delivery/destination-fields.js';
import type { Store } from '../../stores/port.js';
import { type CommonOptions, UsageError, parseTime, runWithStore, table, withCommon } from '../context.js';
import { formatCount } from '../numbers.js';
import { cliIo } from '../io.js';

const collect = (v: string, all: string[] = []): string[] => [...all, v];

/**
 * The destination operations over the command's store, refusing what the
 * server would: its own address (its port as INLET_PORT gives it; a server
 * started with another refuses the URL when it delivers) and what
 * destinations may not reach.
 */
function admin(store: Store, o: CommonOptions) {
  const cfg = loadConfig(cliIo().env, { dataDir: o.dataDir });
  const reach = { allowPrivate: cfg.destinationsAllowPrivate, ownDatabaseUrl: cfg.databaseUrl, selfPort: cfg.port };
  return destinationAdmin(store, Date.now, { self: { baseUrl: cfg.baseUrl, port: cfg.port }, check: (d) => checkDestination(d, reach), kinds: DESTINATION_KINDS });
}

/** `inlet destination create|list|pause|resume|delete|replay`. */
export function registerDestinationCommands(program: Command): void {
  const destination = program.command('destination').description("destinations: where a project's stored track events are delivered");

  // Each field of the kinds is one flag (destination-fields.ts): required when every kind needs it.
  const fields = offeredFields(DESTINATION_KINDS).map((f) => {
    const option = new Option(f.flag, f.help).makeOptionMandatory(f.required);
    return { name: f.name, option: f.choices === undefined ? option : option.choices(f.choices) };
  });
  const create = destination
    .command('create')
    .description(`send a project's stored track events ${DESTINATION_KINDS.map((k) => k.about).join(', or ')}`)
    .requiredOption('--project <project>', 'project id')
    .requiredOption('--kind <kind>', kindChoice(DESTINATION_KINDS));
  for (const f of fields) create.addOption(f.option);
  withCommon(
    create
      .option('--source <source>', 'only events of this source (repeat for more)', collect)
      .option('--event <name>', 'only events of this name (repeat for more)', collect)
      .option('--since <time>', 'deliver events that arrived from then on (ISO 8601 or epoch ms; default: from now)'),
  ).action((o) =>
    runWithStore(
      o,
      async ({ store }) =>
        admin(store, o).create({
          projectId: o.project, kind: o.kind, fields: Object.fromEntries(fields.map((f) => [f.name, o[f.option.attributeName()] as string | undefined])),
          sources: o.source ?? [], events: o.event ?? [], since: o.since === undefined ? null : parseTime(o.since, '--since'),
        }),
      (r) =>
        `created destination ${r.id} (${r.kind}, ${whereShown(DESTINATION_KINDS, r)})` +
        madeOnce(DESTINATION_KINDS, r).map((m) => `\n${m.label} (shown only now; ${m.use}): ${m.value}`).join(''),
    ),
  );

  withCommon(destination.command('list').description("list a project's destinations and where delivery stands").requiredOption('--project <project>', 'project id')).action((o) =>
    runWithStore(
      o,
      async ({ store }) => admin(store, o).list(o.project),
      (r) =>
        table([
          ['ID', 'KIND', 'STATUS', 'DELIVERED', 'LAG', 'OLDEST UNDELIVERED', 'URL', 'LAST ERROR'],
          ...r.map((d) => [d.id, d.kind, d.status, formatCount(d.delivered), `${formatCount(d.lag_events)}${d.lag_events >= LAG_COUNT_CAP ? '+' : ''}`, d.oldest_undelivered_at ?? '-', d.url, d.paused_reason ?? d.last_error ?? '-']),
        ]),
    ),
  );

  for (const [name, about] of [
    ['pause', 'stop delivering a destination; its cursor stays where it is'],
    ['resume', 'deliver a paused destination again, from where it stopped'],
  ] as const) {
    withCommon(destination.command(name).description(about).argument('<destination>')).action((id, o) =>
      runWithStore(o, async ({ store }) => admin(store, o)[name](id), (r) => `destination ${r.id} is ${r.status}`),
    );
  }

  withCommon(destination.command('rotate-secret').description('a new signing secret, shown only now; the old one still signs beside it for 24 hours').argument('<destination>')).action((id, o) =>
    runWithStore(
      o,
      async ({ store }) => admin(store, o).rotateSecret(id),
      (r) => `signing secret of destination ${r.id} (shown only now): ${r.secret}\nthe previous secret also signs until ${r.previous_valid_until}`,
    ),
  );

  withCommon(destination.command('delete').description('delete a destination; nothing more is delivered to it').argument('<destination>')).action((id, o) =>
    runWithStore(o, async ({ store }) => admin(store, o).delete(id), () => `deleted destination ${id}`),
  );

  withCommon(
    destination
      .command('replay')
      .description('deliver again the events that arrived from a time on')
      .argument('<destination>')
      .requiredOption('--since <time>', 'ISO 8601 or epoch ms'),
  ).action((id, o) =>
    runWithStore(
      o,
      async ({ store }) => {
        if (o.since === undefined) throw new UsageError('Give --since.');
        return admin(store, o).replay(id, parseTime(o.since, '--since'));
      },
      (r) => `destination ${r.id} delivers again from ${r.replay_from}`,
    ),
  );
}
