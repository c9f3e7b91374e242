/**
 * Destination URLs as they may be shown: a destination's URL can hold a
 * password (a PostgreSQL URL usually does, a webhook's may), and only the
 * process that connects ever sees it whole. The CLI, the console, logs and
 * errors all show `maskUrl`'s form, and any text that may quote the URL (a
 * driver's error) goes through `scrub`.
 */

/** Query parameters that can carry a secret (libpq's password, sslpassword; tokens in a webhook's query). */
const SECRET_PARAM = /pass|secret|token|key|sig|auth/i;

export const MASK = '***';

/** The URL with its password, and any parameter that may hold a secret, replaced by ***. */
export function maskUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return MASK;
  }
  if (u.password !== '') u.password = MASK;
  for (const name of [...u.searchParams.keys()]) if (SECRET_PARAM.test(name)) u.searchParams.set(name, MASK);
  // URL escapes the mask's asterisks in the query; shown as typed.
  return u.toString().replaceAll('%2A%2A%2A', MASK);
}

/** `text` with every secret part of `url` (its password, secret parameters, the URL whole) replaced by ***. */
export function scrub(text: string, url: string): string {
  let out = text.replaceAll(url, maskUrl(url));
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return out;
  }
  const secrets = [u.password, decodeURIComponent(u.password)];
  for (const [name, value] of u.searchParams) if (SECRET_PARAM.test(name)) secrets.push(value);
  for (const s of secrets) if (s.length >= 3) out = out.replaceAll(s, MASK);
  return out;
}

/** Where this server answers: its base URL, and the port it listens on (reached as localhost or any local address). */
export interface SelfAddress {
  baseUrl: string | null;
  port: number | null;
}

const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1', '0.0.0.0', '[::]', '::']);

const portOf = (u: URL): number => (u.port !== '' ? Number(u.port) : u.protocol === 'https:' ? 443 : 80);

/**
 * Whether a webhook URL points at this server: its base URL's host and port,
 * or a local address on the port it listens on. Events sent there would come
 * back as requests of their own, or fail for ever.
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
  return self.port !== null && (LOCAL_HOSTS.has(host) || host.startsWith('127.')) && portOf(u) === self.port;
}
