import type { DeliveryEvent, FilePlan, FileSender } from '../../stores/port-destinations.js';
import { eventJson, takes } from './batch.js';
import type { CourierDestination, CourierReads, CourierTurn } from './courier.js';

/** A file holds at most this many events… */
export const FILE_EVENTS = 100_000;
/** …and this many bytes of events as NDJSON lines (a single larger event still goes, alone). */
export const FILE_BYTES = 64 * 1024 * 1024;
/** How many events a read for a file takes at a time. */
const READ_EVENTS = 5_000;
/** How long a destination whose file is not due waits at most before it looks again (it may have filled meanwhile). */
export const FILE_LOOK_MS = 1_000;

/** The events of a plan's range the destination takes (those erased since it was planned are gone), in order. */
async function readRange(reads: CourierReads, d: CourierDestination, after: number, through: number): Promise<{ events: DeliveryEvent[]; json: string[] }> {
  const events: DeliveryEvent[] = [];
  const json: string[] = [];
  for (let at = after; at < through; ) {
    const r = await reads.read(d.projectId, at, through, READ_EVENTS);
    for (const e of r.events) {
      if (!takes(d, e)) continue;
      events.push(e);
      json.push(eventJson(e, d.projectId));
    }
    at = r.through;
  }
  return { events, json };
}

/**
 * The range of the next file past `after`: the events the destination
 * takes, up to FILE_EVENTS or FILE_BYTES; null when the destination takes
 * none of them.
 */
async function nextRange(reads: CourierReads, d: CourierDestination, after: number, upTo: number): Promise<FilePlan | null> {
  let first: DeliveryEvent | null = null;
  let last: DeliveryEvent | null = null;
  let count = 0;
  let bytes = 0;
  for (let at = after; at < upTo; ) {
    const r = await reads.read(d.projectId, at, upTo, READ_EVENTS);
    for (const e of r.events) {
      if (!takes(d, e)) continue;
      const size = Buffer.byteLength(eventJson(e, d.projectId)) + 1;
      if (last !== null && (count === FILE_EVENTS || bytes + size > FILE_BYTES)) {
        return { generation: d.generation, after, through: last.seq, first: first!.seq, last: last.seq, at: first!.receivedAt };
      }
      first ??= e;
      last = e;
      count++;
      bytes += size;
    }
    at = r.through;
  }
  return first === null ? null : { generation: d.generation, after, through: upTo, first: first.seq, last: last!.seq, at: first.receivedAt };
}

/**
 * A turn of a destination that writes files. A file planned and recorded
 * (d.file) whose range lies past the cursor is written, again if it was
 * before a crash, under the same name; the cursor then moves past it.
 * Otherwise, when a file is due (FILE_EVENTS wait, or the oldest waiting
 * event has waited `everyMs`), its range is planned and handed back
 * (`planned`) to be recorded before anything is written; when none is due
 * the turn says how long to wait (`idleMs`).
 */
export async function fileTurn(reads: CourierReads, sender: FileSender, d: CourierDestination, after: number, upTo: number, clock: () => number, signal: AbortSignal): Promise<CourierTurn> {
  const idle: CourierTurn = { through: after, batches: 0, events: 0, failure: null };
  const plan = d.file;
  if (plan !== null && plan.generation === d.generation && plan.through > after) {
    const { events, json } = await readRange(reads, d, plan.after, plan.through);
    // Every event of it erased before it was written: no file.
    if (events.length === 0) return { ...idle, through: plan.through };
    const outcome = await sender.writeFile({ destinationId: d.id, projectId: d.projectId, plan, events, eventJson: json }, signal);
    if (!outcome.ok) return { ...idle, failure: outcome };
    return { through: plan.through, batches: 1, events: events.length, failure: null };
  }
  const oldest = await reads.oldestPast(d, after, upTo);
  if (oldest === null) return { ...idle, through: upTo };
  const wait = oldest + sender.everyMs - clock();
  if (wait > 0 && (await reads.countPast(d, after, upTo, FILE_EVENTS)) < FILE_EVENTS) return { ...idle, idleMs: Math.min(wait, FILE_LOOK_MS) };
  const planned = await nextRange(reads, d, after, upTo);
  return planned === null ? { ...idle, through: upTo } : { ...idle, planned };
}
