import type pg from 'pg';
import { ingestInTx, ingestJobsInTx } from '../../domain/ingest.js';
import type {
  AuthRecord,
  ErasedPerson,
  ExpiryStep,
  IngestJob,
  IngestObserver,
  IngestTx,
  ItemOutcome,
  PersonLookup,
  PersonView,
  Store,
  StoredEvent,
} from '../port.js';
import { authFromRow, storedEventFromRow } from '../rows.js';
import { PgAdmin, toProject, toSource } from './admin.js';
import { PgEventPages } from './event-pages.js';
import { PgErasure } from './erasure.js';
import { PgRetention } from './retention.js';
import { PgIngestTx } from './ingest-tx.js';
import { KeyLookups } from './key-lookups.js';
import { migrate } from './migrations.js';
import { ensureDayPartitions } from './partitions.js';
import { DEFAULT_TIMEOUTS, type PgTimeouts, createPool, inTransaction, unavailable } from './pool.js';

/** Items one transaction takes before the rest wait for the next one. */
const MAX_ITEMS_PER_TRANSACTION = 2000;

/** A job waiting for the transaction of its project and source in flight. */
interface WaitingJob {
  job: IngestJob;
  resolve: (o: ItemOutcome[]) => void;
  reject: (e: unknown) => void;
}

/** How often key last-used times are written. */
const KEY_USE_FLUSH_MS = 1000;
/** How often each server checks that the coming days have their event tables. */
const PARTITION_CHECK_MS = 3600_000;

/** Settings of the PostgreSQL store; the defaults suit a server. */
export interface PostgresStoreOptions {
  timeouts?: Partial<PgTimeouts>;
  /** Told of failures nobody waits for (a dropped idle connection, a background write). */
  onBackgroundError?: (e: unknown) => void;
  /** The clock that decides which days get event tables ahead of time. */
  clock?: () => number;
  /** Told of every group commit, for metrics. */
  observer?: IngestObserver;
}

const AUTH_SQL = `SELECT k.id AS key_id, k.hash, k.expires_at, k.revoked_at,
    s.id AS s_id, s.project_id AS s_project_id, s.name AS s_name, s.filter_bots, s.record_ip, s.created_at AS s_created_at,
    p.id, p.org_id, p.name, p.api_enabled, p.monthly_event_limit, p.retention_days, p.created_at
  FROM api_keys k
  JOIN sources s ON s.id = k.source_id AND s.deleted_at IS NULL
  JOIN projects p ON p.id = s.project_id AND p.deleted_at IS NULL
  JOIN orgs o ON o.id = p.org_id AND o.deleted_at IS NULL
  WHERE k.hash = ANY($1::bytea[])`;

const EVENTS_SQL = `SELECT e.*, coalesce(p.merged_into, e.person_id) AS current_person
  FROM events e LEFT JOIN persons p ON p.project_id = e.project_id AND p.id = e.person_id
  WHERE e.source_id = $1 ORDER BY e."timestamp" DESC, e.seq DESC LIMIT $2`;

const PERSON_SQL = `SELECT coalesce(m.id, p.id) AS id, coalesce(m.created_at, p.created_at) AS created_at
  FROM persons p LEFT JOIN persons m ON m.project_id = p.project_id AND m.id = p.merged_into
  WHERE p.project_id = $1 AND p.id = $2`;

/** The shared store: every server of a deployment on one PostgreSQL database. */
export class PostgresStore implements Store {
  /** Jobs waiting per project and source while one transaction of theirs is in flight. */
  private readonly waiting = new Map<string, WaitingJob[]>();
  readonly admin: PgAdmin;
  private touches = new Map<string, number>();
  private flushing: Promise<void> = Promise.resolve();
  private readonly keyTimer: NodeJS.Timeout;
  private readonly partitionTimer: NodeJS.Timeout;
  /**
   * Keys are looked up on every request, never cached, since revocation must
   * count from the next request on every server; requests that come in while a
   * lookup is in flight share the next one (key-lookups.ts).
   */
  private readonly keys: KeyLookups<Record<string, never>>;
  readonly eventPages: PgEventPages;
  private readonly retention: PgRetention;
  private readonly erasure: PgErasure;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly onBackgroundError: (e: unknown) => void,
    clock: () => number,
    timeouts: PgTimeouts,
    private readonly observer?: IngestObserver,
  ) {
    this.admin = new PgAdmin(pool);
    this.eventPages = new PgEventPages(pool);
    this.retention = new PgRetention(pool);
    this.erasure = new PgErasure(pool);
    // A lookup asked while another hangs gets the bound of one on its own:
    // a connection, then a statement.
    this.keys = new KeyLookups(async (hexes) => {
      const { rows } = await this.query<Record<string, never>>(AUTH_SQL, [hexes.map((h) => Buffer.from(h, 'hex'))]);
      return new Map(rows.map((r) => [(r.hash as Buffer).toString('hex'), r]));
    }, timeouts.connectMs + timeouts.statementMs);
    this.keyTimer = setInterval(() => void this.flushKeyUses(), KEY_USE_FLUSH_MS).unref();
    this.partitionTimer = setInterval(
      () => void ensureDayPartitions(pool, clock()).catch(onBackgroundError),
      PARTITION_CHECK_MS,
    ).unref();
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
    return new PostgresStore(pool, onError, clock, timeouts, opts.observer);
  }

  async authenticate(hash: Buffer): Promise<AuthRecord | null> {
    let r: Record<string, never> | undefined;
    try {
      r = await this.keys.get(hash.toString('hex'));
    } catch (e) {
      throw unavailable(e);
    }
    if (r === undefined) return null;
    return authFromRow(r, toSource, toProject);
  }

  recordKeyUse(keyId: string, at: number): void {
    this.touches.set(keyId, Math.max(at, this.touches.get(keyId) ?? 0));
  }

  async ingest(job: IngestJob): Promise<ItemOutcome[]> {
    if (job.dryRun) {
      try {
        return await withIngestTx(this.pool, (tx) => ingestInTx(tx, job), false);
      } catch (e) {
        throw unavailable(e);
      }
    }
    // Group commit: while a transaction of this project and source is in
    // flight, later jobs wait and then go together in the next one. The
    // project lock serialises them anyway; together they cost one transaction
    // and one round trip per kind of statement instead of one each.
    const key = `${job.projectId}\u0000${job.sourceId}`;
    return new Promise((resolve, reject) => {
      const queue = this.waiting.get(key);
      if (queue !== undefined) {
        queue.push({ job, resolve, reject });
        return;
      }
      this.waiting.set(key, [{ job, resolve, reject }]);
      void this.writeQueue(key);
    });
  }

  /** Writes the jobs waiting under `key`, a group per transaction, until none is left. */
  private async writeQueue(key: string): Promise<void> {
    const queue = this.waiting.get(key)!;
    while (queue.length > 0) {
      let items = 0;
      let n = 0;
      while (n < queue.length && (n === 0 || items + queue[n]!.job.items.length <= MAX_ITEMS_PER_TRANSACTION)) {
        items += queue[n]!.job.items.length;
        n++;
      }
      const group = queue.splice(0, n);
      const started = performance.now();
      try {
        const outs = await withIngestTx(this.pool, (tx) => ingestJobsInTx(tx, group.map((g) => g.job)));
        this.observer?.committed((performance.now() - started) / 1000, group.length, items);
        group.forEach((g, i) => g.resolve(outs[i]!));
      } catch (e) {
        this.observer?.failed();
        if (group.length === 1) {
          group[0]!.reject(unavailable(e));
          continue;
        }
        // Each job alone, so one failing job takes no other down. In parallel:
        // when the database itself is away they all fail within one timeout.
        await Promise.all(
          group.map((g) =>
            withIngestTx(this.pool, (tx) => ingestInTx(tx, g.job)).then(g.resolve, (err) => g.reject(unavailable(err))),
          ),
        );
      }
    }
    this.waiting.delete(key);
  }

  async transaction<T>(fn: (tx: IngestTx) => Promise<T>): Promise<T> {
    return withIngestTx(this.pool, fn);
  }

  async listEvents(sourceId: string, limit: number): Promise<StoredEvent[]> {
    const { rows } = await this.query<Record<string, never>>(EVENTS_SQL, [sourceId, limit]);
    return rows.map((r) => storedEventFromRow(r, r.properties));
  }

  /** Erases a person (erasure.ts). */
  erasePerson(projectId: string, lookup: PersonLookup, opts: { suppress: boolean; now: number }): Promise<ErasedPerson | null> {
    return this.erasure.erasePerson(projectId, lookup, opts);
  }

  unsuppress(projectId: string, distinctId: string): Promise<boolean> {
    return this.erasure.unsuppress(projectId, distinctId);
  }

  /** A step of retention (retention.ts). */
  expireEvents(now: number, batch: number): Promise<ExpiryStep> {
    return this.retention.step(now, batch);
  }

  async findPerson(projectId: string, lookup: PersonLookup): Promise<PersonView | null> {
    let startId: string;
    if ('distinctId' in lookup) {
      const { rows } = await this.query<{ id: string }>(
        'SELECT person_id AS id FROM person_links WHERE project_id = $1 AND distinct_id = $2',
        [projectId, lookup.distinctId],
      );
      if (rows[0] === undefined) return null;
      startId = rows[0].id;
    } else {
      startId = lookup.personId;
    }
    const p = (await this.query<{ id: string; created_at: number }>(PERSON_SQL, [projectId, startId])).rows[0];
    if (p === undefined) return null;
    // Byte order, as on every engine, whatever the database's collation.
    const ids = await this.query<{ distinct_id: string }>(
      'SELECT distinct_id FROM person_links WHERE project_id = $1 AND person_id = $2 ORDER BY distinct_id COLLATE "C"',
      [projectId, p.id],
    );
    const traits = await this.query<{ key: string; value: unknown }>(
      'SELECT key, value FROM person_traits WHERE project_id = $1 AND person_id = $2 ORDER BY key COLLATE "C"',
      [projectId, p.id],
    );
    return {
      id: p.id,
      distinctIds: ids.rows.map((r) => r.distinct_id),
      traits: Object.fromEntries(traits.rows.map((t) => [t.key, t.value])),
      createdAt: p.created_at,
    };
  }

  async usage(projectId: string, month: string): Promise<number> {
    const { rows } = await this.query<{ events: number }>('SELECT events FROM usage WHERE project_id = $1 AND month = $2', [projectId, month]);
    return rows[0]?.events ?? 0;
  }

  async ping(): Promise<void> {
    await this.query('SELECT 1', []);
  }

  async close(): Promise<void> {
    clearInterval(this.keyTimer);
    clearInterval(this.partitionTimer);
    await this.flushKeyUses();
    await this.pool.end();
  }

  /** Writes the key uses noted since the last flush in one statement; on failure they wait for the next. */
  private flushKeyUses(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.touches.size === 0) return;
      const touches = this.touches;
      this.touches = new Map();
      try {
        await this.pool.query(
          `UPDATE api_keys k SET last_used_at = greatest(coalesce(k.last_used_at, 0), u.at)
           FROM unnest($1::text[], $2::bigint[]) AS u(id, at) WHERE k.id = u.id`,
          [[...touches.keys()], [...touches.values()]],
        );
      } catch (e) {
        for (const [id, at] of touches) this.recordKeyUse(id, at);
        this.onBackgroundError(e);
      }
    });
    return this.flushing;
  }

  private async query<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    try {
      return await this.pool.query<R>(text, values);
    } catch (e) {
      throw unavailable(e);
    }
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
