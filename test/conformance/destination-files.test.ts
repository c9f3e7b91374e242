/**
 * Destinations that write files (the s3 kind) and the second round of
 * destinations (a 410 pauses with its reason, a secret rotated), on both
 * engines, against a local S3-compatible store (s3rver): files named by
 * their plan, every event in exactly one file through a crash at any point,
 * erased events not written, Parquet read back.
 */
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { createAdmin } from '../../src/domain/admin.js';
import type { Collector } from '../../src/domain/collector.js';
import { LocalCourier } from '../../src/domain/delivery/courier.js';
import { DeliveryService } from '../../src/domain/delivery/delivery-service.js';
import { destinationAdmin } from '../../src/domain/delivery/destination-admin.js';
import { erasePerson } from '../../src/domain/erasure.js';
import { DESTINATION_KINDS, checkDestination, senderFor } from '../../src/destinations/registry.js';
import type { Store } from '../../src/stores/port.js';
import type { DestinationReach, FilePlan } from '../../src/stores/port-destinations.js';
import { TestClock } from '../helpers/fixture.js';
import { type ItemSpec, RECEIVED_AT, ingestJob } from '../helpers/items.js';
import { describeWith } from '../helpers/needs-services.js';
import { Receiver } from '../helpers/receiver.js';
import { type LocalS3, S3_KEYS, startS3 } from '../helpers/s3.js';
import { STORES, type StoreUnderTest } from './stores.js';

/** As a server with INLET_DESTINATIONS_ALLOW_PRIVATE=true: the store is on loopback. */
const OPEN: DestinationReach = { allowPrivate: true, ownDatabaseUrl: null, selfPort: null };
const never = new AbortController().signal;

let s3: LocalS3;
beforeAll(async () => {
  s3 = await startS3();
});
afterAll(async () => s3?.close());

for (const engine of STORES) {
  describeWith(engine.needs ?? [], `${engine.name}: destinations that write files`, () => {
    let sut: StoreUnderTest;
    let collector: Collector;
    let store: Store;
    let admin: ReturnType<typeof createAdmin>;
    let orgId: string;
    const clock = new TestClock(RECEIVED_AT);

    beforeAll(async () => {
      sut = await engine.make();
      collector = sut.collector;
      store = collector.store;
      admin = createAdmin(store, clock.now);
      orgId = (await admin.createOrg('Acme')).id;
    });
    afterAll(async () => sut?.cleanup());

    const destinations = (s: Store = store) => destinationAdmin(s, clock.now, { self: { baseUrl: null, port: null }, check: (d) => checkDestination(d, OPEN), kinds: DESTINATION_KINDS });

    async function world(format = 'ndjson') {
      const projectId = (await admin.createProject({ name: 'p', orgId, apiEnabled: true })).id;
      const sourceId = (await admin.createSource({ projectId, name: 'a' })).id;
      const keyId = (await admin.createKey(sourceId)).id;
      const ingest = (specs: ItemSpec[], on: Collector = collector) => on.ingest(ingestJob(specs, { projectId, sourceId, keyId, receivedAt: RECEIVED_AT }));
      const prefix = `${engine.name}/${projectId}`;
      const d = await destinations().create({
        projectId, kind: 's3',
        fields: { url: `s3://${s3.bucket}/${prefix}`, endpoint: s3.endpoint, access_key_id: S3_KEYS.accessKeyId, secret_access_key: S3_KEYS.secretAccessKey, format, every: '1s' },
      });
      return { projectId, sourceId, ingest, prefix, id: d.id, shown: d };
    }

    /** A server's delivery, as `inlet serve` runs it (its courier here on the calling thread); its events go into files at once (RECEIVED_AT is long past). */
    function server(s: Store = store) {
      const courier = new LocalCourier(s.destinations, (d) => senderFor(d, OPEN));
      const service = new DeliveryService({ store: s.destinations, courier, self: { baseUrl: null, port: null }, kinds: DESTINATION_KINDS, timing: { pollMs: 10, cursorWriteMs: 0 } });
      return { service, courier };
    }

    /** Waits until the destination's cursor is at the project's head. */
    async function caughtUp(id: string, projectId: string): Promise<void> {
      const head = await store.destinations.head(projectId);
      await vi.waitFor(async () => expect((await store.destinations.get(id))!.cursor).toBe(head), { timeout: 20_000, interval: 20 });
    }

    /** Every event in the files under the prefix, with the file it is in. */
    async function filed(prefix: string) {
      const out: { key: string; id: string; event: string; distinct_id: unknown }[] = [];
      for (const key of await s3.keys(`${prefix}/`)) for (const e of await s3.events(key)) out.push({ key, id: e.id as string, event: e.event as string, distinct_id: e.distinct_id });
      return out;
    }

    const names = (n: number, tag: string): ItemSpec[] => Array.from({ length: n }, (_, k) => ({ event: `${tag}_${k}`, distinctId: 'u1', properties: { k } }));

    it('writes each event once, in files named prefix/project=/date=/hour=/<first>-<last>.ndjson.gz, and shows no secret', async () => {
      const w = await world();
      expect(w.shown).not.toHaveProperty('secret_access_key');
      expect(JSON.stringify(await destinations().list(w.projectId))).not.toContain(S3_KEYS.secretAccessKey);
      await w.ingest(names(30, 'one'));
      const { service } = server();
      try {
        await service.scan();
        await caughtUp(w.id, w.projectId);
        await w.ingest(names(20, 'two'));
        await caughtUp(w.id, w.projectId);
      } finally {
        await service.stop();
      }
      const keys = await s3.keys(`${w.prefix}/`);
      const d = new Date(RECEIVED_AT);
      const hour = `date=${d.toISOString().slice(0, 10)}/hour=${d.toISOString().slice(11, 13)}`;
      for (const k of keys) expect(k).toMatch(new RegExp(`^${w.prefix}/project=${w.projectId}/${hour}/\\d+-\\d+\\.ndjson\\.gz$`));
      const events = await filed(w.prefix);
      const stored = (await store.destinations.read(w.projectId, 0, await store.destinations.head(w.projectId), 1000)).events;
      expect(events.map((e) => e.id)).toEqual(stored.map((e) => e.id));
      expect(keys.length).toBeGreaterThanOrEqual(2);
      // A file's name is its first and last event's positions.
      const first = keys.map((k) => k.split('/').at(-1)!.split('.')[0]!.split('-').map(Number));
      expect(first[0]![0]).toBe(stored[0]!.seq);
      expect(first.at(-1)![1]).toBe(stored.at(-1)!.seq);
      expect((await destinations().list(w.projectId))[0]).toMatchObject({ kind: 's3', status: 'active', lag_events: 0, delivered: 50, url: `s3://${s3.bucket}/${w.prefix}` });
    });

    it('a crash after the file is planned, and one after it is written but before the cursor moves, write the same file again: every event in exactly one file', async () => {
      const w = await world();
      const ds = store.destinations;
      await w.ingest(names(40, 'a'));
      const courier = new LocalCourier(ds, (d) => senderFor(d, OPEN));
      // A server that planned a file, then died before writing it.
      expect(await ds.takeLease(w.id, 'dead', 60_000)).toBe(true);
      let d = (await ds.get(w.id))!;
      const head = await ds.head(w.projectId);
      const planned = (await courier.next(d, d.cursor, head, never)).planned!;
      expect(planned).toMatchObject({ generation: 0, after: d.cursor, through: head });
      // Another server's plan is refused: the lease fences it.
      expect(await ds.planFile(w.id, 'other', planned)).toBe(false);
      expect(await ds.planFile(w.id, 'dead', planned)).toBe(true);
      // More events arrive; a second server takes over once the lease is gone.
      await w.ingest(names(10, 'b'));
      await ds.releaseLease(w.id, 'dead');
      let second = server();
      await second.service.scan();
      await caughtUp(w.id, w.projectId);
      await second.service.stop();
      const expected = (p: FilePlan) => `${w.prefix}/project=${w.projectId}/date=${new Date(p.at).toISOString().slice(0, 10)}/hour=${new Date(p.at).toISOString().slice(11, 13)}/${p.first}-${p.last}.ndjson.gz`;
      expect(await s3.keys(`${w.prefix}/`)).toContain(expected(planned));

      // A server that wrote its planned file and died before its cursor moved.
      await w.ingest(names(25, 'c'));
      expect(await ds.takeLease(w.id, 'dead', 60_000)).toBe(true);
      d = (await ds.get(w.id))!;
      const next = (await courier.next(d, d.cursor, await ds.head(w.projectId), never)).planned!;
      expect(await ds.planFile(w.id, 'dead', next)).toBe(true);
      d = (await ds.get(w.id))!;
      expect(await courier.next(d, d.cursor, await ds.head(w.projectId), never)).toMatchObject({ through: next.through, batches: 1, events: 25, failure: null });
      await courier.close();
      expect((await ds.get(w.id))!.cursor).toBe(next.after);
      await ds.releaseLease(w.id, 'dead');
      second = server();
      await second.service.scan();
      await caughtUp(w.id, w.projectId);
      await second.service.stop();

      const events = await filed(w.prefix);
      const ids = events.map((e) => e.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids).toHaveLength(75);
      expect(await s3.keys(`${w.prefix}/`)).toContain(expected(next));
    });

    it('two servers delivering at once, the one holding the lease stopped midway: every event of both servers\' writes in exactly one file', async () => {
      const w = await world();
      const other = await sut.another();
      const servers = [server(), server(other.store)];
      try {
        for (let round = 0; round < 4; round++) {
          await w.ingest(names(15, `r${round}a`));
          await w.ingest(names(15, `r${round}b`), other);
          for (const x of servers) await x.service.scan();
          if (round === 1) {
            // Whoever delivers it stops (its lease let go): the other takes over at its next look.
            const holder = servers.find((x) => x.service.delivering.includes(w.id))!;
            await holder.service.stop();
            servers.splice(servers.indexOf(holder), 1, server(holder === servers[0] ? store : other.store));
          }
          for (const x of servers) await x.service.scan();
          await caughtUp(w.id, w.projectId);
        }
      } finally {
        for (const x of servers) await x.service.stop();
      }
      const ids = (await filed(w.prefix)).map((e) => e.id);
      expect(ids).toHaveLength(120);
      expect(new Set(ids).size).toBe(120);
    });

    it('an event erased before its file is written is in no file; one erased after stays where it is', async () => {
      const w = await world();
      const ds = store.destinations;
      await w.ingest([{ event: 'kept', distinctId: 'carol' }, { event: 'gone', distinctId: 'bob' }, { event: 'kept', distinctId: 'carol' }]);
      const courier = new LocalCourier(ds, (d) => senderFor(d, OPEN));
      expect(await ds.takeLease(w.id, 'A', 60_000)).toBe(true);
      const d = (await ds.get(w.id))!;
      const planned = (await courier.next(d, d.cursor, await ds.head(w.projectId), never)).planned!;
      expect(await ds.planFile(w.id, 'A', planned)).toBe(true);
      // Erased between the plan and the write: the file keeps its name, without bob.
      await erasePerson(store, w.projectId, { distinctId: 'bob' }, { suppress: false, now: RECEIVED_AT });
      await courier.next((await ds.get(w.id))!, d.cursor, await ds.head(w.projectId), never);
      await courier.close();
      await ds.releaseLease(w.id, 'A');
      const events = await filed(w.prefix);
      expect(events.map((e) => e.distinct_id)).toEqual(['carol', 'carol']);
      expect((await s3.keys(`${w.prefix}/`))[0]).toMatch(new RegExp(`/${planned.first}-${planned.last}\\.ndjson\\.gz$`));
    });

    it('a deleted project\'s s3 destination stops at once on every server: a file planned before the deletion is not written', async () => {
      const w = await world();
      const ds = store.destinations;
      await w.ingest(names(5, 'doomed'));
      const courier = new LocalCourier(ds, (d) => senderFor(d, OPEN));
      expect(await ds.takeLease(w.id, 'A', 60_000)).toBe(true);
      const d = (await ds.get(w.id))!;
      const planned = (await courier.next(d, d.cursor, await ds.head(w.projectId), never)).planned!;
      expect(await ds.planFile(w.id, 'A', planned)).toBe(true);
      await admin.deleteProject(w.projectId);
      // The server that planned it asks before it writes: the destination is gone.
      expect(await courier.next({ ...d, file: planned }, d.cursor, await ds.head(w.projectId), never)).toEqual({ through: d.cursor, batches: 0, events: 0, failure: null });
      await courier.close();
      const servers = [server(), server((await sut.another()).store)];
      try {
        for (const x of servers) await x.service.scan();
        for (const x of servers) expect(x.service.delivering).not.toContain(w.id);
      } finally {
        for (const x of servers) await x.service.stop();
      }
      expect(await s3.keys(`${w.prefix}/`)).toEqual([]);
      expect(await ds.planFile(w.id, 'A', planned)).toBe(false);
    });

    it('Parquet files have typed columns and read back', async () => {
      const w = await world('parquet');
      await w.ingest([{ event: 'paid', distinctId: 'u7', insertId: 'ord_1', sessionId: 'ses_1', properties: { amount: 12.5, q: 'ü "x"' } }, { event: 'seen', distinctId: 'u7' }]);
      const { service } = server();
      try {
        await service.scan();
        await caughtUp(w.id, w.projectId);
      } finally {
        await service.stop();
      }
      const [key] = await s3.keys(`${w.prefix}/`);
      expect(key).toMatch(/\.parquet$/);
      const rows = await s3.events(key!);
      expect(rows).toHaveLength(2);
      expect(rows[0]).toMatchObject({ event: 'paid', distinct_id: 'u7', insert_id: 'ord_1', session_id: 'ses_1', server_session: false, project_id: w.projectId, source_id: w.sourceId });
      expect(rows[0]!.timestamp).toBeInstanceOf(Date);
      expect((rows[0]!.received_at as Date).getTime()).toBe(RECEIVED_AT);
      // A JSON column: the reader gives the object back, not a string holding its text.
      expect(rows[0]!.properties).toEqual({ amount: 12.5, q: 'ü "x"' });
      expect(rows[1]).toMatchObject({ event: 'seen', insert_id: null, session_id: null, server_session: true });
    });

    it('a failing store is the last error, not a file; a wrong key says the store\'s code and never the key', async () => {
      const w = await world();
      const ds = store.destinations;
      const c = await destinations().create({
        projectId: w.projectId, kind: 's3',
        fields: { url: `s3://no-such-bucket/x`, endpoint: s3.endpoint, access_key_id: S3_KEYS.accessKeyId, secret_access_key: 'hunter2-secret' },
      });
      await w.ingest(names(3, 'x'));
      const { service } = server();
      try {
        await service.scan();
        await vi.waitFor(async () => expect((await ds.get(c.id))!.lastError).not.toBeNull(), { timeout: 20_000, interval: 20 });
      } finally {
        await service.stop();
      }
      const listed = (await destinations().list(w.projectId)).find((x) => x.id === c.id)!;
      expect(listed).toMatchObject({ status: 'failing', last_error: 'The object store answered 404 (NoSuchBucket).', lag_events: 3 });
      expect(JSON.stringify(listed)).not.toContain('hunter2');
    });

    it('refuses a bad s3 config with a clear message, and the endpoint as the address guard judges webhooks', async () => {
      const projectId = (await admin.createProject({ name: 'q', orgId })).id;
      const base = { url: 's3://lake/x', endpoint: s3.endpoint, access_key_id: 'k', secret_access_key: 's' };
      const make = (fields: Record<string, string>, check = (t: Parameters<typeof checkDestination>[0]) => checkDestination(t, OPEN)) =>
        destinationAdmin(store, clock.now, { self: { baseUrl: null, port: null }, check, kinds: DESTINATION_KINDS }).create({ projectId, kind: 's3', fields });
      await expect(make({ ...base, url: 'https://lake/x' })).rejects.toThrow('s3://BUCKET/PREFIX');
      await expect(make({ ...base, format: 'csv' })).rejects.toThrow('--format is ndjson or parquet, not "csv".');
      await expect(make({ ...base, every: '2d' })).rejects.toThrow('--every is a duration from 1s to 24h');
      await expect(make({ ...base, endpoint: 'http://u:p@127.0.0.1:9/' })).rejects.toThrow('An s3 endpoint is a scheme, a host and a port only');
      await expect(make({ ...base, table: 't' })).rejects.toThrow('--table is for postgres destinations; an s3 has none.');
      await expect(make(base, (t) => checkDestination(t, { ...OPEN, allowPrivate: false }))).rejects.toThrow(/^Refused: 127\.0\.0\.1 is, or resolves to, an address destinations may not reach/);
    });

    it('a 410 pauses a webhook with its reason (list shows it; resume clears it); rotate-secret keeps the old secret beside the new one for 24 hours', async () => {
      const projectId = (await admin.createProject({ name: 'r', orgId })).id;
      const da = destinations();
      const d = (await da.create({ projectId, kind: 'webhook', fields: { url: 'http://127.0.0.1:9/in' } })) as { id: string; secret?: string };
      expect(d.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      const r = await da.rotateSecret(d.id);
      expect(r).toEqual({ id: d.id, secret: expect.stringMatching(/^whsec_/), previous_valid_until: new Date(clock.now() + 24 * 3_600_000).toISOString() });
      expect(r.secret).not.toBe(d.secret);
      const kept = (await store.destinations.get(d.id))!.config;
      expect(kept).toMatchObject({ secret: r.secret, previous_secret: d.secret, previous_secret_until: String(clock.now() + 24 * 3_600_000) });
      expect(JSON.stringify(await da.list(projectId))).not.toContain(r.secret.slice(6, 20));
      await expect(da.rotateSecret((await da.create({ projectId, kind: 's3', fields: { url: 's3://lake/y', endpoint: s3.endpoint, access_key_id: 'k', secret_access_key: 's' } })).id)).rejects.toThrow('An s3 destination has no signing secret to rotate.');

    });

    it('a batch sent again after a failure carries the same webhook-id, signed anew, verifiable with the destination\'s secret', async () => {
      const w = await world();
      const receiver = await Receiver.start();
      receiver.answer = (_, n) => ({ status: n === 0 ? 503 : 200 });
      const d = (await destinations().create({ projectId: w.projectId, kind: 'webhook', fields: { url: receiver.url } })) as { id: string; secret?: string };
      await w.ingest(names(3, 'again'));
      const { service } = server();
      try {
        await service.scan();
        await receiver.until(() => receiver.requests.length === 2);
      } finally {
        await service.stop();
        await receiver.close();
      }
      const [first, second] = receiver.requests;
      expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
      expect(second!.headers['webhook-id']).toBe(first!.json.batch_id);
      for (const r of [first!, second!]) expect(new StandardWebhook(d.secret!).verify(r.body, r.headers as Record<string, string>)).toMatchObject({ destination_id: d.id });
    });

    it('a receiver that answers 410 pauses its destination, with the reason in list; the next batch waits; resume clears it', async () => {
      const w = await world();
      const receiver = await Receiver.start();
      receiver.answer = () => ({ status: 410 });
      const da = destinations();
      const d = await da.create({ projectId: w.projectId, kind: 'webhook', fields: { url: receiver.url } });
      await w.ingest(names(3, 'gone'));
      const { service } = server();
      try {
        await service.scan();
        await vi.waitFor(async () => expect((await store.destinations.get(d.id))!.paused).toBe(true), { timeout: 20_000, interval: 20 });
        await vi.waitFor(() => expect(service.delivering).not.toContain(d.id));
      } finally {
        await service.stop();
        await receiver.close();
      }
      expect(receiver.requests).toHaveLength(1);
      const listed = (await da.list(w.projectId)).find((x) => x.id === d.id)!;
      expect(listed).toMatchObject({ status: 'paused', lag_events: 3, paused_reason: 'The receiver answered 410 (Gone): delivery is paused; resume the destination once the receiver takes events again.' });
      await da.resume(d.id);
      expect((await da.list(w.projectId)).find((x) => x.id === d.id)).toMatchObject({ status: 'failing', paused_reason: null });
      // A person's pause has no reason.
      await da.pause(d.id);
      expect((await da.list(w.projectId)).find((x) => x.id === d.id)).toMatchObject({ status: 'paused', paused_reason: null });
    });
  });
}
