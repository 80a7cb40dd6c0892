import { createServer, Socket, type Server } from 'node:net';

/**
 * A loopback TCP proxy in front of a dependency, so a test can cut the dependency off (every open
 * connection dropped, new ones refused) and bring it back, while the app keeps its configured URL.
 */
export class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async open(port = this.port): Promise<number> {
    if (this.server) return this.port;
    this.server = createServer((client) => {
      const upstream = new Socket();
      this.track(client);
      this.track(upstream);
      upstream.connect(this.targetPort, this.targetHost);
      client.pipe(upstream).pipe(client);
      const closeBoth = () => {
        client.destroy();
        upstream.destroy();
      };
      client.on('error', closeBoth);
      upstream.on('error', closeBoth);
      client.on('close', closeBoth);
      upstream.on('close', closeBoth);
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.port = (this.server!.address() as { port: number }).port;
    return this.port;
  }

  /** Refuses new connections and drops open ones: the dependency is "down". */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
  }
}
