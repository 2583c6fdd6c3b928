/**
 * A TCP proxy on 127.0.0.1 in front of a server that cuts answers off, as a
 * dropped connection would: on each connection it forwards the server's bytes
 * until `cutAfterBodyBytes` bytes past the end of the first answer's head,
 * then closes both sides, for at most `cuts` connections; the others pass
 * untouched. It stops by itself when closed and touches nothing but its own
 * connections.
 */

export interface CuttingProxyOptions {
  /** Where the server listens. */
  port: number;
  /** Bytes of body forwarded on a connection before it is cut (0: right after the head). */
  cutAfterBodyBytes: number;
  /** Connections cut at most; later ones pass whole. */
  cuts: number;
}

export interface CuttingProxy extends AsyncDisposable {
  url: string;
  /** Connections cut so far. */
  readonly cutsMade: number;
}

const HEAD_END = new TextEncoder().encode("\r\n\r\n");

export function startCuttingProxy(options: CuttingProxyOptions): CuttingProxy {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const open = new Set<Deno.Conn>();
  const pumps: Promise<void>[] = [];
  let cutsMade = 0;
  const serve = (async () => {
    for await (const client of listener) {
      pumps.push(relay(client));
    }
  })();

  async function relay(client: Deno.Conn): Promise<void> {
    const server = await Deno.connect({ hostname: "127.0.0.1", port: options.port });
    open.add(client).add(server);
    const closeBoth = () => {
      for (const conn of [client, server]) {
        if (open.delete(conn)) conn.close();
      }
    };
    const cutHere = cutsMade < options.cuts;
    if (cutHere) cutsMade++;
    const up = copy(client, server).catch(() => {});
    const down = (cutHere ? copyThenCut(server, client) : copy(server, client)).catch(() => {});
    await Promise.race([up, down]);
    closeBoth();
    await Promise.allSettled([up, down]);
  }

  async function copyThenCut(from: Deno.Conn, to: Deno.Conn): Promise<void> {
    const buffer = new Uint8Array(64 * 1024);
    const seen: number[] = [];
    /** Bytes that may still go, counted from the current chunk's start; null before the head ends. */
    let allowed: number | null = null;
    for (;;) {
      const n = await from.read(buffer);
      if (n === null) return;
      const chunk = buffer.subarray(0, n);
      if (allowed === null) {
        const end = headEnd(seen, chunk);
        if (end >= 0) allowed = end + options.cutAfterBodyBytes;
      }
      if (allowed !== null && chunk.length >= allowed) {
        // Up to the cut, then stop: relay() closes both sides.
        await writeAll(to, chunk.subarray(0, allowed));
        return;
      }
      if (allowed !== null) allowed -= chunk.length;
      await writeAll(to, chunk);
    }
  }

  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    get cutsMade() {
      return cutsMade;
    },
    async [Symbol.asyncDispose]() {
      listener.close();
      await serve.catch(() => {});
      for (const conn of open) conn.close();
      open.clear();
      await Promise.allSettled(pumps);
    },
  };
}

/**
 * Where in `chunk` the first head ends (the index just past its blank line),
 * looking across chunks through `seen` (the last bytes before it); -1 if not yet.
 */
function headEnd(seen: number[], chunk: Uint8Array): number {
  for (let i = 0; i < chunk.length; i++) {
    seen.push(chunk[i]);
    if (seen.length > HEAD_END.length) seen.shift();
    if (seen.length === HEAD_END.length && seen.every((b, j) => b === HEAD_END[j])) return i + 1;
  }
  return -1;
}

async function copy(from: Deno.Conn, to: Deno.Conn): Promise<void> {
  const buffer = new Uint8Array(64 * 1024);
  for (;;) {
    const n = await from.read(buffer);
    if (n === null) return;
    await writeAll(to, buffer.subarray(0, n));
  }
}

async function writeAll(to: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let written = 0;
  while (written < bytes.length) written += await to.write(bytes.subarray(written));
}
