import net from 'node:net';

/**
 * What the proxy does with traffic:
 * - `up`: passes bytes both ways, as a direct connection would;
 * - `hang`: accepts connections and swallows every byte, as a frozen server or
 *   a network partition does (nothing is refused, nothing is answered);
 * - `down`: cuts every open connection and resets every new one at once, as a
 *   stopped server's port does.
 */
export type ProxyMode = 'up' | 'hang' | 'down';

/**
 * A TCP hop in front of a real server (PostgreSQL, Redis) that a test can
 * stop, freeze and start again at the network level. The server behind it
 * keeps running, which matters because other test files share it: what the
 * service sees is the same as a stop (connections closed, new ones refused)
 * but the server's own shutdown messages (PostgreSQL's FATAL 57P01) are not
 * sent, so the service must cope with the harsher, silent variant.
 */
export class TcpProxy {
  private mode_: ProxyMode = 'up';
  private readonly sockets = new Set<net.Socket>();
  private readonly server: net.Server;
  /** Connections passed through to the target since the start. */
  accepted = 0;
  /** Connections reset because the proxy was down. */
  refused = 0;
  private trap: { marker: Buffer; when: 'before' | 'after'; sprung: () => void } | null = null;

  private constructor(
    private readonly target: { host: string; port: number },
    readonly port: number,
    server: net.Server,
  ) {
    this.server = server;
  }

  /** Listens on a free port of 127.0.0.1, in front of `target`. */
  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    let proxy: TcpProxy | undefined;
    const server = net.createServer((client) => proxy!.accept(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    proxy = new TcpProxy(target, (server.address() as net.AddressInfo).port, server);
    return proxy;
  }

  /** A proxy in front of the host and port a URL names (default port given for URLs without one). */
  static forUrl(url: string, defaultPort: number): Promise<TcpProxy> {
    const u = new URL(url);
    return TcpProxy.start({ host: u.hostname, port: Number(u.port || defaultPort) });
  }

  /** `url` with its host and port replaced by this proxy's. */
  urlThrough(url: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  get mode(): ProxyMode {
    return this.mode_;
  }

  /** Open sockets, both sides counted. */
  get open(): number {
    return this.sockets.size;
  }

  set(mode: ProxyMode): void {
    // A stopped server drops its connections; bytes swallowed while hanging
    // leave every stream that lived through it corrupt. Either way they end.
    if (mode === 'down' || (mode === 'up' && this.mode_ === 'hang')) this.cutAll();
    this.mode_ = mode;
  }

  /** Cuts every connection open now, without changing the mode. */
  cutAll(): void {
    for (const s of this.sockets) s.destroy();
  }

  /**
   * The next time a client sends bytes holding `marker`, cuts that connection:
   * `before` the bytes reach the server (it never sees them), or `after`
   * (the server gets them and then the end of the stream; the client never
   * hears back). With `COMMIT` this is a database lost at the worst moment.
   * Resolves once the proxy's connection to the server has closed as well.
   * With `after` that is the server ending the session, which it does only
   * after acting on every byte it got: whatever it did with them (a COMMIT
   * carried out) is final and visible by then, whereas the client's error
   * comes at once, while the server may still be committing. With `before`
   * it is at once: the server never gets the bytes to act on.
   */
  cutAt(marker: string, when: 'before' | 'after'): Promise<void> {
    return new Promise((sprung) => {
      this.trap = { marker: Buffer.from(marker), when, sprung };
    });
  }

  async close(): Promise<void> {
    this.cutAll();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    if (this.mode_ === 'down') {
      this.refused++;
      client.on('error', () => {});
      // A reset, so the client fails at once, as on a port nobody listens on.
      client.resetAndDestroy();
      return;
    }
    this.track(client);
    if (this.mode_ === 'hang') return;
    this.accepted++;
    const upstream = net.connect(this.target);
    this.track(upstream);
    // Set when the server is to get the last bytes and a clean end, not a cut.
    let draining = false;
    client.on('data', (d) => {
      const trap = this.trap;
      if (trap !== null && d.includes(trap.marker)) {
        this.trap = null;
        if (upstream.closed) trap.sprung();
        else upstream.once('close', () => trap.sprung());
        if (trap.when === 'after') {
          draining = true;
          upstream.end(d);
        } else {
          upstream.destroy();
        }
        client.destroy();
        return;
      }
      if (this.mode_ === 'up') upstream.write(d);
    });
    upstream.on('data', (d) => {
      if (this.mode_ === 'up' && !draining) client.write(d);
    });
    client.on('close', () => {
      if (!draining) upstream.destroy();
    });
    upstream.on('close', () => client.destroy());
  }

  private track(s: net.Socket): void {
    this.sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => this.sockets.delete(s));
  }
}
