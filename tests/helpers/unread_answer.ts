/**
 * A GET whose answer the client never reads past its head: the request is
 * sent from any loopback source address (127.0.0.x plays another client),
 * the first bytes are taken (so the test knows the answer started), then the
 * socket is paused, and the server's writes back up. For the bounds on what
 * a client that does not read may hold (gateway walks, connection slots).
 * node:net binds the source address, which Deno.connect cannot.
 */
import * as net from "node:net";

export interface UnreadAnswer {
  /** The status line's code, once the head arrived. */
  readonly status: Promise<number>;
  /** Whether the server closed the connection (or reset it). */
  readonly closed: boolean;
  /** Bytes taken so far. */
  readonly received: number;
  /**
   * Reads on until the server closes the connection (a paused socket does not
   * see the close): the bytes received in all. Never settles if the server keeps it.
   */
  readToClose(): Promise<number>;
  close(): void;
}

export async function requestUnread(
  options: { port: number; from?: string; path: string; headers?: string[] },
): Promise<UnreadAnswer> {
  const socket = net.connect({
    host: "127.0.0.1",
    port: options.port,
    localAddress: options.from ?? "127.0.0.1",
  });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  let closed = false;
  let received = 0;
  socket.on("close", () => closed = true);
  socket.on("error", () => {}); // a reset shows as the close above
  const status = new Promise<number>((resolve, reject) => {
    socket.once("data", (chunk: Uint8Array) => {
      received += chunk.length;
      socket.pause();
      socket.on("data", (more: Uint8Array) => received += more.length);
      const line = new TextDecoder().decode(chunk.subarray(0, 64));
      const match = /^HTTP\/1\.1 (\d{3})/.exec(line);
      if (match) resolve(Number(match[1]));
      else reject(new Error(`not an HTTP answer: ${line}`));
    });
    socket.once("close", () => reject(new Error("closed before an answer")));
  });
  status.catch(() => {}); // read by the test when it asks
  const head = [`GET ${options.path} HTTP/1.1`, "Host: 127.0.0.1", ...(options.headers ?? [])];
  socket.write(new TextEncoder().encode([...head, "", ""].join("\r\n")));
  return {
    status,
    get closed() {
      return closed;
    },
    get received() {
      return received;
    },
    readToClose: () =>
      new Promise<number>((resolve) => {
        if (closed) return resolve(received);
        socket.once("close", () => resolve(received));
        socket.resume();
      }),
    close: () => socket.destroy(),
  };
}
