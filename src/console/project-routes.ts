import { planAdmin } from '../domain/plans/plan-admin.js';
import { plansSection } from './views/plans.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type Viewer, canSee } from '../domain/accounts/accounts.js';
import { AdminError, type AdminField } from '../domain/admin.js';
import { monthOf } from '../domain/month.js';
import { dayChart, lastDays } from './chart.js';
import { refusalShares, storedPerDay } from '../domain/outcomes/reports.js';
import { type DestinationAdmin, destinationAdmin } from '../domain/delivery/destination-admin.js';
import { madeOnce } from '../domain/delivery/destination-fields.js';
import type { AddressInfo } from 'node:net';
import { sendPage } from './guard.js';
import { BASE, when } from './layout.js';
import { type ConsoleKit, notFound } from './plugin.js';
import { projectPage, projectsPage } from './views/projects.js';
import { deleteDestinationPage, eventNames, fieldValues } from './views/destinations.js';
import { parseIso } from '../domain/items/fields/timestamp.js';
import { isStorableText } from '../domain/storable.js';
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
    const month = monthOf(deps.clock());
    const [shares, used] = await Promise.all([
      refusalShares(deps.collector.store.outcomes, projects.map((p) => p.id), deps.clock()),
      Promise.all(projects.map(async (p) => [p.id, await deps.collector.store.usage(p.id, month)] as const)),
    ]);
    return projectsPage(viewer, orgs, projects, shares, new Map(used), typed);
  };

  /** Destinations, refusing a URL of this server, and what destinations may not reach, as the delivery would. */
  const destinations = (): DestinationAdmin => {
    const port = (app.server.address() as AddressInfo | null)?.port ?? null;
    return destinationAdmin(deps.collector.store, deps.clock, { self: { baseUrl: app.inletBaseUrl, port }, check: (d) => deps.checkDestination(d, port), kinds: deps.destinationKinds });
  };

  /** The forms a project page may show again (after a validation error), and what was just done. */
  interface ProjectForms {
    newSource?: Typed;
    settings?: Typed;
    newDestination?: Typed;
    madeDestination?: { id: string; once: { label: string; value: string }[] };
    replay?: { id: string; typed: Typed };
    done?: string;
  }

  /** A project's page, with one of its forms shown again after a validation error. */
  async function showProject(projectId: string, req: FastifyRequest, reply: FastifyReply, viewer: Viewer, status: number, forms: ProjectForms) {
    const found = await access.project(viewer, projectId);
    if (found === null) return notFound(reply, viewer);
    const now = deps.clock();
    const days = lastDays(now, CHART_DAYS);
    const from = Date.parse(`${days[0]}T00:00:00Z`);
    const month = monthOf(now);
    const [sources, used, counts, list, records, plans] = await Promise.all([
      deps.collector.listings.listSources(found.project.id),
      deps.collector.store.usage(found.project.id, month),
      storedPerDay(deps.collector.store.outcomes, found.project.id, from, from + CHART_DAYS * DAY_MS),
      destinations().list(found.project.id),
      deps.collector.store.destinations.list(found.project.id),
      planAdmin(deps.collector.store, deps.clock).list(found.project.id),
    ]);
    const filters = new Map(records.map((r) => [r.id, { sources: r.sources, events: r.events }]));
    const query = req.query as Record<string, unknown>;
    const saved = status === 200 && query.saved === '1';
    const done = forms.done ?? (status === 200 && query.deleted === '1' ? 'Destination deleted.' : null);
    const data = {
      ...found, sources, month, used, chart: dayChart(days, counts, found.project.id), newSource: forms.newSource ?? null,
      settings: forms.settings ?? null, saved, plans: plansSection(found.project.id, plans),
      destinations: {
        projectId: found.project.id, kinds: deps.destinationKinds, sources,
        list: list.map((d) => ({ ...d, ...(filters.get(d.id) ?? { sources: [], events: [] }) })),
        typed: forms.newDestination ?? null, made: forms.madeDestination ?? null, replay: forms.replay ?? null, done,
      },
    };
    return sendPage(reply, status, projectPage(viewer, data));
  }

  /** The destination a path names, with its project, when the viewer may see it. */
  async function destinationOf(viewer: Viewer, params: unknown) {
    const id = idOf(params);
    const d = isStorableText(id) ? await deps.collector.store.destinations.get(id) : null;
    const found = d === null ? null : await access.project(viewer, d.projectId);
    return d === null || found === null ? null : { destination: d, project: found.project };
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
    authed(async (req, reply, viewer) => showProject(idOf(req.params), req, reply, viewer, 200, {})),
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
      async (req, reply, viewer, form, e) => showProject(idOf(req.params), req, reply, viewer, 400, { newSource: typedOf(form, e) }),
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
      async (req, reply, viewer, form, e) => showProject(idOf(req.params), req, reply, viewer, 400, { settings: typedOf(form, e) }),
    ),
  );

  app.post(
    `${BASE}/projects/:id/destinations`,
    authed(
      async (req, reply, viewer, form) => {
        const found = await access.project(viewer, idOf(req.params));
        if (found === null) return notFound(reply, viewer);
        const made = await destinations().create({
          projectId: found.project.id, kind: form.get('kind') ?? '', fields: fieldValues(deps.destinationKinds, form),
          sources: form.getAll('sources'), events: eventNames(form.get('events')),
        });
        // Shown on the page this once, not through a redirect: the secret must not travel in a URL.
        return showProject(found.project.id, req, reply, viewer, 200, { madeDestination: { id: made.id, once: madeOnce(deps.destinationKinds, made) } });
      },
      // The URL is not typed back into the form: it may hold a password.
      async (req, reply, viewer, form, e) => showProject(idOf(req.params), req, reply, viewer, 400, { newDestination: typedOf(form, e) }),
    ),
  );

  for (const action of ['pause', 'resume'] as const) {
    app.post(
      `${BASE}/destinations/:id/${action}`,
      authed(async (req, reply, viewer) => {
        const found = await destinationOf(viewer, req.params);
        if (found === null) return notFound(reply, viewer);
        await destinations()[action](found.destination.id);
        return reply.code(303).header('Location', `${BASE}/projects/${found.project.id}#${found.destination.id}`).send();
      }),
    );
  }

  app.post(
    `${BASE}/destinations/:id/replay`,
    authed(
      async (req, reply, viewer, form) => {
        const found = await destinationOf(viewer, req.params);
        if (found === null) return notFound(reply, viewer);
        const since = replayTime(form.get('since'), deps.clock());
        const r = await destinations().replay(found.destination.id, since);
        return showProject(found.project.id, req, reply, viewer, 200, { done: `Destination ${r.id} delivers again the events that arrived from ${when(since)} on.` });
      },
      async (req, reply, viewer, form, e) => {
        const found = await destinationOf(viewer, req.params);
        if (found === null) return notFound(reply, viewer);
        return showProject(found.project.id, req, reply, viewer, 400, { replay: { id: found.destination.id, typed: typedOf(form, e) } });
      },
    ),
  );

  // Delete asks first, as Revoke does: the project page's Delete opens this page, whose form deletes.
  app.get(
    `${BASE}/destinations/:id/delete`,
    authed(async (req, reply, viewer) => {
      const found = await destinationOf(viewer, req.params);
      if (found === null) return notFound(reply, viewer);
      const listed = (await destinations().list(found.project.id)).find((d) => d.id === found.destination.id);
      if (listed === undefined) return notFound(reply, viewer);
      return sendPage(reply, 200, deleteDestinationPage(viewer, listed, found.project));
    }),
  );

  app.post(
    `${BASE}/destinations/:id/delete`,
    authed(async (req, reply, viewer) => {
      const found = await destinationOf(viewer, req.params);
      if (found === null) return notFound(reply, viewer);
      await destinations().delete(found.destination.id);
      return reply.code(303).header('Location', `${BASE}/projects/${found.project.id}?deleted=1#destinations-h`).send();
    }),
  );
}

/**
 * The time a Replay starts from, as typed: a date, or a date and time, in
 * UTC ("2026-01-31 12:00"), ISO 8601 with an offset, or epoch milliseconds;
 * not in the future (nothing arrived then to deliver again).
 */
export function replayTime(v: string | null, now: number): number {
  const t = (v ?? '').trim();
  const local = /^(\d{4}-\d{2}-\d{2})(?:[ T](\d{2}:\d{2})(:\d{2}(?:\.\d{1,3})?)?)?$/.exec(t);
  const ms = /^\d{1,16}$/.test(t) ? Number(t) : local !== null ? parseIso(`${local[1]}T${local[2] ?? '00:00'}${local[3] ?? ':00'}Z`) : parseIso(t);
  if (ms === null) throw new AdminError(`Replay from takes a time in UTC such as 2026-01-31 12:00, ISO 8601 with an offset, or epoch milliseconds, not "${t}".`, 'since');
  if (ms > now) throw new AdminError(`Replay from must not be in the future: it is now ${when(now)}.`, 'since');
  return ms;
}
