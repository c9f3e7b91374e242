import { sql } from 'kysely';
import { PageReadGate } from '../page-read-gate.js';
import { atOnce } from '../sql/engine.js';
import type { SqlEngine } from '../sql/engine.js';
import { type DestinationsEngine, SqlDestinations, readPastQuery } from '../sql/destinations.js';
import type { DeliveryReads } from '../port-destinations.js';
import { DEFAULT_TIMEOUTS, createPool } from './pool.js';
import { postgresEngine } from './sql-engine.js';

/**
 * Delivery's statements hold at most this many of the pool's connections at
 * once, whatever the number of destinations: the pool has ten, and the
 * write path must always find one (docs/design.md, "Destinations").
 */
const DELIVERY_CONNECTIONS = 2;

/** The lowest UUIDv7 of the millisecond `at`: every event id made at `at` or later sorts at or above it. */
function lowestIdAt(at: number): string {
  const h = Math.max(0, Math.floor(at)).toString(16).padStart(12, '0').slice(-12);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-7000-8000-000000000000`;
}

/**
 * Destinations on PostgreSQL. Servers write at once, each taking seqs from
 * one sequence as it inserts: a seq below the newest one committed may still
 * belong to a transaction in flight, of another project or of this one. A
 * project's writers hold its lock from before they take their seqs until they
 * commit, so with the lock held, every seq of the project the sequence has
 * given out is committed (or rolled back); the head is read there.
 */
export function postgresDestinations(engine: SqlEngine): DestinationsEngine {
  const gate = new PageReadGate(DELIVERY_CONNECTIONS, Number.MAX_SAFE_INTEGER);
  let calls = 0;
  return {
    reads: engine,
    write: atOnce,
    // Each call its own key: the gate shares answers of equal keys, and no two of these are the same.
    bound: (fn) => gate.run(String(calls++), fn),
    async now() {
      const r = await sql<{ now: number }>`SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now`.execute(engine.db);
      return r.rows[0]!.now;
    },
    head(projectId) {
      return engine.db.transaction().execute(async (trx) => {
        await engine.lockProjects(trx, [projectId]);
        const r = await sql<{ v: number | null }>`SELECT pg_sequence_last_value(pg_get_serial_sequence('events', 'seq')::regclass) AS v`.execute(trx);
        return r.rows[0]?.v ?? 0;
      });
    },
    readPast: (projectId, after, upTo, limit) => readPastQuery(engine, projectId, after, upTo, limit),
    async positionBefore(projectId, at) {
      // Event ids are UUIDv7 of their arrival: the BRIN index on id reads only the ranges since `at`.
      const r = await engine.db.selectFrom('events').select((eb) => eb.fn.min('seq').as('first'))
        .where('project_id', '=', projectId).where('id', '>=', lowestIdAt(at)).where('received_at', '>=', at).executeTakeFirst();
      const first = r?.first ?? null;
      return first === null ? this.head(projectId) : Number(first) - 1;
    },
    close: async () => undefined,
  };
}

/**
 * Delivery's reads on the delivery thread: a pool of its own, of which the
 * reads hold at most DELIVERY_CONNECTIONS, so delivery never takes a
 * connection from the pool that writes batches.
 */
export function postgresDeliveryReads(url: string, onError: (e: Error) => void): DeliveryReads {
  const pool = createPool(url, DEFAULT_TIMEOUTS, onError);
  const engine = postgresEngine(pool);
  const destinations = new SqlDestinations(engine, postgresDestinations(engine));
  return {
    get: (id) => destinations.get(id),
    read: (...a) => destinations.read(...a),
    countPast: (...a) => destinations.countPast(...a),
    oldestPast: (...a) => destinations.oldestPast(...a),
    close: () => pool.end(),
  };
}
