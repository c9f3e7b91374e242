import pg from 'pg';
import type { ExpiryPlan, ExpiryStep } from '../port.js';
import { LOCK_NS, inTransaction, rowsOf, unavailable } from './pool.js';

const DAY_MS = 86_400_000;
/** The day tables inlet_ensure_event_partition makes. */
const DAY_TABLE = /^events_(\d{4})(\d{2})(\d{2})$/;

const SQL = {
  dayTables: `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'events'::regclass`,
  // The insert_ids of a day table's events go before the table does, a keyset batch at a time.
  releaseClaims: (table: string) => `WITH batch AS (
      SELECT source_id, "timestamp", seq, insert_id FROM ${table}
      WHERE (source_id, "timestamp", seq) > ($1::text, $2::bigint, $3::bigint)
      ORDER BY source_id, "timestamp", seq LIMIT $4
    ), released AS (
      DELETE FROM insert_ids i USING batch b
      WHERE b.insert_id IS NOT NULL AND i.source_id = b.source_id AND i.insert_id = b.insert_id
    )
    SELECT count(*)::int AS n, (array_agg(ARRAY[source_id, "timestamp"::text, seq::text] ORDER BY source_id DESC, "timestamp" DESC, seq DESC))[1] AS last
    FROM batch`,
  // Rows of the project older than its cutoff, with their insert_ids, in one statement.
  expireRows: `WITH doomed AS (
      SELECT source_id, "timestamp", seq FROM events WHERE project_id = $1 AND "timestamp" < $2 LIMIT $3
    ), gone AS (
      DELETE FROM events e USING doomed d
      WHERE e.source_id = d.source_id AND e."timestamp" = d."timestamp" AND e.seq = d.seq AND e."timestamp" < $2
      RETURNING e.source_id, e.insert_id
    ), released AS (
      DELETE FROM insert_ids i USING gone g
      WHERE g.insert_id IS NOT NULL AND i.source_id = g.source_id AND i.insert_id = g.insert_id
    )
    SELECT count(*)::int AS n FROM gone`,
} as const;

/**
 * Expired events on PostgreSQL, as the plan says. A day table whose whole
 * day has expired for every project (it ends by `allBefore`) is dropped (after its insert_ids are released, a batch a
 * step): no row-by-row delete, no bloat. The rest (days only some projects
 * have outlived, and old imports in the default partition) is deleted a
 * batch per statement. Dropping takes the lock that making day tables takes,
 * and gives up after 2 s rather than make writers queue behind it.
 */
export class PgRetention {
  /** Where releasing a day table's insert_ids has got to. */
  private readonly released = new Map<string, [string, string, string]>();

  constructor(private readonly pool: pg.Pool) {}

  async step(plan: ExpiryPlan, batch: number): Promise<ExpiryStep> {
    const tables = (await rowsOf<{ name: string }>(this.pool, SQL.dayTables, []))
      .map((r) => ({ name: r.name, end: dayEnd(r.name) }))
      .filter((t): t is { name: string; end: number } => t.end !== null && t.end <= plan.allBefore)
      .sort((a, b) => a.end - b.end);
    if (tables.length > 0) return this.dropDay(tables[0]!.name, batch);
    let deleted = 0;
    for (const p of plan.cutoffs) {
      const [r] = await rowsOf<{ n: number }>(this.pool, SQL.expireRows, [p.projectId, p.before, batch - deleted]);
      deleted += r!.n;
      if (deleted >= batch) return { deleted, dropped: 0, more: true };
    }
    return { deleted, dropped: 0, more: false };
  }

  private async dropDay(name: string, batch: number): Promise<ExpiryStep> {
    const table = pg.escapeIdentifier(name);
    const from = this.released.get(name) ?? ['', String(-Number.MAX_SAFE_INTEGER), String(-Number.MAX_SAFE_INTEGER)];
    const [r] = await rowsOf<{ n: number; last: [string, string, string] | null }>(this.pool, SQL.releaseClaims(table), [...from, batch]);
    if (r!.n === batch) {
      this.released.set(name, r!.last!);
      return { deleted: 0, dropped: 0, more: true };
    }
    try {
      await inTransaction(this.pool, async (c) => {
        await c.query("SET LOCAL lock_timeout = '2s'");
        await c.query('SELECT pg_advisory_xact_lock($1::int, 0)', [LOCK_NS.partitions]);
        await c.query(`DROP TABLE IF EXISTS ${table}`);
      });
    } catch (e) {
      throw unavailable(e);
    }
    this.released.delete(name);
    return { deleted: 0, dropped: 1, more: true };
  }
}

/** Epoch ms at which a day table's day ends; null for any other table. */
function dayEnd(name: string): number | null {
  const m = DAY_TABLE.exec(name);
  return m === null ? null : Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) + DAY_MS;
}
