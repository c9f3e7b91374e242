import { readFileSync } from 'node:fs';
import type { FastifyPluginAsync } from 'fastify';

/** Where `/` sends a browser: the console, which itself sends to sign-in or the projects. */
export const ROOT_TARGET = '/console';

// Beside this file in the source tree and in dist/ (the build copies it). Browsers ask for
// /favicon.ico on every page of the server (the console's and the reference's) unasked.
const FAVICON = readFileSync(new URL('./static/favicon.ico', import.meta.url));

/**
 * GET / and GET /favicon.ico: the URL the server prints opens the console instead of an
 * API 404, and browsers get an icon instead of a 404 in their console.
 */
export function rootRoutes(): FastifyPluginAsync {
  return async (app) => {
    app.get('/', async (_req, reply) => reply.code(302).header('Location', ROOT_TARGET).header('Cache-Control', 'no-store').send());
    app.get('/favicon.ico', async (_req, reply) =>
      reply.header('Content-Type', 'image/x-icon').header('Cache-Control', 'public, max-age=86400').header('X-Content-Type-Options', 'nosniff').send(FAVICON),
    );
  };
}
