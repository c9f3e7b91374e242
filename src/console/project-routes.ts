import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type Viewer, canSee } from '../domain/accounts/accounts.js';
import { AdminError, type AdminField } from '../domain/admin.js';
import { monthOf } from '../domain/month.js';
import { dayChart, lastDays } from './chart.js';
import { refusalShares, storedPerDay } from '../domain/outcomes/reports.js';
import { type DestinationAdmin, destinationAdmin } from '../domain/delivery/destination-admin.js';
import type { AddressInfo } from 'node:net';
import { sendPage } from './guard.js';
import { BASE } from './layout.js';
import { type ConsoleKit, notFound } from './plugin.js';
import { projectPage, projectsPage } from './views/projects.js';
import type { Typed } from './views/typed.js';

const DAY_MS = 86_400_000;
const CHART_DAYS = 30;

const idOf = (params: unknown): string => (params as { id: string }).id;

/** A whole number from a form field (thousands separators allowed, as the console writes numbers), or null when the field is empty. */
function wholeOrNull(v: string | null, label: string, field: AdminField): number | null {
  const t = (v ?? '').trim();
  if (t === '') return null;
  if (!/^(\d{1,15}|\d{1,3}(,\d{3}){1,4})$/.test(t)) throw new AdminError(`${label} takes a whole number, not "${t}".`, field);
  return Number(t.replaceAll(',', ''));
}

/** The domain's messages name the command's flags; the console names its fields. */
const FLAG_LABELS: [string, string][] = [
  ['--name', 'Name'],
  ['--table', 'Table'],
  ['--retention-days', 'Retention days'],
];

/** A validation error as a form shows it again: what was typed, the field at fault, the message in the form's words. */
export function typedOf(form: URLSearchParams, e: AdminError): Typed {
  const message = FLAG_LABELS.reduce((m, [flag, label]) => m.replace(flag, label), e.message);
  return { values: form, field: e.field, message };
}

/** Projects: the list, New project, a project's page, New source, Save settings. */
export function projectRoutes(app: FastifyInstance, kit: ConsoleKit): void {
  const { deps, admin, access, authed } = kit;

  const listPage = async (viewer: Viewer, typed: Typed | null) => {
    const orgs = await access.orgs(viewer);
    const projects = (await deps.collector.listings.listProjects(null)).filter((p) => canSee(viewer, p.orgId));
    const shares = await refusalShares(deps.collector.store.outcomes, projects.map((p) => p.id), deps.clock());
    return projectsPage(viewer, orgs, projects, shares, typed);
  };

  /** Destinations, refusing a URL of this server, and what destinations may not reach, as the delivery would. */
  const destinations = (): DestinationAdmin => {
    const port = (app.server.address() as AddressInfo | null)?.port ?? null;
    return destinationAdmin(deps.collector.store, deps.clock, { self: { baseUrl: app.inletBaseUrl, port }, check: (d) => deps.checkDestination(d, port) });
  };

  /** A project's page, with one of its forms shown again after a validation error. */
  async function showProject(
    req: FastifyRequest,
    reply: FastifyReply,
    viewer: Viewer,
    status: number,
    forms: { newSource?: Typed; settings?: Typed; newDestination?: Typed; madeDestination?: { id: string; secret?: string } },
  ) {
    const found = await access.project(viewer, idOf(req.params));
    if (found === null) return notFound(reply, viewer);
    const now = deps.clock();
    const days = lastDays(now, CHART_DAYS);
    const from = Date.parse(`${days[0]}T00:00:00Z`);
    const month = monthOf(now);
    const [sources, used, counts, list] = await Promise.all([
      deps.collector.listings.listSources(found.project.id),
      deps.collector.store.usage(found.project.id, month),
      storedPerDay(deps.collector.store.outcomes, found.project.id, from, from + CHART_DAYS * DAY_MS),
      destinations().list(found.project.id),
    ]);
    const saved = status === 200 && (req.query as Record<string, unknown>).saved === '1';
    const data = {
      ...found, sources, month, used, chart: dayChart(days, counts), newSource: forms.newSource ?? null,
      settings: forms.settings ?? null, saved,
      destinations: { projectId: found.project.id, list, typed: forms.newDestination ?? null, made: forms.madeDestination ?? null },
    };
    return sendPage(reply, status, projectPage(viewer, data));
  }

  app.get(`${BASE}/projects`, authed(async (_req, reply, viewer) => sendPage(reply, 200, await listPage(viewer, null))));

  app.post(
    `${BASE}/projects`,
    authed(
      async (_req, reply, viewer, form) => {
        const orgId = form.get('org') ?? undefined;
        // Only an admin may leave the organization out (the default one is then used).
        if (orgId === undefined ? viewer.orgIds !== null : (await access.org(viewer, orgId)) === null) {
          throw new AdminError('Choose one of your organizations.', 'orgId');
        }
        const p = await admin.createProject({ name: form.get('name') ?? '', orgId, apiEnabled: form.get('api_enabled') === 'true' });
        return reply.code(303).header('Location', `${BASE}/projects/${p.id}`).send();
      },
      async (_req, reply, viewer, form, e) => sendPage(reply, 400, await listPage(viewer, typedOf(form, e))),
    ),
  );

  app.get(
    `${BASE}/projects/:id`,
    authed(async (req, reply, viewer) => showProject(req, reply, viewer, 200, {})),
  );

  app.post(
    `${BASE}/projects/:id/sources`,
    authed(
      async (req, reply, viewer, form) => {
        const found = await access.project(viewer, idOf(req.params));
        if (found === null) return notFound(reply, viewer);
        const s = await admin.createSource({
          projectId: found.project.id,
          name: form.get('name') ?? '',
          filterBots: form.get('filter_bots') === 'true',
          recordIp: form.get('record_ip') === 'true',
        });
        return reply.code(303).header('Location', `${BASE}/sources/${s.id}`).send();
      },
      async (req, reply, viewer, form, e) => showProject(req, reply, viewer, 400, { newSource: typedOf(form, e) }),
    ),
  );

  app.post(
    `${BASE}/projects/:id/settings`,
    authed(
      async (req, reply, viewer, form) => {
        const found = await access.project(viewer, idOf(req.params));
        if (found === null) return notFound(reply, viewer);
        const monthlyEventLimit = wholeOrNull(form.get('monthly_event_limit'), 'Monthly event limit', 'monthlyEventLimit');
        const retention = wholeOrNull(form.get('retention_days'), 'Retention days', 'retentionDays');
        await admin.updateProject(found.project.id, {
          apiEnabled: form.get('api_enabled') === 'true',
          monthlyEventLimit,
          ...(retention === null ? {} : { retentionDays: retention }),
        });
        return reply.code(303).header('Location', `${BASE}/projects/${found.project.id}?saved=1`).send();
      },
      async (req, reply, viewer, form, e) => showProject(req, reply, viewer, 400, { settings: typedOf(form, e) }),
    ),
  );

  app.post(
    `${BASE}/projects/:id/destinations`,
    authed(
      async (req, reply, viewer, form) => {
        const found = await access.project(viewer, idOf(req.params));
        if (found === null) return notFound(reply, viewer);
        const table = (form.get('table') ?? '').trim();
        const made = await destinations().create({ projectId: found.project.id, kind: form.get('kind') ?? '', url: (form.get('url') ?? '').trim(), table: table === '' ? null : table });
        // Shown on the page this once, not through a redirect: the secret must not travel in a URL.
        return showProject(req, reply, viewer, 200, { madeDestination: { id: made.id, ...('secret' in made ? { secret: made.secret } : {}) } });
      },
      // The URL is not typed back into the form: it may hold a password.
      async (req, reply, viewer, form, e) => showProject(req, reply, viewer, 400, { newDestination: typedOf(form, e) }),
    ),
  );

  for (const action of ['pause', 'resume'] as const) {
    app.post(
      `${BASE}/destinations/:id/${action}`,
      authed(async (req, reply, viewer) => {
        const d = await deps.collector.store.destinations.get(idOf(req.params));
        const found = d === null ? null : await access.project(viewer, d.projectId);
        if (d === null || found === null) return notFound(reply, viewer);
        await destinations()[action](d.id);
        return reply.code(303).header('Location', `${BASE}/projects/${d.projectId}#${d.id}`).send();
      }),
    );
  }
}
