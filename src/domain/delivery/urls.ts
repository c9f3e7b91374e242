/**
 * Which URLs a destination may not have. How a URL is shown (masked) is the
 * port's (stores/port-destinations.ts, maskUrl and scrub), so that senders
 * and the domain mask alike.
 */
import ipaddr from 'ipaddr.js';

export { maskUrl, scrub } from '../../stores/port-destinations.js';

/** Where this server answers: its base URL, and the port it listens on (reached as localhost or any local address). */
export interface SelfAddress {
  baseUrl: string | null;
  port: number | null;
}

/** A name or literal of this machine: localhost, or a loopback or unspecified address, an IPv4-mapped one included. */
function isLocalHost(host: string): boolean {
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  const bare = host.replace(/^\[|\]$/g, '');
  if (!ipaddr.isValid(bare)) return false;
  const range = ipaddr.process(bare).range();
  return range === 'loopback' || range === 'unspecified';
}

const portOf = (u: URL): number => (u.port !== '' ? Number(u.port) : u.protocol === 'https:' ? 443 : 80);

/**
 * Whether a webhook URL points at this server: its base URL's host and port,
 * or a local address on the port it listens on. Events sent there would come
 * back as requests of their own, or fail for ever. A name that resolves to a
 * local address is caught when connecting (stores/destinations/reach.ts).
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
