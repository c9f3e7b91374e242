import type { FastifyInstance } from 'fastify';
import { canSee } from '../domain/accounts/accounts.js';
import { AdminError } from '../domain/admin.js';
import { monthOf } from '../domain/month.js';
import { chartBusy, dayChart, lastDays } from './chart.js';
import { sendPage } from './guard.js';
import { BASE } from './layout.js';
import { busyAsNull } from './page-reads.js';
import { type ConsoleKit, notFound } from './plugin.js';
import { projectPage, projectsPage } from './views/projects.js';

const DAY_MS = 86_400_000;
const CHART_DAYS = 30;

const idOf = (params: unknown): string => (params as { id: string }).id;

/** A whole number from a form field, or null when the field is empty. */
function wholeOrNull(v: string | null, label: string): number | null {
  const t = (v ?? '').trim();
  if (t === '') return null;
  if (!/^\d{1,15}$/.test(t)) throw new AdminError(`${label} takes a whole number, not "${t}".`);
  return Number(t);
}

/** Projects: the list, New project, a project's page, New source, Save settings. */
export function projectRoutes(app: FastifyInstance, kit: ConsoleKit): void {
  const { deps, admin, access, authed } = kit;

  const listPage = async (viewer: Parameters<typeof projectsPage>[0], error: string | null) => {
    const orgs = await access.orgs(viewer);
    const projects = (await deps.store.listings.listProjects(null)).filter((p) => canSee(viewer, p.orgId));
    return projectsPage(viewer, orgs, projects, error);
  };

  app.get(`${BASE}/projects`, authed(async (_req, reply, viewer) => sendPage(reply, 200, await listPage(viewer, null))));

  app.post(
    `${BASE}/projects`,
    authed(async (_req, reply, viewer, form) => {
      const orgId = form.get('org') ?? undefined;
      // Only an admin may leave the organization out (the default one is then used).
      if (orgId === undefined ? viewer.orgIds !== null : (await access.org(viewer, orgId)) === null) {
        return sendPage(reply, 400, await listPage(viewer, 'Choose one of your organizations.'));
      }
      try {
        const p = await admin.createProject({ name: form.get('name') ?? '', orgId, apiEnabled: form.get('api_enabled') === 'true' });
        return reply.code(303).header('Location', `${BASE}/projects/${p.id}`).send();
      } catch (e) {
        if (!(e instanceof AdminError)) throw e;
        return sendPage(reply, 400, await listPage(viewer, e.message.replace('--name', 'Name')));
      }
    }),
  );

  app.get(
    `${BASE}/projects/:id`,
    authed(async (req, reply, viewer) => {
      const found = await access.project(viewer, idOf(req.params));
      if (found === null) return notFound(reply, viewer);
      const now = deps.clock();
      const days = lastDays(now, CHART_DAYS);
      const from = Date.parse(`${days[0]}T00:00:00Z`);
      const month = monthOf(now);
      const [sources, used, counts] = await Promise.all([
        deps.store.listings.listSources(found.project.id),
        deps.store.store.usage(found.project.id, month),
        deps.store.listings.eventsPerDay(found.project.id, from, from + CHART_DAYS * DAY_MS).catch(busyAsNull),
      ]);
      const saved = (req.query as Record<string, unknown>).saved === '1';
      return sendPage(reply, 200, projectPage(viewer, { ...found, sources, month, used, chart: counts === null ? chartBusy(days) : dayChart(days, counts), error: null, saved }));
    }),
  );

  app.post(
    `${BASE}/projects/:id/sources`,
    authed(async (req, reply, viewer, form) => {
      const found = await access.project(viewer, idOf(req.params));
      if (found === null) return notFound(reply, viewer);
      const s = await admin.createSource({
        projectId: found.project.id,
        name: (form.get('name') ?? '').trim() === '' ? '' : form.get('name')!,
        filterBots: form.get('filter_bots') === 'true',
        recordIp: form.get('record_ip') === 'true',
      }).catch((e: unknown) => {
        throw e instanceof AdminError ? new AdminError(e.message.replace('--name', 'Name')) : e;
      });
      return reply.code(303).header('Location', `${BASE}/sources/${s.id}`).send();
    }),
  );

  app.post(
    `${BASE}/projects/:id/settings`,
    authed(async (req, reply, viewer, form) => {
      const found = await access.project(viewer, idOf(req.params));
      if (found === null) return notFound(reply, viewer);
      const retention = wholeOrNull(form.get('retention_days'), 'Retention days');
      await admin.updateProject(found.project.id, {
        apiEnabled: form.get('api_enabled') === 'true',
        monthlyEventLimit: wholeOrNull(form.get('monthly_event_limit'), 'Monthly event limit'),
        ...(retention === null ? {} : { retentionDays: retention }),
      }).catch((e: unknown) => {
        throw e instanceof AdminError ? new AdminError(e.message.replace('--retention-days', 'Retention days')) : e;
      });
      return reply.code(303).header('Location', `${BASE}/projects/${found.project.id}?saved=1`).send();
    }),
  );
}
