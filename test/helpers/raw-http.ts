import { type Socket, connect } from 'node:net';

/** One HTTP/1.1 answer as read off the wire. */
export interface RawAnswer {
  status: number;
  /** Header names in lower case. */
  headers: Map<string, string>;
  body: string;
  /** The parsed body when it is JSON. */
  json: any;
}

/** Parses the first complete answer in `text`, or null while it is incomplete. */
export function parseAnswer(text: string): RawAnswer | null {
  const end = text.indexOf('\r\n\r\n');
  if (end === -1) return null;
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const headers = new Map<string, string>();
  for (const l of lines) headers.set(l.slice(0, l.indexOf(':')).trim().toLowerCase(), l.slice(l.indexOf(':') + 1).trim());
  const length = Number(headers.get('content-length') ?? 0);
  const rest = Buffer.from(text.slice(end + 4));
  if (rest.length < length) return null;
  const body = rest.subarray(0, length).toString();
  let json: unknown = null;
  try {
    json = JSON.parse(body);
  } catch {
    // not JSON: left null
  }
  return { status: Number(statusLine!.split(' ')[1]), headers, body, json };
}

/** A raw connection: write what you like, wait for the first whole answer. */
export interface RawConnection {
  socket: Socket;
  /** Resolves with the first whole answer; rejects if the connection closes before one arrived. */
  answer: Promise<RawAnswer>;
  /** Resolves once the connection is closed. */
  closed: Promise<void>;
}

/** Opens a connection to 127.0.0.1:`port` (from `localAddress`, another 127.x address, if given) and writes `text` at once. */
export function rawRequest(port: number, text: string | Buffer, localAddress?: string): RawConnection {
  const socket = connect({ port, host: '127.0.0.1', localAddress });
  let received = '';
  const closed = new Promise<void>((r) => socket.on('close', () => r()));
  const answer = new Promise<RawAnswer>((resolve, reject) => {
    socket.on('data', (d: Buffer) => {
      received += d.toString('latin1');
      const a = parseAnswer(received);
      if (a !== null) resolve(a);
    });
    // A reset after the answer arrived is fine; before, it is the test's failure.
    socket.on('error', () => undefined);
    socket.on('close', () => reject(new Error(`connection closed before a whole answer; got: ${JSON.stringify(received.slice(0, 300))}`)));
  });
  answer.catch(() => undefined);
  socket.write(text);
  return { socket, answer, closed };
}

/** The port an app listens on, from the address `listen` returned. */
export function portOf(address: string): number {
  return Number(new URL(address).port);
}
