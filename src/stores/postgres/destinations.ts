import { sql } from 'kysely';
import { PageReadGate } from '../page-read-gate.js';
import type { SqlEngine } from '../sql/engine.js';
import type { DestinationsEngine } from '../port.js';
import type { Tuning } from '../sql/defaults.js';
import { deliveryReads } from '../sql/destinations.js';
import type { DeliveryReads } from '../port-destinations.js';
import { DEFAULT_TIMEOUTS, LOCK_NS, createPool } from './pool.js';
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

/** The newest seq the events' sequence has given out (0 before the first). */
const SEQUENCE_VALUE = sql<{ v: number }>`SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('events', 'seq')::regclass), 0) AS v`;

/**
 * The same, read once the project's lock is held: one statement, whose
 * implicit transaction lets the lock go as soon as the value is read (the
 * materialised CTE takes the lock before the outer select reads the value).
 */
const settledValue = (projectId: string) => sql<{ v: number }>`
  WITH locked AS MATERIALIZED (SELECT pg_advisory_xact_lock(${LOCK_NS.project}::int, hashtext(${projectId}::text)))
  SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('events', 'seq')::regclass), 0) AS v FROM locked`;

/**
 * A project's head, read without its lock while nothing new was taken.
 * Servers write at once, each taking seqs from one sequence as it inserts:
 * a seq below the newest one given out may still belong to a transaction in
 * flight, of another project or of this one, and a reader that went past it
 * would never come back for it. A project's writers hold its lock from
 * before they take their seqs until they commit, so with the lock held,
 * every seq of the project the sequence has given out is committed (or
 * rolled back): the value read there is the head. It stays the head for as
 * long as the sequence gives out nothing more, and the sequence's value is
 * read without any lock; so the lock is taken only when that value moved,
 * and concurrent looks at one project share one read (docs/design.md,
 * "Destinations": the head without the project lock).
 */
export class ProjectHeads {
  /** Per project: the sequence's value as last read under its lock. */
  private readonly settled = new Map<string, number>();
  private readonly reading = new Map<string, Promise<number>>();

  constructor(private readonly engine: SqlEngine) {}

  head(projectId: string): Promise<number> {
    let r = this.reading.get(projectId);
    if (r === undefined) {
      r = this.read(projectId).finally(() => this.reading.delete(projectId));
      this.reading.set(projectId, r);
    }
    return r;
  }

  private async read(projectId: string): Promise<number> {
    const last = this.settled.get(projectId);
    if (last !== undefined && (await SEQUENCE_VALUE.execute(this.engine.db)).rows[0]!.v === last) return last;
    const v = (await settledValue(projectId).execute(this.engine.db)).rows[0]!.v;
    this.settled.set(projectId, v);
    return v;
  }
}

/** Destinations on PostgreSQL: the head as ProjectHeads reads it, and delivery's queries within a gate of their own. */
export function postgresDestinations(engine: SqlEngine): DestinationsEngine & Pick<Tuning, 'deliveryTurn'> {
  const gate = new PageReadGate(DELIVERY_CONNECTIONS, Number.MAX_SAFE_INTEGER);
  const heads = new ProjectHeads(engine);
  let calls = 0;
  return {
    // Each call its own key: the gate shares answers of equal keys, and no two of these are the same.
    deliveryTurn: (fn) => gate.run(String(calls++), fn),
    head: (projectId) => heads.head(projectId),
    async positionBefore(projectId, at) {
      // Event ids are UUIDv7 of their arrival: the BRIN index on id reads only the ranges since `at`.
      const r = await engine.db.selectFrom('events').select((eb) => eb.fn.min('seq').as('first'))
        .where('project_id', '=', projectId).where('id', '>=', lowestIdAt(at)).where('received_at', '>=', at).executeTakeFirst();
      const first = r?.first ?? null;
      return first === null ? this.head(projectId) : Number(first) - 1;
    },
  };
}

/**
 * Delivery's reads in the delivery process: a pool of its own, of which the
 * reads hold at most DELIVERY_CONNECTIONS, so delivery never takes a
 * connection from the pool that writes batches.
 */
export function postgresDeliveryReads(url: string, onError: (e: Error) => void): DeliveryReads {
  const pool = createPool(url, DEFAULT_TIMEOUTS, onError);
  const engine = postgresEngine(pool);
  const destinations = postgresDestinations(engine);
  return deliveryReads(engine, destinations, destinations, () => pool.end());
}
