import { AsyncResource } from 'node:async_hooks';
import { type Batching, type IngestTx, StoreUnavailableError, type WriteStore } from '../../stores/port.js';
import { type Pending, batchJobs, takeCommit } from './commit-batch.js';
import type { IngestJob, ItemOutcome } from './job.js';
import { type JobResult, ingestPass } from './pass.js';

/** Jobs that share transactions, as the store's batching puts them in lanes. */
interface Lane {
  queue: Pending[];
  scheduled: boolean;
  running: Promise<void> | null;
}

/** Told of every commit of the engine, for metrics; it must not throw or wait. */
export interface IngestObserver {
  /** A commit that returned: how long it took, and the jobs (requests) and items it wrote. */
  committed(seconds: number, jobs: number, items: number): void;
  /** A commit that failed: its jobs were split and tried again, or answered with the failure. */
  failed(): void;
}

/** What the engine has done, for tests and metrics. */
export interface EngineStats {
  /** Ingest passes run, failed ones and dry runs included. */
  passes: number;
  /** Transactions committed. */
  commits: number;
}

/**
 * The ingest engine: the one write path of every store. It batches concurrent
 * jobs into transactions (one commit for many jobs) as the store's policy
 * says (Batching, port.ts: SQLite gathers every job into one lane, PostgreSQL
 * one lane per project+source), runs the ingest pass on each batch,
 * runs dry runs as transactions that are rolled back, and keeps a failing job
 * from slowing the others (see settleFailed).
 */
export class IngestEngine {
  private readonly lanes = new Map<string, Lane>();
  private readonly policy: Batching;
  readonly stats: EngineStats = { passes: 0, commits: 0 };
  /**
   * Runs lane work in the engine's own async context, not in that of the
   * request that happened to wake the lane: the commit is every job's.
   */
  private readonly detached = AsyncResource.bind((fn: () => void): void => fn());

  constructor(
    private readonly store: WriteStore,
    /** Epoch ms: whether a key still works is decided at write time by it. */
    private readonly clock: () => number = Date.now,
    private readonly observer?: IngestObserver,
    /** Monotonic ms that commit durations are measured in; tests pass their own. */
    private readonly timer: () => number = () => performance.now(),
  ) {
    this.policy = store.batching;
  }

  /** Writes one request's items durably (or runs them dry); resolves once they are durable. */
  submit(job: IngestJob): Promise<ItemOutcome[]> {
    return new Promise((resolve, reject) => {
      const key = this.policy.lane(job.projectId, job.sourceId);
      let lane = this.lanes.get(key);
      if (lane === undefined) this.lanes.set(key, (lane = { queue: [], scheduled: false, running: null }));
      lane.queue.push({ job, resolve, reject });
      this.kick(key, lane);
    });
  }

  /** Writes everything waiting, and waits for it. */
  async drain(): Promise<void> {
    for (;;) {
      const busy = [...this.lanes].map(([key, lane]) => lane.running ?? this.start(key, lane));
      if (busy.length === 0) return;
      await Promise.all(busy);
    }
  }

  private kick(key: string, lane: Lane): void {
    if (lane.running !== null || lane.scheduled) return;
    if (this.policy.gatherTurns === 0) {
      this.detached(() => void this.start(key, lane));
      return;
    }
    lane.scheduled = true;
    // drain() may have started the lane meanwhile: start() clears `scheduled`.
    this.detached(() => setImmediate(() => setImmediate(() => lane.scheduled && void this.start(key, lane))));
  }

  /** Runs the lane's next commit; then the one after, or leaves the lane when it is empty. */
  private start(key: string, lane: Lane): Promise<void> {
    lane.scheduled = false;
    const jobs = takeCommit(lane.queue, this.policy.maxItems);
    lane.running = this.commit(jobs)
      // commit() settles every job itself; nothing may break the lane.
      .catch(() => undefined)
      .finally(() => {
        lane.running = null;
        if (lane.queue.length > 0) this.kick(key, lane);
        else if (this.lanes.get(key) === lane) this.lanes.delete(key);
      });
    return lane.running;
  }

  /** One commit: dry runs each in a transaction rolled back, then the batches together. */
  private async commit(jobs: Pending[]): Promise<void> {
    for (const p of jobs) if (p.job.dryRun) await this.tryBatch([p], false);
    const batches = batchJobs(jobs.filter((p) => !p.job.dryRun));
    if (batches.length === 1) await this.tryBatch(batches[0]!, true);
    else if (batches.length > 1) await this.commitBatches(batches);
  }

  /** Several batches in one transaction, each under a savepoint: a batch that fails leaves the others. */
  private async commitBatches(batches: Pending[][]): Promise<void> {
    const done: [Pending[], JobResult[]][] = [];
    const failed: [Pending[], unknown][] = [];
    const started = this.timer();
    try {
      await this.store.transaction(async (tx) => {
        for (const batch of batches) {
          try {
            done.push([batch, await tx.savepoint(() => this.pass(tx, batch))]);
          } catch (e) {
            if (!splittable(e)) throw e;
            failed.push([batch, e]);
          }
        }
      });
    } catch (e) {
      this.observer?.failed();
      for (const b of batches) rejectAll(b, e);
      return;
    }
    this.committed(started, done.flatMap(([b]) => b));
    for (const [batch, results] of done) settle(batch, results);
    for (const [batch, e] of failed) await this.settleFailed(batch, e);
  }

  /** One batch in a transaction of its own; kept unless it is a dry run. */
  private async tryBatch(batch: Pending[], keep: boolean): Promise<void> {
    let results: JobResult[];
    const started = this.timer();
    try {
      results = await this.store.transaction((tx) => this.pass(tx, batch), { keep });
    } catch (e) {
      if (keep) this.observer?.failed();
      await this.settleFailed(batch, e);
      return;
    }
    if (keep) this.committed(started, batch);
    settle(batch, results);
  }

  /**
   * A batch failed as a whole with `e`. Its halves are tried apart,
   * and so on down: a job that fails alone is answered alone, one bad job
   * among n costs about 2·log2(n) passes more, and the other jobs are written
   * in a few transactions rather than one each. Halves run one after the
   * other, in arrival order, so they come out as if sent one by one.
   */
  private async settleFailed(batch: Pending[], e: unknown): Promise<void> {
    if (batch.length === 1 || !splittable(e)) {
      rejectAll(batch, e);
      return;
    }
    const mid = Math.ceil(batch.length / 2);
    await this.tryBatch(batch.slice(0, mid), true);
    await this.tryBatch(batch.slice(mid), true);
  }

  private committed(started: number, jobs: Pending[]): void {
    this.stats.commits++;
    const items = jobs.reduce((n, p) => n + p.job.items.length, 0);
    this.observer?.committed((this.timer() - started) / 1000, jobs.length, items);
  }

  private pass(tx: IngestTx, batch: Pending[]): Promise<JobResult[]> {
    this.stats.passes++;
    return ingestPass(
      tx,
      batch.map((p) => p.job),
      this.clock(),
    );
  }
}

/**
 * Whether a failure may come from some job of the batch, so that halves of
 * it may pass: the store refused what was written, or the code failed on some
 * input (a bug). Not when the store is away: every half would fail too, each
 * after its own time limit.
 */
function splittable(e: unknown): boolean {
  return !(e instanceof StoreUnavailableError) || e.refused;
}

function settle(batch: Pending[], results: JobResult[]): void {
  batch.forEach((p, i) => {
    const r = results[i]!;
    if (Array.isArray(r)) p.resolve(r);
    else p.reject(r);
  });
}

function rejectAll(batch: Pending[], e: unknown): void {
  for (const p of batch) p.reject(e);
}
