/**
 * The runtime's floor, at the durability the service promises:
 *   GET  /f/<name>  Deno.open + stat + file.readable, per request
 *   GET  /l/<name>  the same file by the best read loop found: 1 MiB reads, one per
 *                   pull() of a byte stream (bench_reads.ts's ceiling)
 *   POST /u/<name>  request body piped into a new file, fsynced before answering
 * and its ceiling for small answers:
 *   GET  /m/<name>  the file's bytes from memory with the headers the service's
 *                   contract requires, as a clone of a response built once (the
 *                   fastest way we know to answer from a Deno.serve handler)
 * Started by scripts/bench.ts as its own process on 127.0.0.1.
 *
 *   deno run --allow-net=127.0.0.1 --allow-read=DIR --allow-write=DIR bare_deno.ts DIR
 */
const dir = Deno.args[0];
const fromMemory = new Map<string, Response>();

/** The headers the service sends with a piece, minus Content-Length (set by the HTTP layer). */
function pieceHeaders(name: string): [string, string][] {
  return [
    ["content-type", "application/octet-stream"],
    ["content-disposition", "inline"],
    ["cache-control", "public, max-age=3600"],
    ["etag", `"${name}"`],
    ["accept-ranges", "none"],
    ["x-service-piece-cid", name],
    ["x-service-source", "stage"],
    ["x-content-type-options", "nosniff"],
    ["content-security-policy", "sandbox"],
    ["access-control-allow-origin", "*"],
    ["access-control-expose-headers", "Content-Disposition, Content-Length, ETag"],
  ];
}

Deno.serve({
  hostname: "127.0.0.1",
  port: 0,
  onListen: ({ port }) => console.log(`Listening on http://127.0.0.1:${port}/`),
}, async (request) => {
  const { pathname } = new URL(request.url);
  const name = pathname.slice(3);
  if (!/^[a-z0-9]+$/.test(name)) return new Response("bad name", { status: 400 });
  if (request.method === "GET" && pathname.startsWith("/f/")) {
    const file = await Deno.open(`${dir}/${name}`);
    const { size } = await file.stat();
    return new Response(file.readable, { headers: { "content-length": String(size) } });
  }
  if (request.method === "GET" && pathname.startsWith("/l/")) {
    const file = await Deno.open(`${dir}/${name}`);
    const { size } = await file.stat();
    return new Response(readLoop(file, size), { headers: { "content-length": String(size) } });
  }
  if (request.method === "GET" && pathname.startsWith("/m/")) {
    let template = fromMemory.get(name);
    if (!template) {
      template = new Response(await Deno.readFile(`${dir}/${name}`), {
        headers: pieceHeaders(name),
      });
      fromMemory.set(name, template);
    }
    return template.clone();
  }
  if (request.method === "POST" && pathname.startsWith("/u/") && request.body) {
    const file = await Deno.open(`${dir}/${name}`, { create: true, write: true, truncate: true });
    await request.body.pipeTo(file.writable, { preventClose: true });
    await file.sync();
    file.close();
    return new Response("ok");
  }
  return new Response("not found", { status: 404 });
});

/** 1 MiB reads, each in one pull() of a byte stream; the file is closed at the end. */
function readLoop(file: Deno.FsFile, size: number): ReadableStream<Uint8Array> {
  let left = size;
  return new ReadableStream({
    type: "bytes",
    async pull(controller) {
      const buffer = new Uint8Array(Math.min(left, 1024 * 1024));
      const read = await file.read(buffer);
      if (read === null) {
        file.close();
        return controller.error(new Error("short file"));
      }
      left -= read;
      controller.enqueue(buffer.subarray(0, read));
      if (left === 0) {
        file.close();
        controller.close();
      }
    },
    cancel: () => file.close(),
  });
}
