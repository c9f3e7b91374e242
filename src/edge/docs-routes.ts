import type { FastifyPluginAsync } from 'fastify';
import { DOCS_PATH, OPENAPI_PATH } from '../docs/facts.js';
import { openApiDocument } from '../docs/openapi.js';
import { referencePage } from '../docs/reference-page.js';

// The page has no scripts and no outside assets; the policy makes sure it stays so.
const PAGE_HEADERS = {
  'Content-Type': 'text/html; charset=utf-8',
  'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Cache-Control': 'public, max-age=300',
};

const JSON_HEADERS = {
  'Content-Type': 'application/json; charset=utf-8',
  'X-Content-Type-Options': 'nosniff',
  'Cache-Control': 'public, max-age=300',
};

/**
 * Serves the reference page and the OpenAPI document, each built once for the
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
    app.get(OPENAPI_PATH, async (req, reply) => reply.headers(JSON_HEADERS).send(docsFor(req.server.inletBaseUrl).openapi));
  };
}
