import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { DROP_REASONS, ITEM_ERRORS } from '../errors/codes.js';
import type { IngestObserver } from '../domain/ingest/engine.js';
import type { DeliveryObserver } from '../domain/delivery/deliverer.js';

/** Sources of the body-bytes gauge; read at each scrape (edge/admission.ts has them). */
export interface BodyBytes {
  readonly admittedBytes: number;
  readonly waitingBodyBytes: number;
  /** Bytes of bodies still being read from their clients, where the server counts them. */
  readonly readingBodyBytes?: number;
}

/** Where the edge's counts go as they move: the metrics. */
export interface EdgeCountSink {
  /** A request whose client went away before it was answered. */
  clientGone(): void;
  /** An answer sent before routing (Node's parser, its timeouts, CONNECT), by method and status. */
  answeredBeforeRouting(method: string, status: number): void;
}

/**
 * Every metric Inlet exports, in one registry of its own (docs/metrics.md
 * lists them; a test keeps the two in step). Labels only ever take values
 * from fixed sets (routes, statuses, codes, reasons, policies): never a key,
 * an id or an event name, so the series stay few whatever clients send.
 * The one exception is a destination's id: destinations are made by an
 * operator, a few per project, and each is watched on its own.
 */
export class Metrics implements IngestObserver, EdgeCountSink, DeliveryObserver {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'inlet_http_requests_total',
    help: 'HTTP requests answered on the public port, by route, method and status.',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [this.registry],
  });
  readonly requestDuration = new Histogram({
    name: 'inlet_http_request_duration_seconds',
    help: 'Time from a request arriving to its answer being sent, by route.',
    labelNames: ['route'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly items = new Counter({
    name: 'inlet_items_total',
    help: 'Items stored (accepted) or found stored before (duplicate).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly itemsDropped = new Counter({
    name: 'inlet_items_dropped_total',
    help: 'Valid items not stored, by drop reason.',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly itemsRefused = new Counter({
    name: 'inlet_items_refused_total',
    help: 'Invalid items, by the code of their first error.',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });
  readonly rateLimited = new Counter({
    name: 'inlet_rate_limited_requests_total',
    help: 'Requests refused 429 by a rate limit, by policy.',
    labelNames: ['policy'] as const,
    registers: [this.registry],
  });
  readonly keyLookups = new Counter({
    name: 'inlet_key_lookups_total',
    help: 'API keys checked against the store (the embedded store answers repeats from a cache), by result.',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly storeErrors = new Counter({
    name: 'inlet_store_errors_total',
    help: 'Store operations that failed (the store unreachable or refusing), by operation.',
    labelNames: ['operation'] as const,
    registers: [this.registry],
  });
  readonly clientAborts = new Counter({
    name: 'inlet_client_aborts_total',
    help: 'Requests whose client went away before the answer was sent.',
    registers: [this.registry],
  });
  readonly commitDuration = new Histogram({
    name: 'inlet_commit_duration_seconds',
    help: 'Duration of each group commit that returned.',
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly commitJobs = new Histogram({
    name: 'inlet_commit_requests',
    help: 'Requests written by each group commit.',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
    registers: [this.registry],
  });
  readonly commitItems = new Histogram({
    name: 'inlet_commit_items',
    help: 'Items written by each group commit.',
    buckets: [1, 10, 50, 100, 250, 500, 1000, 2000],
    registers: [this.registry],
  });
  readonly commitFailures = new Counter({
    name: 'inlet_commit_failures_total',
    help: 'Group commits that failed (their requests were retried alone or answered 503).',
    registers: [this.registry],
  });
  readonly destinationEvents = new Counter({
    name: 'inlet_destination_delivered_events_total',
    help: 'Events delivered to a destination by this server, by destination.',
    labelNames: ['destination'] as const,
    registers: [this.registry],
  });
  readonly destinationAttempts = new Counter({
    name: 'inlet_destination_attempts_total',
    help: 'Batches sent to a destination by this server, by destination and outcome (delivered or failed).',
    labelNames: ['destination', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly destinationLagEvents = new Gauge({
    name: 'inlet_destination_lag_events',
    help: 'Events a destination delivered by this server has not received yet (counted every few seconds, up to a million).',
    labelNames: ['destination'] as const,
    registers: [this.registry],
  });
  /** When the oldest undelivered event of each destination arrived; read at each scrape. */
  private readonly oldestUndelivered = new Map<string, number | null>();
  private bodies: BodyBytes | null = null;

  constructor(opts: { processDefaults?: boolean } = {}) {
    const self = this;
    new Gauge({
      name: 'inlet_body_bytes',
      help: 'Bytes of request bodies in hand, by state: reading (arriving), waiting (for room) and admitted (parsed, checked or waiting for their commit).',
      labelNames: ['state'] as const,
      registers: [this.registry],
      collect() {
        if (self.bodies === null) return;
        this.set({ state: 'admitted' }, self.bodies.admittedBytes);
        this.set({ state: 'waiting' }, self.bodies.waitingBodyBytes);
        const reading = self.bodies.readingBodyBytes;
        if (reading !== undefined) this.set({ state: 'reading' }, reading);
      },
    });
    new Gauge({
      name: 'inlet_destination_lag_seconds',
      help: 'Age of the oldest event a destination delivered by this server has not received yet; 0 when it has them all.',
      labelNames: ['destination'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        const now = Date.now();
        for (const [destination, at] of self.oldestUndelivered) this.set({ destination }, at === null ? 0 : Math.max(0, now - at) / 1000);
      },
    });
    // Known label values start at 0, so a rate over them exists before the first event.
    for (const outcome of ['accepted', 'duplicate']) this.items.inc({ outcome }, 0);
    for (const reason of Object.keys(DROP_REASONS)) this.itemsDropped.inc({ reason }, 0);
    for (const code of Object.keys(ITEM_ERRORS)) this.itemsRefused.inc({ code }, 0);
    for (const policy of ['key', 'burst', 'sustained', 'import']) this.rateLimited.inc({ policy }, 0);
    for (const result of ['found', 'not_found', 'failed']) this.keyLookups.inc({ result }, 0);
    for (const operation of ['key_lookup', 'write', 'ping']) this.storeErrors.inc({ operation }, 0);
    // Process and Node.js figures (CPU, memory, event loop lag, handles, GC), under their usual names.
    if (opts.processDefaults ?? true) collectDefaultMetrics({ register: this.registry });
  }

  /** Reads the body gauge from the server's back-pressure at each scrape. */
  watchBodies(b: BodyBytes): void {
    this.bodies = b;
  }

  committed(seconds: number, jobs: number, items: number): void {
    this.commitDuration.observe(seconds);
    this.commitJobs.observe(jobs);
    this.commitItems.observe(items);
  }

  batchesDelivered(destination: string, batches: number, events: number): void {
    this.destinationEvents.inc({ destination }, events);
    this.destinationAttempts.inc({ destination, outcome: 'delivered' }, batches);
  }

  batchFailed(destination: string): void {
    this.destinationAttempts.inc({ destination, outcome: 'failed' });
  }

  lagCounted(destination: string, events: number, oldestAt: number | null): void {
    this.destinationLagEvents.set({ destination }, events);
    this.oldestUndelivered.set(destination, oldestAt);
  }

  stoppedDelivering(destination: string): void {
    this.oldestUndelivered.delete(destination);
    this.destinationLagEvents.remove({ destination });
  }

  failed(): void {
    this.commitFailures.inc();
  }

  clientGone(): void {
    this.clientAborts.inc();
  }

  answeredBeforeRouting(method: string, status: number): void {
    // Answered by Node's parser before any route: one fixed route label, and
    // no method but CONNECT's, as a malformed request line may have none.
    this.requests.inc({ route: 'http', method, status: String(status) });
  }
}
