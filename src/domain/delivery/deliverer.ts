import { type DestinationKinds, type DestinationRecord, type DestinationStore, type SelfAddress, kindNamed } from '../../stores/port-destinations.js';
import { retryDelay } from './backoff.js';
import type { Courier, CourierTurn } from './courier.js';
import { whereTo } from './destination-fields.js';

/** The times delivery runs on; tests shorten them. */
export interface DeliveryTiming {
  /** How long a lease lasts without renewal: another server takes over within this and one scan. */
  leaseMs: number;
  /** How often a holder renews its leases. */
  renewMs: number;
  /** How often a server looks for destinations nobody delivers. */
  scanMs: number;
  /** How long a destination that is caught up waits before it looks again. */
  pollMs: number;
  /** How often the lag is counted, for metrics. */
  lagEveryMs: number;
  /**
   * How often the cursor is written while it moves: a server killed outright
   * sends again what it delivered since (at least once), and a cursor written
   * per batch would cost the embedded store a flush to disk per batch, on the
   * thread that answers requests.
   */
  cursorWriteMs: number;
}

export const DEFAULT_TIMING: DeliveryTiming = { leaseMs: 15_000, renewMs: 5_000, scanMs: 5_000, pollMs: 200, lagEveryMs: 5_000, cursorWriteMs: 1_000 };

/** How many positions one read spans at most, so that a read's cost stays bounded whatever lies past the cursor. */
export const READ_SPAN = 20_000;
/** The lag counted in events stops at this (a count costs what it counts). */
export const LAG_COUNT_CAP = 1_000_000;

/** Where delivery's figures go: the metrics. */
export interface DeliveryObserver {
  batchesDelivered(destinationId: string, batches: number, events: number): void;
  batchFailed(destinationId: string): void;
  /** Events not delivered yet (up to LAG_COUNT_CAP), and when the oldest of them arrived (null: none). */
  lagCounted(destinationId: string, events: number, oldestAt: number | null): void;
  /** The destination is no longer delivered here. */
  stoppedDelivering(destinationId: string): void;
}

/** What a deliverer says of itself, for the log: never a password, a body or an event. */
export interface DeliveryLog {
  warn(fields: Record<string, unknown>, msg: string): void;
  info(fields: Record<string, unknown>, msg: string): void;
}

export interface DelivererDeps {
  store: DestinationStore;
  /** Reads, builds and sends the batches (on a thread of its own in a server). */
  courier: Courier;
  /** This server's name on leases. */
  holder: string;
  clock: () => number;
  timing: DeliveryTiming;
  self: SelfAddress;
  /** The kinds destinations may be of: a kind says whether a destination points at this server. */
  kinds: DestinationKinds;
  observer?: DeliveryObserver;
  log?: DeliveryLog;
  /** How a wait is waited (between polls, before a retry): `pause`; tests give one that returns at once and records it. */
  wait?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Delivers one destination while this server holds its lease: has the
 * courier send the batches past the cursor, a turn (up to TURN_MS) at a
 * time, and moves the cursor only past batches delivered, writing it to the
 * store at least once a second and when it stops, so a stop at any moment
 * (SIGKILL included) resends at most the last second's batches and the one
 * in flight, and never skips one. Between turns it sees a pause, a replay, a
 * deletion or a lost lease. A failed batch is sent again, read afresh (an
 * event erased meanwhile is left out), after a growing wait, for ever. A
 * destination that writes files (file-turn.ts) has each file's range
 * recorded here before the courier writes it; a receiver that answers 410
 * pauses its destination, with why.
 */
export class Deliverer {
  private readonly stopping = new AbortController();
  private failures = 0;
  private lastLagAt = 0;

  constructor(
    private d: DestinationRecord,
    private readonly deps: DelivererDeps,
  ) {}

  get id(): string {
    return this.d.id;
  }

  /** Ends the loop: a send in flight is abandoned (it is sent again by whoever delivers next). */
  stop(): void {
    this.stopping.abort();
  }

  get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  async run(): Promise<void> {
    const { store, timing, clock } = this.deps;
    const wait = this.deps.wait ?? pause;
    const signal = this.stopping.signal;
    const renewal = setInterval(() => void this.renew(), timing.renewMs);
    /** Delivered up to here (or passed over: events the destination does not take). */
    let cursor = this.d.cursor;
    /** The cursor as the store has it, and the events delivered since. */
    let written = cursor;
    let unwritten = 0;
    let writtenAt = -Infinity;
    const persist = async (now: boolean): Promise<void> => {
      if (cursor === written || (!now && clock() - writtenAt < timing.cursorWriteMs)) return;
      // Refused when a replay moved the cursor or the lease was lost: the next round reads the destination again (advance).
      if (!(await this.advance(cursor, unwritten))) return;
      written = cursor;
      unwritten = 0;
      writtenAt = clock();
    };
    let head = -1;
    try {
      while (!signal.aborted) {
        try {
          const now = await store.get(this.d.id);
          if (now === null || now.paused) break;
          if (now.generation !== this.d.generation) {
            cursor = written = now.cursor;
            unwritten = 0;
          }
          this.d = now;
          if (cursor >= head) head = await store.head(this.d.projectId);
          if (cursor >= head) {
            await persist(false);
            await this.countLag(cursor, head);
            await wait(timing.pollMs, signal);
            continue;
          }
          // A file may hold 100,000 events: a destination that writes files reads up to the head.
          const files = kindNamed(this.deps.kinds, this.d.kind)?.writes === 'files';
          const turn = await this.turn(cursor, files ? head : Math.min(head, cursor + READ_SPAN));
          // What the turn delivered counts even when it ended on a failure or a stop.
          if (turn.batches > 0) {
            unwritten += turn.events;
            if (this.failures > 0) this.deps.log?.info({ destination: this.d.id }, 'destination delivers again');
            this.failures = 0;
            this.deps.observer?.batchesDelivered(this.d.id, turn.batches, turn.events);
          }
          cursor = turn.through;
          if (signal.aborted) break;
          await this.countLag(cursor, head);
          if (turn.planned !== undefined) {
            // Recorded before it is written: a crash from here on writes the same file again, under the same name.
            if (!(await store.planFile(this.d.id, this.deps.holder, turn.planned)) && !(await store.takeLease(this.d.id, this.deps.holder, timing.leaseMs))) this.stop();
            continue;
          }
          const failure = turn.failure;
          if (failure === null && turn.idleMs !== undefined) {
            await persist(false);
            await wait(Math.max(turn.idleMs, timing.pollMs), signal);
            // What arrived meanwhile counts towards the file: the head is read again.
            head = cursor;
            continue;
          }
          if (failure === null) {
            await persist(false);
            continue;
          }
          this.failures++;
          this.deps.observer?.batchFailed(this.d.id);
          if (failure.pause === true) {
            // The receiver said it wants no more (a 410): paused, with why, until a person resumes it.
            await persist(true);
            await store.failed(this.d.id, this.deps.holder, failure.error);
            await store.setPaused(this.d.id, true, failure.error);
            this.deps.log?.warn({ destination: this.d.id, url: whereTo(this.deps.kinds, this.d), error: failure.error }, 'destination paused by its receiver');
            break;
          }
          if (this.failures === 1) {
            this.deps.log?.warn({ destination: this.d.id, url: whereTo(this.deps.kinds, this.d), error: failure.error }, 'destination failing; its batch is retried until it is delivered');
          }
          await persist(true);
          await store.failed(this.d.id, this.deps.holder, failure.error);
          await wait(retryDelay(this.failures, failure.retryAfterMs), signal);
        } catch (e) {
          // The store or the delivery process is away: nothing moved, and the same batch is read again once it answers.
          this.deps.log?.warn({ destination: this.d.id, error: (e as Error).message }, 'delivery could not read or send; trying again');
          await wait(timing.pollMs * 5, signal);
        }
      }
      // Stopped, paused or deleted: what was delivered is written before the lease goes.
      await persist(true).catch(() => undefined);
    } finally {
      clearInterval(renewal);
      this.deps.observer?.stoppedDelivering(this.d.id);
    }
  }

  /** The next batches past `after`, sent; a destination that points at this server is refused without a read. */
  private async turn(after: number, upTo: number): Promise<CourierTurn> {
    if (kindNamed(this.deps.kinds, this.d.kind)?.pointsAtSelf?.(this.d.config, this.deps.self) === true) {
      const failure = { ok: false, error: 'The URL points at this Inlet server; give the URL of the receiver instead.', retryAfterMs: null } as const;
      return { through: after, batches: 0, events: 0, failure };
    }
    return this.deps.courier.next(this.d, after, upTo, this.stopping.signal);
  }

  /** Writes the cursor; false when a replay moved it (the loop reads the destination again) or the lease was lost (the loop stops). */
  private async advance(cursor: number, count: number): Promise<boolean> {
    const ok = await this.deps.store.advance(this.d.id, this.deps.holder, this.d.generation, cursor, count, this.deps.clock());
    if (!ok && !(await this.deps.store.takeLease(this.d.id, this.deps.holder, this.deps.timing.leaseMs))) this.stop();
    return ok;
  }

  private async renew(): Promise<void> {
    try {
      if (!(await this.deps.store.takeLease(this.d.id, this.deps.holder, this.deps.timing.leaseMs))) this.stop();
    } catch {
      // The store is away: the loop finds that out too; the lease runs out unless renewed in time.
    }
  }

  private async countLag(cursor: number, head: number): Promise<void> {
    const observer = this.deps.observer;
    if (observer === undefined || this.deps.clock() - this.lastLagAt < this.deps.timing.lagEveryMs) return;
    this.lastLagAt = this.deps.clock();
    const lag = cursor >= head ? { events: 0, oldestAt: null } : await this.deps.courier.lag(this.d, cursor, head, LAG_COUNT_CAP);
    observer.lagCounted(this.d.id, lag.events, lag.oldestAt);
  }
}
