/** Ports nothing listens on right now (the system's picks), for servers that need a fixed one. */

/** `count` distinct free ports of 127.0.0.1, all held until picked so none repeats. */
export function freePorts(count: number): number[] {
  const listeners = Array.from(
    { length: count },
    () => Deno.listen({ hostname: "127.0.0.1", port: 0 }),
  );
  const ports = listeners.map((listener) => (listener.addr as Deno.NetAddr).port);
  for (const listener of listeners) listener.close();
  return ports;
}

/** One free port of 127.0.0.1. */
export function freePort(): number {
  return freePorts(1)[0];
}
