/**
 * Console input no engine can hold (U+0000, a lone surrogate, an email longer
 * than any account's) is refused before any query, the same on SQLite and
 * PostgreSQL: PostgreSQL would fail the statement, the console answered 500
 * and the log said the database "could not be reached".
 */
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createAccounts } from '../../src/domain/accounts/accounts.js';
import { FREE_FAILURES } from '../../src/domain/accounts/throttle.js';
import { unavailable } from '../../src/stores/postgres/pool.js';
import { PostgresStore } from '../../src/stores/postgres/postgres-store.js';
import { SqliteStore } from '../../src/stores/sqlite/sqlite-store.js';
import { type Store, StoreUnavailableError } from '../../src/stores/port.js';
import { createTestDatabase } from '../conformance/stores.js';
import { type Fixture, makeFixture, tempDir } from '../helpers/fixture.js';
import { describeWith } from '../helpers/needs-services.js';
import { FORM, PASSWORD, form, makeUser, signIn } from './helpers.js';

const ENGINES: { name: string; needs: 'postgres'[]; open: () => Promise<{ store: Store; drop: () => Promise<void> }> }[] = [
  {
    name: 'sqlite',
    needs: [],
    open: async () => {
      const tmp = tempDir('inlet-unstorable-');
      return { store: SqliteStore.open(tmp.dir), drop: async () => tmp.remove() };
    },
  },
  {
    name: 'postgres',
    needs: ['postgres'],
    open: async () => {
      const db = await createTestDatabase();
      return { store: await PostgresStore.connect(db.url), drop: db.drop };
    },
  },
];

for (const engine of ENGINES) {
  describeWith(engine.needs, `${engine.name}: console input no engine can hold`, () => {
    let f: Fixture;
    let drop: () => Promise<void>;
    let root: { cookie: string; csrf: string };
    let keyId: string;
    const lines: string[] = [];

    beforeAll(async () => {
      const opened = await engine.open();
      drop = opened.drop;
      f = await makeFixture({ store: opened.store, trustedProxies: ['10.0.0.0/8'], logStream: new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) }) });
      await makeUser(f.collector, f.clock.now, 'alice@acme.test', { orgIds: [f.orgId] });
      await makeUser(f.collector, f.clock.now, 'root@inlet.test', { admin: true });
      root = await signIn(f.app, 'root@inlet.test');
      keyId = (await f.admin.listKeys(f.sourceId))[0]!.id;
    });
    afterAll(async () => {
      await f?.close();
      await drop?.();
    });

    /** Failures the server logged: none of these requests may give one. */
    const failures = () => lines.filter((l) => JSON.parse(l).level >= 50);

    it('a NUL in the login email is answered as a wrong email, not 500, and logs no failure', async () => {
      for (const email of ['alice\u0000@acme.test', `${'a'.repeat(3000)}@acme.test`]) {
        const res = await f.app.inject({ method: 'POST', url: '/console/login', headers: FORM, payload: form({ email, password: PASSWORD }) });
        expect(res.statusCode, email.slice(0, 20)).toBe(401);
        expect(res.body).toContain('Wrong email or password.');
      }
      // A form cannot carry a lone surrogate (it is read as UTF-8); the domain refuses one all the same.
      const accounts = createAccounts(f.collector, f.clock.now);
      expect(await accounts.signIn('alice\uD800@acme.test', PASSWORD, '10.0.0.1')).toEqual({ ok: false, reason: 'wrong' });
      expect(await accounts.signIn('alice@acme.test\uDC00', PASSWORD, '10.0.0.1')).toEqual({ ok: false, reason: 'wrong' });
      expect(failures()).toEqual([]);
      // The account itself still signs in.
      expect((await signIn(f.app, 'alice@acme.test')).cookie).toMatch(/^inlet_session=/);
    });

    it('a client address no engine could keep as a key (what a proxy passed on from X-Forwarded-For) is answered as any other, not 500', async () => {
      // Random, so that PostgreSQL cannot compress it under its index row limit.
      const address = randomBytes(3000).toString('base64url');
      const attempt = () =>
        f.app.inject({ method: 'POST', url: '/console/login', remoteAddress: '10.0.0.9', headers: { ...FORM, 'x-forwarded-for': address }, payload: form({ email: 'alice@acme.test', password: 'a wrong password' }) });
      for (let i = 0; i < FREE_FAILURES.email; i++) expect((await attempt()).statusCode).toBe(401);
      expect(failures()).toEqual([]);
    });

    it('a NUL in the people search says it is not a valid distinct id, not 500', async () => {
      const res = await f.app.inject({ method: 'GET', url: `/console/projects/${f.projectId}/people?q=user%00`, headers: { cookie: root.cookie } });
      expect(res.statusCode).toBe(400);
      expect(res.body).toContain('not a valid distinct id');
      // A search cut at 200 characters keeps a character outside the BMP whole, rather than leave half of it.
      const long = await f.app.inject({ method: 'GET', url: `/console/projects/${f.projectId}/people?q=${'a'.repeat(199)}${encodeURIComponent('😀x')}`, headers: { cookie: root.cookie } });
      expect(long.statusCode).toBe(200);
      expect(failures()).toEqual([]);
    });

    it('ids with a NUL in paths and forms are answered as unknown ids, before any query', async () => {
      const c = { cookie: root.cookie };
      const post = (url: string, fields: Record<string, string>) => f.app.inject({ method: 'POST', url, headers: { ...FORM, ...c }, payload: form({ _csrf: root.csrf, ...fields }) });
      const answers = await Promise.all([
        f.app.inject({ method: 'GET', url: `/console/projects/${f.projectId}%00`, headers: c }),
        f.app.inject({ method: 'GET', url: `/console/projects/${f.projectId}%00/people?q=u`, headers: c }),
        f.app.inject({ method: 'GET', url: `/console/sources/${f.sourceId}%00`, headers: c }),
        f.app.inject({ method: 'GET', url: `/console/sources/${f.sourceId}%00/live`, headers: c }),
        f.app.inject({ method: 'GET', url: `/console/keys/${keyId}%00/revoke`, headers: c }),
        post(`/console/projects/${f.projectId}%00/settings`, { api_enabled: 'true' }),
        post(`/console/projects/${f.projectId}%00/sources`, { name: 'x' }),
        post(`/console/sources/${f.sourceId}%00/keys`, {}),
        post(`/console/keys/${keyId}%00/roll`, { grace: 'now' }),
        post(`/console/keys/${keyId}%00/revoke`, {}),
      ]);
      for (const res of answers) expect(res.statusCode, res.body.slice(0, 200)).toBe(404);
      const intoNoOrg = await post('/console/projects', { name: 'Nowhere', org: `${f.orgId}\u0000` });
      expect(intoNoOrg.statusCode).toBe(400);
      expect(intoNoOrg.body).toContain('Choose one of your organizations.');
      const badName = await post(`/console/projects/${f.projectId}/sources`, { name: 'bad\u0000name' });
      expect(badName.statusCode).toBe(400);
      expect(failures()).toEqual([]);
    });

    it.skipIf(engine.name !== 'postgres')('a statement PostgreSQL answers with an error is not reported as "could not be reached"', async () => {
      const refused = await f.collector.accounts.userByEmail('a\u0000@acme.test').catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(StoreUnavailableError);
      expect((refused as StoreUnavailableError).message).toBe('PostgreSQL refused the statement for a value it holds (SQLSTATE 22021).');
      expect((refused as StoreUnavailableError).refused).toBe(true);
      // A server that is not there is still "could not be reached".
      const refusedConnection = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED', syscall: 'connect' });
      expect(unavailable(refusedConnection).message).toBe('PostgreSQL could not be reached.');
    });
  });
}
