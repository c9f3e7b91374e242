import type { DeliverySender, DestinationRecord, DestinationStore, SendOutcome } from '../../stores/port-destinations.js';
import { BATCH_EVENTS, batchId, planBatch } from './batch.js';

/** What one turn of a destination came to. */
export interface CourierTurn {
  /** Where the cursor goes if the batch is delivered (or at once, when there was nothing to send). */
  through: number;
  /** Events in the batch; 0 when the read found none the destination takes. */
  events: number;
  /** When the batch's first event arrived; null when there was none. */
  oldestAt: number | null;
  /** The attempt; null when there was nothing to send. */
  outcome: SendOutcome | null;
}

/** The destination as a courier needs it: what to read, where to send and how to sign. */
export type CourierDestination = Pick<DestinationRecord, 'id' | 'projectId' | 'kind' | 'url' | 'table' | 'sources' | 'events' | 'secret' | 'generation'>;

/**
 * Reads a destination's next batch past its cursor, builds it and sends it:
 * the part of delivery whose cost grows with the events. A server runs it on
 * a thread of its own (courier-thread.ts), so that building and sending
 * batches takes no time from the thread that answers requests; the rules
 * (cursor, lease, retries) stay with the Deliverer.
 */
export interface Courier {
  /** Sends the next batch of events past `after`, up to `upTo`, that the destination takes. Throws when the store cannot be read. */
  next(d: CourierDestination, after: number, upTo: number, signal: AbortSignal): Promise<CourierTurn>;
  /** The events past `after` up to `upTo` the destination takes, counted up to `cap` (its lag). */
  countPast(d: CourierDestination, after: number, upTo: number, cap: number): Promise<number>;
  /** The destination is no longer delivered here: what was opened to reach it is closed. */
  release(destinationId: string): Promise<void>;
  close(): Promise<void>;
}

/** What a courier reads: the store's reads past a cursor. */
export type CourierReads = Pick<DestinationStore, 'read' | 'countPast'>;

/** A courier on the calling thread: the delivery thread runs one, and tests may. */
export class LocalCourier implements Courier {
  /** One sender per destination, kept while it is delivered here: a webhook's connection, a PostgreSQL pool. */
  private readonly senders = new Map<string, DeliverySender>();

  constructor(
    private readonly reads: CourierReads,
    private readonly senderFor: (d: CourierDestination) => DeliverySender,
  ) {}

  async next(d: CourierDestination, after: number, upTo: number, signal: AbortSignal): Promise<CourierTurn> {
    const plan = planBatch(d, await this.reads.read(d.projectId, after, upTo, BATCH_EVENTS));
    if (plan.events.length === 0) return { through: plan.through, events: 0, oldestAt: null, outcome: null };
    let sender = this.senders.get(d.id);
    if (sender === undefined) this.senders.set(d.id, (sender = this.senderFor(d)));
    const outcome = await sender.send(
      { destinationId: d.id, projectId: d.projectId, batchId: batchId(d.id, d.generation, after, plan.through), events: plan.events, eventJson: plan.eventJson },
      signal,
    );
    return { through: plan.through, events: plan.events.length, oldestAt: plan.events[0]!.receivedAt, outcome };
  }

  countPast(d: CourierDestination, after: number, upTo: number, cap: number): Promise<number> {
    return this.reads.countPast(d, after, upTo, cap);
  }

  async release(destinationId: string): Promise<void> {
    const sender = this.senders.get(destinationId);
    this.senders.delete(destinationId);
    await sender?.close();
  }

  async close(): Promise<void> {
    await Promise.all([...this.senders.keys()].map((id) => this.release(id).catch(() => undefined)));
  }
}
