/**
 * The checks of a request that need only its line and headers, in the order
 * of src/edge/batch-checks.ts. Each returns null when the request passes, or a refusal.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { echoed } from '../domain/echo.js';
import { type Refusal, isRefusal } from '../pipeline/refusal.js';
import { ENDPOINTS } from './endpoints.js';

// Re-exported: the edge's modules have long taken them from here.
export { type Refusal, isRefusal };

const BATCH_PATH = '/api/v1/batch';
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

/** The method: POST only. */
export function checkMethod(method: string): Refusal | null {
  if (method === 'POST') return null;
  return { code: 'method_not_allowed', message: `${method} is not allowed here; send the batch with POST.`, headers: { Allow: 'POST' } };
}

/**
 * Not a browser. Browsers send Origin on every POST, and Sec-Fetch-Site with any
 * Sec-Fetch-* header. A lone "Sec-Fetch-Mode: cors" is what Node's own fetch
 * (undici) sends from a server, so it alone is let through.
 */
export function checkBrowser(headers: IncomingHttpHeaders): Refusal | null {
  let fetchHeaders = 0;
  let loneCorsMode = false;
  for (const name of Object.keys(headers)) {
    if (name.startsWith('sec-fetch-')) {
      fetchHeaders++;
      loneCorsMode = name === 'sec-fetch-mode' && String(headers[name]).trim().toLowerCase() === 'cors';
    }
  }
  const fromBrowser = headers.origin !== undefined || (fetchHeaders > 0 && !(fetchHeaders === 1 && loneCorsMode));
  return fromBrowser ? { code: 'browser_not_allowed' } : null;
}

export interface BatchOptions {
  validate: boolean;
  strict: boolean;
}

/** The query: only validate and strict, each at most once, each true or false. */
export function checkQuery(query: string): BatchOptions | Refusal {
  const opts: BatchOptions = { validate: false, strict: false };
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

/** The Content-Type: application/json, with at most a utf-8 charset. */
export function checkContentType(header: string | undefined): Refusal | null {
  const [type, ...params] = (header ?? '').split(';');
  let ok = type!.trim().toLowerCase() === 'application/json';
  for (const p of params) {
    const [k, v] = p.split('=');
    if (k!.trim().toLowerCase() === 'charset' && (v ?? '').trim().replace(/^"|"$/g, '').toLowerCase() !== 'utf-8') ok = false;
  }
  if (ok) return null;
  return {
    code: 'unsupported_media_type',
    message: `Content-Type ${header === undefined ? 'is missing' : `"${echoed(header)}" is not supported`}; send "Content-Type: application/json".`,
  };
}

export type BodyEncoding = 'identity' | 'gzip';

/** The Content-Encoding: none, identity or gzip. */
export function checkEncoding(header: string | undefined): BodyEncoding | Refusal {
  const e = (header ?? 'identity').trim().toLowerCase();
  if (e === 'identity' || e === '') return 'identity';
  if (e === 'gzip') return 'gzip';
  return { code: 'unsupported_encoding', message: `Content-Encoding "${echoed(header ?? '')}" is not supported; send gzip or identity, or leave it out.` };
}
