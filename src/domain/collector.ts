import { PlanBook } from './plans/plan-book.js';
import type { AdminStore, AuthRecord, IngestTx, Store } from '../stores/port.js';
import type { AccountStore, ListingStore } from '../stores/port-console.js';
import { IngestEngine, type IngestObserver } from './ingest/engine.js';
import type { IngestJob, ItemOutcome } from './ingest/job.js';
import { KeyBook } from './key-book.js';
import { KeyUses } from './key-uses.js';
import { type LedgerOptions, OutcomeLedger } from './outcomes/ledger.js';

/** Settings of a collector; the defaults suit a server. */
export interface CollectorOptions {
  /** Epoch ms; tests pass their own. Keys are checked at write time by it. */
  clock?: () => number;
  /** Told of failures nobody waits for (a key-use write). */
  onBackgroundError?: (e: unknown) => void;
  /** Told of every commit of the ingest engine, for metrics. */
  observer?: IngestObserver;
  /** Monotonic ms that commit durations are measured in; tests pass their own. */
  timer?: () => number;
  /** How outcomes are written and samples bounded; tests pass their own. */
  outcomes?: LedgerOptions;
}

/**
 * Inlet's write path over one store: the ingest engine, key lookups with
 * their cache, and key-use batching, each once for every engine. The edge and
 * the commands talk to this, never to an adapter's own logic; `store` is the
 * port underneath, for admin and read queries.
 */
export class Collector {
  readonly engine: IngestEngine;
  /** What became of every item: the one place every intake tells (OutcomeLedger.record). */
  readonly outcomes: OutcomeLedger;
  /** The rules of the plan versions requests check against, kept by version (domain/plans). */
  readonly plans: PlanBook;
  private readonly keys: KeyBook;
  private readonly keyUses: KeyUses;

  constructor(
    readonly store: Store,
    opts: CollectorOptions = {},
  ) {
    this.engine = new IngestEngine(store, opts.clock, opts.observer, opts.timer);
    this.keys = new KeyBook(store);
    this.plans = new PlanBook(store.plans);
    this.keyUses = new KeyUses(store, opts.onBackgroundError);
    this.outcomes = new OutcomeLedger(store.outcomes, { onError: opts.onBackgroundError, ...opts.outcomes });
  }

  get admin(): AdminStore {
    return this.store.admin;
  }

  /** Console accounts and sessions, as the store keeps them. */
  get accounts(): AccountStore {
    return this.store.accounts;
  }

  /** Lists and summaries for the console and the list commands. */
  get listings(): ListingStore {
    return this.store.listings;
  }

  /** The key with this hash, with its source and project, unless any of them (or the org) is deleted. */
  authenticate(hash: Buffer): Promise<AuthRecord | null> {
    return this.keys.find(hash);
  }

  /** Notes that a key was used; written lazily, about once a second. */
  recordKeyUse(keyId: string, at: number): void {
    this.keyUses.note(keyId, at);
  }

  /**
   * Writes one request's items durably, or runs them dry. Rejects with
   * KeyNoLongerWorksError when the key stopped working before the write, and
   * with StoreUnavailableError when the store failed; nothing is kept then.
   */
  ingest(job: IngestJob): Promise<ItemOutcome[]> {
    return this.engine.submit(job);
  }

  /** Runs `fn` in one durable transaction. */
  transaction<T>(fn: (tx: IngestTx) => Promise<T>): Promise<T> {
    return this.store.transaction(fn);
  }

  /** Resolves once the store answers a trivial query; rejects with StoreUnavailableError otherwise. */
  ping(): Promise<void> {
    return this.store.ping();
  }

  /** Writes what waits (jobs, then outcomes and key uses), and waits for it. */
  async flush(): Promise<void> {
    await this.engine.drain();
    await this.outcomes.flush();
    await this.keyUses.flush();
  }

  /** Writes what waits (jobs, outcomes, key uses), then closes the store: on SIGTERM, once requests in flight are answered. */
  async close(): Promise<void> {
    await this.engine.drain();
    await this.outcomes.stop();
    await this.keyUses.stop();
    await this.store.close();
  }
}
