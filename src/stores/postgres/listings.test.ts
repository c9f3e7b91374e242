import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORES, createTestDatabase } from '../../../test/conformance/stores.js';
import { describeWith } from '../../../test/helpers/needs-services.js';
import { PageReadsBusyError } from '../page-read-gate.js';
import { SqlListings } from '../sql/listings.js';
import { tunedReads } from '../sql/defaults.js';
import { PERSON_PAGE_SQL, PgListingReads } from './listings.js';
import { PostgresStore } from './postgres-store.js';
import { postgresEngine } from './sql-engine.js';

const enabled = STORES.some((e) => e.name === 'postgres');

(enabled ? describeWith.bind(null, ['postgres']) : describe.skip)('the list of people on PostgreSQL', () => {
  let db: { url: string; drop: () => Promise<void> };
  let direct: pg.Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    // The store brings the schema up to date.
    await (await PostgresStore.connect(db.url)).close();
    direct = new pg.Client({ connectionString: db.url });
    await direct.connect();
  });
  afterAll(async () => {
    await direct?.end();
    await db?.drop();
  });

  it('reads a page, first or later, as a backward range of persons_newest: no scan, no sort, no OFFSET', async () => {
    // Many projects' people, some merged, and statistics: the planner has a real choice.
    await direct.query(`INSERT INTO persons (project_id, id, kind, merged_into, created_at)
      SELECT 'prj_' || (n % 50), 'per_' || n, 'server', CASE WHEN n % 7 = 0 THEN 'per_' || (n - 50) END, n FROM generate_series(1, 50000) n`);
    await direct.query(`INSERT INTO person_links (project_id, distinct_id, person_id) SELECT 'prj_' || (n % 50), 'user_' || n, 'per_' || n FROM generate_series(1, 50000) n`);
    await direct.query('ANALYZE persons; ANALYZE person_links');
    for (const after of [[Number.MAX_SAFE_INTEGER, ''], [25_000, 'per_25000']]) {
      const plan = (await direct.query<{ 'QUERY PLAN': string }>({ text: `EXPLAIN ${PERSON_PAGE_SQL}`, values: ['prj_3', ...after, 21, 4] })).rows.map((r) => r['QUERY PLAN']).join('\n');
      expect(plan).toMatch(/Index (Only )?Scan Backward using persons_newest on persons/);
      expect(plan).not.toMatch(/Seq Scan|Sort Key: persons\.created_at/);
      // Each person's ids are read by its id, never by going through the project's links.
      const lines = plan.split('\n');
      const linkReads = lines.flatMap((l, i) => (/on person_links /.test(l) ? [lines[i + 1] ?? ''] : []));
      expect(linkReads.length).toBeGreaterThan(0);
      for (const cond of linkReads) expect(cond).toMatch(/Index Cond: .*person_id = /);
      expect(PERSON_PAGE_SQL).not.toMatch(/OFFSET/i);
    }
    const page = await direct.query({ text: PERSON_PAGE_SQL, values: ['prj_3', 25_000, 'per_25000', 3, 4] });
    expect(page.rows.map((r) => [r.id, r.ids])).toEqual([
      ['per_24953', ['user_24953']],
      ['per_24903', ['user_24903']],
      ['per_24853', ['user_24853']],
    ]);
  });

  it('tabs searching people pile up queries: searches wait in the page-read gate, two at a time, and past its line are refused', async () => {
    const pool = new pg.Pool({ connectionString: db.url, max: 4 });
    pool.on('error', () => undefined);
    try {
      const engine = postgresEngine(pool);
      const reads = new PgListingReads(engine);
      const listings = new SqlListings(engine, tunedReads(engine, reads, reads), { latest: () => Promise.reject(new Error('no person page is read here')) });
      const searches = Array.from({ length: 20 }, (_, i) => listings.searchDistinctIds('prj_big', `id_${i}`, 20).then(() => 'read', (e) => e));
      expect(reads.gate.size).toEqual({ running: 2, waiting: 8 });
      const answers = await Promise.all(searches);
      expect(answers.filter((a) => a === 'read').length).toBe(10);
      expect(answers.filter((a) => a instanceof PageReadsBusyError).length).toBe(10);
      expect(reads.gate.size).toEqual({ running: 0, waiting: 0 });
    } finally {
      await pool.end();
    }
  });

});
