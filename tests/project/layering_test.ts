/**
 * The layering the code is organised by, checked from the import lines so a
 * shortcut cannot creep back in. Every folder of src/ and every module at its
 * root is named by a rule (a meta-check fails when a new one appears without
 * one), among them: nothing but main.ts builds the composition root
 * (server/); db/ and auth/ never import each other; the storage driver stands
 * on streams, files and the clock only, and the domain code beside it sees the
 * database through db/'s ports; the wallet tier's chain code knows nothing of
 * who calls it; net/ and config/ take plain values from nobody above them; the
 * handlers (http/) open no backend and run no operator's work; the operator's
 * work (ops/) is no HTTP and holds no SQL (the dialects' SQL is db/'s); the
 * user's `storage` command, the SDK (client/), the web page and the piece
 * hasher (piece_cid/) know nothing of the server; wire.ts and the other leaves
 * import nothing, so both the server and the SDK can use them, and the
 * manifest format (manifest_format.ts), which both use too, stands only on
 * the cid format and the cid parser.
 */
import { assertEquals } from "../helpers/assert.ts";
import { listFiles } from "../helpers/files.ts";
import { pathExists } from "../../src/fs/files.ts";

const SRC = new URL("../../src/", import.meta.url);

/** Every .ts file of src/, as a URL. */
async function sourceFiles(dir: URL): Promise<URL[]> {
  const paths = await listFiles(dir.pathname);
  return paths.filter((path) => path.endsWith(".ts")).map((path) => new URL(path, dir));
}

/**
 * Every module a file imports, as a path relative to src/ ("db/database.ts"):
 * static imports, re-exports and dynamic `import("./…")` alike.
 */
async function importsOf(file: URL): Promise<string[]> {
  const text = await Deno.readTextFile(file);
  const specifiers = [
    ...text.matchAll(/^(?:import|export)[^;]*?from\s+"(\.[^"]+)"/gms),
    ...text.matchAll(/\bimport\(\s*"(\.[^"]+)"\s*\)/g),
  ];
  return specifiers.map(([, spec]) => new URL(spec, file).pathname.slice(SRC.pathname.length));
}

/**
 * A rule for the files under `from` (a folder "db/" or a module "units.ts";
 * "" is every file, but those under `except`): the prefixes they may not
 * import, or (mayImportOnly) the only prefixes they may.
 */
type Rule =
  & { from: string; except?: string }
  & ({ mayNotImport: string[] } | { mayImportOnly: string[] });

function appliesTo(rule: Rule, path: string): boolean {
  return path.startsWith(rule.from) && !(rule.except && path.startsWith(rule.except));
}

function breaks(rule: Rule, imported: string): boolean {
  if ("mayNotImport" in rule) return rule.mayNotImport.some((p) => imported.startsWith(p));
  return !rule.mayImportOnly.some((prefix) => imported.startsWith(prefix));
}

/** Modules of src/'s root that import nothing of the service, so the SDK may use them too. */
const SHARED_LEAVES = ["wire.ts", "cid_format.ts", "clock.ts"];
/** Modules of src/'s root that import nothing at all (the server's own leaves). */
const LEAVES = ["units.ts", "errors.ts", "log.ts", "version.ts", "liveness.ts", "postgres_url.ts"];

const RULES: Rule[] = [
  // The composition root builds everything; nothing but main.ts (and tests) builds it.
  { from: "", except: "server/", mayNotImport: ["server/"] },
  // The server runs requests, not the operator's command lines.
  { from: "server/", mayNotImport: ["cli/"] },
  { from: "db/", mayNotImport: ["auth/", "http/", "storage/", "config/", "ops/", "cli/"] },
  { from: "auth/", mayNotImport: ["db/", "http/", "storage/", "config/"] },
  // The driver stands on streams, files, the clock and the judgement whether its backend answers;
  // the domain code and HTTP stand on it.
  {
    from: "storage/driver/",
    mayImportOnly: ["storage/driver/", "streams/", "fs/", "clock.ts", "liveness.ts"],
  },
  // The domain code beside the driver sees the database through db/'s ports, not a dialect.
  {
    from: "storage/",
    mayNotImport: ["http/", "config/", "ops/", "cli/", "db/sqlite/", "db/postgres/"],
  },
  // The IPFS side (CARs, the block index, DAG walks) stands where the catalog does: on the
  // driver and db/'s ports, below HTTP.
  {
    from: "ipfs/",
    mayNotImport: ["http/", "config/", "ops/", "cli/", "db/sqlite/", "db/postgres/"],
  },
  // Resumable uploads are domain code too: the catalog, the driver, the ledger; no HTTP, no dialect.
  {
    from: "resumable/",
    mayNotImport: ["http/", "config/", "ops/", "cli/", "db/sqlite/", "db/postgres/", "server/"],
  },
  // The chain code answers balances and signatures; who asks, and over what, is not its business.
  { from: "wallet/", mayNotImport: ["http/", "db/", "auth/", "storage/"] },
  // The listener and the TLS files are given plain values: no config, no HTTP.
  { from: "net/", mayImportOnly: ["net/", "clock.ts", "log.ts"] },
  // Config is read by everyone, so it depends on none of its readers.
  { from: "config/", mayImportOnly: ["config/", "net/", "units.ts", "postgres_url.ts"] },
  // Tiers and caps are decided from the caller and the config; HTTP and the dialects come to them.
  { from: "limits/", mayNotImport: ["http/", "db/", "storage/", "ops/"] },
  // Counters are fed by the pipeline; the scrape handler is http/metrics.ts.
  { from: "metrics/", mayNotImport: ["http/", "db/", "config/"] },
  // The handlers are given what they use: they open no backend and run no operator's work.
  { from: "http/", mayNotImport: ["backends_open.ts", "ops/", "cli/"] },
  { from: "domain.ts", mayImportOnly: ["wire.ts"] },
  // The metadata of either dialect, assembled: nothing above it (HTTP, health, config).
  { from: "metadata.ts", mayNotImport: ["http/", "config/", "ops/", "cli/"] },
  // Opens the backends for the server and every command, knowing none of them.
  { from: "backends_open.ts", mayNotImport: ["http/", "ops/", "cli/"] },
  { from: "data_dir.ts", mayImportOnly: ["fs/", "log.ts"] },
  // The user's CLI runs on the user's machine, against the SDK: nothing of the server.
  {
    from: "cli/storage/",
    mayImportOnly: ["cli/storage/", "client/", "piece_cid/", "units.ts", ...SHARED_LEAVES],
  },
  // The operator's commands open backends and run ops/: they serve no HTTP.
  { from: "cli/operator/", mayNotImport: ["http/", "cli/storage/"] },
  { from: "ops/", mayNotImport: ["http/", "cli/", "config/"] },
  ...SHARED_LEAVES.map((leaf) => ({ from: leaf, mayImportOnly: [] })),
  ...LEAVES.map((leaf) => ({ from: leaf, mayImportOnly: [] })),
  // A split file's manifest: the server checks and serves it, the SDK writes and follows it.
  { from: "manifest_format.ts", mayImportOnly: ["cid_format.ts", "piece_cid/cid_codec.ts"] },
  // The SDK runs in browsers and other people's programs: nothing of the server comes along.
  {
    from: "client/",
    mayImportOnly: ["client/", "piece_cid/", "manifest_format.ts", ...SHARED_LEAVES],
  },
  // The hasher is used by the server, the SDK and the workers: it stands on nothing else.
  { from: "piece_cid/", mayImportOnly: ["piece_cid/"] },
  // The web page runs in the browser, on the SDK: nothing server-side.
  { from: "web/", mayImportOnly: ["web/", "client/", ...SHARED_LEAVES] },
  { from: "mail/", mayImportOnly: ["mail/", "log.ts"] },
  { from: "streams/", mayImportOnly: ["streams/"] },
  { from: "fs/", mayImportOnly: ["fs/"] },
];

Deno.test("layering: each folder imports only what its layer may", async () => {
  const broken: string[] = [];
  let checked = 0;
  for (const file of await sourceFiles(SRC)) {
    const path = file.pathname.slice(SRC.pathname.length);
    for (const rule of RULES.filter((r) => appliesTo(r, path))) {
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

Deno.test("layering: every folder of src/ and every module at its root is named by a rule", async () => {
  const named = RULES.filter((rule) => rule.from !== "");
  const unnamed = new Set<string>();
  for (const file of await sourceFiles(SRC)) {
    const path = file.pathname.slice(SRC.pathname.length);
    if (!named.some((rule) => appliesTo(rule, path))) {
      unnamed.add(path.includes("/") ? path.slice(0, path.lastIndexOf("/") + 1) : path);
    }
  }
  assertEquals([...unnamed].sort(), [], "a new folder or module needs a layering rule");
  // Every rule names something that exists: a rule about a moved folder must move with it.
  const missing: string[] = [];
  for (const { from } of named) {
    if (!await pathExists(new URL(from, SRC))) missing.push(from);
  }
  assertEquals(missing, []);
});

Deno.test("layering: ops/ reaches the databases only through db/, never through a driver's client", async () => {
  const clients = /^(?:import|export)[^;]*?from\s+"(node:sqlite|postgres)"/gms;
  const found: string[] = [];
  let checked = 0;
  for (const file of await sourceFiles(new URL("ops/", SRC))) {
    checked++;
    const text = await Deno.readTextFile(file);
    for (const [, client] of text.matchAll(clients)) {
      found.push(`${file.pathname.slice(SRC.pathname.length)} imports ${client}`);
    }
  }
  assertEquals(checked > 5, true, "ops/ has its files");
  assertEquals(found, []);
});
