import {
  type AuthRecord,
  type ErasedPerson,
  type ExpiryStep,
  type IngestJob,
  type IngestObserver,
  type IngestTx,
  type ItemOutcome,
  type PersonLookup,
  type PersonView,
  type Store,
  type StoredEvent,
  StoreUnavailableError,
} from '../port.js';
import { authFromRow, storedEventFromRow } from '../rows.js';
import { SqliteAdmin, toProject, toSource } from './admin.js';
import { Checkpointer, LONG_WAL_FRAMES } from './checkpointer.js';
import { EventMinuteIndex } from './event-minute-index.js';
import { backupTo } from './backup.js';
import { SqliteEventPages } from './event-pages.js';
import { SqliteErasure } from './erasure.js';
import { personLinkCacheOf } from './person-link-cache.js';
import { SqliteRetention } from './retention.js';
import { GroupCommitter } from './group-commit.js';
import { SqliteIngestTx } from './ingest-tx.js';
import { InsertIdIndex } from './insert-id-index.js';
import { type Db, openSqlite } from './open.js';

/** Event rows an erasure reads per transaction when it deletes a person's events. */
const ERASE_ROWS_PER_STEP = 20_000;

/** Keys remembered at most; the cache starts over past this. */
const AUTH_CACHE_LIMIT = 10_000;

/** How often key last-used times reach the disk when no batch commits them sooner. */
const KEY_USE_FLUSH_MS = 1000;

/** For tests: a short WAL without writing hundreds of megabytes. */
export interface WalTuning {
  longFrames?: number;
  checkpointEveryMs?: number;
  sizeLimitBytes?: number;
  catchUpTimeoutMs?: number;
}

/** The embedded store: one SQLite file in the data directory. */
export class SqliteStore implements Store {
  readonly admin: SqliteAdmin;
  private readonly committer: GroupCommitter;
  private readonly timer: NodeJS.Timeout;
  private readonly authStmt;
  private readonly dataVersion;
  /**
   * Working keys by hash. Valid while `PRAGMA data_version` stands still, that
   * is until another connection (the admin command, another process) commits,
   * and cleared by every admin change made here: revocation, expiry changes
   * and deletions still count from the very next request.
   */
  private authCache = new Map<string, AuthRecord>();
  private authVersion = -1;
  private readonly checkpointer: Checkpointer;
  private catchingUp = false;
  private inTransactionFn = false;
  private readonly eventRows;
  private readonly insertIds: InsertIdIndex;
  private readonly minutes: EventMinuteIndex;
  private readonly adminTx: SqliteIngestTx;
  readonly eventPages: SqliteEventPages;
  private readonly retention: SqliteRetention;
  private readonly erasure: SqliteErasure;
  private readonly ping_;

  constructor(
    private readonly db: Db,
    wal: WalTuning = {},
    observer?: IngestObserver,
  ) {
    // Checkpoints run in a thread of their own (see checkpointer.ts), not inside our commits.
    db.pragma('wal_autocheckpoint = 0');
    this.checkpointer = new Checkpointer(db.name, wal.longFrames, wal.checkpointEveryMs, wal.catchUpTimeoutMs);
    // When the WAL starts over after a catch-up, it is also cut back on disk to
    // the length that asks for a catch-up (64 MiB with 4 KiB pages).
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    db.pragma(`journal_size_limit = ${wal.sizeLimitBytes ?? (wal.longFrames ?? LONG_WAL_FRAMES) * pageSize}`);
    this.admin = new SqliteAdmin(db, () => this.authCache.clear());
    this.dataVersion = db.prepare('PRAGMA data_version').pluck();
    this.ping_ = db.prepare('SELECT 1');
    this.insertIds = new InsertIdIndex(db);
    this.minutes = new EventMinuteIndex(db);
    // Two transactions over the same indexes, prepared once: the group
    // commit's, and the admin writes' (transaction() runs between commits).
    this.committer = new GroupCommitter(db, new SqliteIngestTx(db, this.insertIds, this.minutes), () => this.checkpointer.committed(), observer);
    this.adminTx = new SqliteIngestTx(db, this.insertIds, this.minutes);
    this.eventPages = new SqliteEventPages(db);
    this.retention = new SqliteRetention(db);
    this.erasure = new SqliteErasure(db);
    this.checkpointer.whenLong(() => {
      if (this.catchingUp) return;
      this.catchingUp = true;
      void this.committer
        .between(() => this.checkpointer.catchUp())
        .catch(() => undefined)
        .finally(() => (this.catchingUp = false));
    });
    this.timer = setInterval(() => void this.committer.drain(), KEY_USE_FLUSH_MS).unref();
    this.eventRows = db.prepare(
      `SELECT e.*, coalesce(p.merged_into, e.person_id) AS current_person
       FROM events e LEFT JOIN persons p ON p.project_id = e.project_id AND p.id = e.person_id
       WHERE e.seq IN (SELECT value FROM json_each(?)) ORDER BY e.timestamp DESC, e.seq DESC`,
    );
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

  static open(dataDir: string, wal?: WalTuning, observer?: IngestObserver): SqliteStore {
    return new SqliteStore(openSqlite(dataDir), wal, observer);
  }

  async authenticate(hash: Buffer): Promise<AuthRecord | null> {
    const version = this.dataVersion.get() as number;
    if (version !== this.authVersion) {
      this.authCache.clear();
      this.authVersion = version;
    }
    const cacheKey = hash.toString('base64');
    const hit = this.authCache.get(cacheKey);
    if (hit !== undefined) return hit;
    const found = this.lookUpKey(hash);
    // Unknown keys are not remembered: guessing must not grow the cache.
    if (found !== null) {
      if (this.authCache.size >= AUTH_CACHE_LIMIT) this.authCache.clear();
      this.authCache.set(cacheKey, found);
    }
    return found;
  }

  private lookUpKey(hash: Buffer): AuthRecord | null {
    const r = this.authStmt.get(hash) as Record<string, never> | undefined;
    if (r === undefined) return null;
    return authFromRow(r, toSource, toProject);
  }

  recordKeyUse(keyId: string, at: number): void {
    this.committer.noteKeyUse(keyId, at);
  }

  ingest(job: IngestJob): Promise<ItemOutcome[]> {
    return this.committer.submit(job);
  }

  /**
   * Runs `fn` in a write transaction of its own, after the group commit's
   * next commit. No group commit starts while `fn` runs, even when it waits
   * on something else: its BEGIN would fail, and the jobs with it. So `fn`
   * must never wait on this store's ingest(), transaction() or close(): they
   * would wait for it in turn. A nested transaction() is refused.
   */
  async transaction<T>(fn: (tx: IngestTx) => Promise<T>): Promise<T> {
    if (this.inTransactionFn) throw new Error('SqliteStore.transaction() cannot be nested');
    await this.committer.drain();
    return this.committer.between(async () => {
      const tx = this.adminTx;
      this.inTransactionFn = true;
      try {
        tx.begin();
        const out = await fn(tx);
        tx.commit();
        return out;
      } catch (e) {
        if (this.db.inTransaction) this.db.exec('ROLLBACK');
        throw e;
      } finally {
        this.inTransactionFn = false;
      }
    });
  }

  /** Newest first by timestamp (event-minute-index.ts finds them). */
  async listEvents(sourceId: string, limit: number): Promise<StoredEvent[]> {
    const seqs = this.minutes.newest(sourceId, limit);
    const rows = this.eventRows.all(JSON.stringify(seqs)) as Record<string, never>[];
    return rows.map((r) => storedEventFromRow(r, JSON.parse(r.properties) as Record<string, unknown>));
  }

  /** A step of retention (retention.ts), in a write transaction of its own between two group commits. */
  expireEvents(now: number, batch: number): Promise<ExpiryStep> {
    return this.transaction(async () => this.retention.step(now, batch));
  }

  /**
   * Erases a person (erasure.ts): forgotten in one transaction, then its
   * events deleted a range of rows per transaction, so writers wait for one
   * short range at most.
   */
  async erasePerson(projectId: string, lookup: PersonLookup, opts: { suppress: boolean; now: number }): Promise<ErasedPerson | null> {
    const links = personLinkCacheOf(this.db);
    const f = await this.transaction(async () => {
      const forgotten = this.erasure.forget(projectId, lookup, opts.suppress, opts.now);
      // This connection's cache of links must not serve them again (dropped when the transaction commits).
      for (const d of forgotten?.distinctIds ?? []) links.link(projectId, d);
      for (const p of forgotten?.personIds ?? []) links.merge(projectId, p);
      return forgotten;
    });
    if (f === null) return null;
    let eventsDeleted = 0;
    for (let after = 0; after < f.throughSeq; after += ERASE_ROWS_PER_STEP) {
      const upTo = Math.min(f.throughSeq, after + ERASE_ROWS_PER_STEP);
      eventsDeleted += await this.transaction(async () => this.erasure.deleteEvents(projectId, f.personIds, after, upTo));
    }
    return { personId: f.personId, distinctIds: f.distinctIds, eventsDeleted, suppressed: opts.suppress };
  }

  async unsuppress(projectId: string, distinctId: string): Promise<boolean> {
    return this.transaction(async () => this.erasure.unsuppress(projectId, distinctId));
  }

  /** SQLite's online backup (backup.ts). */
  backup(toFile: string): Promise<number> {
    return backupTo(this.db, toFile);
  }

  async findPerson(projectId: string, lookup: PersonLookup): Promise<PersonView | null> {
    const start =
      'distinctId' in lookup
        ? (this.db.prepare('SELECT person_id AS id FROM person_links WHERE project_id = ? AND distinct_id = ?').get(projectId, lookup.distinctId) as
            | { id: string }
            | undefined)
        : { id: lookup.personId };
    if (start === undefined) return null;
    const p = this.db
      .prepare(
        `SELECT coalesce(m.id, p.id) AS id, coalesce(m.created_at, p.created_at) AS created_at
         FROM persons p LEFT JOIN persons m ON m.project_id = p.project_id AND m.id = p.merged_into
         WHERE p.project_id = ? AND p.id = ?`,
      )
      .get(projectId, start.id) as { id: string; created_at: number } | undefined;
    if (p === undefined) return null;
    const ids = this.db
      .prepare('SELECT distinct_id FROM person_links WHERE project_id = ? AND person_id = ? ORDER BY distinct_id')
      .all(projectId, p.id) as { distinct_id: string }[];
    const traits = this.db
      .prepare('SELECT key, value FROM person_traits WHERE project_id = ? AND person_id = ? ORDER BY key')
      .all(projectId, p.id) as { key: string; value: string }[];
    return {
      id: p.id,
      distinctIds: ids.map((r) => r.distinct_id),
      traits: Object.fromEntries(traits.map((t) => [t.key, JSON.parse(t.value)])),
      createdAt: p.created_at,
    };
  }

  async usage(projectId: string, month: string): Promise<number> {
    const r = this.db.prepare('SELECT events FROM usage WHERE project_id = ? AND month = ?').get(projectId, month) as { events: number } | undefined;
    return r?.events ?? 0;
  }

  async ping(): Promise<void> {
    try {
      this.ping_.get();
    } catch (e) {
      throw new StoreUnavailableError('The embedded store did not answer.', { cause: e });
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.committer.drain();
    await this.checkpointer.stop();
    // Leave a short WAL behind for the next process that opens the file.
    this.db.pragma('wal_checkpoint(TRUNCATE)');
    this.db.close();
  }
}
