import type { Socket } from 'node:net';

/** How long a refused request's connection keeps reading (and dropping) what its client still sends. */
export const LINGER_MS = 5_000;

/**
 * Makes the close that follows an answer with `Connection: close` a lingering one, for a request whose body was not
 * read (an upload refused before its first byte). Node would destroy the socket as soon as the answer is flushed; the
 * client, still sending, then gets a reset that throws the answer away, and fetch reports EPIPE instead of the 413.
 * Here the server half-closes after the answer and drops incoming bytes until the client closes or `lingerMs` has
 * passed, so the client reads the answer first. Only the server's own `destroySoon` call changes.
 */
export function lingerOnClose(socket: Socket, lingerMs = LINGER_MS): void {
  socket.destroySoon = function lingeringClose(this: Socket): void {
    this.end();
    this.resume();
    const timer = setTimeout(() => this.destroy(), lingerMs);
    timer.unref();
    this.once('end', () => this.destroy());
    this.once('close', () => clearTimeout(timer));
  };
}
