import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { AdminError } from '../../domain/admin.js';
import { parsePlanRef, planAdmin } from '../../domain/plans/plan-admin.js';
import { formatCount } from '../numbers.js';
import { PlanRefused } from '../../domain/plans/rules.js';
import { fromSegment } from '../../domain/plans/segment-import.js';
import { testLines } from '../../pipeline/plan-test.js';
import { setExitCode } from '../io.js';
import { cliIo } from '../io.js';
import { UsageError, parseTime, parseWhole, runWithStore, table, withCommon } from '../context.js';
import { readyPlanOf } from '../../domain/plans/check.js';
import { checkPeriod } from '../../domain/plans/plan-check.js';
import { type PlanRule, readRules } from '../../domain/plans/rules.js';

const VERSION = { min: 1, max: 999_999_999 };

/** A JSON file named on the command line, read from the command's directory. */
export function readJsonFile(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(resolve(cliIo().cwd, file), 'utf8');
  } catch (e) {
    throw new UsageError(`Cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? 'unreadable'}.`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new UsageError(`${file} is not JSON: ${(e as Error).message}`);
  }
}

/** A draft's rules, as push would take them (a draft that push would refuse is refused here too, naming the rule). */
function draftRules(file: string): PlanRule[] {
  try {
    return readRules(readJsonFile(file));
  } catch (e) {
    if (e instanceof PlanRefused) throw new UsageError(`${file}: ${e.message}`);
    throw e;
  }
}

/** The rules of the plan named (P or P@V), or else of the source's own (its pinned version or the latest). */
async function storedRules(admin: ReturnType<typeof planAdmin>, source: string, named: string | undefined, setting: { id: string | null; version: number | null }): Promise<PlanRule[]> {
  const ref = named !== undefined ? parsePlanRef(named) : setting.id === null ? null : { planId: setting.id, version: setting.version };
  if (ref === null) throw new UsageError(`Source ${source} has no plan: name one with --plan P[@V], or a draft with --file FILE.`);
  return (await admin.show(ref.planId, ref.version ?? undefined)).rules as PlanRule[];
}

const version = (v: string | undefined, flag: string): number | undefined => (v === undefined ? undefined : parseWhole(v, flag, VERSION));

/** `inlet plan …`: tracking plans, their versions, and what they would refuse (docs/plans.md). */
export function registerPlanCommands(program: Command): void {
  const plan = program.command('plan').description('tracking plans: what each event must look like');
  withCommon(plan.command('create').description('create a plan in a project (no version until a push)').requiredOption('--project <project>', 'project id').requiredOption('--name <name>', 'its name')).action((o) =>
    runWithStore(o, ({ store }) => planAdmin(store, Date.now).create(o.project, o.name), (r) => `created plan ${r.id} (${r.name}) in ${r.project_id}`),
  );
  withCommon(plan.command('push').description('push a file of rules as the next version').argument('<plan>').argument('<file>', '{"rules": [...]}')).action((id, file, o) =>
    runWithStore(
      o,
      ({ store }) => planAdmin(store, Date.now).push(id, readJsonFile(file)),
      (r) => `plan ${r.id}: version ${r.version}, ${r.rules} rules (${r.changes.added.length} added, ${r.changes.changed.length} changed, ${r.changes.removed.length} removed)`,
    ),
  );
  withCommon(
    plan.command('pull').description("a version's rules, as push reads them").argument('<plan>').option('--version <v>', 'version (default: the latest)').option('--out <file>', 'write them to this file'),
  ).action((id, o) =>
    runWithStore(
      o,
      async ({ store }) => {
        const r = await planAdmin(store, Date.now).pull(id, version(o.version, '--version'));
        if (o.out !== undefined) writeFileSync(resolve(cliIo().cwd, o.out), `${JSON.stringify(r, null, 2)}\n`);
        return r;
      },
      (r) => (o.out !== undefined ? `wrote ${r.rules.length} rules to ${o.out}` : JSON.stringify(r, null, 2)),
    ),
  );
  withCommon(plan.command('list').description("a project's plans, with the sources using each").requiredOption('--project <project>', 'project id')).action((o) =>
    runWithStore(
      o,
      ({ store }) => planAdmin(store, Date.now).list(o.project),
      (rows) => table([['ID', 'NAME', 'LATEST', 'SOURCES'], ...rows.map((p) => [p.id, p.name, p.latest_version === null ? '-' : String(p.latest_version), p.sources.join(', ') || '-'])]),
    ),
  );
  withCommon(plan.command('show').description('one version of a plan').argument('<plan>').option('--version <v>', 'version (default: the latest)')).action((id, o) =>
    runWithStore(
      o,
      ({ store }) => planAdmin(store, Date.now).show(id, version(o.version, '--version')),
      (r) => [`plan ${r.id} (${r.name}), version ${r.version} of ${r.latest_version}, pushed ${r.created_at}`, ...r.rules.map((x) => `  ${x.type} ${x.type === 'track' ? x.event : x.type === 'group' ? x.group_type : ''}`.trimEnd())].join('\n'),
    ),
  );
  withCommon(plan.command('diff').description('the rules added, changed and removed from one version to another').argument('<plan>').argument('<v1>').argument('<v2>')).action((id, v1, v2, o) =>
    runWithStore(
      o,
      ({ store }) => planAdmin(store, Date.now).diff(id, version(v1, 'V1')!, version(v2, 'V2')!),
      (r) => [`plan ${r.id}, version ${r.from} to ${r.to}:`, ...r.added.map((k) => `  + ${k}`), ...r.changed.map((k) => `  ~ ${k}`), ...r.removed.map((k) => `  - ${k}`)].join('\n'),
    ),
  );
  withCommon(plan.command('delete').description('delete a plan and its versions (refused while a source uses it)').argument('<plan>')).action((id, o) =>
    runWithStore(o, ({ store }) => planAdmin(store, Date.now).delete(id), () => `deleted plan ${id}`),
  );
  withCommon(
    plan.command('test').description('check NDJSON items offline against a plan: what enforce would do with each line').argument('<plan>').argument('<file>', 'NDJSON, one item a line').option('--version <v>', 'version (default: the latest)'),
  ).action((id, file, o) =>
    runWithStore(
      o,
      async ({ store }) => {
        const admin = planAdmin(store, Date.now);
        const shown = await admin.show(id, version(o.version, '--version'));
        let text: string;
        try {
          text = readFileSync(resolve(cliIo().cwd, file), 'utf8');
        } catch (e) {
          throw new UsageError(`Cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? 'unreadable'}.`);
        }
        const verdicts = testLines(text, await readyPlanOf(shown.rules as PlanRule[], 'refuse'), Date.now());
        if (verdicts.some((v) => v.outcome === 'refused')) setExitCode(1);
        return verdicts;
      },
      (rows) => {
        if (rows.length === 0) return 'no items';
        const refused = rows.filter((r) => r.outcome === 'refused').length;
        const lines = rows.map((r) => `line ${r.line}: ${r.outcome}${r.errors.map((e) => `\n  ${e.code} ${e.field}: ${e.message}`).join('')}`);
        return [...lines, `${formatCount(rows.length)} items: ${formatCount(rows.length - refused)} accepted, ${formatCount(refused)} refused`].join('\n');
      },
    ),
  );
  withCommon(
    plan
      .command('import')
      .description("make a plan from a Segment Protocols tracking plan's rules, as version 1")
      .requiredOption('--from <tool>', 'segment')
      .argument('<file>', '{"data": {"rules": [...]}} or {"rules": [...]}')
      .requiredOption('--project <project>', 'project id')
      .requiredOption('--name <name>', "the plan's name"),
  ).action((file, o) =>
    runWithStore(
      o,
      async ({ store }) => {
        if (o.from !== 'segment') throw new UsageError(`--from takes segment, not "${o.from}".`);
        let imported: ReturnType<typeof fromSegment>;
        try {
          imported = fromSegment(readJsonFile(file));
        } catch (e) {
          if (e instanceof PlanRefused) throw new AdminError(`Nothing was imported: ${e.message}`);
          throw e;
        }
        const admin = planAdmin(store, Date.now);
        // Checked before the plan is made, so that a refused import leaves nothing behind.
        admin.check({ rules: imported.rules });
        const made = await admin.create(o.project, o.name);
        const pushed = await admin.push(made.id, { rules: imported.rules });
        if (imported.skipped.length > 0) cliIo().stderr.write(`inlet: left out (no Inlet item for them): ${imported.skipped.join(', ')}\n`);
        return { ...made, latest_version: pushed.version };
      },
      (r) => `imported plan ${r.id} (${r.name}) in ${r.project_id}: version ${r.latest_version}`,
    ),
  );
  withCommon(
    plan
      .command('check')
      .description("check a source's stored events and kept items of a period against a plan: what enforce would have refused")
      .requiredOption('--source <source>', 'source id')
      .requiredOption('--since <time>', 'ISO 8601 or epoch ms')
      .option('--until <time>', 'ISO 8601 or epoch ms (default: now)')
      .option('--plan <plan>', "plan id, or id@version (default: the source's plan)")
      .option('--file <file>', 'a draft of rules instead of a stored plan, as push reads it and pull writes it'),
  ).action((o) =>
    runWithStore(
      o,
      async ({ store }) => {
        const since = parseTime(o.since, '--since');
        const until = o.until === undefined ? Date.now() : parseTime(o.until, '--until');
        if (o.plan !== undefined && o.file !== undefined) throw new UsageError('Name a stored plan (--plan) or a draft (--file), not both.');
        const admin = planAdmin(store, Date.now);
        const setting = await admin.sourcePlan(o.source);
        const rules = o.file !== undefined ? draftRules(o.file) : await storedRules(admin, o.source, o.plan, setting);
        // The source's own choice for unplanned events only when its own plan is checked, in enforce; a named plan or draft is held strictly.
        const unplanned = setting.mode === 'enforce' && o.plan === undefined && o.file === undefined ? setting.unplanned_events : 'refuse';
        let plan: Awaited<ReturnType<typeof readyPlanOf>>;
        try {
          plan = await readyPlanOf(rules, unplanned);
        } catch (e) {
          if (e instanceof PlanRefused) throw new AdminError(`The plan does not compile: ${e.message}`);
          throw e;
        }
        const err = cliIo().stderr;
        // A progress line on a terminal, for long periods; nothing on a pipe.
        const progress = err.isTTY ? (n: number) => err.write(`\rchecked ${formatCount(n)} items`) : undefined;
        const report = await checkPeriod(store, { sourceId: o.source, since, until, plan, progress });
        if (progress !== undefined) err.write('\n');
        return report;
      },
      (r) =>
        [
          `checked ${formatCount(r.checked)} items: enforce would have refused ${formatCount(r.would_refuse)}`,
          ...(r.would_refuse === 0 ? [] : ['by code:', ...Object.entries(r.by_code).map(([code, n]) => `  ${code}: ${formatCount(n)}`)]),
          ...(r.would_refuse === 0 ? [] : ['by event:', ...Object.entries(r.by_event).map(([event, n]) => `  ${event}: ${formatCount(n)}`)]),
        ].join('\n'),
    ),
  );
}
