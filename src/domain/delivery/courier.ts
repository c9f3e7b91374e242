import { type DestinationRecord, type DestinationSender, type DestinationStore, type FilePlan, type SendOutcome, writesFiles } from '../../stores/port-destinations.js';
import { FileFeeds, type MadeFiles, fileTurn } from './file-turn.js';
import { BATCH_EVENTS, batchId, planBatch, takesEvery } from './batch.js';

/** What one turn of a destination came to: the batches delivered, and the failure it ended on, if any. */
export interface CourierTurn {
  /** Where the cursor may go: past every batch delivered, and over events the destination does not take. */
  through: number;
  /** Batches and events delivered in the turn. */
  batches: number;
  events: number;
  /** The attempt the turn ended on, when it failed (the batch after `through` is sent again next turn); null otherwise. */
  failure: Extract<SendOutcome, { ok: false }> | null;
  /** A destination that writes files: the next file, to be recorded (DestinationStore.planFile) before the next turn writes it. */
  planned?: FilePlan;
  /** A destination that writes files: no file is due; look again after this long. */
  idleMs?: number;
}

/** What a destination has not been sent yet: events counted up to a cap, and when the first arrived. */
export interface CourierLag {
  events: number;
  oldestAt: number | null;
}

/**
 * How long a turn goes on sending batch after batch. The Deliverer, on the
 * main thread, sees each turn's end only when that thread gets to it: a turn
 * a batch long waited its turn there for every batch, and at 80% of the
 * peak fell behind by half a second each second (bench/destination.ts).
 * A pause, a replay or a deletion is seen before the next batch, a lost
 * lease between turns.
 */
export const TURN_MS = 250;

/** The destination as a courier needs it: what to read, and its kind and config, where to send it. */
export type CourierDestination = Pick<DestinationRecord, 'id' | 'projectId' | 'kind' | 'config' | 'sources' | 'events' | 'generation' | 'file'>;

/**
 * Reads the batches past a destination's cursor, builds them and sends them:
 * the part of delivery whose cost grows with the events. A server runs it in
 * a process of its own (courier-remote.ts, cli/delivery-process.ts), so that
 * building and sending batches takes no time from the threads that answer
 * requests; the rules (cursor, lease, retries) stay with the Deliverer.
 */
export interface Courier {
  /**
   * Sends the batches of events past `after`, up to `upTo`, that the
   * destination takes, in order, one after another for up to TURN_MS; stops
   * at the first that fails, when `signal` aborts, and before the next batch
   * once the destination is deleted, paused or replayed. Throws when the
   * store cannot be read before anything was delivered.
   */
  next(d: CourierDestination, after: number, upTo: number, signal: AbortSignal): Promise<CourierTurn>;
  /** The events past `after` up to `upTo` the destination takes, counted up to `cap`, and when the first arrived (its lag). */
  lag(d: CourierDestination, after: number, upTo: number, cap: number): Promise<CourierLag>;
  /** The destination is no longer delivered here: what was opened to reach it is closed. */
  release(destinationId: string): Promise<void>;
  close(): Promise<void>;
}

/** What a courier reads: the store's reads past a cursor, and the destination as it stands. */
export type CourierReads = Pick<DestinationStore, 'get' | 'read' | 'countPast' | 'oldestPast'>;

/** A courier on the calling thread: the delivery process runs one, and tests may. */
export class LocalCourier implements Courier {
  /** One sender per destination, kept while it is delivered here (a kept-alive connection, a pool). */
  private readonly senders = new Map<string, { sender: DestinationSender; config: string }>();
  /** Files made and planned, kept for the turn that writes them (file-turn.ts). */
  private readonly made: MadeFiles = new Map();
  /** Files being made of what other destinations read, before they are due (file-turn.ts). */
  private readonly feeds = new FileFeeds();

  constructor(
    private readonly reads: CourierReads,
    private readonly senderFor: (d: CourierDestination) => DestinationSender,
    private readonly clock: () => number = Date.now,
  ) {}

  async next(d: CourierDestination, after: number, upTo: number, signal: AbortSignal): Promise<CourierTurn> {
    const sender = this.sender(d);
    if (writesFiles(sender)) {
      if (!(await this.owed(d))) return { through: after, batches: 0, events: 0, failure: null };
      return fileTurn(this.reads, sender, d, after, upTo, this.clock, signal, this.made, this.feeds);
    }
    const began = this.clock();
    const turn: CourierTurn = { through: after, batches: 0, events: 0, failure: null };
    while (turn.through < upTo && !signal.aborted) {
      let plan: ReturnType<typeof planBatch>;
      try {
        if (!(await this.owed(d))) return turn;
        plan = planBatch(d, await this.reads.read(d.projectId, turn.through, upTo, BATCH_EVENTS));
        // Taking every event, the batch is every event of the project in its range, already JSON: the project's files being made take it too.
        if (takesEvery(d)) this.feeds.feed(d.projectId, turn.through, plan.through, plan.events, plan.eventJson, plan.sizes, this.clock());
      } catch (e) {
        // What was delivered stays delivered; the next turn finds the store away, and says so.
        if (turn.through > after) return turn;
        throw e;
      }
      if (plan.events.length > 0) {
        const outcome = await sender.send(
          { destinationId: d.id, projectId: d.projectId, batchId: batchId(d.id, d.generation, turn.through, plan.through), events: plan.events, eventJson: plan.eventJson },
          signal,
        );
        if (!outcome.ok) return { ...turn, failure: outcome };
        turn.batches++;
        turn.events += plan.events.length;
      }
      turn.through = plan.through;
      if (this.clock() - began >= TURN_MS) break;
    }
    return turn;
  }

  async lag(d: CourierDestination, after: number, upTo: number, cap: number): Promise<CourierLag> {
    const events = await this.reads.countPast(d, after, upTo, cap);
    return { events, oldestAt: events === 0 ? null : await this.reads.oldestPast(d, after, upTo) };
  }

  /**
   * Whether the destination is still to be sent these batches: not deleted
   * (its project neither), not paused, not replayed. Asked before each batch
   * is read, so that none is read after such a change commits, even within
   * a turn; the Deliverer sees the change when the turn ends.
   */
  private async owed(d: CourierDestination): Promise<boolean> {
    const now = await this.reads.get(d.id);
    return now !== null && !now.paused && now.generation === d.generation;
  }

  /** The destination's sender, made again when its config changed (a secret rotated). */
  private sender(d: CourierDestination): DestinationSender {
    const config = JSON.stringify(d.config);
    const kept = this.senders.get(d.id);
    if (kept !== undefined && kept.config === config) return kept.sender;
    if (kept !== undefined) void kept.sender.close().catch(() => undefined);
    // A file made for the old config (another format, another bucket) is made again.
    this.made.delete(d.id);
    this.feeds.drop(d.id);
    const sender = this.senderFor(d);
    this.senders.set(d.id, { sender, config });
    return sender;
  }

  async release(destinationId: string): Promise<void> {
    const kept = this.senders.get(destinationId);
    this.senders.delete(destinationId);
    this.made.delete(destinationId);
    this.feeds.drop(destinationId);
    await kept?.sender.close();
  }

  async close(): Promise<void> {
    await Promise.all([...this.senders.keys()].map((id) => this.release(id).catch(() => undefined)));
  }
}
