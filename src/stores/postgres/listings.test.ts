import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORES, createTestDatabase } from '../../../test/conformance/stores.js';
import { describeWith } from '../../../test/helpers/needs-services.js';
import { PageReadsBusyError } from '../page-read-gate.js';
import { SqlListings, distinctIdSearch } from '../sql/listings.js';
import { PERSON_PAGE_SQL, PgListingReads } from './listings.js';
import { PostgresStore } from './postgres-store.js';
import { postgresEngine, prefixEnd } from './sql-engine.js';

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

  it('the console\'s people search reads the whole project: a prefix is a range of person_links_prefix, in byte order', async () => {
    // 300,000 ids of one project beside the links above, and statistics: the planner has a real choice.
    await direct.query(`INSERT INTO person_links (project_id, distinct_id, person_id) SELECT 'prj_big', 'id_' || n, 'per_' || n FROM generate_series(1, 300000) n`);
    await direct.query(`INSERT INTO person_links (project_id, distinct_id, person_id) VALUES ('prj_big', 'id_7' || chr(1114111) || 'x', 'per_top'), ('prj_big', 'id_8', 'per_8b')
      ON CONFLICT DO NOTHING`);
    await direct.query('ANALYZE person_links; ANALYZE persons');
    const pool = new pg.Pool({ connectionString: db.url, max: 1 });
    pool.on('error', () => undefined);
    try {
      const engine = postgresEngine(pool);
      const q = distinctIdSearch(engine, 'prj_big', 'id_7', 5).compile();
      const plan = (await direct.query<{ 'QUERY PLAN': string }>({ text: `EXPLAIN ${q.sql}`, values: [...q.parameters] })).rows.map((r) => r['QUERY PLAN']).join('\n');
      expect(plan).toMatch(/Index (Only )?Scan using person_links_prefix on person_links/);
      expect(plan).toMatch(/Index Cond: .*distinct_id.* >= .*distinct_id.* < /s);
      expect(plan).not.toMatch(/Seq Scan on person_links|Sort Key/);
      const found = await distinctIdSearch(engine, 'prj_big', 'id_7', 5).execute();
      expect(found.map((r) => r.distinct_id)).toEqual(['id_7', 'id_70', 'id_700', 'id_7000', 'id_70000']);
      // The last of a prefix's ids, the highest character after it included, and nothing past them.
      const all = await distinctIdSearch(engine, 'prj_big', 'id_7', 1_000_000).execute();
      expect(all.length).toBe(11_112);
      expect(all.at(-1)!.distinct_id).toBe('id_7\u{10FFFF}x');
    } finally {
      await pool.end();
    }
  });

  it('tabs searching people pile up queries: searches wait in the page-read gate, two at a time, and past its line are refused', async () => {
    const pool = new pg.Pool({ connectionString: db.url, max: 4 });
    pool.on('error', () => undefined);
    try {
      const engine = postgresEngine(pool);
      const reads = new PgListingReads(engine.db);
      const listings = new SqlListings(engine, reads);
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

  it('a prefix ends at the prefix with its last character one higher', () => {
    expect(prefixEnd('id_7')).toBe('id_8');
    expect(prefixEnd('a\u{10FFFF}')).toBe('b');
    expect(prefixEnd('\u{D7FF}')).toBe('\u{E000}');
    expect(prefixEnd('\u{10FFFF}')).toBeNull();
    expect(prefixEnd('')).toBeNull();
  });
});
