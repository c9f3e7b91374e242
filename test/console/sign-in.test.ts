/**
 * Sign-in under guessing, in the app itself: attempts counted as they arrive
 * (before the hash), password checks bounded in number at once, and a
 * refusal of another origin that names what differed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { MAX_PASSWORD_CHECKS, MAX_WAITING_CHECKS } from '../../src/domain/accounts/accounts.js';
import { FREE_FAILURES } from '../../src/domain/accounts/throttle.js';
import { type Fixture, makeFixture } from '../helpers/fixture.js';
import { FORM, PASSWORD, form, makeUser, makeUsers } from './helpers.js';

describe('sign-in under parallel guessing', () => {
  let f: Fixture;

  beforeAll(async () => {
    f = await makeFixture();
    await makeUser(f.collector, f.clock.now, 'target@acme.test', { orgIds: [f.orgId] });
  });
  afterAll(async () => {
    await f?.close();
  });

  const login = (email: string, password: string, remoteAddress = '10.0.0.1', headers: Record<string, string> = {}) =>
    f.app.inject({ method: 'POST', url: '/console/login', remoteAddress, headers: { ...FORM, ...headers }, payload: form({ email, password }) });

  it('parallel wrong passwords are answered 429 without hashing', async () => {
    // The clock stands still: no block ends while they are answered.
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => login('target@acme.test', `wrong guess ${i}`)));
    const hashed = answers.filter((r) => r.statusCode === 401);
    const refused = answers.filter((r) => r.statusCode === 429);
    // A 401 is a hashed wrong password: the free attempts, and the one that set the block. A 429 was never hashed.
    expect(hashed).toHaveLength(FREE_FAILURES.email + 1);
    expect(refused).toHaveLength(40 - hashed.length);
    for (const r of refused) expect(Number(r.headers['retry-after'])).toBeGreaterThan(0);
    // Once the block is over, the right password signs in.
    f.clock.advance(Math.max(...refused.map((r) => Number(r.headers['retry-after']))) * 1000);
    expect((await login('target@acme.test', PASSWORD, '10.0.0.2')).statusCode).toBe(303);
  });

  it('password checks past the bound and its queue at once are answered 429 with Retry-After, and the login page says so', async () => {
    // Each for a real account and from an address of its own: no throttle applies.
    const emails = await makeUsers(f.collector, f.clock.now, 'bound', 4 * MAX_PASSWORD_CHECKS);
    const answers = await Promise.all(emails.map((email, i) => login(email, 'a wrong password', `10.8.0.${i}`)));
    const checked = answers.filter((r) => r.statusCode === 401);
    const busy = answers.filter((r) => r.statusCode === 429);
    expect(checked.length + busy.length).toBe(answers.length);
    // Those past the bound waited their turn in the queue and were checked; past the queue they were refused.
    expect(checked.length).toBeGreaterThan(MAX_PASSWORD_CHECKS);
    expect(checked.length).toBeLessThanOrEqual(MAX_PASSWORD_CHECKS + MAX_WAITING_CHECKS);
    expect(busy.length).toBeGreaterThanOrEqual(answers.length - MAX_PASSWORD_CHECKS - MAX_WAITING_CHECKS);
    for (const r of busy) {
      expect(r.headers['retry-after']).toBe('1');
      expect(r.body).toContain('Too many sign-ins are being checked at once. Try again in 1 second.');
      expect(r.body).toMatch(/<label for="email">Email<\/label>/);
    }
  });

  it('a flood of wrong guesses for random emails from rotating addresses does not refuse a correct sign-in of a real account', async () => {
    await makeUser(f.collector, f.clock.now, 'admin@acme.test', { admin: true });
    // Far more guesses than the bound, all in flight as the right password arrives; a new address every 25.
    const flood = Array.from({ length: 10 * MAX_PASSWORD_CHECKS }, (_, i) =>
      login(`${randomBytes(6).toString('hex')}@random.test`, `wrong guess ${i}`, `127.9.${i >> 8}.${Math.floor(i / 25)}`));
    const right = login('admin@acme.test', PASSWORD, '10.0.0.9');
    const guesses = await Promise.all(flood);
    expect((await right).statusCode).toBe(303);
    // Every guess is answered as a wrong password: none took a place under the bound, none was refused.
    expect(guesses.map((r) => r.statusCode)).toEqual(guesses.map(() => 401));
  });

  it('a sign-in of an unknown email from a blocked address is refused as one of a real account is', async () => {
    const now = f.clock.now();
    await f.collector.accounts.noteLoginAttempt([{ key: 'ip:10.0.0.77', free: 0 }], now, { windowMs: 60_000, blockMs: () => 60_000 });
    const unknown = await login('nobody-blocked@acme.test', 'a wrong password', '10.0.0.77');
    const known = await login('target@acme.test', 'a wrong password', '10.0.0.77');
    expect([unknown.statusCode, known.statusCode]).toEqual([429, 429]);
    expect(unknown.headers['retry-after']).toBe(known.headers['retry-after']);
  });

  it('a sign-in whose origin does not match the host says so, naming both', async () => {
    const r = await login('target@acme.test', PASSWORD, '10.0.0.3', { host: 'inlet.example.com', origin: 'https://inlet.example.com:8443' });
    expect(r.statusCode).toBe(403);
    expect(r.body).toContain('origin (&quot;https://inlet.example.com:8443&quot;) does not match the host it was sent to (&quot;inlet.example.com&quot;)');
    expect(r.body).toContain('$http_host');
    const site = await login('target@acme.test', PASSWORD, '10.0.0.3', { 'sec-fetch-site': 'cross-site' });
    expect(site.statusCode).toBe(403);
    expect(site.body).toContain('another site (Sec-Fetch-Site: &quot;cross-site&quot;)');
    // The port written or left out, a default port compares equal.
    expect((await login('target@acme.test', PASSWORD, '10.0.0.3', { host: 'inlet.example.com', origin: 'https://inlet.example.com:443' })).statusCode).toBe(303);
  });
});
