import type { DeliveryEvent } from '../../stores/port-destinations.js';

/** A batch on its way to a destination: at most 500 events, in position order. */
export interface OutgoingBatch {
  destinationId: string;
  projectId: string;
  /** The same for the same events sent again (an Idempotency-Key); new after a replay. */
  batchId: string;
  events: DeliveryEvent[];
  /** Each event in the events list --json shape, with project_id and source_id, as JSON text (batch.ts). */
  eventJson: string[];
}

/** What one attempt came to. */
export type SendOutcome = { ok: true } | { ok: false; error: string; retryAfterMs: number | null };

/**
 * Sends batches to one destination: an adapter per kind (src/destinations/).
 * `send` never throws for the receiver's faults: it answers them as a failed
 * outcome, with an error fit to show (no password, no body).
 */
export interface DeliverySender {
  send(batch: OutgoingBatch, signal: AbortSignal): Promise<SendOutcome>;
  close(): Promise<void>;
}
