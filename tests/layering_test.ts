/**
 * The layering the code is organised by, checked from the import lines so a
 * shortcut cannot creep back in: db/ and auth/ never import each other,
 * storage drivers know nothing of the domain code beside them (catalog,
 * digests) nor of HTTP, the wallet tier's chain code knows nothing of who
 * calls it, net/ (sockets, TLS files) takes plain values rather than the
 * config module, config/ knows nothing of the HTTP, database or storage code
 * that reads it, domain.ts and units.ts import nothing, the user's `storage`
 * command knows nothing of the server, and the operator's work (ops/) is
 * no HTTP and holds no SQL (the dialects' SQL is db/'s).
 */
import { assertEquals } from "./helpers/assert.ts";

const SRC = new URL("../src/", import.meta.url);

async function* sourceFiles(dir: URL): AsyncIterable<URL> {
  for await (const entry of Deno.readDir(dir)) {
    const url = new URL(entry.name + (entry.isDirectory ? "/" : ""), dir);
    if (entry.isDirectory) yield* sourceFiles(url);
    else if (entry.name.endsWith(".ts")) yield url;
  }
}

/** Every module a file imports, as a path relative to src/ ("db/database.ts"). */
async function importsOf(file: URL): Promise<string[]> {
  const text = await Deno.readTextFile(file);
  const specifiers = [...text.matchAll(/^(?:import|export)[^;]*?from\s+"(\.[^"]+)"/gms)];
  return specifiers.map(([, spec]) => new URL(spec, file).pathname.slice(SRC.pathname.length));
}

Deno.test("layering: db/ and auth/ never import each other; drivers import no domain or HTTP code", async () => {
  const rules: { from: string; mayNotImport: string[] }[] = [
    { from: "db/", mayNotImport: ["auth/", "http/", "storage/"] },
    { from: "auth/", mayNotImport: ["db/", "http/"] },
    {
      from: "storage/driver/",
      mayNotImport: ["storage/catalog.ts", "storage/digests.ts", "http/", "db/"],
    },
    // The chain code answers balances and signatures; who asks, and over what, is not its business.
    { from: "wallet/", mayNotImport: ["http/", "db/", "auth/", "storage/"] },
    // The listener and the TLS files are given what they need; a later owned accept loop too.
    { from: "net/", mayNotImport: ["config/", "config.ts"] },
    // Config is read by everyone, so it depends on none of its readers.
    { from: "config/", mayNotImport: ["http/", "db/", "storage/"] },
    { from: "domain.ts", mayNotImport: [""] },
    { from: "units.ts", mayNotImport: [""] },
    // The user's CLI runs on the user's machine, against the SDK: nothing of the server.
    {
      from: "cli/storage/",
      mayNotImport: ["config", "server", "http/", "db/", "storage/", "ops/", "cli/operator/"],
    },
    { from: "ops/", mayNotImport: ["http/", "cli/"] },
  ];
  const broken: string[] = [];
  let checked = 0;
  for await (const file of sourceFiles(SRC)) {
    const path = file.pathname.slice(SRC.pathname.length);
    for (const rule of rules.filter((r) => path.startsWith(r.from))) {
      checked++;
      for (const imported of await importsOf(file)) {
        if (rule.mayNotImport.some((prefix) => imported.startsWith(prefix))) {
          broken.push(`${path} imports ${imported}`);
        }
      }
    }
  }
  assertEquals(checked > 20, true, "the rules found the files they are about");
  assertEquals(broken, []);
});

Deno.test("layering: ops/ reaches the databases only through db/, never through a driver's client", async () => {
  const clients = /^(?:import|export)[^;]*?from\s+"(node:sqlite|postgres)"/gms;
  const found: string[] = [];
  let checked = 0;
  for await (const file of sourceFiles(new URL("ops/", SRC))) {
    checked++;
    const text = await Deno.readTextFile(file);
    for (const [, client] of text.matchAll(clients)) {
      found.push(`${file.pathname.slice(SRC.pathname.length)} imports ${client}`);
    }
  }
  assertEquals(checked > 5, true, "ops/ has its files");
  assertEquals(found, []);
});
