import type { Socket } from 'node:net';

/** How long a connection closed with its request body unread keeps reading, at most. */
export const LINGER_MS = 2000;

/**
 * Closes connections as nginx's lingering_close does. Node answers a request
 * it closes the connection after (Connection: close) and then closes the
 * socket at once; when the client is still sending the body (a request
 * refused before its body was read), the kernel answers the unread bytes
 * with a reset, and a reset makes the client's kernel throw away the answer
 * it has not read yet: the client sees a network error instead of its 503
 * or 413. So the socket first sends FIN after the answer, keeps reading and
 * discarding what the client still sends, and closes when the client does,
 * or after LINGER_MS.
 */
export function lingerOnClose(socket: Socket, lingerMs = LINGER_MS): void {
  socket.destroySoon = function destroySoon(this: Socket) {
    if (this.destroyed) return;
    if (this.writable) this.end();
    const timer = setTimeout(() => this.destroy(), lingerMs);
    timer.unref();
    this.once('end', () => this.destroy());
    this.once('close', () => clearTimeout(timer));
    this.resume();
  };
}
