/**
 * The runtime's floor, at the durability the service promises:
 *   GET  /f/<name>  Deno.open + stat + file.readable, per request
 *   POST /u/<name>  request body piped into a new file, fsynced before answering
 * Started by scripts/bench.ts as its own process on 127.0.0.1.
 *
 *   deno run --allow-net=127.0.0.1 --allow-read=DIR --allow-write=DIR bare_deno.ts DIR
 */
const dir = Deno.args[0];

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
  if (request.method === "POST" && pathname.startsWith("/u/") && request.body) {
    const file = await Deno.open(`${dir}/${name}`, { create: true, write: true, truncate: true });
    await request.body.pipeTo(file.writable, { preventClose: true });
    await file.sync();
    file.close();
    return new Response("ok");
  }
  return new Response("not found", { status: 404 });
});
