/**
 * The delivery thread: reads destinations' batches, builds and sends them
 * (domain/delivery/courier.ts), on store connections of its own, so their
 * cost, which grows with the events, is not paid on the thread that answers
 * requests. The server's DeliveryService keeps the rules on its own thread
 * and asks this one through a ThreadCourier.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { serveCourier } from '../domain/delivery/courier-thread.js';
import { LocalCourier } from '../domain/delivery/courier.js';
import { senderFor } from '../destinations/registry.js';
import { type DeliveryReadsSettings, openDeliveryReads } from '../stores/open-delivery-reads.js';
import type { DestinationReach } from '../stores/port-destinations.js';
import { threadEntry } from '../thread-entry.js';
import { lowestPriority } from '../thread-priority.js';

/** What the thread is started with: where the store is, and what destinations may reach (plain data). */
export interface DeliveryThreadData extends DeliveryReadsSettings {
  reach: Omit<DestinationReach, 'resolve'>;
}

// A PostgreSQL connection that drops is replaced at the next read; the read that found it gone fails and is tried again.
if (parentPort !== null) {
  // When the cores are all busy, the threads that take batches in go first, and delivery uses what they leave.
  lowestPriority();
  const data = workerData as DeliveryThreadData;
  serveCourier(parentPort, new LocalCourier(openDeliveryReads(data, () => undefined), (d) => senderFor(d, data.reach)));
}

/** This file, compiled: the thread's entry point. */
export const DELIVERY_THREAD_URL = threadEntry('cli/delivery-thread.js');
