import type { Command } from 'commander';
import { DESTINATION_KINDS } from '../destinations/registry.js';

/**
 * One or two examples per command, by its words after "inlet", shown at the end of its --help.
 * Ids are the ones the README's first request makes; a test checks that each example names its
 * own command and only options that command has.
 */
export const EXAMPLES: Record<string, string[]> = {
  serve: ['inlet serve', 'inlet serve --port 8081 --metrics-port 9465 --data-dir /var/lib/inlet'],
  'org create': ['inlet org create --name "Acme"'],
  'org list': ['inlet org list --json'],
  'org delete': ['inlet org delete org_qENQNSpxWN2Clf6Y'],
  'project create': ['inlet project create --name "My app" --api-enabled', 'inlet project create --name "My app" --org org_qENQNSpxWN2Clf6Y'],
  'project update': ['inlet project update prj_viacRO7TAMmJfycq --monthly-event-limit 1000000', 'inlet project update prj_viacRO7TAMmJfycq --api-enabled false'],
  'project list': ['inlet project list', 'inlet project list --org org_qENQNSpxWN2Clf6Y --json'],
  'project delete': ['inlet project delete prj_viacRO7TAMmJfycq'],
  'source create': ['inlet source create --project prj_viacRO7TAMmJfycq --name "Billing jobs"', 'inlet source create --project prj_viacRO7TAMmJfycq --name "Webhooks" --record-ip true'],
  'source update': ['inlet source update src_ae29intQ9vAM2YG6 --filter-bots false', 'inlet source update src_ae29intQ9vAM2YG6 --plan pln_7hQm2ZkTn4WcYx9R --plan-mode observe'],
  'source list': ['inlet source list --project prj_viacRO7TAMmJfycq'],
  'source delete': ['inlet source delete src_ae29intQ9vAM2YG6'],
  'key create': ['inlet key create --source src_ae29intQ9vAM2YG6'],
  'key list': ['inlet key list --source src_ae29intQ9vAM2YG6'],
  'key roll': ['inlet key roll key_4V1ECA7bgargRxOJ --grace 24h'],
  'key revoke': ['inlet key revoke key_4V1ECA7bgargRxOJ'],
  'user create': [
    `printf '%s' "$PASSWORD" | inlet user create --email you@example.com --admin --password-stdin`,
    `printf '%s' "$PASSWORD" | inlet user create --email dev@example.com --org org_qENQNSpxWN2Clf6Y --password-stdin`,
  ],
  'user list': ['inlet user list'],
  'user update': ['inlet user update dev@example.com --disable', 'inlet user update dev@example.com --add-org org_qENQNSpxWN2Clf6Y'],
  'user delete': ['inlet user delete dev@example.com'],
  'events list': ['inlet events list --source src_ae29intQ9vAM2YG6', 'inlet events list --source src_ae29intQ9vAM2YG6 --event invoice_paid --limit 20 --json'],
  'events export': [
    'inlet events export --project prj_viacRO7TAMmJfycq --since 2026-01-01 --until 2026-02-01 --out january.ndjson',
    'inlet events export --source src_ae29intQ9vAM2YG6 | gzip > billing.ndjson.gz',
  ],
  outcomes: ['inlet outcomes --source src_ae29intQ9vAM2YG6', 'inlet outcomes --project prj_viacRO7TAMmJfycq --by day --since 2026-11-01'],
  'refused list': ['inlet refused list --source src_ae29intQ9vAM2YG6 --code reserved_event_name'],
  'refused export': ['inlet refused export --source src_ae29intQ9vAM2YG6 --out refused.ndjson'],
  'person show': ['inlet person show --project prj_viacRO7TAMmJfycq --distinct-id cust_1042'],
  'person delete': ['inlet person delete --project prj_viacRO7TAMmJfycq --distinct-id cust_1042 --suppress'],
  'person unsuppress': ['inlet person unsuppress --project prj_viacRO7TAMmJfycq --distinct-id cust_1042'],
  backup: ['inlet backup --to /backups/inlet-2026-11-23.db'],
  'group show': ['inlet group show --project prj_viacRO7TAMmJfycq --type company --key acme'],
  'group list': ['inlet group list --project prj_viacRO7TAMmJfycq --type company'],
  'plan create': ['inlet plan create --project prj_viacRO7TAMmJfycq --name checkout'],
  'plan push': ['inlet plan push pln_7hQm2ZkTn4WcYx9R checkout-plan.json'],
  'plan pull': ['inlet plan pull pln_7hQm2ZkTn4WcYx9R --out checkout-plan.json', 'inlet plan pull pln_7hQm2ZkTn4WcYx9R --version 2'],
  'plan list': ['inlet plan list --project prj_viacRO7TAMmJfycq'],
  'plan show': ['inlet plan show pln_7hQm2ZkTn4WcYx9R', 'inlet plan show pln_7hQm2ZkTn4WcYx9R --version 1 --json'],
  'plan diff': ['inlet plan diff pln_7hQm2ZkTn4WcYx9R 1 2'],
  'plan delete': ['inlet plan delete pln_7hQm2ZkTn4WcYx9R'],
  'plan test': ['inlet plan test pln_7hQm2ZkTn4WcYx9R items.ndjson'],
  'plan check': ['inlet plan check --source src_ae29intQ9vAM2YG6 --since 2026-11-01T00:00:00Z', 'inlet plan check --source src_ae29intQ9vAM2YG6 --since 2026-11-01T00:00:00Z --plan pln_7hQm2ZkTn4WcYx9R@2 --json'],
  'plan import': ['inlet plan import --from segment segment-rules.json --project prj_viacRO7TAMmJfycq --name checkout'],
  usage: ['inlet usage --project prj_viacRO7TAMmJfycq', 'inlet usage --project prj_viacRO7TAMmJfycq --month 2026-10 --json'],
  'browser identify': ['inlet browser identify --project prj_viacRO7TAMmJfycq --anonymous-id per_HKJqFuL1r0LT6BE8E6wNIQ --distinct-id cust_1042'],
  // One of each kind (two at most, as every command).
  'destination create': DESTINATION_KINDS.slice(0, 2).map((k) => `inlet destination create --project prj_viacRO7TAMmJfycq --kind ${k.name} ${k.example}`),
  'destination list': ['inlet destination list --project prj_viacRO7TAMmJfycq'],
  'destination pause': ['inlet destination pause dst_Q2mYx8RkP4aLw7Tn'],
  'destination resume': ['inlet destination resume dst_Q2mYx8RkP4aLw7Tn'],
  'destination delete': ['inlet destination delete dst_Q2mYx8RkP4aLw7Tn'],
  'destination replay': ['inlet destination replay dst_Q2mYx8RkP4aLw7Tn --since 2026-11-01'],
  'destination rotate-secret': ['inlet destination rotate-secret dst_Q2mYx8RkP4aLw7Tn'],
  send: ['inlet send invoices.ndjson --key "$INLET_KEY"', 'inlet send history.ndjson --key "$INLET_KEY" --import --base-url https://inlet.example.com'],
};

/** Every command that runs something (not only groups others), by its words after "inlet". */
export function leafCommands(cmd: Command, path: string[] = []): { path: string; cmd: Command }[] {
  return cmd.commands.flatMap((c) => {
    const p = [...path, c.name()];
    return c.commands.length === 0 ? [{ path: p.join(' '), cmd: c }] : leafCommands(c, p);
  });
}

/** What `inlet --help` ends with: the first two steps of the README's first request. */
const FIRST_STEPS = ['inlet serve', 'inlet project create --name "My app" --api-enabled'];

/** The examples a command's help ends with: its own, or for a group the first of each of its first two commands. */
export function examplesOf(cmd: Command, path: string): string[] {
  if (path === '') return FIRST_STEPS;
  if (cmd.commands.length === 0) return EXAMPLES[path] ?? [];
  return leafCommands(cmd)
    .slice(0, 2)
    .flatMap((leaf) => (EXAMPLES[`${path} ${leaf.path}`] ?? []).slice(0, 1));
}

/** Ends the --help of every command (groups and inlet itself too) with examples, written with `self` (how inlet is called here) for "inlet". */
export function addExamples(program: Command, self: string, cmd: Command = program, path = ''): void {
  const examples = examplesOf(cmd, path);
  if (examples.length > 0) {
    const lines = examples.map((e) => `  $ ${e.replace(/(^|\| )inlet /, `$1${self} `)}`);
    cmd.addHelpText('after', `\nExample${examples.length === 1 ? '' : 's'}:\n${lines.join('\n')}\n`);
  }
  for (const sub of cmd.commands) addExamples(program, self, sub, path === '' ? sub.name() : `${path} ${sub.name()}`);
}
