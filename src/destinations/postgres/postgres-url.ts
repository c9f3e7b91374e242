/**
 * A postgres destination's URL, read into the few settings a destination
 * needs. It is never given to pg as a connection string: pg's parser reads
 * `sslrootcert`, `sslcert` and `sslkey` as files of the server's disk (a URL
 * naming /dev/zero made the server read it for ever), and takes any libpq
 * parameter besides. So a URL names its host, port, database, user and
 * password, and its query may hold `sslmode` and `sslca` (a CA certificate's
 * PEM text) and nothing else: any other parameter is refused by name.
 */
import { X509Certificate } from 'node:crypto';
import net from 'node:net';
import type tls from 'node:tls';
import { bareHost } from '../reach.js';

/** The query parameters a postgres destination's URL may hold. */
export const POSTGRES_URL_PARAMETERS = ['sslmode', 'sslca'] as const;

/** Values of `sslmode`: libpq's, less `allow` and `prefer` (a fallback to plain text pg cannot make, and should not). */
export const SSL_MODES = ['disable', 'require', 'verify-ca', 'verify-full'] as const;

/** Parameters that name files in libpq: said so when refused. */
const FILE_PARAMETERS = new Set(['sslrootcert', 'sslcert', 'sslkey', 'sslcrl', 'sslcrldir', 'passfile', 'service', 'servicefile']);

/** A control character: never in a user, password or database the driver writes out. */
const CONTROL = /[\u0000-\u001f\u007f]/;
/** A CA certificate's text is short; this bounds what a form or flag may store. */
const MAX_CA_BYTES = 64 * 1024;

/** A DNS name, or an IP literal (IPv6 in brackets, as URLs write it). */
const HOST_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.?$/i;

/** What a destination connects to, as pg takes it. */
export interface PostgresTarget {
  host: string;
  port: number;
  database: string;
  user: string;
  password: string;
  /** false for `sslmode=disable` or none; else TLS options (`require` does not verify, `verify-ca` checks the chain, `verify-full` the host too). */
  ssl: false | tls.ConnectionOptions;
}

/** The URL's target, or why it is refused (a message that never repeats the password or a parameter's value). */
export type ParsedPostgresUrl = { ok: true; target: PostgresTarget } | { ok: false; error: string };

const refuse = (error: string): ParsedPostgresUrl => ({ ok: false, error });

/** A parameter name as a message quotes it: user input, so short and printable. */
const quotedName = (name: string): string => JSON.stringify(name.length > 40 ? `${name.slice(0, 40)}…` : name);

/** The query's parameters, decoded as a URL's parts are (a `+` stays a `+`: a certificate's base64 holds them). */
function parameters(search: string): [string, string][] | null {
  const out: [string, string][] = [];
  for (const part of search.replace(/^\?/, '').split('&')) {
    if (part === '') continue;
    const at = part.indexOf('=');
    try {
      out.push([decodeURIComponent(at === -1 ? part : part.slice(0, at)), decodeURIComponent(at === -1 ? '' : part.slice(at + 1))]);
    } catch {
      return null;
    }
  }
  return out;
}

function tlsOptions(mode: (typeof SSL_MODES)[number], ca: string | undefined): false | tls.ConnectionOptions {
  switch (mode) {
    case 'disable':
      return false;
    case 'require':
      return { rejectUnauthorized: false };
    case 'verify-ca':
      // The chain is checked; the name on the certificate is not, as libpq's verify-ca.
      return { rejectUnauthorized: true, ...(ca !== undefined ? { ca } : {}), checkServerIdentity: () => undefined };
    case 'verify-full':
      return { rejectUnauthorized: true, ...(ca !== undefined ? { ca } : {}) };
  }
}

/** Reads a postgres destination's URL; refuses anything but the settings a destination needs. */
export function parsePostgresUrl(url: string): ParsedPostgresUrl {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return refuse('The URL is not a URL; give one such as postgres://user:password@host:5432/db.');
  }
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') {
    return refuse(`A postgres destination's URL starts with postgres:// or postgresql://, not "${u.protocol}".`);
  }
  const host = bareHost(u.hostname);
  if (host === '' || (net.isIP(host) === 0 && !HOST_NAME.test(host))) {
    return refuse("A postgres destination's URL names the database server's host name or address, as in postgres://user:password@host:5432/db (a socket path is not accepted).");
  }
  if (u.username === '') return refuse("A postgres destination's URL names its user, as in postgres://user:password@host:5432/db.");
  if (u.hash !== '') return refuse("A postgres destination's URL has no #part; write a # in a password as %23.");
  const path = u.pathname.replace(/^\//, '');
  if (path.includes('/')) return refuse("A postgres destination's URL names one database after the host, as in postgres://user:password@host:5432/db.");
  const params = parameters(u.search);
  if (params === null) return refuse("The URL's query is not well encoded (a % not followed by two hex digits).");
  const given = new Map<string, string>();
  for (const [name, value] of params) {
    if (!(POSTGRES_URL_PARAMETERS as readonly string[]).includes(name)) {
      const why = FILE_PARAMETERS.has(name) ? ': files are never read from the server' : '';
      return refuse(`The URL's parameter ${quotedName(name)} is not accepted${why}. A postgres destination's URL takes only sslmode (${SSL_MODES.join(', ')}) and sslca (a CA certificate's PEM text).`);
    }
    if (given.has(name)) return refuse(`The URL gives ${name} twice.`);
    given.set(name, value);
  }
  const mode = given.get('sslmode') ?? 'disable';
  if (!(SSL_MODES as readonly string[]).includes(mode)) {
    return refuse(`sslmode must be ${SSL_MODES.join(', ')} (allow and prefer would fall back to plain text: say disable or require).`);
  }
  const ca = given.get('sslca');
  if (ca !== undefined) {
    if (mode !== 'verify-ca' && mode !== 'verify-full') return refuse('sslca is the CA to verify the server with: give it with sslmode=verify-ca or verify-full.');
    if (Buffer.byteLength(ca) > MAX_CA_BYTES || !ca.includes('-----BEGIN CERTIFICATE-----') || !isCertificate(ca)) {
      return refuse("sslca must be a CA certificate's PEM text (-----BEGIN CERTIFICATE----- …, URL-encoded), at most 64 KiB.");
    }
  }
  let user: string;
  let password: string;
  let database: string;
  try {
    user = decodeURIComponent(u.username);
    password = decodeURIComponent(u.password);
    database = decodeURIComponent(path);
  } catch {
    return refuse("The URL's user, password or database is not well encoded (a % not followed by two hex digits).");
  }
  // The driver writes these into its start-up message as NUL-ended text: a NUL
  // (or any control character) would end the value and start a parameter of
  // the sender's choosing (options, replication), past the list above.
  for (const [what, value] of [['user', user], ['password', password], ['database', database]] as const) {
    if (CONTROL.test(value)) return refuse(`The URL's ${what} holds a control character (such as %00): not accepted.`);
  }
  return {
    ok: true,
    target: { host, port: u.port === '' ? 5432 : Number(u.port), database: database === '' ? user : database, user, password, ssl: tlsOptions(mode as (typeof SSL_MODES)[number], ca) },
  };
}

function isCertificate(pem: string): boolean {
  try {
    new X509Certificate(pem);
    return true;
  } catch {
    return false;
  }
}
