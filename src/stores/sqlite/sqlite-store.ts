import type { Kysely } from 'kysely';
import {
  type AuthRecord, type Batching, type Engine, type ExpiryPlan, type ExpiryStep, type IngestTx, type PendingErasure, type PersonPageRow, type SqlEngine,
  StoreUnavailableError,
} from '../port.js';
import type { PersonCursor } from '../port-console.js';
import type { Tuned } from '../sql/defaults.js';
import type { Database } from '../sql/schema.js';
import { SqlStore } from '../sql/sql-store.js';
import { sqliteDestinations } from './destinations.js';
import { backupTo } from './backup.js';
import { SqliteErasure } from './erasure.js';
import { SqliteEventPages } from './event-pages.js';
import { SqliteRetention } from './retention.js';
import { type CheckpointThread, Checkpointer, LONG_WAL_FRAMES } from './checkpointer.js';
import type { CheckpointWorkerData } from './checkpoint-worker.js';
import { EventMinuteIndex } from './event-minute-index.js';
import { SqliteIngestTx } from './ingest-tx.js';
import { insertIdsOf } from './insert-ids.js';
import { personPage } from './listings.js';
import { type Db, openSqlite } from './open.js';
import { SqlitePageReader } from './page-reader.js';
import { bindable, sqliteEngine } from './sql-engine.js';
import { storeError } from './store-error.js';
import { LIVE_KEYS, toProject, toSource } from '../sql/rows.js';
import { AUTH_PLAN_COLUMNS, authPlan } from '../sql/auth-plan.js';

/** For tests: a short WAL without writing hundreds of megabytes. */
export interface WalTuning {
  longFrames?: number;
  checkpointEveryMs?: number;
  sizeLimitBytes?: number;
  catchUpTimeoutMs?: number;
  /** Starts the checkpoint thread; a test wraps the real one to watch or drop its messages. */
  checkpointThread?: (data: CheckpointWorkerData) => CheckpointThread;
}

/**
 * One writer, so every job waiting joins the next transaction, whatever its
 * project, each project+source batch in a pass of its own under a savepoint,
 * so a burst pays for one disk flush. A transaction takes about 1,000 items:
 * a bigger one holds the event loop (and every answer in it) longer than
 * sharing the flush saves (with bodies checked on a thread, 2,000 measured
 * 1.02 to 1.06 times the big-batch rate, not worth answers held twice as
 * long). It waits two turns of the event loop before it starts: a request
 * whose bytes arrived with another needs a turn or two (the body's end, then
 * its checks) before it is submitted, and a synchronous store lets nothing
 * queue while it commits.
 */
const BATCHING: Batching = { lane: () => '', maxItems: 1000, gatherTurns: 2 };

/** Keys remembered at most; the cache starts over past this. */
const KEY_CACHE_LIMIT = 10_000;

/**
 * The embedded engine: one SQLite file in the data directory, one
 * connection, one write transaction at a time.
 * Transactions, off-path writes and the checkpointer's catch-ups take turns
 * on one queue (`turn`): a transaction's function may wait on promises, and
 * no other write may reach the connection meanwhile.
 */
class SqliteEngine implements Engine {
  readonly sql: SqlEngine;
  readonly destinations: ReturnType<typeof sqliteDestinations>;
  readonly batching = BATCHING;
  private readonly authStmt;
  private readonly dataVersion;
  private readonly totalChanges;
  /**
   * Keys found, by hash (hex), while nothing they were read from may have
   * changed: no other connection committed (data_version) and no off-path
   * write of this one changed a row (keyWrites). A revocation, an expiry
   * change or a deletion then still counts from the very next lookup.
   */
  private readonly keys = new Map<string, AuthRecord>();
  private keysAt = { dataVersion: -1, keyWrites: -1 };
  /** Off-path writes on this connection that changed rows: data_version only counts other connections' commits. */
  private keyWrites = 0;
  private readonly checkpointer: Checkpointer;
  private catchingUp = false;
  /**
   * Set while a transaction's function runs up to its first wait, so that a
   * transaction() called from there is refused rather than queued behind
   * itself. Not an AsyncLocalStorage: one of those turns on Node's promise
   * hooks for the whole process, a cost on every promise of every request.
   */
  private inside = false;
  private turn: Promise<unknown> = Promise.resolve();
  private readonly touchKeys: (uses: Map<string, number>) => void;
  private readonly tx: SqliteIngestTx;
  private readonly pageReader: SqlitePageReader;
  /**
   * What SQLite does its own way: pages of events by its minute index
   * (event-pages.ts), for it keeps no index on events; the reads that scan
   * on the page-read thread, never between two commits here; delivery's
   * read past a cursor (destinations.ts), and its writes in their turn
   * without the mark that empties the cache of keys (they change none).
   */
  readonly tuned: Tuned;
  private readonly retention: SqliteRetention;
  private readonly erasure: SqliteErasure;

  constructor(
    private readonly db: Db,
    wal: WalTuning,
  ) {
    // Checkpoints run in a thread of their own (see checkpointer.ts), not inside our commits.
    db.pragma('wal_autocheckpoint = 0');
    this.checkpointer = new Checkpointer(db.name, wal.longFrames, wal.checkpointEveryMs, wal.catchUpTimeoutMs, wal.checkpointThread);
    // When the WAL starts over after a catch-up, it is also cut back on disk to
    // the length that asks for a catch-up (64 MiB with 4 KiB pages).
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    db.pragma(`journal_size_limit = ${wal.sizeLimitBytes ?? (wal.longFrames ?? LONG_WAL_FRAMES) * pageSize}`);
    this.sql = sqliteEngine(db);
    this.pageReader = new SqlitePageReader(db.name);
    const pages = new SqliteEventPages(db, this.sql);
    this.destinations = sqliteDestinations(db);
    this.tuned = {
      eventPage: (q) => pages.eventPage(q),
      eventPosition: (sourceId, eventId) => pages.eventPosition(sourceId, eventId),
      pageRows: async (query) => (await this.pageReader.rows(query.sql, bindable(query.parameters))) as never,
      countPersons: (projectId) => this.pageReader.countPersons(projectId),
      readPast: (...a) => this.destinations.readPast(...a),
      destinationWrite: (fn) => this.exclusive(fn),
      foldWrite: (fn) => this.exclusive(fn),
      foldHoldsWriter: true,
    };
    this.dataVersion = db.prepare('PRAGMA data_version').pluck();
    this.totalChanges = db.prepare('SELECT total_changes()').pluck();
    this.tx = new SqliteIngestTx(db, insertIdsOf(db), new EventMinuteIndex(db));
    this.retention = new SqliteRetention(db);
    this.erasure = new SqliteErasure(db, (fn) => this.transaction(fn));
    this.checkpointer.whenLong(() => {
      if (this.catchingUp) return;
      this.catchingUp = true;
      void this.exclusive(() => this.checkpointer.catchUp())
        .catch(() => undefined)
        .finally(() => (this.catchingUp = false));
    });
    const touchKey = db.prepare('UPDATE api_keys SET last_used_at = max(coalesce(last_used_at, 0), ?) WHERE id = ?');
    this.touchKeys = db.transaction((uses: Map<string, number>) => {
      for (const [id, at] of uses) touchKey.run(at, id);
    });
    this.authStmt = db.prepare(
      `SELECT k.id AS key_id, k.hash, k.expires_at, k.revoked_at,
              s.id AS s_id, s.project_id AS s_project_id, s.name AS s_name, s.filter_bots, s.record_ip, s.created_at AS s_created_at,
              ${AUTH_PLAN_COLUMNS},
              p.id, p.org_id, p.name, p.api_enabled, p.monthly_event_limit, p.retention_days, p.created_at
       FROM ${LIVE_KEYS} WHERE k.hash = ?`,
    );
  }

  /** From memory while nothing changed (`keys`); unknown keys are not remembered, so guessing cannot grow it. */
  async lookUpKeys(hashes: Buffer[]): Promise<Map<string, AuthRecord>> {
    // Synchronous from here on: what is read below is at least as fresh as this.
    const dataVersion = this.dataVersion.get() as number;
    if (dataVersion !== this.keysAt.dataVersion || this.keyWrites !== this.keysAt.keyWrites) {
      this.keys.clear();
      this.keysAt = { dataVersion, keyWrites: this.keyWrites };
    }
    const found = new Map<string, AuthRecord>();
    for (const hash of hashes) {
      const hex = hash.toString('hex');
      let key = this.keys.get(hex);
      if (key === undefined) {
        const r = this.authStmt.get(hash) as Record<string, never> | undefined;
        if (r === undefined) continue;
        key = authFromRow(r);
        if (this.keys.size >= KEY_CACHE_LIMIT) this.keys.clear();
        this.keys.set(hex, key);
      }
      found.set(hex, key);
    }
    return found;
  }

  /** One transaction of its own, in its turn with the others. */
  recordKeyUses(uses: Map<string, number>): Promise<void> {
    return this.exclusive(() => {
      try {
        this.touchKeys(uses);
      } catch (e) {
        throw storeError(e);
      }
    });
  }

  /**
   * Runs `fn` in a write transaction (BEGIN IMMEDIATE), after the writes
   * queued before it. `fn` must never wait on this store's transaction(),
   * off-path writes or close(): they wait for it in turn. A transaction()
   * called by `fn` before it first waits is refused; called later, it waits
   * forever, as those do.
   */
  async transaction<T>(fn: (tx: IngestTx) => Promise<T>, opts: { keep?: boolean } = {}): Promise<T> {
    if (this.inside) throw new Error('SqliteStore.transaction() cannot be nested');
    const keep = opts.keep ?? true;
    return this.exclusive(async () => {
      const tx = this.tx;
      try {
        tx.begin();
        let running: Promise<T>;
        this.inside = true;
        try {
          running = fn(tx);
        } finally {
          this.inside = false;
        }
        const out = await running;
        if (keep) tx.commit();
        else tx.rollback();
        if (keep) this.checkpointer.committed();
        return out;
      } catch (e) {
        if (this.db.inTransaction) tx.rollback();
        throw storeError(e);
      }
    });
  }

  /**
   * An off-path write, in its turn. One that changed rows counts once done
   * (keys and their owners may be among them), so that a lookup made while
   * it ran is read again after. One in a write transaction (an erasure's,
   * its bookkeeping) that changed rows may have removed persons and links,
   * which the cache of links then forgets all of, as it does another
   * connection's commit.
   */
  write<T>(fn: (db: Kysely<Database>) => Promise<T>, opts: { transaction?: boolean } = {}): Promise<T> {
    if (opts.transaction === true) {
      return this.transaction(async () => {
        const before = this.totalChanges.get() as number;
        const out = await fn(this.sql.db);
        if ((this.totalChanges.get() as number) !== before) this.tx.forgetLinks();
        return out;
      });
    }
    return this.exclusive(async () => {
      const before = this.totalChanges.get() as number;
      try {
        return await fn(this.sql.db);
      } finally {
        if ((this.totalChanges.get() as number) !== before) this.keyWrites++;
      }
    });
  }

  personPage(projectId: string, after: PersonCursor | null, limit: number, ids: number): Promise<PersonPageRow[]> {
    return personPage(this.sql.db, projectId, after, limit, ids);
  }

  /** Runs `fn` when no write runs, and lets none start before it ends. */
  private exclusive<T>(fn: () => Promise<T> | T): Promise<T> {
    const result = this.turn.then(fn);
    this.turn = result.catch(() => undefined);
    return result;
  }

  deleteErasedEvents(e: PendingErasure, steps: { touch: () => Promise<void>; stopping?: () => boolean }): Promise<{ eventsDeleted: number; done: boolean }> {
    return this.erasure.deleteEvents(e, steps);
  }

  /** A step of retention (retention.ts), in a write transaction of its own, in its turn with the others. */
  expireEvents(plan: ExpiryPlan, batch: number): Promise<ExpiryStep> {
    return this.transaction(async () => this.retention.step(plan, batch));
  }

  /** SQLite's online backup (backup.ts). */
  backup(toFile: string): Promise<number> {
    return backupTo(this.db, toFile);
  }

  /** Fills the insert_id table now (seconds for millions of rows), not in the first request's commit. */
  async prepareToServe(): Promise<void> {
    await this.exclusive(() => insertIdsOf(this.db).beforeWrite());
  }

  async ping(): Promise<void> {
    try {
      this.db.prepare('SELECT 1').get();
    } catch (e) {
      throw new StoreUnavailableError('The embedded store does not answer.', { cause: e });
    }
  }

  async close(): Promise<void> {
    // Delivery's read connection first: a read there is one statement, none is under way.
    this.destinations.close();
    await this.exclusive(() => undefined);
    await this.pageReader.close();
    await this.checkpointer.stop();
    // Leave a short WAL behind for the next process that opens the file.
    this.db.pragma('wal_checkpoint(TRUNCATE)');
    this.db.close();
  }
}

/** The embedded store: one SQLite file (SqliteEngine), with everything off the ingest path written once (SqlStore). */
export class SqliteStore extends SqlStore {
  constructor(db: Db, wal: WalTuning = {}) {
    const engine = new SqliteEngine(db, wal);
    super(engine, engine.tuned);
  }

  static open(dataDir: string, wal?: WalTuning): SqliteStore {
    return new SqliteStore(openSqlite(dataDir), wal);
  }
}

/** The authentication row (aliases key_id, s_id, …; the project's columns unaliased). */
function authFromRow(r: Record<string, never>): AuthRecord {
  return {
    keyId: r.key_id,
    hash: r.hash,
    expiresAt: r.expires_at,
    revokedAt: r.revoked_at,
    source: toSource({
      id: r.s_id, project_id: r.s_project_id, name: r.s_name, filter_bots: r.filter_bots, record_ip: r.record_ip, created_at: r.s_created_at,
    }),
    project: toProject(r as never),
    plan: authPlan(r as never),
  };
}
