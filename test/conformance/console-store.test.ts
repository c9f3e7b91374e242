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
const user = (id: string, email: string) => ({ id, email, passwordHash: 'scrypt$x', admin: false, createdAt: 1 });

for (const engine of STORES) {
  describe(`${engine.name}: console store`, () => {
    let sut: StoreUnderTest;
    let store: Collector;
    let second: Collector;
    let admin: ReturnType<typeof createAdmin>;
    const clock = new TestClock();

    beforeAll(async () => {
      sut = await engine.make();
      store = sut.store;
      second = await sut.another();
      admin = createAdmin(store.store, clock.now);
    });
    afterAll(async () => {
      await sut?.cleanup();
    });

    it('keeps users with their memberships, one per email', async () => {
      const a = await admin.createOrg('A');
      const b = await admin.createOrg('B');
      expect(await store.accounts.createUser(user('usr_1', 'one@x.test'), [a.id, b.id])).toBe('ok');
      expect(await second.accounts.createUser(user('usr_2', 'one@x.test'), [a.id])).toBe('email_taken');
      expect(await store.accounts.userByEmail('one@x.test')).toEqual(user('usr_1', 'one@x.test'));
      expect(await store.accounts.getUser('usr_2')).toBeNull();
      expect(await store.accounts.userByEmail('two@x.test')).toBeNull();
      expect((await second.accounts.orgIdsOf('usr_1')).sort()).toEqual([a.id, b.id].sort());
      await admin.deleteOrg(b.id);
      expect(await store.accounts.orgIdsOf('usr_1')).toEqual([a.id]);
    });

    it('keeps sessions by token hash, seen from every server, until deleted', async () => {
      const tokenHash = sha256(`token-${engine.name}`);
      await store.accounts.createSession({ tokenHash, userId: 'usr_1', csrfToken: 'c'.repeat(32), createdAt: 10, lastSeenAt: 10 });
      expect(await second.accounts.getSession(tokenHash)).toEqual({ tokenHash, userId: 'usr_1', csrfToken: 'c'.repeat(32), createdAt: 10, lastSeenAt: 10 });
      await second.accounts.touchSession(tokenHash, 50);
      await store.accounts.touchSession(tokenHash, 40);
      expect((await store.accounts.getSession(tokenHash))!.lastSeenAt).toBe(50);
      await store.accounts.deleteSession(tokenHash);
      expect(await second.accounts.getSession(tokenHash)).toBeNull();
    });

    it('purges expired sessions and spent failure counts, and nothing else', async () => {
      const h = (n: string) => sha256(`purge-${engine.name}-${n}`);
      const session = (n: string, createdAt: number, lastSeenAt: number) =>
        store.accounts.createSession({ tokenHash: h(n), userId: 'usr_1', csrfToken: 'c', createdAt, lastSeenAt });
      await session('old', 100, 5000);
      await session('idle', 2000, 2000);
      await session('live', 2000, 5000);
      await note(store, [['purge:spent', 10]], 100, 1000);
      expect(await note(store, [['purge:blocked', 0]], 100, 1000, () => 99_899)).toEqual({ allowed: true });
      await note(store, [['purge:recent', 10]], 4000, 1000);
      await second.accounts.purgeExpired({ createdBefore: 1000, seenBefore: 3000, failuresBefore: 3000, now: 5000 });
      expect(await store.accounts.getSession(h('old'))).toBeNull();
      expect(await store.accounts.getSession(h('idle'))).toBeNull();
      expect(await store.accounts.getSession(h('live'))).not.toBeNull();
      expect(await note(store, [['purge:blocked', 10]], 5000, 100_000)).toEqual({ allowed: false, blockedUntil: 99_999 });
      // One attempt allowed before a block: the spent count started over, the recent one did not.
      expect(await note(store, [['purge:spent', 1]], 5000, 100_000)).toEqual({ allowed: true });
      expect(await note(store, [['purge:spent', 1]], 5000, 100_000)).toEqual({ allowed: true });
      expect(await note(store, [['purge:recent', 1]], 5000, 100_000)).toEqual({ allowed: true });
      expect(await note(store, [['purge:recent', 1]], 5000, 100_000)).toEqual({ allowed: false, blockedUntil: 6000 });
    });

    it('counts sign-in attempts made at once atomically across servers, refuses the blocked ones uncounted, and blocks until a time', async () => {
      const keys: [string, number][] = [['email:x', 3], ['ip:y', 100]];
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => note(i % 2 ? store : second, keys, 1000, 60_000)));
      // The first three are free; the fourth is allowed and blocks the next for 1 s (n × 1 s here).
      expect(answers.filter((a) => a.allowed)).toHaveLength(4);
      expect(answers.filter((a) => !a.allowed)).toEqual(Array.from({ length: 6 }, () => ({ allowed: false, blockedUntil: 2000 })));
      // The refused six were not counted: the fifth attempt earns 2 s, not 7.
      expect(await note(second, keys, 2000, 60_000)).toEqual({ allowed: true });
      expect(await note(store, keys, 2500, 60_000)).toEqual({ allowed: false, blockedUntil: 4000 });
      // The address was counted five times, with the account.
      expect(await note(store, [['ip:y', 5]], 3000, 60_000)).toEqual({ allowed: true });
      expect(await note(second, [['ip:y', 5]], 3000, 60_000)).toEqual({ allowed: false, blockedUntil: 4000 });
      // A block is never shortened; past the window the count starts over.
      expect(await note(store, [['email:x', 0]], 61_000, 60_000, () => 10)).toEqual({ allowed: true });
      expect(await note(store, [['email:x', 3]], 61_000, 60_000)).toEqual({ allowed: false, blockedUntil: 61_010 });
      expect(await note(store, [['email:x', 3]], 61_010, 60_000)).toEqual({ allowed: true });
      await store.accounts.clearLoginFailures('email:x');
      expect(await note(second, [['email:x', 0]], 61_010, 60_000)).toEqual({ allowed: true });
      expect(await note(store, [])).toEqual({ allowed: true });
    });

    it('takes a forgiven attempt off the count, and leaves its block', async () => {
      expect(await note(store, [['ip:f', 1]], 1000, 60_000)).toEqual({ allowed: true });
      await second.accounts.forgiveLoginAttempt('ip:f');
      expect(await note(store, [['ip:f', 1]], 1000, 60_000)).toEqual({ allowed: true });
      expect(await note(store, [['ip:f', 1]], 1000, 60_000)).toEqual({ allowed: true });
      await store.accounts.forgiveLoginAttempt('ip:f');
      expect(await note(second, [['ip:f', 1]], 1000, 60_000)).toEqual({ allowed: false, blockedUntil: 2000 });
      await store.accounts.forgiveLoginAttempt('ip:none');
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
      expect((await store.listings.listProjects(null)).map((p) => p.id)).toEqual(expect.arrayContaining([p1.id, p2.id]));
      await admin.updateProject(p1.id, { retentionDays: 30, monthlyEventLimit: 10 });
      expect(await second.admin.getProject(p1.id)).toMatchObject({ retentionDays: 30, monthlyEventLimit: 10 });
      expect((await second.listings.listProjects(z.id)).find((p) => p.id === p1.id)).toMatchObject({ retentionDays: 30 });
      await expect(admin.updateProject(p1.id, { retentionDays: 0 })).rejects.toThrow(/1 to 3650/);
      await expect(admin.updateProject(p1.id, { retentionDays: 3651 })).rejects.toThrow(/1 to 3650/);

      const s2 = await admin.createSource({ projectId: p1.id, name: 'second' });
      const s1 = await admin.createSource({ projectId: p1.id, name: 'first' });
      const s3 = await admin.createSource({ projectId: p1.id, name: 'zz deleted' });
      await admin.deleteSource(s3.id);
      expect(await second.listings.listSources(p1.id)).toEqual([s1, s2]);
      await admin.deleteOrg(z.id);
      expect(await store.listings.listSources(p1.id)).toEqual([]);
      expect(await store.listings.listProjects(z.id)).toEqual([]);
    });

    it('counts events per day by event time, indexed or not yet, for the days asked', async () => {
      const org = await admin.createOrg('Days');
      const p = await admin.createProject({ name: 'days', orgId: org.id });
      const s = await admin.createSource({ projectId: p.id, name: 'one' });
      const t = await admin.createSource({ projectId: p.id, name: 'two' });
      const other = await admin.createProject({ name: 'other', orgId: org.id });
      const o = await admin.createSource({ projectId: other.id, name: 'o' });
      // The engine checks each job's key at write time: each source gets a working one.
      const [ks, kt, ko] = await Promise.all([s, t, o].map((x) => admin.createKey(x.id)));
      const day0 = Date.UTC(2026, 10, 1);
      // Enough events for the SQLite minute index to take some in, and some left in its tail.
      for (let round = 0; round < 3; round++) {
        await store.ingest(ingestJob(Array.from({ length: 900 }, (_, i) => ({ distinctId: 'd', timestamp: day0 + (i % 3) * DAY + round })), { projectId: p.id, sourceId: s.id, keyId: ks!.id, receivedAt: day0 + 3 * DAY }));
      }
      await store.ingest(ingestJob([{ distinctId: 'd', timestamp: day0 + 5 * DAY }, { distinctId: 'd', timestamp: day0 - 1 }], { projectId: p.id, sourceId: t.id, keyId: kt!.id, receivedAt: day0 + 6 * DAY }));
      await store.ingest(ingestJob([{ distinctId: 'd', timestamp: day0 }], { projectId: other.id, sourceId: o.id, keyId: ko!.id, receivedAt: day0 + 6 * DAY }));
      expect(await second.listings.eventsPerDay(p.id, day0, day0 + 30 * DAY)).toEqual([
        { day: '2026-11-01', events: 900 },
        { day: '2026-11-02', events: 900 },
        { day: '2026-11-03', events: 900 },
        { day: '2026-11-06', events: 1 },
      ]);
      expect(await store.listings.eventsPerDay(p.id, day0 + DAY, day0 + 2 * DAY)).toEqual([{ day: '2026-11-02', events: 900 }]);
    });

    it('finds distinct ids by prefix, and a person’s latest events, merged persons’ included', async () => {
      const org = await admin.createOrg('People');
      const p = await admin.createProject({ name: 'people', orgId: org.id });
      const s = await admin.createSource({ projectId: p.id, name: 's' });
      const key = await admin.createKey(s.id);
      const at = Date.UTC(2026, 10, 20);
      const job = (items: Parameters<typeof ingestJob>[0]) => ingestJob(items, { projectId: p.id, sourceId: s.id, keyId: key.id, receivedAt: at + 10 });
      await store.ingest(job([
        { distinctId: 'user_1', event: 'a', timestamp: at + 1 },
        { distinctId: 'user_10', event: 'b', timestamp: at + 2 },
        { distinctId: 'user_2', event: 'c', timestamp: at + 3 },
        { distinctId: 'USER_1', event: 'd', timestamp: at + 4 },
      ]));
      const found = await second.listings.searchDistinctIds(p.id, 'user_1', 10);
      expect(found.map((f) => f.distinctId)).toEqual(['user_1', 'user_10']);
      expect((await store.listings.searchDistinctIds(p.id, 'user_', 2)).map((f) => f.distinctId)).toEqual(['user_1', 'user_10']);
      expect(await store.listings.searchDistinctIds(p.id, 'nobody', 10)).toEqual([]);

      await store.ingest(job([{ distinctId: 'user_1', event: 'e', timestamp: at + 5 }]));
      const browser = `per_${'b'.repeat(22)}`;
      await store.ingest(job([{ anonymousId: browser, event: 'web', timestamp: at + 6 }]));
      const merged = await admin.browserIdentify(p.id, browser, 'user_1');
      const events = await second.listings.personEvents(p.id, merged.id, 10, 1000);
      expect(events.map((e) => e.event)).toEqual(['web', 'e', 'a']);
      expect(events.every((e) => e.personId === merged.id)).toBe(true);
      expect((await store.listings.personEvents(p.id, merged.id, 2, 1000)).map((e) => e.event)).toEqual(['web', 'e']);
    });
  });
}
