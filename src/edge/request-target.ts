import type { IncomingMessage } from 'node:http';

const ABSOLUTE = /^https?:\/\/([^/?#]*)([^#]*)/i;

/**
 * The request target in origin form. A server must accept the absolute form
 * (`POST http://host/api/v1/batch`, RFC 9112 §3.2.2) and take the host from it,
 * ignoring the Host header; so the target's authority replaces the header
 * here, before routing, and every later host check sees the one the client
 * meant.
 */
export function originForm(req: IncomingMessage): string {
  const url = req.url ?? '/';
  const m = url.startsWith('/') ? null : ABSOLUTE.exec(url);
  if (m === null) return url;
  // userinfo is not part of an http(s) authority that a server may act on.
  const authority = m[1]!.slice(m[1]!.lastIndexOf('@') + 1);
  req.headers.host = authority;
  const rest = m[2]!;
  return rest.startsWith('/') ? rest : `/${rest}`;
}
