/**
 * Promises of the store that no other conformance file runs on every
 * engine: the default organization, partial updates and deletion marks of
 * the admin store, the projects' retentions, and the life of an erasure's
 * pending record, step by step.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdmin } from '../../src/domain/admin.js';
import { finishErasure } from '../../src/domain/erasure.js';
import type { Org, Store } from '../../src/stores/port.js';
import { TestClock } from '../helpers/fixture.js';
import { ingestJob } from '../helpers/items.js';
import { STORES, type StoreUnderTest } from './stores.js';

for (const engine of STORES) {
  describe(`${engine.name}: the data layer`, () => {
    let sut: StoreUnderTest;
    let store: Store;
    let admin: ReturnType<typeof createAdmin>;

    beforeAll(async () => {
      sut = await engine.make();
      store = sut.collector.store;
      admin = createAdmin(store, new TestClock(1_700_000_000_000).now);
    });
    afterAll(() => sut?.cleanup());

    it('the default organization is made once, whichever server asks first, and read back by all', async () => {
      const other = (await sut.another()).store;
      let made = 0;
      const make = (id: string) => (): Org => (made++, { id, name: 'default', createdAt: 1 });
      const [a, b] = await Promise.all([store.admin.defaultOrg(make('org_a')), other.admin.defaultOrg(make('org_b'))]);
      expect(a.id).toBe(b.id);
      expect(await store.admin.defaultOrg(make('org_c'))).toEqual(a);
      expect(await other.admin.getOrg(a.id)).toEqual(a);
      expect(made).toBeLessThanOrEqual(2);
    });

    it('an update sets only the fields given (null is a value), and a deleted owner reads as gone', async () => {
      const org = await admin.createOrg('Updates');
      const p = await admin.createProject({ name: 'p', orgId: org.id, apiEnabled: true });
      const s = await admin.createSource({ projectId: p.id, name: 's' });
      expect(await store.admin.updateProject(p.id, { monthlyEventLimit: 10 })).toMatchObject({ monthlyEventLimit: 10, apiEnabled: true, retentionDays: 400 });
      expect(await store.admin.updateProject(p.id, { retentionDays: 30 })).toMatchObject({ monthlyEventLimit: 10, retentionDays: 30 });
      expect(await store.admin.updateProject(p.id, { monthlyEventLimit: null })).toMatchObject({ monthlyEventLimit: null, retentionDays: 30 });
      expect(await store.admin.updateSource(s.id, { recordIp: true })).toMatchObject({ recordIp: true, filterBots: s.filterBots });
      expect(await store.admin.updateSource(s.id, {})).toMatchObject({ recordIp: true, filterBots: s.filterBots });
      expect(await store.admin.deleteOrg(org.id, 5)).toBe(true);
      expect(await store.admin.deleteOrg(org.id, 6)).toBe(false);
      expect(await store.admin.getOrg(org.id)).toBeNull();
      expect(await store.admin.getProject(p.id)).toBeNull();
      expect(await store.admin.getSource(s.id)).toBeNull();
      // A deleted project's events expire too: its retention is still read.
      expect(await store.projectRetentions()).toContainEqual({ projectId: p.id, retentionDays: 30 });
    });

    it('the projects’ retentions come in byte order of their ids', async () => {
      const ids = (await store.projectRetentions()).map((r) => r.projectId);
      expect(ids).toEqual([...ids].sort((x, y) => (Buffer.compare(Buffer.from(x), Buffer.from(y)))));
    });

    it('a pending erasure is listed once idle, stays while a stopping server takes no step, and goes once its events are deleted', async () => {
      const org = await admin.createOrg('Pending');
      const projectId = (await admin.createProject({ name: 'p', orgId: org.id, apiEnabled: true })).id;
      const sourceId = (await admin.createSource({ projectId, name: 's' })).id;
      const keyId = (await admin.createKey(sourceId)).id;
      await sut.collector.ingest(ingestJob([{ distinctId: 'dora', insertId: 'd1' }, { distinctId: 'dora', insertId: 'd2' }, { distinctId: 'ed', insertId: 'e1' }], { projectId, sourceId, keyId }));
      const dora = (await store.findPerson(projectId, { distinctId: 'dora' }))!.id;
      // Recorded without deleting anything yet: the first transaction of an erasure, as a process that stopped after it left it.
      const pending = await store.erasureTransaction(async (tx) => {
        await tx.lockProject(projectId);
        return tx.recordPending(projectId, [dora]);
      });
      expect(pending).toMatchObject({ projectId, personIds: [dora] });
      expect(await store.staleErasures(60_000)).toEqual([]);
      expect(await store.staleErasures(0)).toEqual([pending]);
      expect(await finishErasure(store, pending, { stopping: () => true })).toEqual({ eventsDeleted: 0, done: false });
      expect(await store.staleErasures(0)).toEqual([pending]);
      expect(await finishErasure(store, pending)).toEqual({ eventsDeleted: 2, done: true });
      expect(await store.staleErasures(0)).toEqual([]);
      expect((await store.listEvents(sourceId, 10)).map((e) => e.distinctId)).toEqual(['ed']);
    });

    it('prepareToServe and ping resolve on a store that is up', async () => {
      await expect(store.prepareToServe?.()).resolves.toBeUndefined();
      await expect(store.ping()).resolves.toBeUndefined();
    });
  });
}
