import { type AuthRecord, type ExpiryPlan, type ExpiryStep, type IngestTx, type PendingErasure, StoreUnavailableError } from '../port.js';
import type { EngineData, SqlStoreEngine } from '../sql/engine.js';
import { SqlStore } from '../sql/sql-store.js';
import { backupTo } from './backup.js';
import { SqliteErasure } from './erasure.js';
import { SqliteEventPages } from './event-pages.js';
import { SqliteRetention } from './retention.js';
import { type CheckpointThread, Checkpointer, LONG_WAL_FRAMES } from './checkpointer.js';
import type { CheckpointWorkerData } from './checkpoint-worker.js';
import { EventMinuteIndex } from './event-minute-index.js';
import { SqliteIngestTx } from './ingest-tx.js';
import { insertIdsOf } from './insert-ids.js';
import { SqliteListingReads } from './listings.js';
import { type Db, openSqlite } from './open.js';
import { SqlitePageReader } from './page-reader.js';
import { sqliteEngine } from './sql-engine.js';
import { storeError } from './store-error.js';
import { toProject, toSource } from '../sql/rows.js';

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
 * The embedded engine: one SQLite file in the data directory, one
 * connection, one write transaction at a time (`writers: 'one'`).
 * Transactions, off-path writes and the checkpointer's catch-ups take turns
 * on one queue (`turn`): a transaction's function may wait on promises, and
 * no other write may reach the connection meanwhile.
 */
class SqliteEngine implements SqlStoreEngine {
  readonly data: EngineData;
  readonly writers = 'one';
  readonly keyLookupLimitMs = Infinity;
  private readonly authStmt;
  private readonly dataVersion;
  /** Writes made on this connection that may change keys: data_version only counts other connections' commits. */
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
    const sql = sqliteEngine(db);
    // Reads that scan events run on a thread of their own, never between two commits here.
    this.pageReader = new SqlitePageReader(db.name);
    this.data = {
      sql,
      writeTransaction: (fn) => this.transaction(() => fn(sql.db)),
      eventPages: new SqliteEventPages(db, sql),
      listingReads: new SqliteListingReads(sql.db, this.pageReader),
    };
    this.dataVersion = db.prepare('PRAGMA data_version').pluck();
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
              p.id, p.org_id, p.name, p.api_enabled, p.monthly_event_limit, p.retention_days, p.created_at
       FROM api_keys k
       JOIN sources s ON s.id = k.source_id AND s.deleted_at IS NULL
       JOIN projects p ON p.id = s.project_id AND p.deleted_at IS NULL
       JOIN orgs o ON o.id = p.org_id AND o.deleted_at IS NULL
       WHERE k.hash = ?`,
    );
  }

  async lookUpKeys(hashes: Buffer[]): Promise<Map<string, AuthRecord>> {
    const found = new Map<string, AuthRecord>();
    for (const hash of hashes) {
      const r = this.authStmt.get(hash) as Record<string, never> | undefined;
      if (r !== undefined) found.set(hash.toString('hex'), authFromRow(r));
    }
    return found;
  }

  /** data_version moves when another connection commits; keyWrites when this one changes keys or owners. */
  keysChangeMark(): string {
    return `${this.dataVersion.get() as number}:${this.keyWrites}`;
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

  /** In its turn; a write that may change keys counts once done, so a lookup that read the mark before it ends reads again after. */
  writeTurn<T>(fn: () => Promise<T>, opts: { changesKeys?: boolean } = {}): Promise<T> {
    if (opts.changesKeys !== true) return this.exclusive(fn);
    return this.exclusive(async () => {
      const out = await fn();
      this.keyWrites++;
      return out;
    });
  }

  /** Runs `fn` when no write runs, and lets none start before it ends. */
  private exclusive<T>(fn: () => Promise<T> | T): Promise<T> {
    const result = this.turn.then(fn);
    this.turn = result.catch(() => undefined);
    return result;
  }

  forgetCached(projectId: string, distinctIds: string[], personIds: string[]): void {
    this.erasure.forgetCached(projectId, distinctIds, personIds);
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
    super(new SqliteEngine(db, wal));
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
  };
}
