import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type Viewer, canSee } from '../domain/accounts/accounts.js';
import { AdminError, type NewKeyView } from '../domain/admin.js';
import { isGrace } from '../domain/keys.js';
import type { LiveRequest } from '../domain/live-window.js';
import { SECURITY_HEADERS, sendPage, sessionToken } from './guard.js';
import { BASE } from './layout.js';
import { type ConsoleKit, notFound } from './plugin.js';
import { typedOf } from './project-routes.js';
import { liveLines, revokePage, rollPage, sourcePage } from './views/source.js';

/** How often a live view is sent a comment line, and its session checked again. */
const HEARTBEAT_MS = 15_000;

const idOf = (params: unknown): string => (params as { id: string }).id;
const wantsJson = (req: FastifyRequest): boolean => (req.headers.accept ?? '').includes('application/json');

/** A source's page, its keys (create, roll, revoke) and its live view. */
export function sourceRoutes(app: FastifyInstance, kit: ConsoleKit): void {
  const { deps, admin, access, authed, streams } = kit;

  async function render(reply: FastifyReply, viewer: Viewer, sourceId: string, status: number, newKey: NewKeyView | null, error: string | null) {
    const found = (await access.source(viewer, sourceId))!;
    const keys = await admin.listKeys(sourceId);
    return sendPage(reply, status, sourcePage(viewer, { ...found, keys, recent: deps.live.show(sourceId), newKey, error }));
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

  // Server-sent events: each answered request of the source, as the lines the page shows.
  app.get(
    `${BASE}/sources/:id/live`,
    authed(async (req, reply, viewer) => {
      const found = await access.source(viewer, idOf(req.params));
      if (found === null) return notFound(reply, viewer);
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        ...SECURITY_HEADERS,
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-store',
        'X-Accel-Buffering': 'no',
        // The connection is the stream's alone: when the stream ends, so does it (a stopping server waits on no idle socket).
        Connection: 'close',
        'Request-Id': req.id,
      });
      res.write('retry: 1000\n\n');
      const send = (r: LiveRequest): void => void res.write(`event: request\ndata: ${JSON.stringify(liveLines(r).value)}\n\n`);
      const unsubscribe = deps.live.subscribe(found.source.id, send);
      const token = sessionToken(req)!;
      // A signed-out or expired session, or one no longer in the organization, stops seeing the stream within a heartbeat.
      const beat = setInterval(() => {
        void kit
          .viewerOf(token, false)
          .then((v) => (v === null || !canSee(v, found.project.orgId) ? end() : void res.write(': beat\n\n')))
          .catch(() => end());
      }, HEARTBEAT_MS);
      const end = (): void => {
        unsubscribe();
        clearInterval(beat);
        streams.delete(end);
        res.end();
      };
      streams.add(end);
      req.raw.on('close', end);
    }),
  );
}
