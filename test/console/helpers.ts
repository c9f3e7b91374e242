import { randomBytes, scryptSync } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { Fixture } from '../helpers/fixture.js';
import { createAccounts } from '../../src/domain/accounts/accounts.js';
import type { Store } from '../../src/stores/port.js';

export const PASSWORD = 'correct horse battery staple';

/** Makes a console account directly through the domain, as `inlet user create` does. */
export async function makeUser(store: Pick<Store, 'accounts' | 'admin'>, clock: () => number, email: string, opts: { admin?: boolean; orgIds?: string[] } = {}) {
  return createAccounts(store, clock).createUser({ email, password: PASSWORD, admin: opts.admin ?? false, orgIds: opts.orgIds ?? [] });
}

/**
 * Makes n accounts `${prefix}${i}@acme.test` with PASSWORD, hashed once for all of them (fast).
 * `light`: for accounts only ever tried with wrong passwords, where what is counted matters and not
 * what a check costs. Their hash is the same self-describing scrypt hash with a smaller N (1 MiB, not
 * 32), which sign-in checks as it checks any stored hash: each wrong guess costs a few ms, not a
 * full check's tens (a hundred guesses took most of a minute on a busy machine).
 */
export async function makeUsers(store: Pick<Store, 'accounts' | 'admin'>, clock: () => number, prefix: string, n: number, opts: { light?: boolean } = {}): Promise<string[]> {
  const emails = Array.from({ length: n }, (_, i) => `${prefix}${i}@acme.test`);
  const passwordHash = opts.light ? lightHash(PASSWORD) : (await store.accounts.getUser((await makeUser(store, clock, emails[0]!)).id))!.passwordHash;
  for (const [i, email] of emails.entries()) {
    if (i > 0 || opts.light) await store.accounts.createUser({ id: `usr_${prefix}${i}`, email, passwordHash, admin: false, disabled: false, createdAt: clock() }, []);
  }
  return emails;
}

/** `password`'s hash as sign-in reads it (`scrypt$N$r$p$salt$key`, passwords.ts), with N = 2^10. */
function lightHash(password: string): string {
  const salt = randomBytes(16);
  const [N, r, p] = [1024, 8, 1];
  return ['scrypt', N, r, p, salt.toString('base64'), scryptSync(password.normalize('NFC'), salt, 32, { N, r, p }).toString('base64')].join('$');
}

/** A form body. */
export const form = (fields: Record<string, string>): string => new URLSearchParams(fields).toString();

export const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/** Signs in over HTTP and returns the session cookie and a CSRF token read from a page. */
export async function signIn(app: FastifyInstance, email: string, password = PASSWORD) {
  const res = await app.inject({ method: 'POST', url: '/console/login', headers: FORM, payload: form({ email, password }) });
  if (res.statusCode !== 303) throw new Error(`sign-in of ${email} answered ${res.statusCode}`);
  const cookie = String(res.headers['set-cookie']).split(';')[0]!;
  const page = await app.inject({ method: 'GET', url: '/console/projects', headers: { cookie } });
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)![1]!;
  return { cookie, csrf };
}

/** A fixture with a member of its organization signed in, and a GET as that member. */
export async function signedInFixture(email = 'alice@acme.test'): Promise<{ f: Fixture; session: { cookie: string; csrf: string }; get: (url: string) => Promise<LightMyRequestResponse> }> {
  const { makeFixture } = await import('../helpers/fixture.js');
  const f = await makeFixture();
  await makeUser(f.collector, f.clock.now, email, { orgIds: [f.orgId] });
  const session = await signIn(f.app, email);
  const get = (url: string) => f.app.inject({ method: 'GET', url, headers: { cookie: session.cookie } });
  return { f, session, get };
}
