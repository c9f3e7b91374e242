import { ingestJobsInTx } from '../../domain/ingest.js';
import { type IngestJob, type IngestObserver, type ItemOutcome, StoreUnavailableError } from '../port.js';
import type { SqliteIngestTx } from './ingest-tx.js';
import type { Db } from './open.js';

/** Items one commit takes before the rest wait for the next one. */
const MAX_ITEMS_PER_COMMIT = 1000;

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
  private readonly touchKey;
  private touches = new Map<string, number>();
  /** Set by drain(): its flush writes the key uses too. */
  private touchesDue = false;

  constructor(
    private readonly db: Db,
    /** The transaction every commit runs on; no one else may use it meanwhile. */
    private readonly tx: SqliteIngestTx,
    /** Told after every COMMIT that returned (the checkpointer times its passes by it). */
    private readonly onCommit: () => void = () => undefined,
    /** Told of every commit of jobs, for metrics. */
    private readonly observer?: IngestObserver,
  ) {
    this.touchKey = db.prepare('UPDATE api_keys SET last_used_at = max(coalesce(last_used_at, 0), ?) WHERE id = ?');
  }

  submit(job: IngestJob): Promise<ItemOutcome[]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ job, resolve, reject });
      this.schedule();
    });
  }

  /**
   * Remembers a key's last use. Written by the next drain() (the store drains
   * once a second), not by every commit: the api_keys page was one of the
   * eight pages a commit of 25 one-item requests wrote.
   */
  noteKeyUse(keyId: string, at: number): void {
    this.touches.set(keyId, Math.max(at, this.touches.get(keyId) ?? 0));
  }

  /** Commits what is pending (key uses included) and waits for it. */
  async drain(): Promise<void> {
    this.scheduled = true;
    this.touchesDue = true;
    await this.runFlush();
  }

  /**
   * Runs `fn` between two commits: none is in progress while it runs, and
   * none starts before it ends. Jobs keep queueing meanwhile. Resolves or
   * rejects as `fn` does; the commits after it run either way.
   */
  between<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.running.then(fn);
    this.running = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // Two turns of the event loop, not a microtask: a request whose bytes
    // arrived with this one needs a turn or two (the body's end, then its
    // checks) before it is submitted. With 32 connections of one-item
    // requests, one turn gave 17.5 jobs per commit and two gave 25, a third
    // fewer commits and 5 to 15% more requests per second (bench/README.md);
    // a third turn gained nothing more.
    setImmediate(() => setImmediate(() => void this.runFlush()));
  }

  private runFlush(): Promise<void> {
    // A failed flush must never break the chain, or every later write would stall.
    this.running = this.running.then(() => this.flush()).catch(() => undefined);
    return this.running;
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    const batch = this.takeBatch();
    const writeTouches = this.touchesDue && this.touches.size > 0;
    this.touchesDue = false;
    if (batch.length === 0 && !writeTouches) return;
    const touches = writeTouches ? this.touches : new Map<string, number>();
    if (writeTouches) this.touches = new Map();
    const done: [Pending, ItemOutcome[]][] = [];
    // A transaction open before this flush is someone else's: never roll it back.
    const ours = !this.db.inTransaction;
    const started = performance.now();
    try {
      this.tx.begin();
      for (const group of groupJobs(batch)) {
        const outs = await this.runGroup(group);
        group.forEach((p, i) => {
          if (outs[i] !== null) done.push([p, outs[i]!]);
        });
      }
      for (const [id, at] of touches) this.touchKey.run(at, id);
      this.tx.commit();
    } catch (e) {
      // BEGIN, a savepoint or COMMIT itself failed: nothing of this group is kept.
      if (ours && this.db.inTransaction) this.db.exec('ROLLBACK');
      if (batch.length > 0) this.observer?.failed();
      for (const [p] of done) p.reject(unavailable(e));
      for (const p of batch) if (!done.some(([q]) => q === p)) p.reject(unavailable(e));
      return;
    } finally {
      if (this.queue.length > 0) this.schedule();
    }
    this.onCommit();
    if (batch.length > 0) this.observer?.committed((performance.now() - started) / 1000, batch.length, itemCount(batch));
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

  /**
   * Jobs of one project and source, written in one pass under one savepoint.
   * If the pass fails, each job is tried again alone, so one failing job
   * takes no other down; a job that fails alone is answered 503.
   */
  private async runGroup(group: Pending[]): Promise<(ItemOutcome[] | null)[]> {
    this.db.exec('SAVEPOINT job');
    try {
      const outs = await ingestJobsInTx(this.tx, group.map((p) => p.job));
      if (group[0]!.job.dryRun) this.db.exec('ROLLBACK TO job');
      this.db.exec('RELEASE job');
      return outs;
    } catch (e) {
      // If SQLite already rolled the whole transaction back, these throw and fail the commit.
      this.db.exec('ROLLBACK TO job');
      this.db.exec('RELEASE job');
      if (group.length === 1) {
        group[0]!.reject(unavailable(e));
        return [null];
      }
      const outs: (ItemOutcome[] | null)[] = [];
      for (const p of group) outs.push((await this.runGroup([p]))[0]!);
      return outs;
    }
  }
}

/**
 * Splits a commit's jobs into groups written in one pass each: the jobs of one
 * project and source, in arrival order. A dry run is a group of its own, since
 * it is rolled back.
 */
function groupJobs(batch: Pending[]): Pending[][] {
  const groups = new Map<string, Pending[]>();
  const out: Pending[][] = [];
  for (const p of batch) {
    if (p.job.dryRun) {
      out.push([p]);
      continue;
    }
    const key = `${p.job.projectId}\u0000${p.job.sourceId}`;
    let g = groups.get(key);
    if (g === undefined) {
      groups.set(key, (g = []));
      out.push(g);
    }
    g.push(p);
  }
  return out;
}

function itemCount(batch: Pending[]): number {
  return batch.reduce((n, p) => n + p.job.items.length, 0);
}

function unavailable(cause: unknown): StoreUnavailableError {
  return new StoreUnavailableError('The embedded store could not commit the write.', { cause });
}
