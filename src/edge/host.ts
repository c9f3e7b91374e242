import type { IncomingMessage } from 'node:http';
import { domainToASCII } from 'node:url';
import type { Refusal } from './request-checks.js';

/**
 * A host as the server compares it: lower case, no port, no brackets, no
 * trailing dot, international names in their ASCII form. Every spelling a
 * resolver treats as the same name (`T.Example.com.:80`, `[t.example.com]`)
 * must compare equal, or a tracker host could be reached around its check.
 */
export function normaliseHost(raw: string | undefined): string {
  const key = raw ?? '';
  const known = seen.get(key);
  if (known !== undefined) return known;
  const h = spelled(key);
  // Every request asks, nearly all with the same few Hosts; a client making Hosts up only refills the map.
  if (key.length > 255) return h;
  if (seen.size >= SEEN_LIMIT) seen.clear();
  seen.set(key, h);
  return h;
}

/** Hosts normalised before, with what they became. */
const seen = new Map<string, string>();
const SEEN_LIMIT = 256;

function spelled(raw: string): string {
  let h = raw.trim();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    h = end === -1 ? h.slice(1) : h.slice(1, end);
  } else if (h.indexOf(':') === h.lastIndexOf(':')) {
    // One colon is a port; more than one is a bare IPv6 address, kept whole.
    const colon = h.indexOf(':');
    if (colon !== -1) h = h.slice(0, colon);
  }
  if (h.includes(':')) return h.toLowerCase();
  // domainToASCII lower-cases, maps full-width dots and turns IDNs into punycode; '' when it is no name at all.
  return (domainToASCII(h) || h.toLowerCase()).replace(/\.+$/, '');
}

/**
 * The "http" check (src/edge/intake-checks.ts), with the other faults of HTTP itself: an HTTP/1.1 request carries
 * exactly one Host (RFC 9112 §3.2). Node would answer a missing one with a
 * bare 400 of its own, outside the envelope, so it is told not to and the
 * check is made here.
 */
export function checkHostHeader(req: IncomingMessage): Refusal | null {
  let hosts = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i]!.toLowerCase() === 'host') hosts++;
  if (hosts > 1) return { code: 'bad_request', message: 'The request carries more than one Host header; send exactly one.', headers: { Connection: 'close' } };
  const http11 = req.httpVersionMajor > 1 || (req.httpVersionMajor === 1 && req.httpVersionMinor >= 1);
  // An absolute-form target gives the host itself (see originForm).
  if (http11 && req.headers.host === undefined) {
    return { code: 'bad_request', message: 'An HTTP/1.1 request must carry a Host header; send one.', headers: { Connection: 'close' } };
  }
  return null;
}
