/**
 * The delivery thread: reads destinations' batches, builds and sends them
 * (domain/delivery/courier.ts), on store connections of its own, so their
 * cost, which grows with the events, is not paid on the thread that answers
 * requests. The server's DeliveryService keeps the rules on its own thread
 * and asks this one through a ThreadCourier.
 */
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { serveCourier } from '../domain/delivery/courier-thread.js';
import { LocalCourier } from '../domain/delivery/courier.js';
import { senderFor } from '../destinations/registry.js';
import { type DeliveryReadsSettings, openDeliveryReads } from '../stores/open-delivery-reads.js';
import type { DestinationReach } from '../stores/port-destinations.js';
import { threadEntry } from '../thread-entry.js';

/** What the thread is started with: where the store is, and what destinations may reach (plain data). */
export interface DeliveryThreadData extends DeliveryReadsSettings {
  reach: Omit<DestinationReach, 'resolve'>;
}

/**
 * The thread's scheduling priority, the lowest (nice 19): when the cores are
 * all busy, the threads that take batches in go first, and delivery uses
 * what they leave. On two cores (bench/destination.ts), delivery at the same
 * priority cut peak ingestion by a quarter; at 19 it costs nothing
 * measurable there, and still keeps within a second or so at 80% of the peak.
 */
const DELIVERY_NICE = 19;

/** Lowers this thread's priority alone: on Linux a thread is a task of its own, and setpriority on "this process" sets the calling thread's (elsewhere it would be the whole server's, so it is left alone). */
function lowerPriority(): void {
  if (process.platform !== 'linux') return;
  try {
    setPriority(DELIVERY_NICE);
  } catch {
    // Not allowed here (a sandbox): delivery runs at the server's priority.
  }
}

// A PostgreSQL connection that drops is replaced at the next read; the read that found it gone fails and is tried again.
if (parentPort !== null) {
  lowerPriority();
  const data = workerData as DeliveryThreadData;
  serveCourier(parentPort, new LocalCourier(openDeliveryReads(data, () => undefined), (d) => senderFor(d, data.reach)));
}

/** This file, compiled: the thread's entry point. */
export const DELIVERY_THREAD_URL = threadEntry('cli/delivery-thread.js');
