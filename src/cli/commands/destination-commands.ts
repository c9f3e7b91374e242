import type { Command } from 'commander';
import { loadConfig } from '../../config.js';
import { LAG_COUNT_CAP } from '../../domain/delivery/deliverer.js';
import { destinationAdmin } from '../../domain/delivery/destination-admin.js';
import { checkDestination } from '../../stores/open-sender.js';
import type { Store } from '../../stores/port.js';
import { type CommonOptions, UsageError, parseTime, runWithStore, table, withCommon } from '../context.js';
import { formatCount } from '../numbers.js';

const collect = (v: string, all: string[] = []): string[] => [...all, v];

/**
 * The destination operations over the command's store, refusing what the
 * server would: its own address (its port as INLET_PORT gives it; a server
 * started with another refuses the URL when it delivers) and what
 * destinations may not reach.
 */
function admin(store: Store, o: CommonOptions) {
  const cfg = loadConfig(process.env, { dataDir: o.dataDir });
  const reach = { allowPrivate: cfg.destinationsAllowPrivate, ownDatabaseUrl: cfg.databaseUrl, selfPort: cfg.port };
  return destinationAdmin(store, Date.now, { self: { baseUrl: cfg.baseUrl, port: cfg.port }, check: (d) => checkDestination(d, reach) });
}

/** `inlet destination create|list|pause|resume|delete|replay`. */
export function registerDestinationCommands(program: Command): void {
  const destination = program.command('destination').description("destinations: where a project's stored track events are delivered");

  withCommon(
    destination
      .command('create')
      .description('send a project\'s stored track events to a webhook, or into a table of a PostgreSQL database')
      .requiredOption('--project <project>', 'project id')
      .requiredOption('--kind <kind>', 'webhook or postgres')
      .requiredOption('--url <url>', 'the webhook URL (https:// or http://), or postgres://user:password@host/db')
      .option('--table <name>', 'postgres: the table, made if missing')
      .option('--source <source>', 'only events of this source (repeat for more)', collect)
      .option('--event <name>', 'only events of this name (repeat for more)', collect)
      .option('--since <time>', 'deliver events that arrived from then on (ISO 8601 or epoch ms; default: from now)'),
  ).action((o) =>
    runWithStore(
      o,
      async ({ store }) =>
        admin(store, o).create({
          projectId: o.project, kind: o.kind, url: o.url, table: o.table ?? null, sources: o.source ?? [], events: o.event ?? [],
          since: o.since === undefined ? null : parseTime(o.since, '--since'),
        }),
      (r) =>
        `created destination ${r.id} (${r.kind}, ${r.url})` +
        ('secret' in r ? `\nsigning secret (shown only now; keep it to check each request's Inlet-Signature): ${r.secret}` : ''),
    ),
  );

  withCommon(destination.command('list').description("list a project's destinations and where delivery stands").requiredOption('--project <project>', 'project id')).action((o) =>
    runWithStore(
      o,
      async ({ store }) => admin(store, o).list(o.project),
      (r) =>
        table([
          ['ID', 'KIND', 'STATUS', 'DELIVERED', 'LAG', 'OLDEST UNDELIVERED', 'URL', 'LAST ERROR'],
          ...r.map((d) => [d.id, d.kind, d.status, formatCount(d.delivered), `${formatCount(d.lag_events)}${d.lag_events >= LAG_COUNT_CAP ? '+' : ''}`, d.oldest_undelivered_at ?? '-', d.url, d.last_error ?? '-']),
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
