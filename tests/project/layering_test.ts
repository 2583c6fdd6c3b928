/**
 * The layering the code is organised by, checked from the import lines so a
 * shortcut cannot creep back in. src/ reads in three parts: the server's
 * layers, the shared kernel (kernel/: leaves every layer stands on, some of
 * them shared with the client side) and the client side (client/: the SDK,
 * the user's `storage` command and the web page, which know nothing of the
 * server). Every folder of src/ is named by a rule (a meta-check fails when a
 * new one appears without one), among them: nothing but main.ts builds the
 * composition root (server/); nothing below the handlers imports http/
 * (the upload pipeline in uploads/ included: the endpoints are its adapters);
 * db/ and auth/ never import each other, and db/ stands only on the ports of
 * domain/ and the kernel; the storage driver (driver/) stands on streams,
 * files and the clock only; the wallet tier's chain code knows nothing of who
 * calls it; net/ and config/ take plain values from nobody above them; the
 * handlers open no backend and run no operator's work; the operator's work
 * (ops/) is no HTTP and holds no SQL; and a database client (node:sqlite, pg,
 * postgres.js) is imported in db/ alone.
 */
import { assertEquals } from "../helpers/assert.ts";
import { listFiles } from "../helpers/files.ts";
import { pathExists } from "../../src/kernel/fs/files.ts";

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
 * A rule for the files under `from` (a folder "db/" or a module "kernel/units.ts";
 * "" is every file, but those under `except`): the prefixes they may not
 * import, or (mayImportOnly) the only prefixes they may.
 */
type Rule =
  & { from: string; except?: string[] }
  & ({ mayNotImport: string[] } | { mayImportOnly: string[] });

function appliesTo(rule: Rule, path: string): boolean {
  return path.startsWith(rule.from) &&
    !(rule.except ?? []).some((prefix) => path.startsWith(prefix));
}

function breaks(rule: Rule, imported: string): boolean {
  if ("mayNotImport" in rule) return rule.mayNotImport.some((p) => imported.startsWith(p));
  return !rule.mayImportOnly.some((prefix) => imported.startsWith(prefix));
}

/** The kernel the client side shares with the server: it imports nothing of either. */
const SHARED_KERNEL = [
  "kernel/wire.ts",
  "kernel/health_wire.ts",
  "kernel/cid_format.ts",
  "kernel/clock.ts",
  "kernel/units.ts",
  "kernel/manifest_format.ts",
  "kernel/turns.ts",
  "kernel/piece_cid/",
  "kernel/sha256_compress.ts",
];
/** Kernel modules that import nothing at all. */
const LEAVES = [
  "kernel/wire.ts",
  "kernel/health_wire.ts",
  "kernel/cid_format.ts",
  "kernel/clock.ts",
  "kernel/units.ts",
  "kernel/errors.ts",
  "kernel/log.ts",
  "kernel/version.ts",
  "kernel/liveness.ts",
  "kernel/postgres_url.ts",
  "kernel/sha256_compress.ts",
];
/** Below the handlers: the domain and everything it stands on. */
const BELOW_DOMAIN = ["db/sqlite/", "db/postgres/", "backends/", "config/", "ops/", "commands/"];

const RULES: Rule[] = [
  // The composition root builds everything; nothing but main.ts (and tests) builds it.
  { from: "", except: ["server/"], mayNotImport: ["server/"] },
  // Handlers sit on top: nothing below them (the upload pipeline included) calls back up.
  { from: "", except: ["http/", "server/"], mayNotImport: ["http/"] },
  // The server runs requests, not the operator's command lines nor the user's.
  { from: "server/", mayNotImport: ["commands/", "client/"] },
  // The ports db/ implements are declared in domain/; db/ knows nothing above them.
  { from: "db/", mayImportOnly: ["db/", "domain/", "kernel/"] },
  { from: "domain/", mayImportOnly: ["domain/", "kernel/"] },
  {
    from: "auth/",
    mayNotImport: ["db/", "catalog/", "driver/", "uploads/", "config/", "backends/"],
  },
  // The driver stands on streams, files, the clock and the judgement whether its backend answers.
  {
    from: "driver/",
    mayImportOnly: [
      "driver/",
      "kernel/streams/",
      "kernel/fs/",
      "kernel/clock.ts",
      "kernel/liveness.ts",
    ],
  },
  // The piece catalog and the IPFS side stand on the driver and db/'s ports, not a dialect.
  { from: "catalog/", mayNotImport: ["uploads/", ...BELOW_DOMAIN] },
  { from: "ipfs/", mayNotImport: ["uploads/", ...BELOW_DOMAIN] },
  // The upload pipeline: terms, checks, staging, the resumable state machine, the commit.
  { from: "uploads/", mayNotImport: BELOW_DOMAIN.filter((p) => p !== "config/") },
  // The hand-off speaks to the storage provider through domain/'s ports; uploads and handlers call it.
  {
    from: "handoff/",
    mayNotImport: ["http/", "uploads/", "catalog/", ...BELOW_DOMAIN.filter((p) => p !== "config/")],
  },
  // The chain code answers balances and signatures; who asks, and over what, is not its business.
  { from: "wallet/", mayNotImport: ["db/", "auth/", "catalog/", "uploads/"] },
  // The listener and the TLS files are given plain values: no config, no HTTP.
  { from: "net/", mayImportOnly: ["net/", "kernel/clock.ts", "kernel/log.ts"] },
  // Config is read by everyone, so it depends on none of its readers.
  {
    from: "config/",
    mayImportOnly: ["config/", "net/", "kernel/units.ts", "kernel/postgres_url.ts"],
  },
  // Tiers and caps are decided from the caller and the config; the dialects come to them.
  { from: "limits/", mayNotImport: ["db/", "catalog/", "driver/", "ops/", "uploads/"] },
  // Counters are fed by the pipeline; the scrape handler is http/service/metrics.ts.
  { from: "metrics/", mayNotImport: ["db/", "config/", "uploads/"] },
  // The handlers are given what they use: they open no backend and run no operator's work.
  {
    from: "http/",
    mayNotImport: [
      "backends/",
      "ops/",
      "commands/",
      "db/sqlite/",
      "db/postgres/",
      "client/sdk/",
      "client/cli/",
      "client/web/app/",
    ],
  },
  // Opens the backends for the server and every command, knowing none of them.
  { from: "backends/", mayNotImport: ["ops/", "commands/", "uploads/"] },
  // The operator's commands open backends and run ops/: they serve no HTTP.
  { from: "commands/", mayNotImport: ["client/"] },
  { from: "ops/", mayNotImport: ["commands/", "config/", "uploads/"] },
  { from: "mail/", mayImportOnly: ["mail/", "kernel/log.ts"] },
  // The runner of background jobs knows none of them: the server lists them (server/jobs.ts).
  { from: "jobs/", mayImportOnly: ["jobs/", "kernel/"] },
  // The kernel stands on nothing of the service; each of its rooms on itself.
  { from: "kernel/", mayImportOnly: ["kernel/"] },
  ...LEAVES.map((leaf) => ({ from: leaf, mayImportOnly: [] })),
  // A split file's manifest: the server checks and serves it, the SDK writes and follows it.
  {
    from: "kernel/manifest_format.ts",
    mayImportOnly: ["kernel/cid_format.ts", "kernel/piece_cid/cid_codec.ts", "kernel/turns.ts"],
  },
  { from: "kernel/data_dir.ts", mayImportOnly: ["kernel/fs/", "kernel/log.ts"] },
  // The hasher is used by the server, the SDK and the workers: it stands on nothing else.
  { from: "kernel/piece_cid/", mayImportOnly: ["kernel/piece_cid/"] },
  { from: "kernel/streams/", mayImportOnly: ["kernel/streams/"] },
  { from: "kernel/fs/", mayImportOnly: ["kernel/fs/"] },
  // The client side runs on the user's machine and in browsers: nothing of the server.
  { from: "client/sdk/", mayImportOnly: ["client/sdk/", ...SHARED_KERNEL] },
  { from: "client/cli/", mayImportOnly: ["client/cli/", "client/sdk/", ...SHARED_KERNEL] },
  { from: "client/web/", mayImportOnly: ["client/web/", "client/sdk/", ...SHARED_KERNEL] },
];

/** What breaks the rules in one file's imports. */
function violations(path: string, imports: string[]): string[] {
  const broken: string[] = [];
  for (const rule of RULES.filter((r) => appliesTo(r, path))) {
    for (const imported of imports) {
      if (breaks(rule, imported)) broken.push(`${path} imports ${imported}`);
    }
  }
  return broken;
}

/** The database clients, by their import specifiers: db/ alone may import them. */
const DATABASE_CLIENTS =
  /^(?:import|export)[^;]*?from\s+"(node:sqlite|pg|postgres|npm:pg@[^"]*|npm:postgres@[^"]*)"/gms;

function databaseClientsOf(text: string): string[] {
  return [...text.matchAll(DATABASE_CLIENTS)].map(([, client]) => client);
}

Deno.test("layering: each folder imports only what its layer may", async () => {
  const broken: string[] = [];
  let checked = 0;
  for (const file of await sourceFiles(SRC)) {
    const path = file.pathname.slice(SRC.pathname.length);
    checked++;
    broken.push(...violations(path, await importsOf(file)));
  }
  assertEquals(checked > 20, true, "the rules found the files they are about");
  assertEquals(broken, []);
});

Deno.test("layering: the rules have teeth (imports that must be refused are)", () => {
  const refused: [string, string][] = [
    ["uploads/staging.ts", "http/pipeline/context.ts"],
    ["catalog/catalog.ts", "http/retrieval/pieces.ts"],
    ["db/sqlite/database.ts", "limits/daily_caps.ts"],
    ["db/postgres/sweep_turn.ts", "catalog/sweep_turn.ts"],
    ["driver/disk/disk_store.ts", "catalog/catalog.ts"],
    ["client/sdk/mod.ts", "kernel/errors.ts"],
    ["client/cli/main.ts", "http/routes.ts"],
    ["ops/gc.ts", "config/mod.ts"],
    ["kernel/wire.ts", "domain/vocabulary.ts"],
    ["http/upload/upload.ts", "backends/open.ts"],
  ];
  for (const [path, imported] of refused) {
    assertEquals(violations(path, [imported]).length > 0, true, `${path} → ${imported}`);
  }
  assertEquals(violations("http/upload/upload.ts", ["uploads/terms.ts"]), []);
  assertEquals(violations("server/services.ts", ["http/routes.ts"]), []);
  for (const client of ['from "pg"', 'from "node:sqlite"', 'from "postgres"']) {
    assertEquals(databaseClientsOf(`import x ${client};`).length, 1, client);
  }
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

Deno.test("layering: a database client (node:sqlite, pg, postgres.js) is imported in db/ alone", async () => {
  const found: string[] = [];
  let inDb = 0;
  for (const file of await sourceFiles(SRC)) {
    const path = file.pathname.slice(SRC.pathname.length);
    const clients = databaseClientsOf(await Deno.readTextFile(file));
    if (path.startsWith("db/")) inDb += clients.length;
    else found.push(...clients.map((client) => `${path} imports ${client}`));
  }
  assertEquals(inDb >= 2, true, "db/ imports both clients: the pattern finds them");
  assertEquals(found, []);
});
