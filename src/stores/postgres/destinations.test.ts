/**
 * Destinations on PostgreSQL alone: the head of a project (destinations.ts,
 * ProjectHeads), read without the project's lock while the events' sequence
 * gave out nothing more, and never past a seq of the project still in
 * flight, even when later seqs of other projects have committed; and the
 * migration that removed deleted projects' destinations. The port's
 * behaviour is tested for every engine in test/conformance/destinations.test.ts.
 */
import { renderMigration } from '../sql/shared-migration.js';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/conformance/stores.js';
import { TestClock } from '../../../test/helpers/fixture.js';
import { RECEIVED_AT, ingestJob } from '../../../test/helpers/items.js';
import { describeWith } from '../../../test/helpers/needs-services.js';
import { createAdmin } from '../../domain/admin.js';
import { Collector } from '../../domain/collector.js';
import { PG_MIGRATIONS, migrate } from './migrations.js';
import { LOCK_NS } from './pool.js';
import { PostgresStore } from './postgres-store.js';

describeWith(['postgres'], 'postgres: destinations', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let store: PostgresStore;
  let collector: Collector;
  let admin: ReturnType<typeof createAdmin>;
  const clients: pg.Client[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    store = await PostgresStore.connect(db.url);
    collector = new Collector(store);
    admin = createAdmin(store, new TestClock(RECEIVED_AT).now);
  });
  afterAll(async () => {
    for (const c of clients) await c.end().catch(() => undefined);
    await collector?.close();
    await db?.drop();
  });

  async function project() {
    const projectId = (await admin.createProject({ name: 'p', apiEnabled: true })).id;
    const sourceId = (await admin.createSource({ projectId, name: 's' })).id;
    const keyId = (await admin.createKey(sourceId)).id;
    const ingest = (event: string) => collector.ingest(ingestJob([{ event, distinctId: 'u' }], { projectId, sourceId, keyId, receivedAt: RECEIVED_AT }));
    return { projectId, sourceId, ingest };
  }

  /** A connection of its own, as another server's ingest transaction would hold. */
  async function session(): Promise<pg.Client> {
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    clients.push(c);
    return c;
  }

  /** Takes the project's lock in a transaction left open, as a writer of the project does before it takes its seqs. */
  async function holdLock(c: pg.Client, projectId: string): Promise<void> {
    await c.query('BEGIN');
    await c.query('SELECT pg_advisory_xact_lock($1::int, hashtext($2::text))', [LOCK_NS.project, projectId]);
  }

  /** Whether `head` answers before any session of this database waits for an advisory lock, or one waits first. */
  async function answersOrWaits(head: Promise<number>): Promise<'answered' | 'waiting'> {
    let answered = false;
    void head.then(() => (answered = true), () => undefined);
    const c = await session();
    for (;;) {
      const r = await c.query(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'",
      );
      if (answered) return 'answered';
      if ((r.rows[0] as { n: number }).n > 0) return 'waiting';
    }
  }

  it('the migration removes the destinations of projects deleted before a deletion took its destinations along, with their URLs and secrets', async () => {
    const c = await session();
    await c.query(`
      INSERT INTO orgs (id, name, created_at, deleted_at) VALUES ('org_m_live', 'a', 0, NULL), ('org_m_gone', 'b', 0, 5);
      INSERT INTO projects (id, org_id, name, api_enabled, created_at, deleted_at)
      VALUES ('prj_m_live', 'org_m_live', 'p', true, 0, NULL), ('prj_m_gone', 'org_m_live', 'p', true, 0, 5), ('prj_m_of_gone_org', 'org_m_gone', 'p', true, 0, NULL);
      INSERT INTO destinations (id, project_id, kind, config, sources, events, paused, cursor_seq, generation, delivered, lease_holder, lease_until, created_at)
      SELECT 'dst_' || id, id, 'webhook', '{"url":"https://example.com/in","secret":"whsec_x"}', '[]', '[]', false, 0, 0, 0, 'srv_old', 0, 0 FROM projects WHERE id LIKE 'prj_m_%';
    `);
    await c.query(PG_MIGRATIONS.find((m) => typeof m === 'string' && m.includes('DELETE FROM destinations')) as string);
    const left = await c.query("SELECT id FROM destinations WHERE id LIKE 'dst_prj_m_%'");
    expect(left.rows.map((r: { id: string }) => r.id)).toEqual(['dst_prj_m_live']);
  });

  const sqlOf = (m: (typeof PG_MIGRATIONS)[number]): string => (typeof m === 'string' ? m : renderMigration(m, 'postgres'));

  /** A database of its own at the version before destinations move into config, and a client on it. */
  async function beforeTheMove() {
    const fresh = await createTestDatabase();
    const c = new pg.Client({ connectionString: fresh.url });
    await c.connect();
    const moves = PG_MIGRATIONS.findIndex((m) => typeof m === 'string' && m.includes('DROP COLUMN table_name'));
    for (const m of PG_MIGRATIONS.slice(0, moves)) await c.query(sqlOf(m));
    return { fresh, c, moves, sql: sqlOf };
  }

  it('the migration moves destinations kept in the columns of their kind (url, table_name, secret) into config as they were, secrets whole', async () => {
    const { fresh, c, moves, sql } = await beforeTheMove();
    try {
      await c.query(`
        INSERT INTO destinations (id, project_id, kind, url, table_name, sources, events, secret, paused, cursor_seq, generation, delivered, lease_until, created_at) VALUES
          ('dst_hook', 'prj_1', 'webhook', 'https://u:p%40ss@example.com/in?t=1', NULL, '[]', '["paid"]', 'whsec_kept', false, 7, 1, 3, 0, 0),
          ('dst_table', 'prj_1', 'postgres', 'postgres://loader:pw@db/w?sslmode=require', 'analytics.inlet_events', '[]', '["paid"]', NULL, false, 7, 1, 3, 0, 0);
      `);
      await c.query(sql(PG_MIGRATIONS[moves]!));
      const rows = await c.query<{ id: string; config: string; cursor_seq: string }>('SELECT id, config, cursor_seq FROM destinations ORDER BY id');
      expect(rows.rows.map((r) => ({ id: r.id, config: JSON.parse(r.config) as unknown, cursor: Number(r.cursor_seq) }))).toEqual([
        { id: 'dst_hook', config: { url: 'https://u:p%40ss@example.com/in?t=1', secret: 'whsec_kept' }, cursor: 7 },
        { id: 'dst_table', config: { url: 'postgres://loader:pw@db/w?sslmode=require', table: 'analytics.inlet_events' }, cursor: 7 },
      ]);
      const columns = await c.query<{ column_name: string }>("SELECT column_name FROM information_schema.columns WHERE table_name = 'destinations'");
      expect(columns.rows.map((r) => r.column_name)).not.toContain('secret');
    } finally {
      await c.end();
      await fresh.drop();
    }
  });

  it('an older server still delivering (a lease it holds) stops the move of destinations into config: the start is refused, saying to stop the older servers, and nothing is changed', async () => {
    const { fresh, c, moves, sql } = await beforeTheMove();
    try {
      await c.query('CREATE TABLE schema_migrations (version integer PRIMARY KEY, applied_at bigint NOT NULL)');
      await c.query('INSERT INTO schema_migrations (version, applied_at) SELECT v, 0 FROM generate_series(1, $1::int) v', [moves]);
      await c.query(`
        INSERT INTO destinations (id, project_id, kind, url, sources, events, secret, paused, cursor_seq, generation, delivered, lease_holder, lease_until, created_at) VALUES
          ('dst_hook', 'prj_1', 'webhook', 'https://example.com/in', '[]', '[]', 'whsec_kept', false, 7, 1, 3, 'old-server', $1, 0)`,
      [Date.now() + 60_000]);
      await expect(migrate(fresh.url, 5_000)).rejects.toThrow(/older Inlet are delivering destinations.*Stop every older server/);
      const version = await c.query<{ v: number }>('SELECT max(version) AS v FROM schema_migrations');
      expect(version.rows[0]!.v).toBe(moves);
      const url = await c.query<{ url: string }>('SELECT url FROM destinations');
      expect(url.rows.map((r) => r.url)).toEqual(['https://example.com/in']);

      // Once the older server has stopped (its lease lapsed or let go), the start goes on.
      await c.query('UPDATE destinations SET lease_holder = NULL, lease_until = 0');
      await migrate(fresh.url, 5_000);
      const config = await c.query<{ config: string }>('SELECT config FROM destinations');
      expect(config.rows.map((r) => JSON.parse(r.config) as unknown)).toEqual([{ url: 'https://example.com/in', secret: 'whsec_kept' }]);
    } finally {
      await c.end();
      await fresh.drop();
    }
  });

  it('never reads past an event of the project still being written (a lower seq, committed later), even once later seqs of other projects are committed', async () => {
    const p = await project();
    const other = await project();
    await p.ingest('before');
    const before = await store.destinations.head(p.projectId);

    // A writer of the project takes its seq under the lock and has not committed yet...
    const writer = await session();
    await holdLock(writer, p.projectId);
    const late = await writer.query(
      `INSERT INTO events (id, project_id, source_id, event, person_id, "timestamp", received_at, properties)
       VALUES (gen_random_uuid(), $1, $2, 'late', 'per_x', $3, $3, '{}') RETURNING seq, id`,
      [p.projectId, p.sourceId, RECEIVED_AT],
    );
    const lateSeq = Number((late.rows[0] as { seq: string }).seq);
    // ...while another project's event, with a higher seq, commits.
    await other.ingest('elsewhere');
    expect(await store.destinations.head(other.projectId)).toBeGreaterThan(lateSeq);

    // The project's head waits for its writer: answering now would pass over the seq in flight for good.
    const head = store.destinations.head(p.projectId);
    expect(await answersOrWaits(head)).toBe('waiting');
    await writer.query('COMMIT');
    const after = await head;
    expect(after).toBeGreaterThanOrEqual(lateSeq);
    const read = await store.destinations.read(p.projectId, before, after, 100);
    expect(read.events.map((e) => e.id)).toEqual([(late.rows[0] as { id: string }).id]);
  });

  it('reads a caught-up project\'s head without its lock while no seq was given out since (a writer holding the lock does not hold it up)', async () => {
    const p = await project();
    await p.ingest('one');
    const head = await store.destinations.head(p.projectId);
    const writer = await session();
    await holdLock(writer, p.projectId);
    const again = store.destinations.head(p.projectId);
    expect(await answersOrWaits(again)).toBe('answered');
    expect(await again).toBe(head);
    await writer.query('ROLLBACK');
  });
});
