import type { Command } from 'commander';
import { MAX_RETENTION_DAYS, MONTHLY_EVENT_LIMIT_RANGE } from '../../domain/admin.js';
import { DEFAULT_RETENTION_DAYS } from '../../domain/retention.js';
import { isGrace } from '../../domain/keys.js';
import { UsageError, parseBool, parseWhole, runWithStore, table, withCommon } from '../context.js';
import { deleted, orgJson, projectJson, projectListingJson, sourceJson } from '../views.js';
import { formatCount } from '../numbers.js';
import { planAdmin } from '../../domain/plans/plan-admin.js';

const onOff = (b: boolean): string => (b ? 'on' : 'off');

/** `inlet org …`, `inlet project …`, `inlet source …`, `inlet key …`. */
export function registerAdminCommands(program: Command): void {
  const org = program.command('org').description('organizations');
  withCommon(org.command('create').description('create an organization').requiredOption('--name <name>', 'its name')).action((o) =>
    runWithStore(o, async ({ admin }) => orgJson(await admin.createOrg(o.name)), (r) => `created organization ${r.id} (${r.name})`),
  );
  withCommon(org.command('list').description('list the organizations')).action((o) =>
    runWithStore(o, async ({ admin }) => (await admin.listOrgs()).map(orgJson), (r) => table([['ID', 'NAME'], ...r.map((x) => [x.id, x.name])])),
  );
  withCommon(org.command('delete').description('delete an organization; its keys stop working at once').argument('<org>')).action((id, o) =>
    runWithStore(o, async ({ admin }) => (await admin.deleteOrg(id), deleted(id)), () => `deleted organization ${id}`),
  );

  const project = program.command('project').description('projects');
  withCommon(
    project
      .command('create')
      .description('create a project (the batch API stays off until --api-enabled)')
      .requiredOption('--name <name>', 'its name')
      .option('--org <org>', 'organization id (default: a default organization, made on first use)')
      .option('--api-enabled', 'turn the batch API on for it'),
  ).action((o) =>
    runWithStore(
      o,
      async ({ admin }) => projectJson(await admin.createProject({ name: o.name, orgId: o.org, apiEnabled: o.apiEnabled === true })),
      (r) => `created project ${r.id} (${r.name}) in ${r.org_id}, batch API ${onOff(r.api_enabled)}`,
    ),
  );
  withCommon(
    project
      .command('update')
      .description('change a project')
      .argument('<project>')
      .option('--api-enabled <bool>', 'true or false')
      .option('--monthly-event-limit <n>', `a whole number of events per calendar month (${MONTHLY_EVENT_LIMIT_RANGE.min} to ${MONTHLY_EVENT_LIMIT_RANGE.max}), or none`)
      .option('--retention-days <n>', `days to keep its events, 1 to ${MAX_RETENTION_DAYS} (default ${DEFAULT_RETENTION_DAYS})`),
  ).action((id, o) =>
    runWithStore(
      o,
      async ({ admin }) => {
        const patch: { apiEnabled?: boolean; monthlyEventLimit?: number | null; retentionDays?: number } = {};
        if (o.retentionDays !== undefined) patch.retentionDays = parseWhole(o.retentionDays, '--retention-days', { min: 1, max: MAX_RETENTION_DAYS });
        if (o.apiEnabled !== undefined) patch.apiEnabled = parseBool(o.apiEnabled, '--api-enabled');
        if (o.monthlyEventLimit !== undefined) {
          patch.monthlyEventLimit = o.monthlyEventLimit === 'none' ? null : parseWhole(o.monthlyEventLimit, '--monthly-event-limit', MONTHLY_EVENT_LIMIT_RANGE, 'none');
        }
        if (Object.keys(patch).length === 0) {
          throw new UsageError('Nothing to change: give --api-enabled, --monthly-event-limit or --retention-days.');
        }
        return projectListingJson(await admin.updateProject(id, patch));
      },
      (r) => `project ${r.id}: batch API ${onOff(r.api_enabled)}, monthly event limit ${r.monthly_event_limit === null ? 'none' : formatCount(r.monthly_event_limit)}, retention ${formatCount(r.retention_days)} days`,
    ),
  );
  withCommon(project.command('list').description('list the projects').option('--org <org>', 'only this organization')).action((o) =>
    runWithStore(
      o,
      async ({ admin }) => (await admin.listProjects(o.org)).map(projectListingJson),
      (r) =>
        table([
          ['ID', 'ORG', 'NAME', 'API', 'LIMIT', 'RETENTION'],
          ...r.map((p) => [p.id, p.org_id, p.name, onOff(p.api_enabled), p.monthly_event_limit === null ? 'none' : formatCount(p.monthly_event_limit), `${formatCount(p.retention_days)}d`]),
        ]),
    ),
  );
  withCommon(project.command('delete').description('delete a project; its keys stop working at once').argument('<project>')).action((id, o) =>
    runWithStore(o, async ({ admin }) => (await admin.deleteProject(id), deleted(id)), () => `deleted project ${id}`),
  );

  const source = program.command('source').description('server sources');
  withCommon(
    source
      .command('create')
      .description('create a server source in a project')
      .requiredOption('--project <project>', 'project id')
      .requiredOption('--name <name>', 'its name')
      .option('--filter-bots <bool>', 'drop track items from known bots (default true)')
      .option('--record-ip <bool>', 'keep $ip (default false)'),
  ).action((o) =>
    runWithStore(
      o,
      async ({ admin }) =>
        sourceJson(
          await admin.createSource({
            projectId: o.project,
            name: o.name,
            filterBots: o.filterBots === undefined ? undefined : parseBool(o.filterBots, '--filter-bots'),
            recordIp: o.recordIp === undefined ? undefined : parseBool(o.recordIp, '--record-ip'),
          }),
        ),
      (r) => `created source ${r.id} (${r.name}) in ${r.project_id}: bot filter ${onOff(r.filter_bots)}, IP recording ${onOff(r.record_ip)}`,
    ),
  );
  withCommon(
    source
      .command('update')
      .description('change a source')
      .argument('<source>')
      .option('--filter-bots <bool>', 'true or false')
      .option('--record-ip <bool>', 'true or false')
      .option('--plan <plan>', 'the tracking plan it checks: its id, or id@version to pin a version (default: the latest)')
      .option('--no-plan', 'check no tracking plan')
      .option('--plan-mode <mode>', 'off, observe or enforce')
      .option('--unplanned-events <what>', 'allow or refuse events the plan does not name'),
  ).action((id, o) =>
    runWithStore(
      o,
      async ({ admin, store }) => {
        const patch: { filterBots?: boolean; recordIp?: boolean } = {};
        if (o.filterBots !== undefined) patch.filterBots = parseBool(o.filterBots, '--filter-bots');
        if (o.recordIp !== undefined) patch.recordIp = parseBool(o.recordIp, '--record-ip');
        // commander sets plan to false for --no-plan, and leaves it true when neither is given.
        const planChange = { plan: o.plan === false ? null : typeof o.plan === 'string' ? o.plan : undefined, mode: o.planMode, unplannedEvents: o.unplannedEvents };
        const plans = planAdmin(store, Date.now);
        if (Object.keys(patch).length === 0 && Object.values(planChange).every((v) => v === undefined)) {
          throw new UsageError('Nothing to change: give --filter-bots, --record-ip, --plan (or --no-plan), --plan-mode or --unplanned-events.');
        }
        // The plan is shown when it is changed; the source's answer is otherwise as it was.
        const plan = Object.values(planChange).some((v) => v !== undefined) ? { plan: await plans.setSourcePlan(id, planChange) } : {};
        const source = Object.keys(patch).length === 0 ? await admin.getSource(id) : await admin.updateSource(id, patch);
        return { ...sourceJson(source), ...plan };
      },
      (r) => {
        const base = `source ${r.id}: bot filter ${onOff(r.filter_bots)}, IP recording ${onOff(r.record_ip)}`;
        const p = 'plan' in r ? r.plan : undefined;
        if (p === undefined) return base;
        return `${base}, plan ${p.id === null ? 'none' : `${p.id}${p.version === null ? '' : `@${p.version}`} (${p.mode}, unplanned events ${p.unplanned_events})`}`;
      },
    ),
  );
  withCommon(source.command('list').description("list a project's sources").requiredOption('--project <project>', 'project id')).action((o) =>
    runWithStore(
      o,
      async ({ admin }) => (await admin.listSources(o.project)).map(sourceJson),
      (r) => table([['ID', 'NAME', 'BOTS', 'IP'], ...r.map((x) => [x.id, x.name, onOff(x.filter_bots), onOff(x.record_ip)])]),
    ),
  );
  withCommon(source.command('delete').description('delete a source; its keys stop working at once').argument('<source>')).action((id, o) =>
    runWithStore(o, async ({ admin }) => (await admin.deleteSource(id), deleted(id)), () => `deleted source ${id}`),
  );

  const key = program.command('key').description('server keys');
  withCommon(key.command('create').description('create a key; the secret is shown this once').requiredOption('--source <source>', 'source id')).action((o) =>
    runWithStore(o, async ({ admin }) => admin.createKey(o.source), (r) => `created key ${r.id}: ${r.key}\nStore it now: it is not shown again.`),
  );
  withCommon(key.command('list').description("list a source's keys").requiredOption('--source <source>', 'source id')).action((o) =>
    runWithStore(
      o,
      async ({ admin }) => admin.listKeys(o.source),
      (keys) =>
        table([
          ['ID', 'KEY', 'STATUS', 'CREATED', 'LAST USED', 'EXPIRES'],
          ...keys.map((k) => [k.id, `${k.prefix}…${k.last_four}`, k.status, k.created_at, k.last_used_at ?? '-', k.expires_at ?? '-']),
        ]),
    ),
  );
  withCommon(
    key
      .command('roll')
      .description('replace a key; the old one keeps working for the grace period')
      .argument('<key>')
      .requiredOption('--grace <grace>', 'now, 24h or 7d'),
  ).action((id, o) =>
    runWithStore(
      o,
      async ({ admin }) => {
        if (!isGrace(o.grace)) throw new UsageError(`--grace takes now, 24h or 7d, not "${o.grace}".`);
        return admin.rollKey(id, o.grace);
      },
      (r) => `created key ${r.id}: ${r.key}\nStore it now: it is not shown again. ${r.replaces} stops working after the grace period (${o.grace}).`,
    ),
  );
  withCommon(key.command('revoke').description('revoke a key; it stops working on the next request').argument('<key>')).action((id, o) =>
    runWithStore(o, async ({ admin }) => (await admin.revokeKey(id), { id, status: 'revoked' as const }), () => `revoked key ${id}`),
  );
}
