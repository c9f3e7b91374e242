import { AUTH_PLAN_COLUMNS, type AuthPlanRow, authPlan } from '../sql/auth-plan.js';
import type pg from 'pg';
import type { Kysely } from 'kysely';
import type {
  AuthRecord, Batching, DestinationsEngine, Engine, ExpiryPlan, ExpiryStep, IngestTx, PendingErasure, PersonPageRow, SqlEngine,
} from '../port.js';
import type { PersonCursor } from '../port-console.js';
import type { Tuned } from '../sql/defaults.js';
import { LIVE_KEYS } from '../sql/rows.js';
import type { Database } from '../sql/schema.js';
import { SqlStore } from '../sql/sql-store.js';
import { postgresDestinations } from './destinations.js';
import { deleteErased } from './erasure.js';
import { PgRetention } from './retention.js';
import { PgIngestTx } from './ingest-tx.js';
import { PgListingReads } from './listings.js';
import { migrate } from './migrations.js';
import { ensureDayPartitions } from './partitions.js';
import { postgresEngine } from './sql-engine.js';
import { DEFAULT_TIMEOUTS, type PgTimeouts, createPool, inTransaction, rowsOf } from './pool.js';

/** How often each server checks that the coming days have their event tables. */
const PARTITION_CHECK_MS = 3600_000;

/** Settings of the PostgreSQL store; the defaults suit a server. */
export interface PostgresStoreOptions {
  timeouts?: Partial<PgTimeouts>;
  /** Told of failures nobody waits for (a dropped idle connection, a background write). */
  onBackgroundError?: (e: unknown) => void;
  /** The clock that decides which days get event tables ahead of time. */
  clock?: () => number;
}

// Rows come out in the port's shapes: source and project as JSON objects
// (epoch-ms bigints are exact as JSON numbers), the rest under the port's names.
const AUTH_SQL = `SELECT k.id AS "keyId", k.hash, k.expires_at AS "expiresAt", k.revoked_at AS "revokedAt",
    json_build_object('id', s.id, 'projectId', s.project_id, 'name', s.name, 'filterBots', s.filter_bots,
      'recordIp', s.record_ip, 'createdAt', s.created_at) AS source,
    json_build_object('id', p.id, 'orgId', p.org_id, 'name', p.name, 'apiEnabled', p.api_enabled,
      'monthlyEventLimit', p.monthly_event_limit, 'retentionDays', p.retention_days, 'createdAt', p.created_at) AS project,
    ${AUTH_PLAN_COLUMNS}
  FROM ${LIVE_KEYS} WHERE k.hash = ANY($1::bytea[])`;

/**
 * A transaction per project+source: while one is in flight, later jobs of
 * the same wait and go together in the next one (the project lock would
 * serialise them anyway), up to about 2,000 items; other projects' run at once.
 */
const BATCHING: Batching = { lane: (projectId, sourceId) => `${projectId}\u0000${sourceId}`, maxItems: 2000, gatherTurns: 0 };

/**
 * The shared engine: every server of a deployment on one PostgreSQL
 * database. Transactions run at once on a pool; writers
 * of one project take turns on an advisory lock. Keys have no cheap change
 * mark, so every lookup reads the database.
 */
class PostgresEngine implements Engine {
  readonly sql: SqlEngine;
  readonly destinations: DestinationsEngine;
  readonly batching = BATCHING;
  private readonly retention: PgRetention;
  private readonly reads: PgListingReads;
  /**
   * Event pages and the count of people are stores/sql's defaults; the reads
   * that scan, and the search, wait in the page-read gate, delivery's in a
   * gate of its own. A key lookup asked while another hangs gets the bound
   * of one on its own: a connection, then a statement.
   */
  readonly tuned: Tuned;
  private readonly partitionTimer: NodeJS.Timeout;

  constructor(
    private readonly pool: pg.Pool,
    clock: () => number,
    private readonly timeouts: PgTimeouts,
    onBackgroundError: (e: unknown) => void,
  ) {
    this.sql = postgresEngine(pool);
    const destinations = postgresDestinations(this.sql);
    const reads = new PgListingReads(this.sql);
    this.destinations = destinations;
    this.reads = reads;
    this.retention = new PgRetention(pool);
    this.tuned = {
      pageRows: (query) => reads.pageRows(query),
      searchDistinctIds: (...a) => reads.searchDistinctIds(...a),
      deliveryTurn: destinations.deliveryTurn,
      keyLookupLimitMs: timeouts.connectMs + timeouts.statementMs,
    };
    this.partitionTimer = setInterval(
      () => void ensureDayPartitions(pool, clock()).catch(onBackgroundError),
      PARTITION_CHECK_MS,
    ).unref();
  }

  async lookUpKeys(hashes: Buffer[]): Promise<Map<string, AuthRecord>> {
    const rows = await rowsOf<Omit<AuthRecord, 'plan'> & AuthPlanRow>(this.pool, AUTH_SQL, [hashes]);
    return new Map(rows.map((r) => {
      const { keyId, hash, expiresAt, revokedAt, source, project } = r;
      return [hash.toString('hex'), { keyId, hash, expiresAt, revokedAt, source, project, plan: authPlan(r) }];
    }));
  }

  /** One statement, outside any transaction. */
  async recordKeyUses(uses: Map<string, number>): Promise<void> {
    await rowsOf(
      this.pool,
      `UPDATE api_keys k SET last_used_at = greatest(coalesce(k.last_used_at, 0), u.at)
       FROM unnest($1::text[], $2::bigint[]) AS u(id, at) WHERE k.id = u.id`,
      [[...uses.keys()], [...uses.values()]],
    );
  }

  transaction<T>(fn: (tx: IngestTx) => Promise<T>, opts: { keep?: boolean } = {}): Promise<T> {
    return withIngestTx(this.pool, fn, opts.keep ?? true);
  }

  /** Writers run at once; a change of keys is seen by the next lookup, which always reads the database. */
  write<T>(fn: (db: Kysely<Database>) => Promise<T>, opts: { transaction?: boolean } = {}): Promise<T> {
    return opts.transaction === true ? this.sql.db.transaction().execute(fn) : fn(this.sql.db);
  }

  personPage(projectId: string, after: PersonCursor | null, limit: number, ids: number): Promise<PersonPageRow[]> {
    return this.reads.personPage(projectId, after, limit, ids);
  }

  deleteErasedEvents(e: PendingErasure, steps: { touch: () => Promise<void>; stopping?: () => boolean }): Promise<{ eventsDeleted: number; done: boolean }> {
    return deleteErased(this.pool, this.timeouts.statementMs, e, steps);
  }

  /** A step of retention (retention.ts). */
  expireEvents(plan: ExpiryPlan, batch: number): Promise<ExpiryStep> {
    return this.retention.step(plan, batch);
  }

  async ping(): Promise<void> {
    await rowsOf(this.pool, 'SELECT 1');
  }

  async close(): Promise<void> {
    clearInterval(this.partitionTimer);
    await this.pool.end();
  }
}

/** The shared store: PostgreSQL (PostgresEngine), with everything off the ingest path written once (SqlStore). */
export class PostgresStore extends SqlStore {
  private constructor(engine: PostgresEngine) {
    super(engine, engine.tuned);
  }

  /** Connects, brings the schema up to date and makes the coming days' event tables. */
  static async connect(url: string, opts: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const timeouts = { ...DEFAULT_TIMEOUTS, ...opts.timeouts };
    const onError = opts.onBackgroundError ?? (() => {});
    const clock = opts.clock ?? Date.now;
    await migrate(url, timeouts.connectMs);
    const pool = createPool(url, timeouts, onError);
    // Not fatal: without a day's table its rows go to the default partition.
    await ensureDayPartitions(pool, clock()).catch(onError);
    return new PostgresStore(new PostgresEngine(pool, clock, timeouts, onError));
  }
}

/**
 * Runs `fn` on an ingest transaction and sends its last writes before the
 * transaction commits: PgIngestTx holds writes back to send them in one round
 * trip, so every transaction that gives one out goes through here. A
 * transaction that will be rolled back (a dry run) does not send them: no one
 * reads them, and the project stays locked for one round trip less.
 */
function withIngestTx<T>(pool: pg.Pool, fn: (tx: PgIngestTx) => Promise<T>, keep = true): Promise<T> {
  return inTransaction(
    pool,
    async (c) => {
      const tx = new PgIngestTx(c);
      const out = await fn(tx);
      if (keep) await tx.flush();
      return out;
    },
    keep,
  );
}
