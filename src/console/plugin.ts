import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { html } from '../docs/html.js';
import { type Viewer, createAccounts } from '../domain/accounts/accounts.js';
import { AdminError, createAdmin } from '../domain/admin.js';
import type { Collector } from '../domain/collector.js';
import type { LiveWindow } from '../domain/live-window.js';
import type { DestinationKinds, DestinationTarget } from '../stores/port-destinations.js';
import { access } from './access.js';
import { LiveStreams } from './live-streams.js';
import { SECURITY_HEADERS, clearedCookie, crossOrigin, csrfRefusal, sendPage, sessionCookie, sessionToken } from './guard.js';
import { BASE, notice, page } from './layout.js';
import { groupRoutes } from './group-routes.js';
import { planRoutes } from './plan-routes.js';
import { peopleRoutes } from './people-routes.js';
import { projectRoutes } from './project-routes.js';
import { sourceRoutes } from './source-routes.js';
import { loginPage } from './views/login.js';

/** What the console needs from the server. */
export interface ConsoleDeps {
  /** The domain's write path over the store: admin, account, listing and read queries go through to the store. */
  collector: Collector;
  clock: () => number;
  live: LiveWindow;
  /** Live views open at once (on this server, per session), and what one may leave unsent and for how long. */
  liveCaps: { perServer: number; perSession: number; perUser: number; bufferBytes: number; stallMs: number };
  /** Takes a live view's open socket out of the connections counted against the API's cap. */
  setApart: (socket: Socket) => void;
  /** Checks a new destination before it is kept, given the port this server listens on (its kind's check: src/destinations/registry.ts). */
  checkDestination: (d: DestinationTarget, selfPort: number | null) => Promise<string | null>;
  /** The kinds a destination may be of (src/destinations/registry.ts): the form is made from their fields. */
  destinationKinds: DestinationKinds;
}

/** What every console route handler gets: the signed-in viewer and, for a post, its form. */
export type Handler = (req: FastifyRequest, reply: FastifyReply, viewer: Viewer, form: URLSearchParams) => Promise<unknown>;

/** Shows a form's own page again after its handler refused the input (400, the message beside the field, what was typed kept). */
export type Invalid = (req: FastifyRequest, reply: FastifyReply, viewer: Viewer, form: URLSearchParams, e: AdminError) => Promise<unknown>;

/** Routes' helpers, shared by the route files. */
export interface ConsoleKit {
  deps: ConsoleDeps;
  admin: ReturnType<typeof createAdmin>;
  access: ReturnType<typeof access>;
  /**
   * Wraps a handler: signed in, and for a state change the CSRF check; a form's refusal goes to `invalid`.
   * `quiet`: the request is not counted as activity (a page's own refresh keeps no session alive).
   */
  authed: (h: Handler, invalid?: Invalid, quiet?: 'quiet') => (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
  /** The open live views: capped, and ended with their session or when the server stops. */
  streams: LiveStreams;
  /** The viewer a session token stands for now, or null; `touch: false` does not count as activity. */
  viewerOf: (token: string, touch?: boolean) => Promise<Viewer | null>;
}

// Served from the server itself: the CSP allows no other script or style.
const STATIC = new Map<string, { type: string; body: Buffer }>(
  [
    ['console.js', 'text/javascript; charset=utf-8'],
    ['console.css', 'text/css; charset=utf-8'],
  ].map(([name, type]) => [name!, { type: type!, body: readFileSync(new URL(`./static/${name}`, import.meta.url)) }]),
);

const FORM_LIMIT = 64 * 1024;

/**
 * Answers an id the viewer may not see, an id that does not exist, or a path
 * no page has: the same 404 each time, signed in or not, so it tells nothing
 * of what exists.
 */
export function notFound(reply: FastifyReply, viewer: Viewer | null): FastifyReply {
  return sendPage(reply, 404, page('Not found', html`<h1>Not found</h1>${notice('There is nothing here, or it is not yours to see.')}<p><a href="${BASE}/projects">Projects</a></p>`, viewer));
}

/** The console under /console: server-rendered pages, two static files, and a live stream per source. */
export function consolePlugin(deps: ConsoleDeps) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    const accounts = createAccounts(deps.collector, deps.clock);
    const admin = createAdmin(deps.collector.store, deps.clock);
    const secure = (): boolean => app.inletBaseUrl.startsWith('https:');
    const streams = new LiveStreams(deps.liveCaps.perServer, deps.liveCaps.perSession, deps.liveCaps.perUser, accounts.sessionOpen);

    app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_LIMIT }, (_req, body, done) =>
      done(null, new URLSearchParams(body as string)),
    );
    app.addHook('onRequest', async (_req, reply) => {
      reply.headers(SECURITY_HEADERS);
    });
    // A stopping server must not wait for live views: they never end by themselves.
    app.addHook('preClose', async () => {
      streams.endAll();
    });

    const formOf = (req: FastifyRequest): URLSearchParams => (req.body instanceof URLSearchParams ? req.body : new URLSearchParams());

    const authed =
      (h: Handler, invalid?: Invalid, quiet?: 'quiet') =>
      async (req: FastifyRequest, reply: FastifyReply): Promise<unknown> => {
        const token = sessionToken(req);
        const viewer = token === null ? null : await accounts.viewer(token, quiet === undefined);
        if (viewer === null) {
          if (req.method === 'GET') return reply.code(303).header('Location', `${BASE}/login`).send();
          return sendPage(reply, 403, loginPage('Your session has ended. Sign in again.'));
        }
        const form = formOf(req);
        const refusal = req.method === 'GET' ? null : csrfRefusal(req, viewer, form);
        if (refusal !== null) return sendPage(reply, 403, page('Refused', html`<h1>Refused</h1>${notice(refusal, 'error')}`, viewer));
        try {
          return await h(req, reply, viewer, form);
        } catch (e) {
          if (!(e instanceof AdminError)) throw e;
          if (invalid !== undefined) return invalid(req, reply, viewer, form, e);
          // A form with nothing to type (Revoke, Sign out) has no field to show the message beside.
          return sendPage(reply, 400, page('Not done', html`<h1>Not done</h1>${notice(e.message, 'error')}<p><a href="${BASE}/projects">Projects</a></p>`, viewer));
        }
      };

    app.get(`${BASE}/static/:file`, async (req, reply) => {
      const { file } = req.params as { file: string };
      const asset = STATIC.get(file);
      if (asset === undefined) return pathNotFound(req, reply);
      return reply.header('Content-Type', asset.type).header('Cache-Control', 'no-cache').send(asset.body);
    });

    const home = async (req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
      const token = sessionToken(req);
      const signedIn = token !== null && (await accounts.viewer(token)) !== null;
      return reply.code(303).header('Location', `${BASE}/${signedIn ? 'projects' : 'login'}`).send();
    };
    // The address people type either way: the server matches paths exactly, so both are routes.
    app.get(BASE, home);
    app.get(`${BASE}/`, home);
    app.get(`${BASE}/login`, async (_req, reply) => sendPage(reply, 200, loginPage(null)));
    app.post(`${BASE}/login`, async (req, reply) => {
      // No session yet, so no token to check: the browser's own origin headers stand in.
      const cross = crossOrigin(req);
      if (cross !== null) return sendPage(reply, 403, loginPage(cross));
      const form = formOf(req);
      const email = form.get('email') ?? '';
      const r = await accounts.signIn(email, form.get('password') ?? '', req.ip);
      if (r.ok) return reply.code(303).header('Set-Cookie', sessionCookie(r.token, secure())).header('Location', `${BASE}/projects`).send();
      if (r.reason === 'throttled' || r.reason === 'busy') {
        const s = Math.max(1, Math.ceil(r.retryAfterMs / 1000));
        const later = `Try again in ${s} second${s === 1 ? '' : 's'}.`;
        reply.header('Retry-After', String(s));
        return sendPage(reply, 429, loginPage(r.reason === 'busy' ? `Too many sign-ins are being checked at once. ${later}` : `Too many failed sign-ins. ${later}`, email));
      }
      return sendPage(reply, 401, loginPage('Wrong email or password.', email));
    });
    app.post(
      `${BASE}/logout`,
      authed(async (req, reply) => {
        await accounts.signOut(sessionToken(req)!);
        // At once on this server; other servers' views notice within a sweep.
        streams.endSession(sessionToken(req)!);
        return reply.code(303).header('Set-Cookie', clearedCookie(secure())).header('Location', `${BASE}/login`).send();
      }),
    );

    /** Any path under the console that no route serves: the console's own page, never the API's JSON. */
    async function pathNotFound(req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
      const token = sessionToken(req);
      // Not counted as activity: a mistyped address keeps no session alive.
      const viewer = token === null ? null : await accounts.viewer(token, false);
      return notFound(reply, viewer);
    }
    // Its own prefix: only paths under /console come here, whatever the method; the rest keep the server's 404.
    await app.register(async (scope) => scope.setNotFoundHandler(pathNotFound), { prefix: BASE });

    const kit: ConsoleKit = { deps, admin, access: access(deps.collector, admin), authed, streams, viewerOf: accounts.viewer };
    projectRoutes(app, kit);
    sourceRoutes(app, kit);
    peopleRoutes(app, kit);
    groupRoutes(app, kit);
    planRoutes(app, kit);
  };
}
