import type { DeliveryEvent, FileMaker, FilePlan, FileSender } from '../../stores/port-destinations.js';
import { eventJson, takes, takesEvery } from './batch.js';
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

/** How many files a courier makes at once from what other destinations read: each holds a part of lines (1 MiB) and its zipped bytes. */
export const FED_FILES = 16;
/** A project none of whose events was read here for this long has nothing here to feed a file of it: none is begun. */
export const FEEDER_GONE_MS = 10_000;
/** How many events a file begun behind what was read reads at most per turn to catch up: a turn with no file due stays short. */
const CATCH_UP_EVENTS = 2 * READ_EVENTS;

/** A file being made: what is in it so far. */
interface Progress {
  maker: FileMaker | null;
  /** The first event in it: its position and when it arrived (the file's name and folder). */
  first: { seq: number; at: number } | null;
  last: number;
  count: number;
  bytes: number;
  /** It holds as many events or bytes as a file may: its range ends at `last`. */
  full: boolean;
}

/**
 * A file being made of the events other destinations of its project read,
 * before it is due, so that its events need not be read and written as
 * JSON again (FileFeeds). Made only for a destination that takes every
 * event, and only while its cursor stays at `after`.
 */
export interface FedFile extends Progress {
  projectId: string;
  generation: number;
  /** The destination's cursor when it began: the file's range starts past it. */
  after: number;
  /** Every event of the project up to here is in it (up to the one that filled it, when full). */
  through: number;
  /** Being begun or read up to where the project's events have been read already: nothing is fed to it, nor is it taken, meanwhile. */
  catchingUp: boolean;
}

/**
 * Adds an event to a file being made; false, and the file full, when a
 * capped file (a plan being made) already holds FILE_EVENTS events, or the
 * event would take it past FILE_BYTES: the event goes in the next file.
 */
function addTo(p: Progress, maker: FileMaker, e: DeliveryEvent, json: string, size: number, capped: boolean): boolean {
  if (capped && p.count > 0 && (p.count === FILE_EVENTS || p.bytes + size > FILE_BYTES)) {
    p.full = true;
    return false;
  }
  maker.add(e, json);
  p.first ??= { seq: e.seq, at: e.receivedAt };
  p.last = e.seq;
  p.count++;
  p.bytes += size;
  return true;
}

/**
 * The next files of destinations that write files, made as other
 * destinations of their projects read the events (FedFile), by destination;
 * and, by project, how far a destination that takes every event has read.
 * A courier feeds them each batch such a destination reads, already as
 * JSON; a file due is then read from the store only past what it was fed.
 */
export class FileFeeds {
  private readonly files = new Map<string, FedFile>();
  /** By project: where the furthest read of every event of it ends, and when it was made. */
  private readonly reached = new Map<string, { through: number; at: number }>();
  private sweptAt = -Infinity;

  get size(): number {
    return this.files.size;
  }

  /** Projects whose reads are remembered (tests check they do not pile up). */
  get projectsReached(): number {
    return this.reached.size;
  }

  get(destinationId: string): FedFile | undefined {
    return this.files.get(destinationId);
  }

  drop(destinationId: string): void {
    this.files.delete(destinationId);
  }

  /** The destination's file being fed, when it is its next one: begun at its cursor `after`, in its generation. */
  next(d: CourierDestination, after: number): FedFile | undefined {
    const f = this.files.get(d.id);
    return f !== undefined && f.after === after && f.generation === d.generation ? f : undefined;
  }

  /**
   * What a destination that takes every event has just read: `events`, as
   * JSON (`json`, each `sizes` bytes and a newline), every event of the
   * project past `after` up to `through`. Each file of the project that has
   * every event up to a point within that range takes those past it.
   */
  feed(projectId: string, after: number, through: number, events: DeliveryEvent[], json: string[], sizes: number[], now: number): void {
    this.forgetGone(now);
    this.reached.set(projectId, { through: Math.max(through, this.reached.get(projectId)?.through ?? 0), at: now });
    for (const f of this.files.values()) {
      if (f.projectId !== projectId || f.maker === null || f.full || f.catchingUp || f.through < after || f.through >= through) continue;
      for (let i = 0; i < events.length; i++) {
        if (events[i]!.seq <= f.through) continue;
        if (!addTo(f, f.maker, events[i]!, json[i]!, sizes[i]!, true)) break;
      }
      if (!f.full) f.through = through;
    }
  }

  /**
   * Forgets the projects not read for FEEDER_GONE_MS that no file is fed
   * from, looking at most once per FEEDER_GONE_MS, as reads come in (with
   * none, what is held stays, no more than when they stopped): a process
   * that delivers projects which come and go (deleted, paused, their
   * destinations moved to another server) holds only those read lately. A
   * file being fed keeps its project's entry: it reads on up to it.
   */
  private forgetGone(now: number): void {
    if (now - this.sweptAt < FEEDER_GONE_MS) return;
    this.sweptAt = now;
    const fedFrom = new Set<string>();
    for (const f of this.files.values()) fedFrom.add(f.projectId);
    for (const [projectId, r] of this.reached) if (now - r.at >= FEEDER_GONE_MS && !fedFrom.has(projectId)) this.reached.delete(projectId);
  }

  /**
   * Has the destination's next file, past its cursor `after`, made as its
   * project's events are read, when its sender can (FileSender.fedAsRead),
   * it takes every event, another destination here read every event of
   * the project within FEEDER_GONE_MS, and fewer than FED_FILES are being
   * made. What was read past the cursor already is read from the store
   * first, CATCH_UP_EVENTS a turn at most (a file begun earlier and still
   * behind reads on); the file is fed from where that ends.
   */
  async begin(reads: CourierReads, sender: FileSender, d: CourierDestination, after: number, now: number, signal: AbortSignal): Promise<void> {
    let f = this.next(d, after);
    if (f === undefined) {
      this.files.delete(d.id);
      const feeder = this.reached.get(d.projectId);
      const fed = sender.fedAsRead && takesEvery(d) && feeder !== undefined && now - feeder.at < FEEDER_GONE_MS;
      if (!fed || this.files.size >= FED_FILES) return;
      // In the map before anything is awaited: a drop meanwhile (a release, a new config) is seen below.
      f = { maker: null, projectId: d.projectId, generation: d.generation, after, through: after, first: null, last: after, count: 0, bytes: 0, full: false, catchingUp: true };
      this.files.set(d.id, f);
    } else if (f.catchingUp || f.full || f.through >= this.reached.get(d.projectId)!.through) {
      return;
    }
    f.catchingUp = true;
    try {
      f.maker ??= await sender.newFile(d.projectId);
      for (let read = 0; read < CATCH_UP_EVENTS && !f.full && !signal.aborted; read += READ_EVENTS) {
        // Taken or dropped while its maker was made, its project may be forgotten too (forgetGone): let go.
        if (this.files.get(d.id) !== f) break;
        const to = this.reached.get(d.projectId)!.through;
        if (f.through >= to) break;
        const r = await reads.read(d.projectId, f.through, to, READ_EVENTS);
        // Dropped meanwhile (released, its config changed): let go.
        if (this.files.get(d.id) !== f) return;
        for (const e of r.events) {
          const json = eventJson(e, d.projectId);
          if (!addTo(f, f.maker, e, json, Buffer.byteLength(json) + 1, true)) break;
        }
        if (!f.full) f.through = r.through;
      }
    } catch {
      // The store is away: the file is read whole when it is due, as it would be without a feed.
      if (this.files.get(d.id) === f) this.files.delete(d.id);
    } finally {
      f.catchingUp = false;
    }
  }

  /** The destination's file being fed, taken out (no more is fed to it), when it is its next file: past its cursor, of its generation, not being begun. */
  take(d: CourierDestination, after: number): FedFile | null {
    const f = this.next(d, after);
    this.files.delete(d.id);
    return f !== undefined && !f.catchingUp ? f : null;
  }
}

/**
 * Makes a file of the events past `after` up to `upTo` the destination
 * takes, reading them once: each event is added to the file as it is read,
 * and let go; a file fed so far (`fed`) is read on from where it was fed
 * to. `capped`: the file ends before the event that would take it past
 * FILE_EVENTS or FILE_BYTES, and its range ends at the last event in it (a
 * plan being made); otherwise every event of the range is in it (a
 * recorded plan written). Null when the destination takes none of them.
 */
async function makeFile(
  reads: CourierReads, sender: FileSender, d: CourierDestination, after: number, upTo: number, capped: boolean, fed: FedFile | null = null,
): Promise<MadeFile | null> {
  const p: Progress = fed ?? { maker: null, first: null, last: after, count: 0, bytes: 0, full: false };
  // What was fed may reach past the head this turn was given (another destination read since): the range takes it in.
  const end = Math.max(upTo, fed?.through ?? upTo);
  reading: for (let at = fed?.through ?? after; at < end && !p.full; ) {
    const r = await reads.read(d.projectId, at, end, READ_EVENTS);
    for (const e of r.events) {
      if (!takes(d, e)) continue;
      const json = eventJson(e, d.projectId);
      p.maker ??= await sender.newFile(d.projectId);
      if (!addTo(p, p.maker, e, json, Buffer.byteLength(json) + 1, capped)) break reading;
    }
    at = r.through;
  }
  if (p.maker === null || p.first === null) return null;
  const plan: FilePlan = { generation: d.generation, after, through: p.full ? p.last : end, first: p.first.seq, last: p.last, at: p.first.at };
  return { plan, body: await p.maker.finish(), events: p.count };
}

/**
 * A turn of a destination that writes files. A file planned and recorded
 * (d.file) whose range lies past the cursor is written, again if it was
 * before a crash, under the same name; the cursor then moves past it.
 * Otherwise, when a file is due (FILE_EVENTS wait, or the oldest waiting
 * event has waited `everyMs`), it is made, its events read once (or taken,
 * as far as they reach, from what other destinations of the project read:
 * FileFeeds, begun on the turns before it was due), and its range handed
 * back (`planned`) to be recorded before anything is written;
 * the file is kept (`made`) for the turn that writes it, which uses it when
 * the recorded plan is that one and no event of its range was erased
 * meanwhile, and otherwise makes it again from the range (after a crash, on
 * another server, after an erasure). When none is due the turn says how
 * long to wait (`idleMs`).
 */
export async function fileTurn(
  reads: CourierReads, sender: FileSender, d: CourierDestination, after: number, upTo: number, clock: () => number, signal: AbortSignal, made: MadeFiles,
  feeds: FileFeeds = new FileFeeds(),
): Promise<CourierTurn> {
  const idle: CourierTurn = { through: after, batches: 0, events: 0, failure: null };
  const plan = d.file;
  const kept = made.get(d.id);
  made.delete(d.id);
  if (plan !== null && plan.generation === d.generation && plan.through > after) {
    feeds.drop(d.id);
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
  if (oldest === null) {
    // The cursor moves past the range: a file begun at it is not the next one.
    feeds.drop(d.id);
    return { ...idle, through: upTo };
  }
  const wait = oldest + sender.everyMs - clock();
  // A range of fewer positions than a full file holds fewer events (one per position), and a file fed full is due: no count needed.
  const short = upTo - after < FILE_EVENTS;
  const fed = feeds.next(d, after);
  const fedFull = fed !== undefined && fed.full && !fed.catchingUp;
  if (wait > 0 && !fedFull && (short || (await reads.countPast(d, after, upTo, FILE_EVENTS)) < FILE_EVENTS)) {
    await feeds.begin(reads, sender, d, after, clock(), signal);
    return { ...idle, idleMs: Math.min(wait, FILE_LOOK_MS) };
  }
  const file = await makeFile(reads, sender, d, after, upTo, true, feeds.take(d, after));
  if (file === null) return { ...idle, through: upTo };
  made.set(d.id, file);
  return { ...idle, planned: file.plan };
}
