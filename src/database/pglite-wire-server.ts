import { createServer, type Server, type Socket } from 'node:net';
import type { PGlite } from '@electric-sql/pglite';

const SSL_REQUEST_CODE = 80877103;
const GSSENC_REQUEST_CODE = 80877104;
const CANCEL_REQUEST_CODE = 80877102;
const PROTOCOL_3 = 196608;

/** Message types after which the client waits for the server: the end of one atomic group. */
const GROUP_END = new Set(['S', 'Q', 'H']);
const TERMINATE = 'X';
/** Backend NotificationResponse: what a NOTIFY delivers to the session's listeners. */
const NOTIFICATION = 0x41; // 'A'

/** `LISTEN chan` / `UNLISTEN chan` / `UNLISTEN *` as one statement; unquoted names fold to lower case as in PostgreSQL. */
const LISTEN_STATEMENT = /^\s*(UN)?LISTEN\s+(?:"((?:[^"]|"")+)"|([A-Za-z_][\w$]*)|(\*))\s*;?\s*$/i;

/** The SQL text of a simple Query ('Q') or a Parse ('P') message, or undefined for any other message. */
function sqlTextOf(message: Buffer): string | undefined {
  const type = String.fromCharCode(message[0]);
  if (type === 'Q') return message.toString('utf8', 5, message.indexOf(0, 5));
  if (type === 'P') {
    const nameEnd = message.indexOf(0, 5); // statement name, then the query text
    return message.toString('utf8', nameEnd + 1, message.indexOf(0, nameEnd + 1));
  }
  return undefined;
}

/**
 * One PGlite has one session, so client connections must take turns. The owner keeps the session
 * for as long as it holds a transaction open; otherwise turns change after each complete group.
 */
class SessionTurns {
  private owner: number | undefined;
  private readonly waiting: { connection: number; grant: () => void }[] = [];

  async acquire(connection: number): Promise<void> {
    if (this.owner === undefined || this.owner === connection) {
      this.owner = connection;
      return;
    }
    await new Promise<void>((grant) => this.waiting.push({ connection, grant }));
  }

  release(connection: number): void {
    if (this.owner !== connection) return;
    const next = this.waiting.shift();
    this.owner = next?.connection;
    next?.grant();
  }

  holds(connection: number): boolean {
    return this.owner === connection;
  }
}

/**
 * Serves a PGlite instance over the PostgreSQL wire protocol on loopback, for the app's ordinary
 * `pg` pools, TypeORM and BullMQ.
 *
 * Why not pglite-socket's server: it queues each protocol message on its own, so with several
 * connections the Parse of one can land between the Parse and Bind of another and a query runs
 * with the wrong statement or parameters. Here a client's whole group (up to Sync / Query / Flush)
 * runs as one unit, and an open transaction keeps the session until it ends.
 *
 * LISTEN/NOTIFY: the one session receives every notification, inside the reply of whichever
 * connection's group ran when it fired (usually the NOTIFY's own). BullMQ's PostgreSQL backend parks
 * idle workers on a LISTEN connection and, after an error, for up to an hour; a notification sent back
 * to the notifier instead leaves such a worker asleep with jobs waiting. So the server remembers which
 * connection LISTENs on which channel and hands each notification to those connections.
 */
export class PgliteWireServer {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private readonly turns = new SessionTurns();
  private nextConnectionId = 1;
  /** Channel → the sockets of the connections that LISTEN on it. */
  private readonly listeners = new Map<string, Set<Socket>>();

  constructor(private readonly db: PGlite) {}

  async listen(host: string, port: number): Promise<string> {
    this.server = createServer((socket) => this.accept(socket));
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, host, () => resolve());
    });
    const address = this.server.address() as { address: string; port: number };
    return `${address.address}:${address.port}`;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private accept(socket: Socket): void {
    const connection = this.nextConnectionId++;
    this.sockets.add(socket);
    socket.setNoDelay(true);
    let buffer: Buffer = Buffer.alloc(0);
    let started = false;
    let group: Buffer[] = [];
    // Groups of one connection run in order; a promise chain keeps them so.
    let chain: Promise<void> = Promise.resolve();
    const run = (messages: Buffer, atomic: boolean) => {
      chain = chain
        .then(() => this.execute(connection, socket, messages, atomic))
        .catch(() => {
          socket.destroy();
        });
    };

    // A large message (an upload's 15 MB parameter) arrives in hundreds of socket chunks: they wait in
    // `pending` until the message is complete and are joined once. Joining every chunk onto what came
    // before copied the whole message again per chunk (quadratic: 6 s of event loop for 15 MB).
    const pending: Buffer[] = [];
    let pendingBytes = 0;
    let needed = 0;
    socket.on('data', (data: Buffer) => {
      if (needed > 0 && buffer.length + pendingBytes + data.length < needed) {
        pending.push(data);
        pendingBytes += data.length;
        return;
      }
      buffer = buffer.length === 0 && pending.length === 0 ? data : Buffer.concat([buffer, ...pending, data]);
      pending.length = 0;
      pendingBytes = 0;
      needed = 0;
      for (;;) {
        if (!started) {
          if (buffer.length < 8) return;
          const length = buffer.readInt32BE(0);
          if (buffer.length < length) {
            needed = length;
            return;
          }
          const code = buffer.readInt32BE(4);
          const message = buffer.subarray(0, length);
          buffer = buffer.subarray(length);
          if (code === SSL_REQUEST_CODE || code === GSSENC_REQUEST_CODE) {
            socket.write('N');
            continue;
          }
          if (code === CANCEL_REQUEST_CODE) {
            socket.end();
            return;
          }
          if (code !== PROTOCOL_3) {
            socket.destroy();
            return;
          }
          started = true;
          run(Buffer.from(message), false);
          continue;
        }
        if (buffer.length < 5) return;
        const length = 1 + buffer.readInt32BE(1);
        if (buffer.length < length) {
          needed = length;
          return;
        }
        const type = String.fromCharCode(buffer[0]);
        const message = Buffer.from(buffer.subarray(0, length));
        buffer = buffer.subarray(length);
        if (type === TERMINATE) {
          socket.end();
          return;
        }
        group.push(message);
        this.noteListen(socket, message);
        if (GROUP_END.has(type)) {
          const messages = group.length === 1 ? group[0] : Buffer.concat(group);
          group = [];
          run(messages, true);
        }
      }
    });

    const cleanup = () => {
      if (!this.sockets.delete(socket)) return;
      for (const sockets of this.listeners.values()) sockets.delete(socket);
      chain = chain.then(() => this.abandon(connection));
    };
    socket.on('close', cleanup);
    socket.on('error', () => socket.destroy());
  }

  private async execute(connection: number, socket: Socket, messages: Buffer, atomic: boolean): Promise<void> {
    await this.turns.acquire(connection);
    try {
      const replies: Uint8Array[] = [];
      await this.db.runExclusive(() =>
        this.db.execProtocolRawStream(new Uint8Array(messages), { onRawData: (data) => replies.push(data.slice()) }),
      );
      if (replies.length > 0) {
        const reply = this.deliverNotifications(socket, Buffer.concat(replies));
        if (socket.writable && reply.length > 0) socket.write(reply);
      }
    } finally {
      if (!atomic || !this.db.isInTransaction()) this.turns.release(connection);
    }
  }

  /** Records a LISTEN / UNLISTEN statement of this connection (it runs on the shared session as well). */
  private noteListen(socket: Socket, message: Buffer): void {
    const sql = sqlTextOf(message);
    // BullMQ's statements start with `--` comment lines; a LISTEN has no strings that could hide one.
    const match = sql === undefined ? null : LISTEN_STATEMENT.exec(sql.replace(/--[^\n]*|\/\*[\s\S]*?\*\//g, ' '));
    if (!match) return;
    const [, un, quoted, bare, star] = match;
    const channel = quoted !== undefined ? quoted.replace(/""/g, '"') : bare?.toLowerCase();
    if (!un) {
      if (!this.listeners.has(channel!)) this.listeners.set(channel!, new Set());
      this.listeners.get(channel!)!.add(socket);
    } else if (star) {
      for (const sockets of this.listeners.values()) sockets.delete(socket);
    } else {
      this.listeners.get(channel!)?.delete(socket);
    }
  }

  /**
   * Takes the NotificationResponse messages out of a reply, sends each to the connections listening on
   * its channel (the protocol allows them between any two messages), and returns the rest of the reply.
   */
  private deliverNotifications(socket: Socket, reply: Buffer): Buffer {
    if (!reply.includes(NOTIFICATION)) return reply;
    const kept: Buffer[] = [];
    let offset = 0;
    while (offset + 5 <= reply.length) {
      const end = offset + 1 + reply.readInt32BE(offset + 1);
      const message = reply.subarray(offset, end);
      if (reply[offset] === NOTIFICATION) {
        const channelStart = offset + 9; // type, length, notifying backend's pid
        const channel = reply.toString('utf8', channelStart, reply.indexOf(0, channelStart));
        for (const listener of this.listeners.get(channel) ?? []) {
          if (listener === socket) kept.push(message);
          else if (listener.writable) listener.write(message);
        }
      } else {
        kept.push(message);
      }
      offset = end;
    }
    if (offset < reply.length) kept.push(reply.subarray(offset));
    return Buffer.concat(kept);
  }

  /** A client that vanished mid-transaction must not leave the shared session inside it. */
  private async abandon(connection: number): Promise<void> {
    if (!this.turns.holds(connection)) return;
    try {
      if (this.db.isInTransaction()) await this.db.runExclusive(() => this.db.exec('ROLLBACK'));
    } finally {
      this.turns.release(connection);
    }
  }
}
