/**
 * What only the PostgreSQL engine has: migrations raced by several servers,
 * day partitions, and outages of the database. The port's behaviour is
 * tested for every engine in test/conformance.
 */
import net from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { STORES, TEST_DATABASE_URL, createTestDatabase } from '../../../test/conformance/stores.js';
import { TestClock } from '../../../test/helpers/fixture.js';
import { describeWith } from '../../../test/helpers/needs-services.js';
import { erasureCutShort } from '../../../test/helpers/erasure-cut-short.js';
import { createAdmin } from '../../domain/admin.js';
import { hashKey } from '../../domain/keys.js';
import { Collector } from '../../domain/collector.js';
import type { IngestJob } from '../../domain/ingest/job.js';
import type { EnrichedItem } from '../../domain/items/enriched-item.js';
import { type ItemSpec, item as itemOf } from '../../../test/helpers/items.js';
import { PageReadsBusyError } from '../page-read-gate.js';
import { StoreUnavailableError } from '../port.js';
import { PG_MIGRATIONS } from './migrations.js';
import { passQuery, passWrites } from '../../../test/helpers/pass-bundles.js';
import { SQL } from './ingest-tx.js';
import { eventPage, eventPosition } from '../sql/event-pages.js';
import { PostgresStore } from './postgres-store.js';
import { postgresEngine } from './sql-engine.js';
import { erasePerson } from '../../domain/erasure.js';

const enabled = STORES.some((e) => e.name === 'postgres');
const DAY = 86_400_000;

/** A TCP hop in front of PostgreSQL that can stop answering or refuse, as a dead or unreachable server would. */
class FlakyProxy {
  mode: 'up' | 'hang' | 'down' = 'up';
  private readonly sockets = new Set<net.Socket>();
  private readonly server: net.Server;

  constructor(private readonly target: { host: string; port: number }) {
    this.server = net.createServer((client) => this.accept(client));
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as net.AddressInfo).port;
  }

  set(mode: FlakyProxy['mode']): void {
    // Bytes swallowed while hanging leave every open stream corrupt, and a
    // stopped server drops its connections: either way they end here.
    if (mode === 'down' || (mode === 'up' && this.mode === 'hang')) for (const s of this.sockets) s.destroy();
    this.mode = mode;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private accept(client: net.Socket): void {
    if (this.mode === 'down') return void client.destroy();
    this.track(client);
    if (this.mode === 'hang') return;
    const upstream = net.connect(this.target);
    this.track(upstream);
    client.on('data', (d) => this.mode === 'up' && upstream.write(d));
    upstream.on('data', (d) => this.mode === 'up' && client.write(d));
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  }

  private track(s: net.Socket): void {
    this.sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => this.sockets.delete(s));
  }
}

function item(o: ItemSpec & { index?: number }): EnrichedItem {
  return itemOf({ event: 'Viewed', distinctId: 'u1', timestamp: Date.now(), ...o }, o.index ?? 0);
}

/**
 * Runs `fn` on a store of a database of its own, with the given
 * statement_timeout, where every statement that deletes more than 8 events
 * sleeps until the timeout cancels it, as one reading too many rows would
 * be; `left` counts the events left by distinct_id.
 */
async function withSlowDeletes(
  statementMs: number,
  fn: (t: { collector: Collector; admin: ReturnType<typeof createAdmin>; setup: pg.Client; left: () => Promise<{ d: string; n: number }[]> }) => Promise<void>,
): Promise<void> {
  const busy = await createTestDatabase();
  const collector = new Collector(await PostgresStore.connect(busy.url, { timeouts: { statementMs } }));
  const setup = new pg.Client({ connectionString: busy.url });
  await setup.connect();
  try {
    await setup.query(`CREATE FUNCTION slow_deletes() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF (SELECT count(*) FROM gone) > 8 THEN PERFORM pg_sleep(30); END IF;
        RETURN NULL;
      END $$;
      CREATE TRIGGER slow_deletes AFTER DELETE ON events REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION slow_deletes()`);
    const left = async () => (await setup.query<{ d: string; n: number }>('SELECT distinct_id AS d, count(*)::int AS n FROM events GROUP BY 1 ORDER BY 1')).rows;
    await fn({ collector, admin: createAdmin(collector.store, Date.now), setup, left });
  } finally {
    await setup.end();
    await collector.close();
    await busy.drop();
  }
}

(enabled ? describeWith.bind(null, ['postgres']) : describe.skip)('postgres engine', () => {
  let db: { url: string; drop: () => Promise<void> };
  let direct: pg.Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    direct = new pg.Client({ connectionString: db.url });
    await direct.connect();
  });
  afterAll(async () => {
    await direct?.end();
    await db?.drop();
  });

  it('an erasure cut short after its first step is finished by finishErasures once stale, after a restart', async () => {
    const erasures = await createTestDatabase();
    try {
      await erasureCutShort(
        await PostgresStore.connect(erasures.url),
        () => eventDeletesFail(erasures.url),
        () => PostgresStore.connect(erasures.url),
      );
    } finally {
      await erasures.drop();
    }
  });

  it('an erasure splits a day too busy for one statement within statement_timeout', async () => {
    await withSlowDeletes(300, async ({ collector, admin, left }) => {
      const project = await admin.createProject({ name: 'P', apiEnabled: true });
      const source = await admin.createSource({ projectId: project.id, name: 'S' });
      const key = await admin.createKey(source.id);
      const day = (Math.floor(Date.now() / DAY) - 3) * DAY;
      const items = [
        ...Array.from({ length: 40 }, (_, i) => item({ distinctId: 'bob', insertId: `bob_${i}`, timestamp: day + i * 35 * 60_000 })),
        ...Array.from({ length: 3 }, (_, i) => item({ distinctId: 'carol', insertId: `carol_${i}`, timestamp: day + i * 3_600_000 })),
      ].map((it, index) => ({ ...it, index }));
      await collector.ingest({ projectId: project.id, sourceId: source.id, keyId: key.id, receivedAt: Date.now(), dryRun: false, items });

      const bob = await erasePerson(collector.store, project.id, { distinctId: 'bob' }, { suppress: false, now: Date.now() });
      expect(bob).toMatchObject({ eventsDeleted: 40 });
      expect(await left()).toEqual([{ d: 'carol', n: 3 }]);
      expect(await collector.store.staleErasures(0)).toEqual([]);
    });
  });

  it('an erasure deletes a millisecond too busy for one statement source by source, in ranges of seqs', async () => {
    await withSlowDeletes(200, async ({ collector, admin, setup, left }) => {
      const project = await admin.createProject({ name: 'P', apiEnabled: true });
      const at = (Math.floor(Date.now() / DAY) - 2) * DAY + 12 * 3_600_000;
      // Every event in the same millisecond, as a backfill stamped with one time sends them.
      for (const [n, name] of [[0, 'S1'], [1, 'S2']] as const) {
        const source = await admin.createSource({ projectId: project.id, name });
        const key = await admin.createKey(source.id);
        const items = [
          ...Array.from({ length: 20 }, (_, i) => item({ distinctId: 'bob', insertId: `bob_${n}_${i}`, timestamp: at })),
          ...Array.from({ length: 3 }, (_, i) => item({ distinctId: 'carol', insertId: `carol_${n}_${i}`, timestamp: at })),
        ].map((it, index) => ({ ...it, index }));
        await collector.ingest({ projectId: project.id, sourceId: source.id, keyId: key.id, receivedAt: Date.now(), dryRun: false, items });
      }

      const bob = await erasePerson(collector.store, project.id, { distinctId: 'bob' }, { suppress: false, now: Date.now() });
      expect(bob).toMatchObject({ eventsDeleted: 40 });
      expect(await left()).toEqual([{ d: 'carol', n: 6 }]);
      expect((await setup.query('SELECT count(*)::int AS n FROM insert_ids WHERE insert_id LIKE \'bob%\'')).rows[0].n).toBe(0);
      expect(await collector.store.staleErasures(0)).toEqual([]);
    });
  });

  it('pending erasures are touched and aged on the database clock, whatever a server\'s clock says', async () => {
    const aged = await createTestDatabase();
    const store = await PostgresStore.connect(aged.url);
    const collector = new Collector(store);
    let repair = async (): Promise<void> => {};
    try {
      const admin = createAdmin(store, Date.now);
      const project = await admin.createProject({ name: 'P', apiEnabled: true });
      const source = await admin.createSource({ projectId: project.id, name: 'S' });
      const key = await admin.createKey(source.id);
      await collector.ingest({
        projectId: project.id, sourceId: source.id, keyId: key.id, receivedAt: Date.now(), dryRun: false,
        items: [item({ index: 0, distinctId: 'bob', insertId: 'b1' })],
      });
      // A process whose clock is a day behind records an erasure and stops before its events go.
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(Date.now() - DAY);
      repair = await eventDeletesFail(aged.url);
      await expect(erasePerson(store, project.id, { distinctId: 'bob' }, { suppress: false, now: Date.now() })).rejects.toThrow();
      await repair();
      repair = async () => {};
      // A server whose clock is a day ahead does not take it for abandoned: it was touched just now.
      vi.setSystemTime(Date.now() + 2 * DAY);
      expect(await store.staleErasures(600_000)).toEqual([]);
      vi.useRealTimers();
      expect(await store.staleErasures(0)).toHaveLength(1);
      // An hour untouched by the database's clock is stale, whatever the server's clock.
      const aging = new pg.Client({ connectionString: aged.url });
      await aging.connect();
      await aging.query('UPDATE pending_erasures SET touched_at = touched_at - 3600000');
      await aging.end();
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(Date.now() - DAY);
      expect(await store.staleErasures(3_500_000)).toHaveLength(1);
      expect(await store.staleErasures(3_700_000)).toEqual([]);
    } finally {
      vi.useRealTimers();
      await repair();
      await collector.close();
      await aged.drop();
    }
  });

  it('servers starting at once apply each migration once', async () => {
    const stores = await Promise.all([1, 2, 3, 4].map(() => PostgresStore.connect(db.url)));
    const { rows } = await direct.query('SELECT version FROM schema_migrations ORDER BY version');
    expect(rows.map((r) => r.version)).toEqual(PG_MIGRATIONS.map((_, i) => i + 1));
    await Promise.all(stores.map((s) => s.close()));
  });

  it('makes day partitions ahead, and a late day table takes over its rows from the default partition', async () => {
    const collector = new Collector(await PostgresStore.connect(db.url));
    try {
      const { rows } = await direct.query<{ name: string }>(
        `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent = 'events'::regclass ORDER BY 1`,
      );
      const today = Math.floor(Date.now() / DAY) * DAY;
      const dayName = (ms: number) => `events_${new Date(ms).toISOString().slice(0, 10).replace(/-/g, '')}`;
      expect(rows.map((r) => r.name)).toEqual(expect.arrayContaining([dayName(today - 8 * DAY), dayName(today), dayName(today + 2 * DAY), 'events_default']));

      const admin = createAdmin(collector.store, Date.now);
      const project = await admin.createProject({ name: 'P', apiEnabled: true });
      const source = await admin.createSource({ projectId: project.id, name: 'S' });
      const key = await admin.createKey(source.id);
      const old = Date.UTC(2020, 1, 29, 13, 0, 0);
      const job: IngestJob = {
        projectId: project.id, sourceId: source.id, keyId: key.id, receivedAt: Date.now(), dryRun: false,
        items: [item({ index: 0, timestamp: Date.now() }), item({ index: 1, timestamp: old })],
      };
      await collector.ingest(job);
      const where = async () =>
        (await direct.query<{ t: string; ts: number }>('SELECT tableoid::regclass::text AS t, "timestamp"::float8 AS ts FROM events ORDER BY 2')).rows.map((r) => r.t);
      expect(await where()).toEqual(['events_default', dayName(today)]);
      await direct.query('SELECT inlet_ensure_event_partition($1::bigint)', [Date.UTC(2020, 1, 29)]);
      expect(await where()).toEqual(['events_20200229', dayName(today)]);
      expect((await collector.store.listEvents(source.id, 10)).map((e) => e.timestamp)).toContain(old);
      // Every day table, the late one too, finds events by id through a BRIN index (paging before an event).
      const { rows: parts } = await direct.query<{ name: string; brin: boolean }>(
        `SELECT c.relname AS name, EXISTS (
           SELECT 1 FROM pg_index x JOIN pg_class ic ON ic.oid = x.indexrelid JOIN pg_am am ON am.oid = ic.relam
           JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = x.indkey[0]
           WHERE x.indrelid = c.oid AND am.amname = 'brin' AND a.attname = 'id') AS brin
         FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events'::regclass`,
      );
      expect(parts.length).toBeGreaterThan(3);
      expect(parts.filter((p) => !p.brin)).toEqual([]);
      const [stored] = (await direct.query<{ id: string }>('SELECT id FROM events WHERE "timestamp" = $1', [old])).rows;
      const cursor = await collector.store.eventPages.eventCursor(source.id, stored!.id);
      expect(cursor).not.toBeNull();
      // Oldest first from the late event: only today's is after it.
      const after = await collector.store.eventPages.eventPage({ sourceId: source.id, order: 'asc', after: cursor, limit: 10 });
      expect(after.events.map((e) => e.timestamp)).toEqual([(await collector.store.listEvents(source.id, 1))[0]!.timestamp]);
    } finally {
      await collector.close();
    }
  });

  it('a slow chart query cannot take all the pool\'s connections from the rest: page reads of the outcome counts hold two at most', async () => {
    const collector = new Collector(await PostgresStore.connect(db.url));
    const locker = new pg.Client({ connectionString: db.url });
    await locker.connect();
    try {
      const admin = createAdmin(collector.store, Date.now);
      const project = await admin.createProject({ name: 'Charted', apiEnabled: true });
      const today = Math.floor(Date.now() / DAY) * DAY;
      // Every chart waits on this lock as on a slow scan of the counts.
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE outcome_counts IN ACCESS EXCLUSIVE MODE');
      const waitingOnLock = async () =>
        (await direct.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")).rows[0]!.n;
      // Twelve different charts (more tabs than the pool has connections).
      const reads = Array.from({ length: 12 }, (_, i) =>
        collector.store.outcomes.outcomeCounts({ projectId: project.id, since: today - 29 * DAY - i, until: today + DAY, bucketMs: DAY }).then(
          () => 'read',
          (e: unknown) => (e instanceof PageReadsBusyError ? 'busy' : e),
        ),
      );
      await vi.waitFor(async () => expect(await waitingOnLock()).toBe(2));
      // The pool still has connections for writes and other reads.
      const source = await admin.createSource({ projectId: project.id, name: 'S' });
      expect(await collector.listings.listSources(project.id)).toEqual([source]);
      expect(await waitingOnLock()).toBe(2);
      await locker.query('ROLLBACK');
      expect(await Promise.all(reads)).toEqual([...Array(10).fill('read'), 'busy', 'busy']);
    } finally {
      await locker.end();
      await collector.close();
    }
  });

  it('a dry run sends none of its writes, and a real one sends them in one statement', async () => {
    const collector = new Collector(await PostgresStore.connect(db.url));
    const sent: string[] = [];
    const query = pg.Client.prototype.query;
    try {
      const admin = createAdmin(collector.store, Date.now);
      const project = await admin.createProject({ name: 'P', apiEnabled: true });
      const source = await admin.createSource({ projectId: project.id, name: 'S' });
      const key = await admin.createKey(source.id);
      const job = (dryRun: boolean): IngestJob => ({
        projectId: project.id, sourceId: source.id, keyId: key.id, receivedAt: Date.now(), dryRun,
        items: [item({ insertId: 'w1', distinctId: 'writer' })],
      });
      pg.Client.prototype.query = function (this: pg.Client, cfg: unknown, ...rest: unknown[]) {
        sent.push(typeof cfg === 'string' ? cfg : ((cfg as { name?: string }).name ?? '?'));
        return (query as (...a: unknown[]) => unknown).call(this, cfg, ...rest);
      } as typeof query;
      expect((await collector.ingest(job(true)))[0]!.status).toBe('accepted');
      expect(sent).toContain('ROLLBACK');
      expect(sent).not.toContain('inlet_ingest_writes');
      sent.length = 0;
      expect((await collector.ingest(job(false)))[0]!.status).toBe('accepted');
      expect(sent.filter((s) => s === 'inlet_ingest_writes')).toHaveLength(1);
      expect(sent).toContain('COMMIT');
    } finally {
      pg.Client.prototype.query = query;
      await collector.close();
    }
  });

  it('lookups by list probe the primary key once per value, even on tables ANALYZE has not seen', async () => {
    const store = await PostgresStore.connect(db.url);
    try {
      // One project's worth of rows, no statistics: the state of a table growing faster than ANALYZE runs.
      await direct.query(`INSERT INTO persons (project_id, id, kind, created_at) SELECT 'prj_plan', 'per_' || n, 'server', 0 FROM generate_series(1, 20000) n`);
      await direct.query(`INSERT INTO person_links (project_id, distinct_id, person_id) SELECT 'prj_plan', 'user_' || n, 'per_' || n FROM generate_series(1, 20000) n`);
      await direct.query(`INSERT INTO insert_ids (source_id, insert_id, event_id) SELECT 'src_plan', 'i' || n, NULL FROM generate_series(1, 20000) n`);
      const ids = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}${i * 37 + 1}`);
      const asked = [
        { sql: SQL.findLinks, values: ['prj_plan', ids('user_', 400)] },
        { sql: SQL.findPersons, values: ['prj_plan', ids('per_', 400)] },
        { sql: SQL.findInsertIds, values: ['src_plan', ids('i', 500)] },
      ];
      for (const { sql, values } of asked) {
        const plan = (await direct.query<{ 'QUERY PLAN': string }>({ text: `EXPLAIN ${sql}`, values })).rows
          .map((r) => r['QUERY PLAN'])
          .join('\n');
        expect(plan).toMatch(/Index Scan using \w+_pkey/);
        expect(plan).not.toMatch(/Seq Scan|Bitmap|Hash/);
      }
      const links = await direct.query({ text: SQL.findLinks, values: ['prj_plan', ['user_5', 'user_6', 'nobody']] });
      expect(links.rows.map((r) => [r.key, r.id]).sort()).toEqual([['user_5', 'per_5'], ['user_6', 'per_6']]);
    } finally {
      await store.close();
    }
  });

  it('an event page reads a range of events_source_time and a cursor finds its event through the BRIN index, not the whole table', async () => {
    const store = await PostgresStore.connect(db.url);
    try {
      // Two sources' events over ten days, with UUIDv7 ids of their arrival, vacuumed and analyzed as
      // autovacuum keeps a busy table (without statistics PostgreSQL guesses a handful of rows per
      // table, and would sort them whatever the query).
      const t0 = Date.UTC(2021, 0, 1);
      await direct.query(
        `INSERT INTO events (id, project_id, source_id, event, distinct_id, person_id, "timestamp", received_at, properties)
         SELECT (substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-7000-8000-' || lpad(to_hex(n), 12, '0'))::uuid, 'prj_pages', 'src_page_' || (n % 2), 'e', 'u', 'per_1', $1::bigint + n * 10000, $1::bigint + n * 10000, '{}'
         FROM generate_series(1, 100000) n, lpad(to_hex($1::bigint + n * 10000), 12, '0') h`,
        [t0],
      );
      await direct.query('VACUUM ANALYZE events, persons');
      // The statements the engine sends, as it sends them.
      const sent: { text: string; values: unknown[] }[] = [];
      const engine = postgresEngine({
        connect: async () => ({ query: async (text: string, values: unknown[]) => (sent.push({ text, values }), { rows: [], command: 'SELECT' }), release: () => undefined }),
      } as never);
      const cursor = { timestamp: t0 + 500_000_000, seq: 1 };
      await eventPage(engine, { sourceId: 'src_page_1', order: 'desc', after: cursor, event: 'e', distinctId: 'u', limit: 1000 });
      await eventPage(engine, { sourceId: 'src_page_1', order: 'asc', after: null, since: t0, limit: 1000 });
      const plans = [];
      for (const { text, values } of sent) {
        plans.push((await direct.query<{ 'QUERY PLAN': string }>({ text: `EXPLAIN ${text}`, values })).rows.map((r) => r['QUERY PLAN']).join('\n'));
      }
      for (const plan of plans) {
        // Each day table's index read in order and merged: a page stops after its rows, whatever the table holds.
        expect(plan).toMatch(/Index Scan( Backward)? using \w*source\w*/);
        expect(plan).not.toMatch(/Sort  \(|Seq Scan on events_default/);
      }
      const { rows: [some] } = await direct.query<{ id: string }>(`SELECT id FROM events WHERE source_id = 'src_page_1' LIMIT 1`);
      sent.length = 0;
      await eventPosition(engine, 'src_page_1', some!.id);
      const plan = (await direct.query<{ 'QUERY PLAN': string }>({ text: `EXPLAIN ${sent[0]!.text}`, values: sent[0]!.values })).rows.map((r) => r['QUERY PLAN']).join('\n');
      // The empty day tables are read whole, at no cost; the one with the rows through its BRIN index.
      expect(plan).toMatch(/Bitmap Index Scan on events_default_id_idx/);
      expect(plan).not.toMatch(/Seq Scan on events_default/);
    } finally {
      await store.close();
    }
  });

  describe('when the database goes away', () => {
    let proxy: FlakyProxy;
    let collector: Collector;
    let admin: ReturnType<typeof createAdmin>;
    let projectId: string;
    let sourceId: string;
    let key: string;
    let keyId: string;
    const backgroundErrors: unknown[] = [];
    const clock = new TestClock(Date.now());

    beforeAll(async () => {
      const target = new URL(TEST_DATABASE_URL);
      proxy = new FlakyProxy({ host: target.hostname, port: Number(target.port || 5432) });
      const url = new URL(db.url);
      url.port = String(await proxy.listen());
      url.hostname = '127.0.0.1';
      const port = await PostgresStore.connect(url.toString(), {
        timeouts: { connectMs: 500, statementMs: 1000 },
        onBackgroundError: (e) => backgroundErrors.push(e),
      });
      collector = new Collector(port, { clock: clock.now });
      admin = createAdmin(collector.store, clock.now);
      const project = await admin.createProject({ name: 'Outage', apiEnabled: true });
      const source = await admin.createSource({ projectId: project.id, name: 'S' });
      const created = await admin.createKey(source.id);
      key = created.key;
      keyId = created.id;
      projectId = project.id;
      sourceId = source.id;
    });
    afterAll(async () => {
      proxy.set('up');
      await collector?.close();
      await proxy?.close();
    });

    const job = (insertId: string): IngestJob => ({
      projectId, sourceId, keyId, receivedAt: clock.now(), dryRun: false,
      items: [item({ index: 0, type: 'identify', event: null, distinctId: insertId, properties: { plan: 'pro' } }), item({ index: 1, insertId })],
    });

    /** How a call ended. The test's own time limit is what says it ended at all: a call the time limits missed hangs it. */
    async function settled<T>(p: Promise<T>): Promise<PromiseSettledResult<T>> {
      const [result] = await Promise.allSettled([p]);
      return result!;
    }

    async function storedRows(insertId: string) {
      const { rows } = await direct.query<{ n: number }>(
        `SELECT (SELECT count(*) FROM events WHERE insert_id = $1)::int + (SELECT count(*) FROM insert_ids WHERE insert_id = $1)::int
          + (SELECT count(*) FROM person_links WHERE distinct_id = $1)::int AS n`,
        [insertId],
      );
      return rows[0]!.n;
    }

    it('a server that stops answering fails requests within the time limits, and nothing is half written', async () => {
      await collector.ingest(job('before'));
      proxy.set('hang');
      const calls: (() => Promise<unknown>)[] = [() => collector.ingest(job('hung')), () => collector.authenticate(hashKey(key)), () => collector.ingest(job('hung2'))];
      for (const call of calls) {
        // Ended by the time limits (connect 0.5 s, one statement 1 s server-side, 2 s client-side), as the port's error.
        const result = await settled(call());
        expect(result.status).toBe('rejected');
        expect((result as PromiseRejectedResult).reason).toBeInstanceOf(StoreUnavailableError);
        expect(String((result as PromiseRejectedResult).reason.cause)).toMatch(/timeout/);
      }
      proxy.set('up');
      expect(await storedRows('hung')).toBe(0);
      expect((await collector.ingest(job('hung')))[1]!.status).toBe('accepted');
      expect(await storedRows('hung')).toBe(3);
    });

    it('a stopped server is refused at once, and the store recovers by itself when it is back', async () => {
      proxy.set('down');
      const result = await settled(collector.ingest(job('down')));
      expect(result.status).toBe('rejected');
      expect((result as PromiseRejectedResult).reason).toBeInstanceOf(StoreUnavailableError);
      // At once: the connection is refused or cut, no time limit runs out.
      expect(String((result as PromiseRejectedResult).reason.cause)).not.toMatch(/timeout/);
      await expect(collector.store.listEvents(sourceId, 1)).rejects.toBeInstanceOf(StoreUnavailableError);
      proxy.set('up');
      expect((await collector.ingest(job('down')))[1]!.status).toBe('accepted');
      expect(await collector.authenticate(hashKey(key))).not.toBeNull();
    });

    it('admin, account and listing calls (written once, over Kysely) reject as the port\'s error when the server hangs or is down, and recover', async () => {
      const calls: (() => Promise<unknown>)[] = [
        () => collector.store.admin.getProject(projectId),
        () => collector.store.accounts.noteLoginAttempt([{ key: 'outage', free: 3 }], clock.now(), { windowMs: 60_000, blockMs: () => 1000 }),
        () => collector.store.listings.listSources(projectId),
      ];
      for (const state of ['hang', 'down'] as const) {
        proxy.set(state);
        for (const call of calls) {
          const failed = await call().then(() => null, (e: unknown) => e);
          expect(failed).toBeInstanceOf(StoreUnavailableError);
          expect((failed as Error).message).toBe('PostgreSQL could not be reached.');
        }
        proxy.set('up');
        expect(await collector.store.admin.getProject(projectId)).toMatchObject({ id: projectId });
      }
      // A statement the server refuses is told apart from an outage, with its SQLSTATE.
      const org = await collector.store.admin.getOrg((await collector.store.admin.getProject(projectId))!.orgId);
      const refused = await collector.store.admin.createOrg(org!).then(() => null, (e: unknown) => e);
      expect(refused).toBeInstanceOf(StoreUnavailableError);
      expect(refused).toMatchObject({ refused: true, message: 'PostgreSQL refused the statement for a value it holds (SQLSTATE 23505).' });
    });

    it('a connection lost inside a transaction rolls back what it wrote', async () => {
      await expect(
        collector.transaction(async (tx) => {
          await tx.read(passQuery(projectId, 'src'));
          const scope = { projectId, sourceId: 'src', now: clock.now() };
          await tx.write(scope, passWrites({ persons: [{ id: 'per_lost', kind: 'browser' }], links: [{ distinctId: 'lost', personId: 'per_lost' }] }));
          proxy.set('down');
          await tx.write(scope, passWrites({ usage: new Map([['2026-01', 1]]) }));
        }),
      ).rejects.toBeInstanceOf(StoreUnavailableError);
      proxy.set('up');
      const { rows } = await direct.query('SELECT 1 FROM persons WHERE id = $1 UNION ALL SELECT 1 FROM person_links WHERE distinct_id = $2', ['per_lost', 'lost']);
      expect(rows).toEqual([]);
    });

    it('a database restart that ends every session is survived without a crash', async () => {
      await collector.ingest(job('pre-restart'));
      const before = backgroundErrors.length;
      const { rowCount } = await direct.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name = 'inlet'");
      expect(rowCount).toBeGreaterThan(0);
      // The pool has noticed once each idle connection it held reported its end.
      await vi.waitFor(() => expect(backgroundErrors.length).toBe(before + rowCount!));
      expect((await collector.ingest(job('post-restart')))[1]!.status).toBe('accepted');
      expect(backgroundErrors.length).toBe(before + rowCount!);
    });
  });
});

/**
 * Makes the database refuse every delete of an event, as a process that
 * stopped before an erasure's second step leaves it; returns the repair.
 */
async function eventDeletesFail(url: string): Promise<() => Promise<void>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`
    CREATE FUNCTION test_process_stopped() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'the process stopped'; END $$;
    CREATE TRIGGER test_process_stopped BEFORE DELETE ON events FOR EACH ROW EXECUTE FUNCTION test_process_stopped();`);
  return async () => {
    await client.query('DROP TRIGGER test_process_stopped ON events; DROP FUNCTION test_process_stopped()');
    await client.end();
  };
}
