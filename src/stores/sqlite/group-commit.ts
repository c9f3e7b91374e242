import { ingestInTx } from '../../domain/ingest.js';
import { type IngestJob, type ItemOutcome, StoreUnavailableError } from '../port.js';
import { SqliteIngestTx } from './ingest-tx.js';
import type { Db } from './open.js';

/** Items one commit takes before the rest wait for the next one. */
const MAX_ITEMS_PER_COMMIT = 2000;

interface Pending {
  job: IngestJob;
  resolve: (o: ItemOutcome[]) => void;
  reject: (e: unknown) => void;
}

/**
 * Group commit: every job that arrives while the event loop is busy joins the
 * next transaction, so a burst of small requests pays for one disk flush, not
 * one each. Each job runs under its own savepoint: a job that fails is rolled
 * back alone, and a dry run is rolled back always. No job is answered before
 * COMMIT (with synchronous=FULL) has returned.
 */
export class GroupCommitter {
  private queue: Pending[] = [];
  private scheduled = false;
  private running: Promise<void> = Promise.resolve();
  private readonly tx: SqliteIngestTx;
  private readonly touchKey;
  private touches = new Map<string, number>();

  constructor(private readonly db: Db) {
    this.tx = new SqliteIngestTx(db);
    this.touchKey = db.prepare('UPDATE api_keys SET last_used_at = max(coalesce(last_used_at, 0), ?) WHERE id = ?');
  }

  submit(job: IngestJob): Promise<ItemOutcome[]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ job, resolve, reject });
      this.schedule();
    });
  }

  /** Remembers a key's last use; written with the next commit. */
  noteKeyUse(keyId: string, at: number): void {
    this.touches.set(keyId, Math.max(at, this.touches.get(keyId) ?? 0));
  }

  /** Commits what is pending (key uses included) and waits for it. */
  async drain(): Promise<void> {
    this.scheduled = true;
    await this.runFlush();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // setImmediate, not a microtask: requests already read from sockets in
    // this turn of the event loop get to join the same commit.
    setImmediate(() => void this.runFlush());
  }

  private runFlush(): Promise<void> {
    // A failed flush must never break the chain, or every later write would stall.
    this.running = this.running.then(() => this.flush()).catch(() => undefined);
    return this.running;
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    const batch = this.takeBatch();
    if (batch.length === 0 && this.touches.size === 0) return;
    const touches = this.touches;
    this.touches = new Map();
    const done: [Pending, ItemOutcome[]][] = [];
    try {
      this.db.exec('BEGIN IMMEDIATE');
      for (const p of batch) {
        const out = await this.runJob(p);
        if (out !== null) done.push([p, out]);
      }
      for (const [id, at] of touches) this.touchKey.run(at, id);
      this.db.exec('COMMIT');
    } catch (e) {
      // BEGIN, a savepoint or COMMIT itself failed: nothing of this group is kept.
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      for (const [p] of done) p.reject(unavailable(e));
      for (const p of batch) if (!done.some(([q]) => q === p)) p.reject(unavailable(e));
      return;
    } finally {
      if (this.queue.length > 0) this.schedule();
    }
    for (const [p, out] of done) p.resolve(out);
  }

  /**
   * The jobs of the next commit: all that wait, up to about MAX_ITEMS_PER_COMMIT
   * items. A bigger commit would hold the event loop (and every answer in it)
   * for longer than sharing the flush saves; the rest goes in the next turn.
   */
  private takeBatch(): Pending[] {
    let items = 0;
    let n = 0;
    while (n < this.queue.length && (n === 0 || items + this.queue[n]!.job.items.length <= MAX_ITEMS_PER_COMMIT)) {
      items += this.queue[n]!.job.items.length;
      n++;
    }
    return this.queue.splice(0, n);
  }

  /** One job under its own savepoint; a job that fails is rolled back and rejected alone. */
  private async runJob(p: Pending): Promise<ItemOutcome[] | null> {
    this.db.exec('SAVEPOINT job');
    try {
      const out = await ingestInTx(this.tx, p.job);
      if (p.job.dryRun) this.db.exec('ROLLBACK TO job');
      this.db.exec('RELEASE job');
      return out;
    } catch (e) {
      // If SQLite already rolled the whole transaction back, these throw and fail the group.
      this.db.exec('ROLLBACK TO job');
      this.db.exec('RELEASE job');
      p.reject(unavailable(e));
      return null;
    }
  }
}

function unavailable(cause: unknown): StoreUnavailableError {
  return new StoreUnavailableError('The embedded store could not commit the write.', { cause });
}
