/**
 * Builds the server binary for a server: `deno compile` with the data directory fixed when the
 * binary is built, instead of `./data` relative to wherever it is started.
 *
 *   deno task compile-server                       # /var/lib/storage-service, dist/storage-service
 *   deno task compile-server --data-dir /srv/stage --output dist/stage --target aarch64-unknown-linux-gnu
 *   deno task compile-server --also-read /etc/letsencrypt      # e.g. certificates for --tls-cert
 *   deno task compile-server --also-write /var/backups/storage-service   # for `backup DEST`
 *   deno task compile-server --dry-run             # print the deno compile command, run nothing
 *
 * The binary may read and write that directory and nothing else on disk (plus any --also-read
 * paths, read only, and --also-write paths), and it uses the directory without being told: STORAGE_DATA_DIR is baked in
 * with `deno compile --env-file`, which a compiled binary applies at start-up to variables the
 * environment does not already set. So `--data-dir` and STORAGE_DATA_DIR still win, and the
 * operator's commands (`storage-service token mint …`, `rotate-key`) find the same directory as
 * the server. `deno run` with runtimeFlags() and the same --env-file runs exactly what the binary
 * runs (tests/deploy/compile_test.ts does).
 *
 * `deno compile` downloads Deno's runtime for the binary (denort), so this needs the internet.
 */

export const DEFAULT_DATA_DIR = "/var/lib/storage-service";
export const DEFAULT_OUTPUT = "dist/storage-service";

export interface CompileOptions {
  dataDir: string;
  output: string;
  /** `deno compile --target`; null: this machine's. */
  target: string | null;
  /** Further paths the binary may read (not write), e.g. a TLS certificate's directory. */
  alsoRead: string[];
  /** Further paths it may read and write, e.g. where `backup DEST` puts its copies. */
  alsoWrite: string[];
  dryRun: boolean;
}

export class UsageError extends Error {}

/**
 * Paths end up inside `--allow-read=a,b` (comma-separated) and in a dotenv line, so only plain
 * absolute paths are accepted: letters, digits, `.`, `_`, `-`, `+`, `@` and `/`, no `..`.
 */
export function checkPath(path: string, what: string): string {
  if (!/^\/[A-Za-z0-9._+@\/-]*$/.test(path) || path.split("/").includes("..") || path === "/") {
    throw new UsageError(
      `${what} must be an absolute path of letters, digits, ".", "_", "-", "+", "@" and "/" ` +
        `(no "..", not "/"): ${JSON.stringify(path)}`,
    );
  }
  return path.length > 1 ? path.replace(/\/+$/, "") : path;
}

export function parseCompileArgs(args: readonly string[]): CompileOptions {
  const options: CompileOptions = {
    dataDir: DEFAULT_DATA_DIR,
    output: DEFAULT_OUTPUT,
    target: null,
    alsoRead: [],
    alsoWrite: [],
    dryRun: false,
  };
  for (let i = 0; i < args.length; i++) {
    const flag = args[i];
    if (flag === "--dry-run") {
      options.dryRun = true;
      continue;
    }
    const value = args[i + 1];
    if (value === undefined || value.startsWith("--")) {
      throw new UsageError(flag.startsWith("--") ? `${flag} needs a value` : `unknown: ${flag}`);
    }
    i++;
    if (flag === "--data-dir") options.dataDir = checkPath(value, "--data-dir");
    else if (flag === "--also-read") options.alsoRead.push(checkPath(value, "--also-read"));
    else if (flag === "--also-write") options.alsoWrite.push(checkPath(value, "--also-write"));
    else if (flag === "--output") options.output = value;
    else if (flag === "--target") options.target = value;
    else throw new UsageError(`unknown flag: ${flag}`);
  }
  return options;
}

/** The permissions of the server: network, its variables, and its data directory on disk. */
/**
 * The one V8 flag the server runs with (the start task, the compile tasks, the systemd unit):
 * the old generation's limit starts at 64 MiB and does not fall below it after a collection.
 * Why: every 1 MiB read of a piece is a fresh buffer (src/driver/disk/file_range.ts), memory
 * outside the JavaScript heap that V8 weighs against that limit. The service's ~19 MiB heap
 * after start-up left V8 a limit a few MiB above it, so sending pieces started a full
 * (incremental, concurrent) collection every ~100 MiB sent; a bare process, never collected in
 * full, kept its initial, larger limit and paid none. With the floor a 1.6 GB run of reads
 * starts none, and the read loop's CPU per GiB falls by about a third (docs/performance.md,
 * workload 22). The cost: up to ~45 MiB more garbage may wait before a full collection.
 * --expose-gc lets the read loop ask for its spent buffers to be collected early
 * (src/driver/disk/read_garbage.ts): without it one download held ~64 MiB more.
 */
export const V8_FLAGS = "--v8-flags=--initial-old-space-size=64,--expose-gc";

/**
 * glibc's malloc settings the server runs with (the start task, the systemd unit's Environment;
 * a compiled binary takes them from its environment, not from the env file it bakes, which is
 * read after malloc has started). Why: each 1 MiB read buffer is a fresh allocation. By default
 * glibc maps one that size on its own and, once it has raised that threshold, gives heap memory
 * back to the system as soon as 2 MiB lie free at its top: every buffer then faults its pages in
 * anew (the kernel zeroes each). With 1 MiB buffers under an 8 MiB threshold and up to 256 MiB
 * kept, freed buffers are reused as they are: the service's read loop took 0.44 CPU s/GiB
 * against 0.84 without, and ran at the bare process's speed (docs/performance.md, workload 22).
 * The cost: memory freed after a peak stays with the process, up to that 256 MiB.
 */
export const MALLOC_ENV: Readonly<Record<string, string>> = {
  MALLOC_MMAP_THRESHOLD_: "8388608",
  MALLOC_TRIM_THRESHOLD_: "268435456",
};

export function runtimeFlags(
  dataDir: string,
  more: { alsoRead?: readonly string[]; alsoWrite?: readonly string[] } = {},
): string[] {
  const writable = [dataDir, ...more.alsoWrite ?? []];
  return [
    V8_FLAGS,
    "--allow-net",
    // Free disk space for /metrics (statfs of the data directory), nothing else of the system.
    "--allow-sys=statfs",
    // STORAGE_* settings; PG* because the PostgreSQL client reads the standard PG variables.
    "--allow-env=STORAGE_*,PG*",
    `--allow-read=${[...writable, ...more.alsoRead ?? []].join(",")}`,
    `--allow-write=${writable.join(",")}`,
  ];
}

/** The dotenv file `deno compile --env-file` bakes in. */
export function envFileText(dataDir: string): string {
  return `STORAGE_DATA_DIR=${dataDir}\n`;
}

/** `deno compile …`, run from the repository root, with the env file at envFile. */
export function compileArgs(options: CompileOptions, envFile: string): string[] {
  return [
    "compile",
    ...runtimeFlags(options.dataDir, options),
    `--env-file=${envFile}`,
    ...(options.target === null ? [] : ["--target", options.target]),
    "--output",
    options.output,
    "main.ts",
  ];
}

async function main(args: string[]): Promise<number> {
  let options: CompileOptions;
  try {
    options = parseCompileArgs(args);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`error: ${error.message}`);
    return 2;
  }
  const root = new URL("..", import.meta.url).pathname;
  const workDir = await Deno.makeTempDir({ prefix: "storage-compile-" });
  try {
    const envFile = `${workDir}/data-dir.env`;
    await Deno.writeTextFile(envFile, envFileText(options.dataDir));
    const args = compileArgs(options, envFile);
    console.error(`deno ${args.join(" ")}`);
    console.error(`  with ${envFile}: ${envFileText(options.dataDir).trim()}`);
    if (options.dryRun) return 0;
    // The Deno that runs this script builds the binary: the same version as the tests ran on.
    const { code } = await new Deno.Command(Deno.execPath(), { args, cwd: root, stdin: "null" })
      .spawn().status;
    if (code === 0) {
      console.error(
        `${options.output}: data in ${options.dataDir} (read/write; nothing else on disk)`,
      );
    }
    return code;
  } finally {
    await Deno.remove(workDir, { recursive: true });
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
