import type { Courier, CourierDestination, CourierLag, CourierTurn } from './courier.js';

/** To the delivery process. */
export type CourierRequest =
  | { id: number; op: 'next'; d: CourierDestination; after: number; upTo: number }
  | { id: number; op: 'lag'; d: CourierDestination; after: number; upTo: number; cap: number }
  | { id: number; op: 'release'; destinationId: string }
  | { id: number; op: 'abort'; target: number };

/** From the delivery process: what a request came to, or the message of what failed. */
export type CourierReply = { id: number } & ({ result: unknown } | { failed: string });

/** The slice of a child process (or worker thread) the courier uses (a seam: tests may give a fake). */
export interface CourierPort {
  postMessage(message: unknown): void;
  on(event: 'message', listener: (message: unknown) => void): unknown;
  on(event: 'error' | 'exit', listener: (value: unknown) => void): unknown;
  terminate(): Promise<number>;
}

/** A delivery process that ends within this long of its start died young: the next one waits before it starts. */
export const YOUNG_DEATH_MS = 60_000;
/** How long after the first young death the next process starts; doubled after each young death since, up to RESTART_MOST_MS. */
export const RESTART_FIRST_MS = 1_000;
export const RESTART_MOST_MS = 60_000;

/** What a remote courier is told of, besides its requests: tests give a clock. */
export interface RemoteCourierOptions {
  clock?: () => number;
  /** The delivery process stopped on its own (not closed): why, for the log. */
  died?: (why: string) => void;
}

interface Waiting {
  resolve: (value: unknown) => void;
  reject: (e: Error) => void;
}

/**
 * A courier whose work runs elsewhere (serveCourier's side): in a server,
 * the delivery process (cli/delivery-process.ts). It starts at the first
 * request, so a server without destinations has none; if it dies, every
 * request in flight fails (the Deliverer reads the same batch again after a
 * pause) and the next request starts another.
 */
export class RemoteCourier implements Courier {
  private remote: CourierPort | null = null;
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 0;

  private closed = false;
  private startedAt = 0;
  /** Deaths in a row within YOUNG_DEATH_MS of their start, and until when no process starts after the last. */
  private youngDeaths = 0;
  private notBefore = 0;
  private lastDeath = '';

  /**
   * A process that dies young (it cannot open the store, a destination
   * crashes it at once) is started again only after a wait that doubles
   * with each such death, so a fault that recurs costs a start a minute at
   * most rather than one per destination a second; requests meanwhile fail
   * with why it stopped.
   */
  constructor(
    private readonly start: () => CourierPort,
    private readonly options: RemoteCourierOptions = {},
  ) {}

  next(d: CourierDestination, after: number, upTo: number, signal: AbortSignal): Promise<CourierTurn> {
    return this.ask({ op: 'next', d: plain(d), after, upTo }, signal) as Promise<CourierTurn>;
  }

  lag(d: CourierDestination, after: number, upTo: number, cap: number): Promise<CourierLag> {
    return this.ask({ op: 'lag', d: plain(d), after, upTo, cap }) as Promise<CourierLag>;
  }

  async release(destinationId: string): Promise<void> {
    if (this.remote === null) return;
    await this.ask({ op: 'release', destinationId });
  }

  /** Ends the delivery process: senders it held close with it (their sockets and pools go with it). */
  async close(): Promise<void> {
    this.closed = true;
    const t = this.remote;
    this.remote = null;
    this.failAll(new Error('Delivery stopped.'));
    await t?.terminate();
  }

  private ask(req: DistributiveOmit<CourierRequest, 'id'>, signal?: AbortSignal): Promise<unknown> {
    let remote: CourierPort;
    try {
      remote = this.running();
    } catch (e) {
      return Promise.reject(e as Error);
    }
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      // The other side gives up the send and answers; the answer settles the promise.
      const abort = () => {
        if (this.remote === remote) remote.postMessage({ id: this.nextId++, op: 'abort', target: id } satisfies CourierRequest);
      };
      // The signal outlives the request (a Deliverer's lasts as long as it delivers): a listener left on
      // it piles up, one a turn, and each new one is checked against all those before it (40,000 after
      // minutes of a receiver that says Retry-After: 0 cost delivery a core).
      const settled = () => signal?.removeEventListener('abort', abort);
      this.waiting.set(id, {
        resolve: (v) => {
          settled();
          resolve(v);
        },
        reject: (e) => {
          settled();
          reject(e);
        },
      });
      remote.postMessage({ ...req, id } as CourierRequest);
      if (signal?.aborted) abort();
      else signal?.addEventListener('abort', abort, { once: true });
    });
  }

  private running(): CourierPort {
    if (this.remote !== null) return this.remote;
    if (this.closed) throw new Error('Delivery stopped.');
    const now = this.now();
    if (now < this.notBefore) throw new Error(`${this.lastDeath} It is started again in ${Math.ceil((this.notBefore - now) / 1000)} s.`);
    this.startedAt = now;
    const t = this.start();
    t.on('message', (m) => {
      const reply = m as CourierReply;
      const w = this.waiting.get(reply.id);
      if (w === undefined) return;
      this.waiting.delete(reply.id);
      if ('failed' in reply) w.reject(new Error(reply.failed));
      else w.resolve(reply.result);
    });
    const died = (why: unknown) => {
      if (this.remote !== t) return;
      this.remote = null;
      const message = `The delivery process stopped (${why instanceof Error ? why.message : `exit code ${String(why)}`}).`;
      const at = this.now();
      this.youngDeaths = at - this.startedAt < YOUNG_DEATH_MS ? this.youngDeaths + 1 : 0;
      this.notBefore = this.youngDeaths === 0 ? 0 : at + Math.min(RESTART_MOST_MS, RESTART_FIRST_MS * 2 ** (this.youngDeaths - 1));
      this.lastDeath = message;
      this.options.died?.(message);
      this.failAll(new Error(message));
    };
    t.on('error', died);
    t.on('exit', died);
    this.remote = t;
    return t;
  }

  private now(): number {
    return (this.options.clock ?? Date.now)();
  }

  private failAll(e: Error): void {
    const all = [...this.waiting.values()];
    this.waiting.clear();
    for (const w of all) w.reject(e);
  }
}

/** Omit over each member of a union (Omit of a union keeps only the members' common keys). */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** Only the fields delivery needs: a record may carry more, and every field is copied across. */
function plain(d: CourierDestination): CourierDestination {
  return { id: d.id, projectId: d.projectId, kind: d.kind, config: d.config, sources: d.sources, events: d.events, generation: d.generation, file: d.file };
}

/** The slice of the channel to the server (a process's IPC, a thread's parent port) the delivery side uses. */
export interface CourierParent {
  postMessage(message: unknown): void;
  on(event: 'message', listener: (message: unknown) => void): unknown;
}

/** The delivery side: answers each request with `courier`, several at once (a slow receiver holds up only its own destination). */
export function serveCourier(parent: CourierParent, courier: Courier): void {
  const sending = new Map<number, AbortController>();
  const answer = async (id: number, work: () => Promise<unknown>): Promise<void> => {
    try {
      parent.postMessage({ id, result: await work() } satisfies CourierReply);
    } catch (e) {
      parent.postMessage({ id, failed: e instanceof Error ? e.message : String(e) } satisfies CourierReply);
    }
  };
  parent.on('message', (m) => {
    const req = m as CourierRequest;
    switch (req.op) {
      case 'next': {
        const stop = new AbortController();
        sending.set(req.id, stop);
        void answer(req.id, () => courier.next(req.d, req.after, req.upTo, stop.signal)).finally(() => sending.delete(req.id));
        return;
      }
      case 'lag':
        void answer(req.id, () => courier.lag(req.d, req.after, req.upTo, req.cap));
        return;
      case 'release':
        void answer(req.id, () => courier.release(req.destinationId));
        return;
      case 'abort':
        sending.get(req.target)?.abort();
        return;
      default:
        unknownRequest(req);
    }
  });
}

function unknownRequest(req: never): never {
  throw new Error(`Not a courier request: ${JSON.stringify(req)}`);
}
