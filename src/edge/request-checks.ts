/**
 * The checks of a request that need only its line and headers and are the
 * same for every intake, in the order of src/edge/intake-checks.ts (an
 * intake's path and query checks are its own: src/intakes/<name>/intake.ts).
 * Each returns null when the request passes, or a refusal.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { echoed } from '../domain/echo.js';
import { type Refusal, isRefusal } from '../domain/intake/refusal.js';
import type { BodyEncoding } from '../intakes/intake.js';

// Re-exported: the edge's modules have long taken them from here.
export { type Refusal, isRefusal };

/** The method: one of the intake's (POST only, for most). */
export function checkMethod(method: string, allowed: readonly string[]): Refusal | null {
  if (allowed.includes(method)) return null;
  const allow = allowed.join(', ');
  return { code: 'method_not_allowed', message: `${method} is not allowed here; send the batch with ${allowed.join(' or ')}.`, headers: { Allow: allow } };
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

/** The Content-Encoding: none, identity or gzip. */
export function checkEncoding(header: string | undefined): BodyEncoding | Refusal {
  const e = (header ?? 'identity').trim().toLowerCase();
  if (e === 'identity' || e === '') return 'identity';
  if (e === 'gzip') return 'gzip';
  return { code: 'unsupported_encoding', message: `Content-Encoding "${echoed(header ?? '')}" is not supported; send gzip or identity, or leave it out.` };
}
