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

/** Serves the reference page and the OpenAPI document, both built once when the app is built. */
export function docsRoutes(baseUrl: string): FastifyPluginAsync {
  const page = referencePage(baseUrl);
  const openapi = JSON.stringify(openApiDocument(baseUrl), null, 2);
  return async (app) => {
    app.get(DOCS_PATH, async (_req, reply) => reply.headers(PAGE_HEADERS).send(page));
    app.get(OPENAPI_PATH, async (_req, reply) => reply.headers(JSON_HEADERS).send(openapi));
  };
}
