/**
 * The delivery thread: reads destinations' batches, builds and sends them
 * (domain/delivery/courier.ts), on store connections of its own, so their
 * cost, which grows with the events, is not paid on the thread that answers
 * requests. The server's DeliveryService keeps the rules on its own thread
 * and asks this one through a ThreadCourier.
 */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { serveCourier } from '../domain/delivery/courier-thread.js';
import { LocalCourier } from '../domain/delivery/courier.js';
import { type DeliveryReadsSettings, openDeliveryReads } from '../stores/open-delivery-reads.js';
import { senderFor } from '../stores/open-sender.js';

/**
 * The thread's scheduling priority, below the threads that take batches in
 * (nice 10: about a tenth of their weight when the cores are all busy), so
 * that delivery uses mostly what ingestion leaves and catches up whenever it
 * leaves any. On two cores (bench/destination.ts), delivery at the same
 * priority cut peak ingestion by a quarter; at 10 and at 19 it cost nothing
 * measurable, and at 10 it fell less far behind at 80% of the peak.
 */
const DELIVERY_NICE = 10;

/** Lowers this thread's priority alone: on Linux a thread is a task of its own, named by its id, which /proc/thread-self gives. Elsewhere the thread runs as it is. */
function lowerPriority(): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, DELIVERY_NICE);
  } catch {
    // No /proc (not Linux): the thread keeps the process's priority.
  }
}

// A PostgreSQL connection that drops is replaced at the next read; the read that found it gone fails and is tried again.
if (parentPort !== null) {
  lowerPriority();
  serveCourier(parentPort, new LocalCourier(openDeliveryReads(workerData as DeliveryReadsSettings, () => undefined), senderFor));
}

/** Where the thread's compiled file is: tests run the server from TypeScript and load the compiled thread from dist/. */
export const DELIVERY_THREAD_URL = import.meta.url.endsWith('.ts')
  ? new URL('../../dist/cli/delivery-thread.js', import.meta.url)
  : new URL('./delivery-thread.js', import.meta.url);
