import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type Viewer, canSee } from '../domain/accounts/accounts.js';
import { AdminError, type NewKeyView } from '../domain/admin.js';
import { isGrace } from '../domain/keys.js';
import type { LiveRequest } from '../domain/live-window.js';
import type { LiveRefusal } from './live-streams.js';
import { SECURITY_HEADERS, sendPage, sessionToken } from './guard.js';
import { BASE } from './layout.js';
import { type ConsoleKit, notFound } from './plugin.js';
import { typedOf } from './project-routes.js';
import { sourceOutcomeCounts, sourceOutcomes } from '../domain/outcomes/reports.js';
import { outcomeParts } from './views/outcomes.js';
import { busyAsNull } from './page-reads.js';
import { liveLines, revokePage, rollPage, sourcePage } from './views/source.js';
import { type SourcePlanData, sourcePlanSection } from './views/plans.js';
import { planAdmin } from '../domain/plans/plan-admin.js';
import { planViolations } from '../domain/plans/violations.js';
import type { Store } from '../stores/port.js';

/** How often a live view is sent a comment line, and its viewer's access checked again. */
const HEARTBEAT_MS = 15_000;
/** Seconds a live view refused at a cap waits before its page's script asks again. */
const LIVE_RETRY_S = 10;

const idOf = (params: unknown): string => (params as { id: string }).id;
const wantsJson = (req: FastifyRequest): boolean => (req.headers.accept ?? '').includes('application/json');

/** A source's page, its keys (create, roll, revoke) and its live view. */
export function sourceRoutes(app: FastifyInstance, kit: ConsoleKit): void {
  const { deps, admin, access, authed, streams } = kit;

  async function render(reply: FastifyReply, viewer: Viewer, sourceId: string, status: number, newKey: NewKeyView | null, error: string | null, planError: string | null = null) {
    const found = (await access.source(viewer, sourceId))!;
    const [keys, outcomes, plan] = await Promise.all([
      admin.listKeys(sourceId),
      sourceOutcomes(deps.collector.store.outcomes, sourceId, deps.clock()),
      sourcePlanData(deps.collector.store, found.project.id, sourceId, deps.clock(), planError),
    ]);
    return sendPage(reply, status, sourcePage(viewer, { ...found, keys, recent: deps.live.show(sourceId), outcomes, newKey, error, plan: sourcePlanSection(viewer, plan) }));
  }

  /** The answer to Create key or Roll: JSON for the page's script, else the page with the key shown once. */
  async function keyAnswer(req: FastifyRequest, reply: FastifyReply, viewer: Viewer, sourceId: string, make: () => Promise<NewKeyView>) {
    let made: NewKeyView;
    try {
      made = await make();
    } catch (e) {
      if (!(e instanceof AdminError)) throw e;
      if (wantsJson(req)) return reply.code(409).header('Cache-Control', 'no-store').send({ error: e.message });
      return render(reply, viewer, sourceId, 409, null, e.message);
    }
    if (wantsJson(req)) return reply.code(201).header('Cache-Control', 'no-store').send({ id: made.id, key: made.key });
    return render(reply, viewer, sourceId, 201, made, null);
  }

  app.get(
    `${BASE}/sources/:id`,
    authed(async (req, reply, viewer) => {
      const found = await access.source(viewer, idOf(req.params));
      if (found === null) return notFound(reply, viewer);
      return render(reply, viewer, found.source.id, 200, null, null);
    }),
  );

  app.post(
    `${BASE}/sources/:id/keys`,
    authed(async (req, reply, viewer) => {
      const found = await access.source(viewer, idOf(req.params));
      if (found === null) return notFound(reply, viewer);
      return keyAnswer(req, reply, viewer, found.source.id, () => admin.createKey(found.source.id));
    }),
  );

  // Roll asks first, as Revoke does: the source page's Roll opens this page, whose form makes the change.
  app.get(
    `${BASE}/keys/:id/roll`,
    authed(async (req, reply, viewer) => {
      const found = await access.key(viewer, idOf(req.params));
      if (found === null) return notFound(reply, viewer);
      const view = (await admin.listKeys(found.source.id)).find((k) => k.id === found.key.id)!;
      const grace = (req.query as Record<string, unknown>).grace;
      return sendPage(reply, 200, rollPage(viewer, view, found.source, typeof grace === 'string' ? grace : 'now', null));
    }),
  );

  app.post(
    `${BASE}/keys/:id/roll`,
    authed(async (req, reply, viewer, form) => {
      const found = await access.key(viewer, idOf(req.params));
      if (found === null) return notFound(reply, viewer);
      const grace = form.get('grace') ?? '';
      if (!isGrace(grace) && !wantsJson(req)) {
        const view = (await admin.listKeys(found.source.id)).find((k) => k.id === found.key.id)!;
        const refused = new AdminError('Choose a grace period: now, 24h or 7d.', 'grace');
        return sendPage(reply, 400, rollPage(viewer, view, found.source, grace, typedOf(form, refused)));
      }
      return keyAnswer(req, reply, viewer, found.source.id, async () => {
        if (!isGrace(grace)) throw new AdminError('Choose a grace period: now, 24h or 7d.', 'grace');
        return admin.rollKey(found.key.id, grace);
      });
    }),
  );

  app.get(
    `${BASE}/keys/:id/revoke`,
    authed(async (req, reply, viewer) => {
      const found = await access.key(viewer, idOf(req.params));
      if (found === null) return notFound(reply, viewer);
      const view = (await admin.listKeys(found.source.id)).find((k) => k.id === found.key.id)!;
      return sendPage(reply, 200, revokePage(viewer, view, found.source));
    }),
  );

  app.post(
    `${BASE}/keys/:id/revoke`,
    authed(async (req, reply, viewer) => {
      const found = await access.key(viewer, idOf(req.params));
      if (found === null) return notFound(reply, viewer);
      await admin.revokeKey(found.key.id);
      return reply.code(303).header('Location', `${BASE}/sources/${found.source.id}`).send();
    }),
  );

  // The source's tracking plan, mode and unplanned events: an admin's to change; every server sees it on its next request.
  app.post(
    `${BASE}/sources/:id/plan`,
    authed(async (req, reply, viewer, form) => {
      const found = await access.source(viewer, idOf(req.params));
      if (found === null) return notFound(reply, viewer);
      if (!viewer.user.admin) return render(reply, viewer, found.source.id, 403, null, null, 'Only an admin changes a source\'s tracking plan.');
      const plan = form.get('plan') ?? '';
      const unplanned = form.get('unplanned_events') ?? '';
      try {
        await planAdmin(deps.collector.store, deps.clock).setSourcePlan(found.source.id, {
          plan: plan === '' ? null : plan,
          mode: plan === '' ? 'off' : (form.get('mode') ?? 'off'),
          ...(unplanned === '' ? {} : { unplannedEvents: unplanned }),
        });
      } catch (e) {
        if (!(e instanceof AdminError)) throw e;
        return render(reply, viewer, found.source.id, 400, null, null, e.message);
      }
      return reply.code(303).header('Location', `${BASE}/sources/${found.source.id}#plan`).send();
    }),
  );

  // The Item outcomes' counts, which the page's script asks for every few seconds while it is open:
  // counts only (no kept item), read where page reads run, never on the connection that writes.
  app.get(
    `${BASE}/sources/:id/outcomes`,
    authed(async (req, reply, viewer) => {
      const found = await access.source(viewer, idOf(req.params));
      if (found === null) return notFound(reply, viewer);
      const o = await sourceOutcomeCounts(deps.collector.store.outcomes, found.source.id, deps.clock()).catch(busyAsNull);
      // Too many page reads wait: this refresh is skipped, the next one asks again.
      if (o === null) return reply.code(503).header('Retry-After', '5').header('Cache-Control', 'no-store').send({ busy: true });
      return reply.header('Cache-Control', 'no-store').send(outcomeParts(o));
    }, undefined, 'quiet'),
  );

  // Server-sent events: each answered request of the source, as the lines the page shows.
  app.get(
    `${BASE}/sources/:id/live`,
    authed(async (req, reply, viewer) => {
      const found = await access.source(viewer, idOf(req.params));
      if (found === null) return notFound(reply, viewer);
      const token = sessionToken(req)!;
      let ended = false;
      let unsubscribe = (): void => undefined;
      let beat: NodeJS.Timeout | undefined;
      const res = reply.raw;
      // cut: the socket is destroyed, not ended, when the client is gone or reads nothing (a polite end's last bytes would wait on it forever).
      const end = (cut = false): void => {
        if (ended) return;
        ended = true;
        unsubscribe();
        clearInterval(beat);
        forget();
        if (cut) res.destroy();
        else res.end();
      };
      const opened = streams.open(token, viewer.user.id, () => end());
      if (typeof opened === 'string') return refuseLive(reply, opened, { session_full: streams.perSession, user_full: streams.perUser, server_full: streams.perServer }[opened]);
      const forget = opened;
      reply.hijack();
      res.writeHead(200, {
        ...SECURITY_HEADERS,
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-store',
        'X-Accel-Buffering': 'no',
        // The connection is the stream's alone: when the stream ends, so does it (a stopping server waits on no idle socket).
        Connection: 'close',
        'Request-Id': req.id,
      });
      const socket = req.raw.socket;
      // The client's FIN (the server allows half-open sockets), a reset, or a close: the view is gone at once.
      socket.once('end', () => end(true));
      socket.once('close', () => end(true));
      socket.on('error', () => end(true));
      res.once('close', () => end(true));
      // Unsent bytes and a socket that makes no progress: the client reads nothing.
      socket.setTimeout(deps.liveCaps.stallMs, () => end(true));
      // Gone while its session and source were checked: no event would ever tell.
      if (socket.destroyed) return end(true);
      deps.setApart(socket);
      const write = (text: string): void => {
        if (ended) return;
        res.write(text);
        if (res.writableLength > deps.liveCaps.bufferBytes) end(true);
      };
      write('retry: 1000\n\n');
      unsubscribe = deps.live.subscribe(found.source.id, (r) => write(eventText(r)));
      // Sign-out, a deleted session and expiry end the view within a sweep (live-streams.ts); leaving the organization, within a heartbeat.
      beat = setInterval(() => {
        void kit
          .viewerOf(token, false)
          .then((v) => (v === null || !canSee(v, found.project.orgId) ? end() : write(': beat\n\n')))
          .catch(() => end());
      }, HEARTBEAT_MS);
    }),
  );
}

/** Each request's event, rendered once however many views it is sent to. */
const rendered = new WeakMap<LiveRequest, string>();

function eventText(r: LiveRequest): string {
  let text = rendered.get(r);
  if (text === undefined) rendered.set(r, (text = `event: request\ndata: ${JSON.stringify(liveLines(r).value)}\n\n`));
  return text;
}

/** A live view past a cap: 429 with a sentence the page's script shows as it is. */
function refuseLive(reply: FastifyReply, why: LiveRefusal, cap: number): FastifyReply {
  const text = {
    session_full: `This session already has ${cap} live views open on this server. Close one (another tab of this console); this one retries by itself.`,
    user_full: `You already have ${cap} live views open on this server, in all your sessions together. Close one (a tab of this console, here or in another browser); this one retries by itself.`,
    server_full: `This server already has ${cap} live views open, as many as it allows. This one retries by itself.`,
  }[why];
  // Connection: close, so that a flood of refused views holds no idle connection of the API's.
  return reply.code(429).header('Retry-After', String(LIVE_RETRY_S)).header('Cache-Control', 'no-store').header('Connection', 'close').type('text/plain; charset=utf-8').send(text);
}

/** The source page's Tracking plan: its setting, the project's plans to choose from, and its violations of the last 24 hours. */
async function sourcePlanData(store: Store, projectId: string, sourceId: string, now: number, error: string | null): Promise<SourcePlanData> {
  const plans = planAdmin(store, () => now);
  const [setting, list, v] = await Promise.all([plans.sourcePlan(sourceId), plans.list(projectId), planViolations(store.outcomes, sourceId, now)]);
  return { sourceId, setting, plans: list, totals: v.totals, violations: v.violations, error };
}
