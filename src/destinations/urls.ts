/**
 * Destinations' URLs, for every kind that has one: how a URL is shown
 * (masked), and whether it points at this server.
 */
import ipaddr from 'ipaddr.js';
import type { SelfAddress } from '../stores/port-destinations.js';

/**
 * A destination's URL can hold secrets: a password (a PostgreSQL URL usually
 * has one, a webhook's may), a token in the path (Slack-style
 * https://hooks.slack.com/services/T…/B…/secret) or in the query. Only the
 * process that connects ever sees it whole. The CLI, the console, logs and
 * errors show `maskUrl`'s form, which keeps the scheme, host and port, a
 * PostgreSQL URL's user and the names of query parameters, and nothing else; any text that may
 * quote the URL (a driver's error) goes through `scrub`.
 */
export const MASK = '***';

/** The URL with its password (and a web URL's user), its path after the host, each query value and any #part replaced by ***. */
export function maskUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return MASK;
  }
  const names = [...u.searchParams.keys()];
  const user = userShown(u);
  const masked = `${u.protocol}//${u.username !== '' ? `${user}${u.password !== '' ? `:${MASK}` : ''}@` : ''}${u.host}`;
  const path = u.pathname === '' || u.pathname === '/' ? u.pathname : `/${MASK}`;
  const query = names.length === 0 ? '' : `?${names.map((n) => `${encodeURIComponent(n)}=${MASK}`).join('&')}`;
  return `${masked}${path}${query}${u.hash !== '' ? `#${MASK}` : ''}`;
}

/**
 * A PostgreSQL URL's user is a role name, worth seeing; a web URL's user is
 * most often a receiver's token (https://sk_live_…@hooks.example.com/), so it
 * is hidden too.
 */
function userShown(u: URL): string {
  return u.protocol === 'http:' || u.protocol === 'https:' ? MASK : u.username;
}

/** The parts `maskUrl` hides, as they may appear in a text: encoded as in the URL, and decoded. */
function secretsOf(u: URL): string[] {
  const raw = [u.password, ...(userShown(u) === MASK ? [u.username] : []), ...u.pathname.split('/'), ...u.search.replace(/^\?/, '').split('&').map((p) => p.slice(p.indexOf('=') + 1)), u.hash.slice(1)];
  const out = new Set<string>();
  for (const r of raw) {
    out.add(r);
    try {
      out.add(decodeURIComponent(r));
    } catch {
      // Not well encoded: only its text as written can appear.
    }
  }
  for (const [, value] of u.searchParams) out.add(value);
  return [...out];
}

/** `text` with every secret part of `url` (its password, path, query values, the URL whole) replaced by ***. */
export function scrub(text: string, url: string): string {
  let out = text.replaceAll(url, maskUrl(url));
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return out;
  }
  // Longest first, so that a secret holding a shorter one is replaced whole.
  for (const s of secretsOf(u).sort((a, b) => b.length - a.length)) if (s.length >= 3) out = out.replaceAll(s, MASK);
  return out;
}

/** The URL typed, parsed; or why it is not one, with an example of the kind's. */
export function parsedUrl(url: string, example: string): URL | string {
  try {
    return new URL(url);
  } catch {
    return `The URL "${maskUrl(url)}" is not a URL; give one such as ${example}.`;
  }
}

/** A name or literal of this machine: localhost, or a loopback or unspecified address, an IPv4-mapped one included. */
function isLocalHost(host: string): boolean {
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  const bare = host.replace(/^\[|\]$/g, '');
  if (!ipaddr.isValid(bare)) return false;
  const range = ipaddr.process(bare).range();
  return range === 'loopback' || range === 'unspecified';
}

export const portOf = (u: URL): number => (u.port !== '' ? Number(u.port) : u.protocol === 'https:' ? 443 : 80);

/**
 * Whether a URL points at this server: its base URL's host and port,
 * or a local address on the port it listens on. Events sent there would come
 * back as requests of their own, or fail for ever. A name that resolves to a
 * local address is caught when connecting (reach.ts).
 */
export function pointsAtSelf(url: string, self: SelfAddress): boolean {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  const host = u.hostname.toLowerCase().replace(/\.$/, '');
  if (self.baseUrl !== null) {
    try {
      const b = new URL(self.baseUrl);
      if (b.hostname.toLowerCase().replace(/\.$/, '') === host && portOf(b) === portOf(u)) return true;
    } catch {
      // A base URL that does not parse names nothing.
    }
  }
  return self.port !== null && isLocalHost(host) && portOf(u) === self.port;
}
