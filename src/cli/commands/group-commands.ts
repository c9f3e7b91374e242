import type { Command } from 'commander';
import { AdminError } from '../../domain/admin.js';
import { UsageError, parseWhole, runWithStore, table, withCommon } from '../context.js';
import { groupJson, groupSummaryJson } from '../views.js';

/** `inlet group show`, `inlet group list`. */
export function registerGroupCommands(program: Command): void {
  const group = program.command('group').description('groups (set by group items)');
  withCommon(
    group
      .command('show')
      .description('a group: its traits and its members')
      .requiredOption('--project <project>', 'project id')
      .requiredOption('--type <group_type>', 'the group type, such as company')
      .requiredOption('--key <group_key>', 'the group key'),
  ).action((o) =>
    runWithStore(
      o,
      async ({ admin, store }) => {
        await admin.getProject(o.project);
        const g = await store.findGroup(o.project, o.type, o.key);
        if (g === null) throw new AdminError(`No group ${o.type} "${o.key}" in project ${o.project}.`);
        return groupJson(g);
      },
      (g) => `group ${g.group_type} ${g.group_key}\n  traits: ${JSON.stringify(g.traits)}\n  members: ${g.members.join(', ') || '-'}\n  created: ${g.created_at}`,
    ),
  );
  withCommon(
    group
      .command('list')
      .description("a project's groups, by type and key")
      .requiredOption('--project <project>', 'project id')
      .option('--type <group_type>', 'only groups of this type')
      .option('--limit <n>', 'how many, 1 to 10000', '100'),
  ).action((o) =>
    runWithStore(
      o,
      async ({ admin, store }) => {
        const limit = parseWhole(o.limit, '--limit', { min: 1, max: 10_000 });
        if (o.type !== undefined && o.type === '') throw new UsageError('--type takes a group type, such as company.');
        await admin.getProject(o.project);
        return (await store.listGroups(o.project, { groupType: o.type, limit })).map(groupSummaryJson);
      },
      (rows) => table([['TYPE', 'KEY', 'TRAITS', 'CREATED'], ...rows.map((g) => [g.group_type, g.group_key, JSON.stringify(g.traits), g.created_at])]),
    ),
  );
}
