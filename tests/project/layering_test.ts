/**
 * The layering the code is organised by, checked from the import lines so a
 * shortcut cannot creep back in: db/ and auth/ never import each other,
 * storage drivers know nothing of the domain code beside them (catalog,
 * digests) nor of HTTP, the wallet tier's chain code knows nothing of who
 * calls it, net/ (sockets, TLS files) takes plain values rather than the
 * config module, config/ knows nothing of the HTTP, database or storage code
 * that reads it, domain.ts imports only the API's wire types (wire.ts) and
 * units.ts nothing, the user's `storage` command knows nothing of the server,
 * the operator's work (ops/) is no HTTP and holds no SQL (the dialects' SQL
 * is db/'s), the SDK (client/) and the piece hasher (piece_cid/) know nothing
 * of the server, and wire.ts imports nothing, so both the server and the SDK
 * can use it.
 */
import { assertEquals } from "../helpers/assert.ts";

const SRC = new URL("../../src/", import.meta.url);

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

/**
 * A rule for the files under `from`: the prefixes they may not import, or
 * (mayImportOnly) the only prefixes they may.
 */
type Rule =
  & { from: string }
  & ({ mayNotImport: string[] } | { mayImportOnly: string[] });

function breaks(rule: Rule, imported: string): boolean {
  if ("mayNotImport" in rule) return rule.mayNotImport.some((p) => imported.startsWith(p));
  return !rule.mayImportOnly.some((prefix) => imported.startsWith(prefix));
}

/** Modules of src/'s root that import nothing of the service, so the SDK may use them too. */
const SHARED_LEAVES = ["wire.ts", "cid_format.ts", "clock.ts"];

Deno.test("layering: each folder imports only what its layer may", async () => {
  const rules: Rule[] = [
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
    { from: "domain.ts", mayImportOnly: ["wire.ts"] },
    { from: "units.ts", mayNotImport: [""] },
    // The user's CLI runs on the user's machine, against the SDK: nothing of the server.
    {
      from: "cli/storage/",
      mayNotImport: ["config", "server", "http/", "db/", "storage/", "ops/", "cli/operator/"],
    },
    { from: "ops/", mayNotImport: ["http/", "cli/"] },
    ...SHARED_LEAVES.map((leaf) => ({ from: leaf, mayImportOnly: [] })),
    // The SDK runs in browsers and other people's programs: nothing of the server comes along.
    { from: "client/", mayImportOnly: ["client/", "piece_cid/", ...SHARED_LEAVES] },
    // The hasher is used by the server, the SDK and the workers: it stands on nothing else.
    { from: "piece_cid/", mayImportOnly: ["piece_cid/"] },
  ];
  const broken: string[] = [];
  let checked = 0;
  for await (const file of sourceFiles(SRC)) {
    const path = file.pathname.slice(SRC.pathname.length);
    for (const rule of rules.filter((r) => path.startsWith(r.from))) {
      checked++;
      for (const imported of await importsOf(file)) {
        if (breaks(rule, imported)) {
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
