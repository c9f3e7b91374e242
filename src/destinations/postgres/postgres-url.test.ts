import { describe, expect, it } from 'vitest';
import { parsePostgresUrl } from './postgres-url.js';

/** A real certificate's PEM text, with + in its base64 (any will do: only its form is checked). */
const PEM = `-----BEGIN CERTIFICATE-----
MIIBfzCCASWgAwIBAgIUd7AJadgl50lotAdB2jcE/+73dV4wCgYIKoZIzj0EAwIw
FTETMBEGA1UEAwwKaW5sZXQtdGVzdDAeFw0yNjEyMDYyMTIwMjlaFw0zNjEyMDMy
MTIwMjlaMBUxEzARBgNVBAMMCmlubGV0LXRlc3QwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAAQPIj4IesGWAel52fzVXLEC0TjDNLcH7cYB5+Kvr9WlUqYHloSsscM2
p2pcEGqvonJWOVeq/G5MiIoIpDOkiDt2o1MwUTAdBgNVHQ4EFgQUedGlAGgSENZB
FsumTjhT8bZf1X8wHwYDVR0jBBgwFoAUedGlAGgSENZBFsumTjhT8bZf1X8wDwYD
VR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNIADBFAiEAtA3UtbP0NzDXOuDX91y7
AOLqQbZK6GXx+jkXyqNU34QCIGVFAG7RqHujxvqNKFyUlpvww+Ul8i090IjxLvQh
iqCN
-----END CERTIFICATE-----`;

describe('a postgres destination URL', () => {
  it('a postgres destination URL makes the server read any local file: sslrootcert, sslcert, sslkey and any other libpq parameter are refused by name', () => {
    for (const [param, file] of [['sslrootcert', true], ['sslcert', true], ['sslkey', true], ['passfile', true], ['options', false], ['host', false], ['application_name', false], ['sslpassword', false]] as const) {
      const r = parsePostgresUrl(`postgres://postgres@127.0.0.1:5432/postgres?sslmode=require&${param}=/dev/zero`);
      expect(r.ok, param).toBe(false);
      if (r.ok) continue;
      expect(r.error).toContain(`"${param}" is not accepted`);
      expect(r.error).not.toContain('/dev/zero');
      expect(r.error.includes('files are never read'), param).toBe(file);
    }
  });

  it('reads host, port, database, user and password into pg settings, with no connection string for pg to parse', () => {
    const r = parsePostgresUrl('postgresql://load%20er:p%40ss%2Bw@warehouse.example.com:6543/analytics');
    expect(r).toEqual({ ok: true, target: { host: 'warehouse.example.com', port: 6543, database: 'analytics', user: 'load er', password: 'p@ss+w', ssl: false } });
    expect(parsePostgresUrl('postgres://u@[::1]/')).toEqual({ ok: true, target: { host: '::1', port: 5432, database: 'u', user: 'u', password: '', ssl: false } });
  });

  it('takes sslmode, and a CA as PEM text (a + kept as a +) with verify-ca or verify-full', () => {
    const tlsOf = (q: string) => {
      const r = parsePostgresUrl(`postgres://u:p@db.example.com/w?${q}`);
      return r.ok ? r.target.ssl : r.error;
    };
    expect(tlsOf('sslmode=disable')).toBe(false);
    expect(tlsOf('sslmode=require')).toEqual({ rejectUnauthorized: false });
    expect(tlsOf('sslmode=verify-full')).toEqual({ rejectUnauthorized: true });
    expect(tlsOf(`sslmode=verify-full&sslca=${encodeURIComponent(PEM).replaceAll('%2B', '+')}`)).toEqual({ rejectUnauthorized: true, ca: PEM });
    const verifyCa = tlsOf(`sslmode=verify-ca&sslca=${encodeURIComponent(PEM)}`) as { ca: string; checkServerIdentity: () => unknown };
    expect(verifyCa.ca).toBe(PEM);
    expect(verifyCa.checkServerIdentity()).toBeUndefined();
    expect(tlsOf('sslmode=prefer')).toMatch(/^sslmode must be disable, require, verify-ca, verify-full/);
    expect(tlsOf(`sslmode=require&sslca=${encodeURIComponent(PEM)}`)).toMatch(/give it with sslmode=verify-ca or verify-full/);
    expect(tlsOf('sslmode=verify-full&sslca=/etc/ssl/certs/ca.pem')).toMatch(/^sslca must be a CA certificate's PEM text/);
    expect(tlsOf('sslmode=require&sslmode=disable')).toBe('The URL gives sslmode twice.');
  });

  it('refuses a socket path, a missing user, a second path part, a #part and another scheme', () => {
    for (const url of [
      'postgres:///db', 'postgres://u@/db?host=/var/run/postgresql', 'postgres://u@%2Fvar%2Frun%2Fpostgresql/db', 'postgres://db.example.com/w',
      'postgres://u@db.example.com/w/x', 'postgres://u:p#x@db.example.com/w', 'mysql://u@db.example.com/w', 'not a url',
    ]) {
      expect(parsePostgresUrl(url).ok, url).toBe(false);
    }
  });

  it('a NUL in the user, password or database injects start-up parameters (options, replication): refused', () => {
    for (const url of [
      'postgres://u@db.example.com/db%00options%00-c%20search_path%3Devil',
      'postgres://u%00replication%00database@db.example.com/w',
      'postgres://u:p%00options%00x@db.example.com/w',
      'postgres://u@db.example.com/w%0Ax',
    ]) {
      const r = parsePostgresUrl(url);
      expect(r.ok, url).toBe(false);
      if (!r.ok) expect(r.error, url).toMatch(/holds a control character \(such as %00\): not accepted/);
    }
    expect(parsePostgresUrl('postgres://u:p%C3%A9@db.example.com/caf%C3%A9').ok).toBe(true);
  });
});
