/**
 * Conformance of the console's parts of the port (port-console.ts): accounts,
 * sessions, sign-in throttling counts, lists and summaries, on every engine.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdmin } from '../../src/domain/admin.js';
import { sha256 } from '../../src/domain/sha256.js';
import type { Collector } from '../../src/domain/collector.js';
import { TestClock } from '../helpers/fixture.js';
import { ingestJob } from '../helpers/items.js';
import { STORES, type StoreUnderTest } from './stores.js';

const DAY = 86_400_000;
/** One attempt under `keys` ([key, free] pairs); a block of n × 1 s for the n-th past the free ones unless told. */
const note = (s: Collector, keys: [string, number][], at = 1000, windowMs = 60_000, blockMs = (n: number) => n * 1000) =>
  s.accounts.noteLoginAttempt(keys.map(([key, free]) => ({ key, free })), at, { windowMs, blockMs });
const user = (id: string, email: string) => ({ id, email, passwordHash: 'scrypt$x', admin: false, disabled: false, createdAt: 1 });

for (const engine of STORES) {
  describe(`${engine.name}: console store`, () => {
    let sut: StoreUnderTest;
    let collector: Collector;
    let second: Collector;
    let admin: ReturnType<typeof createAdmin>;
    const clock = new TestClock();

    beforeAll(async () => {
      sut = await engine.make();
      collector = sut.collector;
      second = await sut.another();
      admin = createAdmin(collector.store, clock.now);
    });
    afterAll(async () => {
      await sut?.cleanup();
    });

    it('keeps users with their memberships, one per email', async () => {
      const a = await admin.createOrg('A');
      const b = await admin.createOrg('B');
      expect(await collector.accounts.createUser(user('usr_1', 'one@x.test'), [a.id, b.id])).toBe('ok');
      expect(await second.accounts.createUser(user('usr_2', 'one@x.test'), [a.id])).toBe('email_taken');
      expect(await collector.accounts.userByEmail('one@x.test')).toEqual(user('usr_1', 'one@x.test'));
      expect(await collector.accounts.getUser('usr_2')).toBeNull();
      expect(await collector.accounts.userByEmail('two@x.test')).toBeNull();
      expect((await second.accounts.orgIdsOf('usr_1')).sort()).toEqual([a.id, b.id].sort());
      await admin.deleteOrg(b.id);
      expect(await collector.accounts.orgIdsOf('usr_1')).toEqual([a.id]);
    });

    describe('account life cycle: a change of password or rights ends the user’s sessions in the same transaction', () => {
      const h = (n: string) => sha256(`life-${engine.name}-${n}`);
      const sessionOf = (userId: string, n: string) =>
        collector.accounts.createSession({ tokenHash: h(n), userId, csrfToken: 'c', createdAt: 10, lastSeenAt: 10 });
      const live = async (...names: string[]) => {
        const found = await Promise.all(names.map((n) => second.accounts.getSession(h(n))));
        return names.filter((_, i) => found[i] !== null);
      };
      let orgA: string;
      let orgB: string;
      beforeAll(async () => {
        orgA = (await admin.createOrg('Life A')).id;
        orgB = (await admin.createOrg('Life B')).id;
        await collector.accounts.createUser(user('usr_life', 'life@x.test'), [orgA]);
        await collector.accounts.createUser(user('usr_bystander', 'bystander@x.test'), []);
      });

      it('a new password ends the user’s other sessions, and only that user’s', async () => {
        await sessionOf('usr_life', 'pw-1');
        await sessionOf('usr_life', 'pw-2');
        await sessionOf('usr_bystander', 'pw-other');
        expect(await second.accounts.updateUser('usr_life', { passwordHash: 'scrypt$new', endSessions: true })).toBe('ok');
        expect(await live('pw-1', 'pw-2', 'pw-other')).toEqual(['pw-other']);
        expect(await collector.accounts.getUser('usr_life')).toMatchObject({ passwordHash: 'scrypt$new', admin: false, disabled: false });
      });

      it('a change of orgs ends sessions, and adding a membership twice or removing a missing one is no error', async () => {
        await sessionOf('usr_life', 'orgs');
        expect(await second.accounts.updateUser('usr_life', { addOrgIds: [orgB, orgA], removeOrgIds: [], endSessions: true })).toBe('ok');
        expect(await collector.accounts.orgIdsOf('usr_life')).toEqual([orgA, orgB].sort());
        expect(await live('orgs')).toEqual([]);
        await sessionOf('usr_life', 'orgs-2');
        expect(await collector.accounts.updateUser('usr_life', { removeOrgIds: [orgA, 'org_never'], endSessions: true })).toBe('ok');
        expect(await second.accounts.orgIdsOf('usr_life')).toEqual([orgB]);
        expect(await live('orgs-2')).toEqual([]);
      });

      it('disabling and a change of admin are kept and end sessions; a change without endSessions keeps them', async () => {
        await sessionOf('usr_life', 'dis');
        expect(await collector.accounts.updateUser('usr_life', { disabled: true, admin: true, endSessions: true })).toBe('ok');
        expect(await second.accounts.getUser('usr_life')).toMatchObject({ disabled: true, admin: true, passwordHash: 'scrypt$new' });
        expect(await second.accounts.userByEmail('life@x.test')).toMatchObject({ disabled: true });
        expect(await live('dis')).toEqual([]);
        await sessionOf('usr_life', 'kept');
        expect(await collector.accounts.updateUser('usr_life', { disabled: false, endSessions: false })).toBe('ok');
        expect(await second.accounts.getUser('usr_life')).toMatchObject({ disabled: false, admin: true });
        expect(await live('kept')).toEqual(['kept']);
        expect(await collector.accounts.updateUser('usr_nobody', { disabled: true, endSessions: true })).toBe('not_found');
        expect(await collector.accounts.getUser('usr_nobody')).toBeNull();
      });

      it('lists users by email with their live memberships and disabled flags', async () => {
        const listed = await second.accounts.listUsers();
        const emails = listed.map((u) => u.email);
        expect(emails).toEqual([...emails].sort());
        expect(listed.find((u) => u.id === 'usr_life')).toEqual({ ...user('usr_life', 'life@x.test'), passwordHash: 'scrypt$new', admin: true, orgIds: [orgB] });
        expect(listed.find((u) => u.id === 'usr_bystander')).toEqual({ ...user('usr_bystander', 'bystander@x.test'), orgIds: [] });
      });

      it('deleting a user ends its sessions and memberships, and frees its email', async () => {
        await sessionOf('usr_life', 'del');
        expect(await second.accounts.deleteUser('usr_life')).toBe(true);
        expect(await collector.accounts.getUser('usr_life')).toBeNull();
        expect(await live('del', 'pw-other')).toEqual(['pw-other']);
        expect(await collector.accounts.orgIdsOf('usr_life')).toEqual([]);
        expect((await collector.accounts.listUsers()).map((u) => u.id)).not.toContain('usr_life');
        expect(await collector.accounts.deleteUser('usr_life')).toBe(false);
        expect(await collector.accounts.createUser(user('usr_life2', 'life@x.test'), [])).toBe('ok');
        expect(await collector.accounts.orgIdsOf('usr_life2')).toEqual([]);
      });
    });

    it('keeps sessions by token hash, seen from every server, until deleted', async () => {
      const tokenHash = sha256(`token-${engine.name}`);
      await collector.accounts.createSession({ tokenHash, userId: 'usr_1', csrfToken: 'c'.repeat(32), createdAt: 10, lastSeenAt: 10 });
      expect(await second.accounts.getSession(tokenHash)).toEqual({ tokenHash, userId: 'usr_1', csrfToken: 'c'.repeat(32), createdAt: 10, lastSeenAt: 10 });
      await second.accounts.touchSession(tokenHash, 50);
      await collector.accounts.touchSession(tokenHash, 40);
      expect((await collector.accounts.getSession(tokenHash))!.lastSeenAt).toBe(50);
      await collector.accounts.deleteSession(tokenHash);
      expect(await second.accounts.getSession(tokenHash)).toBeNull();
    });

    it('purges expired sessions and spent failure counts, and nothing else', async () => {
      const h = (n: string) => sha256(`purge-${engine.name}-${n}`);
      const session = (n: string, createdAt: number, lastSeenAt: number) =>
        collector.accounts.createSession({ tokenHash: h(n), userId: 'usr_1', csrfToken: 'c', createdAt, lastSeenAt });
      await session('old', 100, 5000);
      await session('idle', 2000, 2000);
      await session('live', 2000, 5000);
      await note(collector, [['purge:spent', 10]], 100, 1000);
      expect(await note(collector, [['purge:blocked', 0]], 100, 1000, () => 99_899)).toEqual({ allowed: true });
      await note(collector, [['purge:recent', 10]], 4000, 1000);
      await second.accounts.purgeExpired({ createdBefore: 1000, seenBefore: 3000, failuresBefore: 3000, now: 5000, limit: 100 });
      expect(await collector.accounts.getSession(h('old'))).toBeNull();
      expect(await collector.accounts.getSession(h('idle'))).toBeNull();
      expect(await collector.accounts.getSession(h('live'))).not.toBeNull();
      expect(await note(collector, [['purge:blocked', 10]], 5000, 100_000)).toEqual({ allowed: false, blockedUntil: 99_999 });
      // One attempt allowed before a block: the spent count started over, the recent one did not.
      expect(await note(collector, [['purge:spent', 1]], 5000, 100_000)).toEqual({ allowed: true });
      expect(await note(collector, [['purge:spent', 1]], 5000, 100_000)).toEqual({ allowed: true });
      expect(await note(collector, [['purge:recent', 1]], 5000, 100_000)).toEqual({ allowed: true });
      expect(await note(collector, [['purge:recent', 1]], 5000, 100_000)).toEqual({ allowed: false, blockedUntil: 6000 });
    });

    /** Deletes every session and count there is, at most `limit` of each; how many went. */
    const purgeAll = (limit = 1_000_000) =>
      collector.accounts.purgeExpired({ createdBefore: Number.MAX_SAFE_INTEGER, seenBefore: 0, failuresBefore: Number.MAX_SAFE_INTEGER, now: Number.MAX_SAFE_INTEGER, limit });

    it('a refused attempt writes no row: blocked attempts for new emails leave nothing behind', async () => {
      await purgeAll();
      expect(await note(collector, [['ip:norow', 0]], 1000, 60_000, () => 10_000)).toEqual({ allowed: true });
      for (let i = 0; i < 5; i++) {
        expect(await note(i % 2 ? collector : second, [[`email:norow${i}@x.test`, 5], ['ip:norow', 0]], 2000, 60_000)).toEqual({ allowed: false, blockedUntil: 11_000 });
      }
      // A block is read without counting or writing anything.
      expect(await second.accounts.loginBlockedUntil(['email:norow0@x.test', 'ip:norow'])).toBe(11_000);
      expect(await collector.accounts.loginBlockedUntil(['email:norow1@x.test'])).toBe(0);
      expect(await collector.accounts.loginBlockedUntil([])).toBe(0);
      // The address's row alone: none for the five emails refused.
      expect(await purgeAll()).toBe(1);
    });

    it('the purge is bounded per step: at most `limit` rows of each table a call', async () => {
      await purgeAll();
      for (let i = 0; i < 5; i++) await note(collector, [[`bounded:${i}`, 10]], 1000, 1000);
      for (let i = 0; i < 3; i++) {
        await collector.accounts.createSession({ tokenHash: sha256(`bounded-${engine.name}-${i}`), userId: 'usr_1', csrfToken: 'c', createdAt: 100, lastSeenAt: 100 });
      }
      const step = () => second.accounts.purgeExpired({ createdBefore: 1000, seenBefore: 0, failuresBefore: 3000, now: 5000, limit: 2 });
      expect([await step(), await step(), await step(), await step()]).toEqual([2 + 2, 1 + 2, 0 + 1, 0]);
    });

    it('counts sign-in attempts made at once atomically across servers, refuses the blocked ones uncounted, and blocks until a time', async () => {
      const keys: [string, number][] = [['email:x', 3], ['ip:y', 100]];
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => note(i % 2 ? collector : second, keys, 1000, 60_000)));
      // The first three are free; the fourth is allowed and blocks the next for 1 s (n × 1 s here).
      expect(answers.filter((a) => a.allowed)).toHaveLength(4);
      expect(answers.filter((a) => !a.allowed)).toEqual(Array.from({ length: 6 }, () => ({ allowed: false, blockedUntil: 2000 })));
      // The refused six were not counted: the fifth attempt earns 2 s, not 7.
      expect(await note(second, keys, 2000, 60_000)).toEqual({ allowed: true });
      expect(await note(collector, keys, 2500, 60_000)).toEqual({ allowed: false, blockedUntil: 4000 });
      // The address was counted five times, with the account.
      expect(await note(collector, [['ip:y', 5]], 3000, 60_000)).toEqual({ allowed: true });
      expect(await note(second, [['ip:y', 5]], 3000, 60_000)).toEqual({ allowed: false, blockedUntil: 4000 });
      // A block is never shortened; past the window the count starts over.
      expect(await note(collector, [['email:x', 0]], 61_000, 60_000, () => 10)).toEqual({ allowed: true });
      expect(await note(collector, [['email:x', 3]], 61_000, 60_000)).toEqual({ allowed: false, blockedUntil: 61_010 });
      expect(await note(collector, [['email:x', 3]], 61_010, 60_000)).toEqual({ allowed: true });
      await collector.accounts.clearLoginFailures('email:x');
      expect(await note(second, [['email:x', 0]], 61_010, 60_000)).toEqual({ allowed: true });
      expect(await note(collector, [])).toEqual({ allowed: true });
    });

    it('takes a forgiven attempt off the count, and leaves its block', async () => {
      expect(await note(collector, [['ip:f', 1]], 1000, 60_000)).toEqual({ allowed: true });
      await second.accounts.forgiveLoginAttempt('ip:f');
      expect(await note(collector, [['ip:f', 1]], 1000, 60_000)).toEqual({ allowed: true });
      expect(await note(collector, [['ip:f', 1]], 1000, 60_000)).toEqual({ allowed: true });
      await collector.accounts.forgiveLoginAttempt('ip:f');
      expect(await note(second, [['ip:f', 1]], 1000, 60_000)).toEqual({ allowed: false, blockedUntil: 2000 });
      await collector.accounts.forgiveLoginAttempt('ip:none');
    });

    it('lists live organizations, projects with retention, and sources, by name', async () => {
      const z = await admin.createOrg('Zeta list');
      const y = await admin.createOrg('Alpha list');
      const gone = await admin.createOrg('Gone list');
      await admin.deleteOrg(gone.id);
      const names = (await second.listings.listOrgs()).map((o) => o.name);
      expect(names.filter((n) => n.endsWith(' list'))).toEqual(['Alpha list', 'Zeta list']);

      const p2 = await admin.createProject({ name: 'b', orgId: z.id });
      const p1 = await admin.createProject({ name: 'a', orgId: z.id, apiEnabled: true });
      await admin.createProject({ name: 'c', orgId: y.id });
      const p3 = await admin.createProject({ name: 'deleted', orgId: z.id });
      await admin.deleteProject(p3.id);
      const listed = await second.listings.listProjects(z.id);
      expect(listed).toEqual([p1, p2]);
      expect(listed.map((p) => p.retentionDays)).toEqual([400, 400]);
      expect((await collector.listings.listProjects(null)).map((p) => p.id)).toEqual(expect.arrayContaining([p1.id, p2.id]));
      await admin.updateProject(p1.id, { retentionDays: 30, monthlyEventLimit: 10 });
      expect(await second.admin.getProject(p1.id)).toMatchObject({ retentionDays: 30, monthlyEventLimit: 10 });
      expect((await second.listings.listProjects(z.id)).find((p) => p.id === p1.id)).toMatchObject({ retentionDays: 30 });
      await expect(admin.updateProject(p1.id, { retentionDays: 0 })).rejects.toThrow(/1 to 3,650/);
      await expect(admin.updateProject(p1.id, { retentionDays: 3651 })).rejects.toThrow(/1 to 3,650/);

      const s2 = await admin.createSource({ projectId: p1.id, name: 'second' });
      const s1 = await admin.createSource({ projectId: p1.id, name: 'first' });
      const s3 = await admin.createSource({ projectId: p1.id, name: 'zz deleted' });
      await admin.deleteSource(s3.id);
      expect(await second.listings.listSources(p1.id)).toEqual([s1, s2]);
      await admin.deleteOrg(z.id);
      expect(await collector.listings.listSources(p1.id)).toEqual([]);
      expect(await collector.listings.listProjects(z.id)).toEqual([]);
    });

    it('finds distinct ids by prefix, and a person’s latest events, merged persons’ included', async () => {
      const org = await admin.createOrg('People');
      const p = await admin.createProject({ name: 'people', orgId: org.id });
      const s = await admin.createSource({ projectId: p.id, name: 's' });
      const key = await admin.createKey(s.id);
      const at = Date.UTC(2026, 10, 20);
      const job = (items: Parameters<typeof ingestJob>[0]) => ingestJob(items, { projectId: p.id, sourceId: s.id, keyId: key.id, receivedAt: at + 10 });
      await collector.ingest(job([
        { distinctId: 'user_1', event: 'a', timestamp: at + 1 },
        { distinctId: 'user_10', event: 'b', timestamp: at + 2 },
        { distinctId: 'user_2', event: 'c', timestamp: at + 3 },
        { distinctId: 'USER_1', event: 'd', timestamp: at + 4 },
      ]));
      const found = await second.listings.searchDistinctIds(p.id, 'user_1', 10);
      expect(found.map((f) => f.distinctId)).toEqual(['user_1', 'user_10']);
      expect((await collector.listings.searchDistinctIds(p.id, 'user_', 2)).map((f) => f.distinctId)).toEqual(['user_1', 'user_10']);
      expect(await collector.listings.searchDistinctIds(p.id, 'nobody', 10)).toEqual([]);

      await collector.ingest(job([{ distinctId: 'user_1', event: 'e', timestamp: at + 5 }]));
      const browser = `per_${'b'.repeat(22)}`;
      await collector.ingest(job([{ anonymousId: browser, event: 'web', timestamp: at + 6 }]));
      const merged = await admin.browserIdentify(p.id, browser, 'user_1');
      const { events } = await second.listings.personEvents(p.id, merged.id, 10);
      expect(events.map((e) => e.event)).toEqual(['web', 'e', 'a']);
      expect(events.every((e) => e.personId === merged.id)).toBe(true);
      expect((await collector.listings.personEvents(p.id, merged.id, 2)).events.map((e) => e.event)).toEqual(['web', 'e']);
    });

    it('lists a project’s people newest first, a keyset page at a time, merged persons read as the one they joined', async () => {
      const org = await admin.createOrg('Listed');
      const p = await admin.createProject({ name: 'listed', orgId: org.id });
      const s = await admin.createSource({ projectId: p.id, name: 's' });
      const key = await admin.createKey(s.id);
      const owners = { projectId: p.id, sourceId: s.id, keyId: key.id };
      expect(await collector.listings.listPersons(p.id, 5, null)).toEqual({ persons: [], next: null });
      expect(await collector.listings.countPersons(p.id)).toBe(0);
      const at = Date.UTC(2026, 10, 20);
      // Three persons made by one request share their creation time: the id orders them.
      await collector.ingest(ingestJob([{ distinctId: 'u_a' }, { distinctId: 'u_b' }, { distinctId: 'u_c' }], { ...owners, receivedAt: at }));
      for (let i = 1; i <= 4; i++) await collector.ingest(ingestJob([{ distinctId: `later_${i}` }], { ...owners, receivedAt: at + i * 1000 }));
      // A browser person that several server persons merged into: listed once, with their ids, newest by its own time.
      const browser = `per_${'c'.repeat(22)}`;
      await collector.ingest(ingestJob([{ anonymousId: browser }], { ...owners, receivedAt: at + 10_000 }));
      for (const d of ['u_a', 'later_1', 'later_2', 'z_web']) await admin.browserIdentify(p.id, browser, d);
      // Another project's people never show.
      const elsewhere = await admin.createProject({ name: 'elsewhere', orgId: org.id });
      const s2 = await admin.createSource({ projectId: elsewhere.id, name: 's' });
      const k2 = await admin.createKey(s2.id);
      await collector.ingest(ingestJob([{ distinctId: 'u_a' }], { projectId: elsewhere.id, sourceId: s2.id, keyId: k2.id, receivedAt: at + 20_000 }));

      const seen: { id: string; createdAt: number; distinctIds: string[]; moreIds: boolean }[] = [];
      let after = null;
      for (let pages = 0; pages < 10; pages++) {
        const page = await (pages % 2 === 0 ? collector : second).listings.listPersons(p.id, 2, after);
        expect(page.persons.length).toBeLessThanOrEqual(2);
        seen.push(...page.persons);
        after = page.next;
        if (after === null) break;
      }
      expect(after).toBeNull();
      const personOf = async (d: string) => (await collector.store.findPerson(p.id, { distinctId: d }))!.id;
      const tied = (await Promise.all(['u_b', 'u_c'].map(personOf))).sort().reverse();
      expect(seen.map((x) => x.id)).toEqual([browser, await personOf('later_4'), await personOf('later_3'), ...tied]);
      expect(seen.map((x) => x.createdAt)).toEqual([at + 10_000, at + 4000, at + 3000, at, at]);
      // Three ids shown, in byte order, and word that there are more.
      expect(seen[0]).toMatchObject({ distinctIds: ['later_1', 'later_2', 'u_a'], moreIds: true });
      expect(seen[1]).toMatchObject({ distinctIds: ['later_4'], moreIds: false });
      // A page that ends exactly at the last person says there is no next one.
      const all = await second.listings.listPersons(p.id, 5, null);
      expect(all.persons.map((x) => x.id)).toEqual(seen.map((x) => x.id));
      expect(all.next).toBeNull();
      expect((await collector.listings.listPersons(p.id, 4, null)).next).toEqual({ createdAt: at, id: tied[0] });
      // The total counts what the list lists: merged persons not, another project's not.
      expect(await second.listings.countPersons(p.id)).toBe(seen.length);
      expect(await collector.listings.countPersons(elsewhere.id)).toBe(1);
    });
  });
}
