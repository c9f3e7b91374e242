/**
 * Inlet's own batch API (POST /api/v1/batch) and historical import (POST
 * /api/v1/import): `{items: [...]}` with a Bearer key, answered 202 (200 for
 * a dry run). Its items are Inlet's own, so it maps nothing: the pipeline
 * checks its body as it is (pipeline/checked-batch.ts).
 */
import { echoed } from '../../domain/echo.js';
import { readBearer } from '../../domain/keys.js';
import type { Refusal } from '../../domain/intake/refusal.js';
import type { Intake, QueryOptions } from '../intake.js';
import { ENDPOINTS } from './endpoints.js';

const VERSIONED = /^\/api\/v(\d+)(?:\/|$)/;

/** The path, the host it came to, and retired versions. */
export function checkPath(path: string, host: string, trackerHosts: Set<string>, retired: Set<string>): Refusal | null {
  if (trackerHosts.has(host)) {
    return { code: 'not_found', message: `${host} is a tracker domain for browser traffic; send server batches to the app host.` };
  }
  if (ENDPOINTS.has(path)) return null;
  const version = VERSIONED.exec(path)?.[1];
  if (version !== undefined && version !== '1' && retired.has(String(Number(version)))) {
    return { code: 'api_version_retired', message: `API version ${version} is retired. Send batches to POST /api/v1/batch.` };
  }
  return { code: 'not_found', message: `There is no endpoint at ${echoed(path)}. Send batches to POST /api/v1/batch.` };
}

/** The query: only validate and strict, each at most once, each true or false. */
export function checkQuery(query: string): QueryOptions | Refusal {
  const opts: QueryOptions = { validate: false, strict: false, encoding: undefined };
  const seen = new Set<string>();
  for (const [name, value] of new URLSearchParams(query)) {
    if (name !== 'validate' && name !== 'strict') {
      return { code: 'invalid_query', message: `Unknown query parameter "${echoed(name)}"; only validate and strict are allowed.` };
    }
    if (seen.has(name)) return { code: 'invalid_query', message: `The query parameter "${echoed(name)}" is given more than once; give it once.` };
    seen.add(name);
    if (value !== 'true' && value !== 'false') {
      return { code: 'invalid_query', message: `The query parameter "${echoed(name)}" must be true or false, not "${echoed(value)}".` };
    }
    opts[name] = value === 'true';
  }
  return opts;
}

export const BATCH_INTAKE: Intake = {
  name: 'batch',
  route: { methods: ['POST'], paths: ['/api/*'], owns: (url) => url.startsWith('/api/') },
  checkPath,
  key: { header: readBearer, inBody: null },
  query: checkQuery,
  anyContentType: false,
  // The path check passed, so the path is one of the endpoints.
  profile: (path) => ENDPOINTS.get(path)!,
  wire: null,
  answers: { okStatus: 202, refuseAllInvalid: true },
};
