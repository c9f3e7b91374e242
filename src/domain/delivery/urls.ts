/**
 * Which URLs a destination may not have. How a URL is shown (masked) is the
 * port's (stores/port-destinations.ts, maskUrl and scrub), so that senders
 * and the domain mask alike.
 */
export { maskUrl, scrub } from '../../stores/port-destinations.js';

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
