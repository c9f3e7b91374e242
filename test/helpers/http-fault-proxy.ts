import http from 'node:http';
import type net from 'node:net';

/**
 * What the proxy does with one request:
 * - `pass`: forwards it and passes the answer back;
 * - `lose-answer`: forwards it, lets the server answer in full (so whatever it
 *   stored is stored), then cuts the client's connection: the client never
 *   learns the outcome and must retry;
 * - `reset`: resets the connection before the server sees anything;
 * - `{ status, retryAfter }`: answers itself (503 or 429, say), the server never
 *   sees the request.
 */
export type Fault = 'pass' | 'lose-answer' | 'reset' | { status: number; retryAfter?: string };

/**
 * An HTTP hop in front of a real Inlet server that injects the faults a client
 * meets on real networks, one per request, in the order a test lists them.
 */
export class FaultProxy {
  /** Faults for the next requests, first first; `pass` once empty. */
  readonly faults: Fault[] = [];
  /** Every request's fault, and the status the server answered (when it was asked). */
  readonly log: { fault: Fault; upstream: number | null }[] = [];
  /** When set, every request is reset, as a server that is down. */
  down = false;
  private readonly sockets = new Set<net.Socket>();

  private constructor(
    private readonly server: http.Server,
    private readonly target: URL,
  ) {}

  static async start(targetUrl: string): Promise<FaultProxy> {
    let proxy: FaultProxy | undefined;
    const server = http.createServer((req, res) => proxy!.handle(req, res));
    proxy = new FaultProxy(server, new URL(targetUrl));
    server.on('connection', (s) => {
      proxy!.sockets.add(s);
      s.on('close', () => proxy!.sockets.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
  }

  /** Requests the server itself answered with this status. */
  upstreamCount(status: number): number {
    return this.log.filter((l) => l.upstream === status).length;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const fault: Fault = this.down ? 'reset' : (this.faults.shift() ?? 'pass');
    const entry = { fault, upstream: null as number | null };
    this.log.push(entry);
    if (fault === 'reset') {
      req.socket.resetAndDestroy();
      return;
    }
    if (typeof fault === 'object') {
      req.resume();
      req.on('end', () => {
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (fault.retryAfter !== undefined) headers['retry-after'] = fault.retryAfter;
        res.writeHead(fault.status, headers).end(JSON.stringify({ error: { code: 'injected', message: 'injected by the test proxy' } }));
      });
      return;
    }
    const upstream = http.request(
      { host: this.target.hostname, port: this.target.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        entry.upstream = answer.statusCode ?? null;
        if (fault === 'lose-answer') {
          // Read the whole answer first: the server has finished with the request.
          answer.resume();
          answer.on('end', () => req.socket.destroy());
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => req.socket.destroy());
    req.pipe(upstream);
  }
}
