import { randomBytes } from 'node:crypto';
import type { DestinationKinds, DestinationRecord, DestinationStore, SelfAddress } from '../../stores/port-destinations.js';
import type { Courier } from './courier.js';
import { DEFAULT_TIMING, Deliverer, type DeliveryLog, type DeliveryObserver, type DeliveryTiming } from './deliverer.js';

export interface DeliveryServiceDeps {
  store: DestinationStore;
  /** Reads, builds and sends batches: a RemoteCourier to the delivery process in a server, so that work stays off the threads that answer requests. */
  courier: Courier;
  self: SelfAddress;
  /** The kinds destinations may be of (src/destinations/registry.ts). */
  kinds: DestinationKinds;
  clock?: () => number;
  timing?: Partial<DeliveryTiming>;
  observer?: DeliveryObserver;
  log?: DeliveryLog;
}

interface Running {
  deliverer: Deliverer;
  done: Promise<void>;
}

/**
 * The delivery a server runs beside ingestion: every few seconds it looks for
 * destinations that are not paused and that nobody delivers (no lease, or a
 * lease run out because its server died), takes their leases, and runs a
 * Deliverer for each. Each destination has a loop of its own, so a slow or
 * failing one holds up no other.
 */
export class DeliveryService {
  /** This server's name on the leases it takes: new for each process, so a restarted server waits for its old leases like any other. */
  readonly holder = `srv_${randomBytes(9).toString('base64url')}`;
  private readonly running = new Map<string, Running>();
  private readonly timing: DeliveryTiming;
  private readonly clock: () => number;
  private timer: NodeJS.Timeout | null = null;
  private scanning: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(private readonly deps: DeliveryServiceDeps) {
    this.timing = { ...DEFAULT_TIMING, ...deps.timing };
    this.clock = deps.clock ?? Date.now;
  }

  start(): void {
    this.scanning = this.scan();
    this.timer = setInterval(() => {
      this.scanning = this.scanning.then(() => this.scan());
    }, this.timing.scanMs);
  }

  /** Destinations this server delivers now. */
  get delivering(): string[] {
    return [...this.running.keys()];
  }

  /** Looks for destinations nobody delivers, once; start() does it every few seconds. */
  async scan(): Promise<void> {
    if (this.stopped) return;
    let all: DestinationRecord[];
    try {
      all = await this.deps.store.all();
    } catch (e) {
      this.deps.log?.warn({ error: (e as Error).message }, 'delivery could not list destinations; looking again shortly');
      return;
    }
    for (const d of all) {
      if (this.stopped) return;
      if (d.paused || this.running.has(d.id)) continue;
      const taken = await this.deps.store.takeLease(d.id, this.holder, this.timing.leaseMs).catch(() => false);
      if (!taken || this.stopped) continue;
      this.run(d);
    }
  }

  private run(d: DestinationRecord): void {
    const deliverer = new Deliverer(d, {
      store: this.deps.store,
      courier: this.deps.courier,
      holder: this.holder,
      clock: this.clock,
      timing: this.timing,
      self: this.deps.self,
      kinds: this.deps.kinds,
      observer: this.deps.observer,
      log: this.deps.log,
    });
    const done = deliverer.run().finally(async () => {
      this.running.delete(d.id);
      await this.deps.courier.release(d.id).catch(() => undefined);
      await this.deps.store.releaseLease(d.id, this.holder).catch(() => undefined);
    });
    this.running.set(d.id, { deliverer, done });
  }

  /**
   * Stops every loop, abandoning sends in flight (whoever delivers next sends
   * them again: at least once), and lets the leases go so another server
   * takes over at once. Cursors are written as each batch is delivered:
   * nothing is lost.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    await this.scanning.catch(() => undefined);
    const all = [...this.running.values()];
    for (const r of all) r.deliverer.stop();
    await Promise.all(all.map((r) => r.done.catch(() => undefined)));
  }
}
