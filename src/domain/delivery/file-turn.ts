import type { DeliveryEvent, FileMaker, FilePlan, FileSender } from '../../stores/port-destinations.js';
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

/** A file made and not yet written: kept between the turn that plans it and the turn that writes it. */
export interface MadeFile {
  plan: FilePlan;
  body: Buffer;
  /** The events in it: fewer in its range afterwards means some were erased meanwhile. */
  events: number;
}

/** The files made by a courier and not yet written, by destination. */
export type MadeFiles = Map<string, MadeFile>;

const samePlan = (a: FilePlan, b: FilePlan): boolean =>
  a.generation === b.generation && a.after === b.after && a.through === b.through && a.first === b.first && a.last === b.last && a.at === b.at;

/**
 * Makes a file of the events past `after` up to `upTo` the destination
 * takes, reading them once: each event is added to the file as it is read,
 * and let go. `capped`: the file ends before the event that would take it
 * past FILE_EVENTS or FILE_BYTES, and its range ends at the last event in
 * it (a plan being made); otherwise every event of the range is in it (a
 * recorded plan written). Null when the destination takes none of them.
 */
async function makeFile(reads: CourierReads, sender: FileSender, d: CourierDestination, after: number, upTo: number, capped: boolean): Promise<MadeFile | null> {
  let maker: FileMaker | null = null;
  let first: DeliveryEvent | null = null;
  let last = after;
  let count = 0;
  let bytes = 0;
  let through = upTo;
  reading: for (let at = after; at < upTo; ) {
    const r = await reads.read(d.projectId, at, upTo, READ_EVENTS);
    for (const e of r.events) {
      if (!takes(d, e)) continue;
      const json = eventJson(e, d.projectId);
      const size = Buffer.byteLength(json) + 1;
      if (capped && count > 0 && (count === FILE_EVENTS || bytes + size > FILE_BYTES)) {
        through = last;
        break reading;
      }
      maker ??= await sender.newFile(d.projectId);
      maker.add(e, json);
      first ??= e;
      last = e.seq;
      count++;
      bytes += size;
    }
    at = r.through;
  }
  if (maker === null || first === null) return null;
  const plan: FilePlan = { generation: d.generation, after, through, first: first.seq, last, at: first.receivedAt };
  return { plan, body: await maker.finish(), events: count };
}

/**
 * A turn of a destination that writes files. A file planned and recorded
 * (d.file) whose range lies past the cursor is written, again if it was
 * before a crash, under the same name; the cursor then moves past it.
 * Otherwise, when a file is due (FILE_EVENTS wait, or the oldest waiting
 * event has waited `everyMs`), it is made, its events read once, and its
 * range handed back (`planned`) to be recorded before anything is written;
 * the file is kept (`made`) for the turn that writes it, which uses it when
 * the recorded plan is that one and no event of its range was erased
 * meanwhile, and otherwise makes it again from the range (after a crash, on
 * another server, after an erasure). When none is due the turn says how
 * long to wait (`idleMs`).
 */
export async function fileTurn(
  reads: CourierReads, sender: FileSender, d: CourierDestination, after: number, upTo: number, clock: () => number, signal: AbortSignal, made: MadeFiles,
): Promise<CourierTurn> {
  const idle: CourierTurn = { through: after, batches: 0, events: 0, failure: null };
  const plan = d.file;
  const kept = made.get(d.id);
  made.delete(d.id);
  if (plan !== null && plan.generation === d.generation && plan.through > after) {
    // Kept and whole: as many events in its range as when it was made (an erasure only takes events away).
    const whole = kept !== undefined && samePlan(kept.plan, plan) && (await reads.countPast(d, plan.after, plan.through, kept.events + 1)) === kept.events;
    const file = whole ? kept : await makeFile(reads, sender, d, plan.after, plan.through, false);
    // Every event of it erased before it was written: no file.
    if (file === null) return { ...idle, through: plan.through };
    const outcome = await sender.writeFile({ destinationId: d.id, projectId: d.projectId, plan, body: file.body, events: file.events }, signal);
    // Not kept past a failure: a store that stays down for many destinations would have the delivery process
    // hold a file for each. The retry, backed off, makes it again from the recorded range.
    if (!outcome.ok) return { ...idle, failure: outcome };
    return { through: plan.through, batches: 1, events: file.events, failure: null };
  }
  const oldest = await reads.oldestPast(d, after, upTo);
  if (oldest === null) return { ...idle, through: upTo };
  const wait = oldest + sender.everyMs - clock();
  // A range of fewer positions than a full file holds fewer events (one per position): no count needed.
  const short = upTo - after < FILE_EVENTS;
  if (wait > 0 && (short || (await reads.countPast(d, after, upTo, FILE_EVENTS)) < FILE_EVENTS)) return { ...idle, idleMs: Math.min(wait, FILE_LOOK_MS) };
  const file = await makeFile(reads, sender, d, after, upTo, true);
  if (file === null) return { ...idle, through: upTo };
  made.set(d.id, file);
  return { ...idle, planned: file.plan };
}
