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

  constructor(private readonly start: () => CourierPort) {}

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
    const t = this.remote;
    this.remote = null;
    this.failAll(new Error('Delivery stopped.'));
    await t?.terminate();
  }

  private ask(req: DistributiveOmit<CourierRequest, 'id'>, signal?: AbortSignal): Promise<unknown> {
    const remote = this.running();
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
      this.failAll(new Error(`The delivery process stopped (${why instanceof Error ? why.message : `exit code ${String(why)}`}).`));
    };
    t.on('error', died);
    t.on('exit', died);
    this.remote = t;
    return t;
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
