import net from 'node:net';

/** Why a port could not be bound: its errno code (EADDRINUSE, EACCES, EADDRNOTAVAIL…) and error. */
export interface PortRefusal {
  code: string;
  error: Error;
}

/** Binds `port` on `host` and lets it go at once; null when it could be bound, else why not. */
export function probePort(port: number, host: string): Promise<PortRefusal | null> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', (e: NodeJS.ErrnoException) => resolve({ code: e.code ?? 'UNKNOWN', error: e }));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(null)));
  });
}

/**
 * The first port after `port` (at most `tries` of them, none of `avoid`) that `host` can bind
 * now, to suggest in place of one taken; null when none of them is free.
 */
export async function nextFreePort(port: number, host: string, avoid: Set<number>, tries = 50): Promise<number | null> {
  for (let p = port + 1; p <= Math.min(65535, port + tries); p++) {
    if (avoid.has(p)) continue;
    if ((await probePort(p, host)) === null) return p;
  }
  return null;
}
