import { readFileSync } from 'node:fs';
import type { FastifyPluginAsync } from 'fastify';
import { openApiDocument } from '../docs/openapi.js';
import { referencePage } from '../docs/reference-page.js';
import { DOCS_PATH, OPENAPI_PATH, REFERENCE_SCRIPT_PATH } from './docs-paths.js';

// No outside assets, and no script but the page's own file from this server; the policy makes sure it stays so.
const CSP = "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const PAGE_HEADERS = {
  'Content-Type': 'text/html; charset=utf-8',
  'Content-Security-Policy': CSP,
  'X-Content-Type-Options': 'nosniff',
  'Cache-Control': 'public, max-age=300',
};

// The filter box's script: beside the page in the source tree and in dist/ (the build copies it).
const SCRIPT = readFileSync(new URL('../docs/static/reference.js', import.meta.url));

const SCRIPT_HEADERS = {
  'Content-Type': 'text/javascript; charset=utf-8',
  'Content-Security-Policy': CSP,
  'X-Content-Type-Options': 'nosniff',
  'Cache-Control': 'public, max-age=300',
};

const JSON_HEADERS = {
  'Content-Type': 'application/json; charset=utf-8',
  'X-Content-Type-Options': 'nosniff',
  'Cache-Control': 'public, max-age=300',
};

/**
 * Serves the reference page (and its script) and the OpenAPI document, each built once for the
 * server's base URL (known only after listening when the port was 0).
 */
export function docsRoutes(): FastifyPluginAsync {
  const built = new Map<string, { page: string; openapi: string }>();
  const docsFor = (baseUrl: string) => {
    let d = built.get(baseUrl);
    if (d === undefined) {
      d = { page: referencePage(baseUrl), openapi: JSON.stringify(openApiDocument(baseUrl), null, 2) };
      built.set(baseUrl, d);
    }
    return d;
  };
  return async (app) => {
    app.get(DOCS_PATH, async (req, reply) => reply.headers(PAGE_HEADERS).send(docsFor(req.server.inletBaseUrl).page));
    app.get(REFERENCE_SCRIPT_PATH, async (_req, reply) => reply.headers(SCRIPT_HEADERS).send(SCRIPT));
    app.get(OPENAPI_PATH, async (req, reply) => reply.headers(JSON_HEADERS).send(docsFor(req.server.inletBaseUrl).openapi));
  };
}
