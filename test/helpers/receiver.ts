import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A webhook request as the receiver got it. */
export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  json: { destination_id: string; batch_id: string; events: { id: string; source_id: string; project_id: string; event: string; [k: string]: unknown }[] };
}

/** How the receiver answers a request: a status (with headers), or not until `release` is called. */
export type Answer = { status: number; headers?: Record<string, string> } | { hold: true };

/**
 * A real local webhook receiver: records every request, answers as `answer`
 * says (200 at once unless told otherwise), and lets a test wait for the
 * request it means (`until`) rather than for a time.
 */
export class Receiver {
  readonly requests: Received[] = [];
  answer: (r: Received, n: number) => Answer = () => ({ status: 200 });
  private readonly held: http.ServerResponse[] = [];
  private readonly arrivals = new EventEmitter();
  private readonly server: http.Server;

  private constructor() {
    this.arrivals.setMaxListeners(100);
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const r: Received = { headers: req.headers, body, json: JSON.parse(body) as Received['json'] };
        const a = this.answer(r, this.requests.length);
        this.requests.push(r);
        if ('hold' in a) this.held.push(res);
        else res.writeHead(a.status, a.headers).end();
        this.arrivals.emit('request', r);
      });
    });
  }

  static async start(): Promise<Receiver> {
    const r = new Receiver();
    await new Promise<void>((resolve) => r.server.listen(0, '127.0.0.1', resolve));
    return r;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  /** Every event received, in the order received, repeats included. */
  get events(): Received['json']['events'] {
    return this.requests.flatMap((r) => r.json.events);
  }

  /** Event ids received, each once, in the order first received. */
  get distinctIds(): string[] {
    return [...new Set(this.events.map((e) => e.id))];
  }

  /** Resolves once `done` holds, looking again at each request that arrives. */
  until(done: () => boolean): Promise<void> {
    if (done()) return Promise.resolve();
    return new Promise((resolve) => {
      const look = () => {
        if (!done()) return;
        this.arrivals.off('request', look);
        resolve();
      };
      this.arrivals.on('request', look);
    });
  }

  /** Answers every held request with `status`. */
  release(status = 200): void {
    for (const res of this.held.splice(0)) res.writeHead(status).end();
  }

  async close(): Promise<void> {
    this.release(503);
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
