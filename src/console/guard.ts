import { timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { SESSION_ABSOLUTE_MS, type Viewer } from '../domain/accounts/accounts.js';
import { BASE } from './layout.js';

/** The session cookie's name. */
export const COOKIE = 'inlet_session';

/**
 * Only the console's own scripts, styles and connections; no inline script
 * or style, no framing, forms post only here.
 */
export const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'";

/** Headers of every console answer. */
export const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy': CSP,
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'same-origin',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

/** The session token the request's cookie carries, if any. */
export function sessionToken(req: FastifyRequest): string | null {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === COOKIE) {
      const v = part.slice(eq + 1).trim();
      return /^[A-Za-z0-9_-]{20,100}$/.test(v) ? v : null;
    }
  }
  return null;
}

/**
 * The cookie that holds a session: HttpOnly, SameSite=Strict, only for the
 * console's paths, Secure when the console is served over https (the
 * public URL, INLET_BASE_URL, says so).
 */
export function sessionCookie(token: string, secure: boolean): string {
  return `${COOKIE}=${token}; Path=${BASE}; HttpOnly; SameSite=Strict; Max-Age=${SESSION_ABSOLUTE_MS / 1000}${secure ? '; Secure' : ''}`;
}

/** The cookie that removes it. */
export function clearedCookie(secure: boolean): string {
  return `${COOKIE}=; Path=${BASE}; HttpOnly; SameSite=Strict; Max-Age=0${secure ? '; Secure' : ''}`;
}

/**
 * Why a state-changing request cannot be taken as coming from a page of this
 * console, or null when it can: the browser's own Origin and Sec-Fetch-Site
 * headers, when sent, must name the host the request was sent to (its Host
 * header, as the proxy in front passed it on). Browsers send at least one of
 * them with every POST. The reason names both values, so that a proxy that
 * drops the port from Host (nginx's `$host`) is found from the message.
 */
export function crossOrigin(req: FastifyRequest): string | null {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin') return `The browser sent this request from another site (Sec-Fetch-Site: ${shown(site)}), not from a page of this console.`;
  const origin = req.headers.origin;
  if (origin === undefined) return null;
  const host = req.headers.host ?? '';
  try {
    // Through URL on both sides, so a default port written or not compares equal.
    const from = new URL(origin);
    if (from.host === new URL(`${from.protocol}//${host}`).host) return null;
  } catch {
    // Either is no URL at all: they differ.
  }
  return `The request's origin (${shown(origin)}) does not match the host it was sent to (${shown(host)}). A proxy in front must pass the Host header on as the browser sent it, port included (nginx: proxy_set_header Host $http_host).`;
}

/** A header's value as a message shows it: short, on one line. */
function shown(v: string): string {
  return JSON.stringify(v.length > 100 ? `${v.slice(0, 100)}…` : v);
}

/** The CSRF check of every state change made in a session: why it fails (see crossOrigin), or null when it passes. */
export function csrfRefusal(req: FastifyRequest, viewer: Viewer, form: URLSearchParams | null): string | null {
  const cross = crossOrigin(req);
  if (cross !== null) return cross;
  const header = req.headers['x-csrf-token'];
  const given = typeof header === 'string' ? header : (form?.get('_csrf') ?? '');
  const want = Buffer.from(viewer.session.csrfToken);
  const got = Buffer.from(given);
  if (got.length === want.length && timingSafeEqual(got, want)) return null;
  return 'This change did not come from a page of this console, or the page is too old. Reload it and try again.';
}

/** Sends a console page with its headers. */
export function sendPage(reply: FastifyReply, status: number, body: string): FastifyReply {
  return reply.code(status).header('Content-Type', 'text/html; charset=utf-8').header('Cache-Control', 'no-store').send(body);
}
