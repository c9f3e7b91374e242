import type { FastifyInstance } from 'fastify';
import { AdminError } from '../domain/admin.js';
import { planAdmin } from '../domain/plans/plan-admin.js';
import { diffRules } from '../domain/plans/rules.js';
import { isStorableText } from '../domain/storable.js';
import { sendPage } from './guard.js';
import { BASE } from './layout.js';
import { type ConsoleKit, notFound } from './plugin.js';
import { planPage } from './views/plans.js';

const idOf = (params: unknown): string => (params as { id: string }).id;
const whole = (v: unknown): number | undefined => (typeof v === 'string' && /^[1-9][0-9]{0,8}$/.test(v) ? Number(v) : undefined);

/** A tracking plan's page: a version's rules, its versions, and a diff between two (`?from=&to=`). */
export function planRoutes(app: FastifyInstance, kit: ConsoleKit): void {
  const { deps, access, authed } = kit;
  app.get(
    `${BASE}/plans/:id`,
    authed(async (req, reply, viewer) => {
      const id = idOf(req.params);
      const plans = planAdmin(deps.collector.store, deps.clock);
      const plan = isStorableText(id) ? await deps.collector.store.plans.getPlan(id) : null;
      const found = plan === null ? null : await access.project(viewer, plan.projectId);
      if (plan === null || found === null) return notFound(reply, viewer);
      const q = req.query as Record<string, unknown>;
      const versions = (await deps.collector.store.plans.listVersions(plan.id)).map((v) => v.version);
      const view = { id: plan.id, project_id: plan.projectId, name: plan.name, latest_version: plan.latestVersion };
      if (versions.length === 0) return sendPage(reply, 200, planPage(viewer, { plan: view, project: found.project, version: null, createdAt: null, versions, rules: [], diff: null }));
      const asked = whole(q.version);
      const version = asked !== undefined && versions.includes(asked) ? asked : plan.latestVersion!;
      const shown = await plans.show(plan.id, version);
      const [from, to] = [whole(q.from), whole(q.to)];
      let diff = null;
      if (from !== undefined && to !== undefined && versions.includes(from) && versions.includes(to)) {
        const [a, b] = await Promise.all([plans.pull(plan.id, from), plans.pull(plan.id, to)]).catch((e: unknown) => {
          if (e instanceof AdminError) return [null, null];
          throw e;
        });
        if (a !== null && b !== null) diff = { from, to, ...diffRules(a.rules, b.rules) };
      }
      return sendPage(reply, 200, planPage(viewer, { plan: view, project: found.project, version, createdAt: shown.created_at, versions, rules: shown.rules, diff }));
    }),
  );
}
