import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { ConfigError, ENV_NAMES, loadConfig, OPTIONS } from "../../src/config/mod.ts";
import type { Config } from "../../src/config/mod.ts";

function configOf(args: string[], env: Record<string, string> = {}): Config {
  const loaded = loadConfig(args, env);
  if (loaded.kind !== "config") throw new Error("expected a config");
  return loaded.config;
}

function configError(args: string[], env: Record<string, string> = {}): string {
  try {
    loadConfig(args, env);
  } catch (error) {
    assertOk(error instanceof ConfigError);
    return error.message;
  }
  throw new Error("expected a ConfigError");
}

Deno.test("config: defaults serve a laptop", () => {
  const config = configOf([]);
  assertEquals(config.hostname, "127.0.0.1");
  assertEquals(config.port, 8080);
  assertEquals(config.dataDir, "./data");
  assertEquals(config.baseUrl, null);
  assertEquals(config.sponsored, {
    maxFileBytes: 100 * 2 ** 20,
    dailyCapBytes: 200 * 2 ** 20,
    termDays: 30,
    carMaxBlocks: 100_000,
    tusMaxOpen: 16,
  });
  assertEquals(config.token, {
    maxFileBytes: 5 * 2 ** 30,
    dailyCapBytes: 2 ** 30,
    termDays: 365,
    carMaxBlocks: 1_000_000,
    tusMaxOpen: 64,
  });
  assertOk(Object.isFrozen(config) && Object.isFrozen(config.sponsored));
});

Deno.test("config: every setting has a STORAGE_ variable and the flag wins over it", () => {
  for (const name of ENV_NAMES) assertMatch(name, /^STORAGE_[A-Z0-9_]+$/);
  assertEquals(configOf([], { STORAGE_PORT: "9000" }).port, 9000);
  assertEquals(configOf(["--port", "9001"], { STORAGE_PORT: "9000" }).port, 9001);
  assertEquals(configOf(["--port=0"]).port, 0);
});

Deno.test("config: sizes take binary units", () => {
  const config = configOf(["--sponsored-max-file-size", "1KiB", "--sponsored-daily-cap=3MiB"]);
  assertEquals(config.sponsored.maxFileBytes, 1024);
  assertEquals(config.sponsored.dailyCapBytes, 3 * 2 ** 20);
  assertEquals(configOf(["--token-max-file-size", "123"]).token.maxFileBytes, 123);
});

Deno.test("config: bad values name the flag or variable", () => {
  assertMatch(configError(["--port", "70000"]), /--port/);
  assertMatch(configError([], { STORAGE_PORT: "abc" }), /STORAGE_PORT/);
  assertMatch(configError(["--sponsored-daily-cap", "10 parsecs"]), /--sponsored-daily-cap/);
  assertMatch(configError(["--base-url", "ftp://x"]), /--base-url/);
  assertMatch(configError(["--trusted-proxies", "10.0.0.0/33"]), /--trusted-proxies/);
  assertMatch(configError(["--no-such-flag", "1"]), /--no-such-flag/);
  assertMatch(configError(["--port"]), /needs a value/);
});

Deno.test("config: trusted proxies parse into ranges", () => {
  const config = configOf(["--trusted-proxies", "10.0.0.0/8, ::1"]);
  assertEquals(config.trustedProxies.map((r) => r.prefixLength), [8, 128]);
});

Deno.test("config: an empty data dir means no storage is bound; base URL loses its slash", () => {
  assertEquals(configOf(["--data-dir", ""]).dataDir, null);
  assertEquals(
    configOf(["--base-url", "https://x.example/stage/"]).baseUrl,
    "https://x.example/stage",
  );
});

Deno.test("config: --help lists every flag and its variable", () => {
  const loaded = loadConfig(["--help"], {});
  assertEquals(loaded.kind, "help");
  if (loaded.kind !== "help") return;
  for (const option of OPTIONS) {
    assertMatch(loaded.text, new RegExp(`--${option.flag}\\b`));
    assertMatch(loaded.text, new RegExp(option.env));
  }
});

Deno.test("config: --help prints exactly the text in tests/fixtures/help.txt", async () => {
  // Operators and packagers read this text; a change to it must be a decision, made here by
  // updating the fixture in the same commit, never a side effect of moving code around.
  const loaded = loadConfig(["--help"], {});
  if (loaded.kind !== "help") throw new Error("expected help");
  const expected = await Deno.readTextFile(new URL("../fixtures/help.txt", import.meta.url));
  assertEquals(loaded.text, expected);
});

Deno.test("config: no flags and no environment give exactly these defaults", () => {
  const MIB = 2 ** 20;
  const expected: Config = {
    hostname: "127.0.0.1",
    port: 8080,
    dataDir: "./data",
    baseUrl: null,
    trustedProxies: [],
    xAccelRedirect: null,
    sponsored: {
      maxFileBytes: 100 * MIB,
      dailyCapBytes: 200 * MIB,
      termDays: 30,
      carMaxBlocks: 100_000,
      tusMaxOpen: 16,
    },
    token: {
      maxFileBytes: 5 * 1024 * MIB,
      dailyCapBytes: 1024 * MIB,
      termDays: 365,
      carMaxBlocks: 1_000_000,
      tusMaxOpen: 64,
    },
    wallet: {
      rpcUrl: null,
      chainId: null,
      usdcAddress: null,
      bytesPerUsdc: 1024 * MIB,
      balanceTtlMs: 30_000,
      maxFileBytes: null,
      termDays: 365,
    },
    handoff: {
      mode: "off",
      pdpUrl: null,
      recordKeeper: null,
      chainId: null,
      keyFile: null,
      payer: null,
      payee: null,
      allowHttpSource: false,
      waitSeconds: 0,
    },
    shutdownTimeoutMs: 30_000,
    hmacKeyFile: null,
    hmacKeyReloadMs: 2_000,
    tokenLifetimeDays: 90,
    tokenAlg: "HS256",
    queryToken: true,
    signupsPerHour: 20,
    requireVerifiableCids: false,
    hashWorkers: null,
    smallPieceCacheBytes: 64 * MIB,
    bodyIdleTimeoutMs: 30_000,
    bodyMinBytesPerSecond: 16 * 1024,
    bodyRateGraceMs: 30_000,
    sendMinBytesPerSecond: 16 * 1024,
    dbBusyTimeoutMs: 5_000,
    logRequests: true,
    signup: "open",
    smtpUrl: null,
    mailFrom: null,
    maxTermDays: 1826,
    uploadMemoryBytes: 128 * MIB,
    maxUploadsPerClient: 16,
    ipfsMaxWalkBlocks: 100_000,
    tls: null,
    allowUnboundedTlsHandshakes: false,
    maxConnections: 4096,
    maxConnectionsPerClient: 256,
    headerTimeoutMs: 10_000,
    keepAliveTimeoutMs: 75_000,
    connectionBounds: true,
    logFormat: "auto",
    metricsEnabled: true,
    metricsToken: null,
    scrubIntervalHours: 0,
    scrubBytesPerSecond: 32 * MIB,
    retentionGraceDays: 7,
    gcIntervalHours: 6,
    gcRemovalsPerSecond: 100,
    databaseUrl: null,
    dbTimeoutMs: 5_000,
    store: "disk",
    s3: null,
    s3TimeoutMs: 30_000,
  };
  assertEquals(configOf([]), expected);
  assertEquals(Object.keys(configOf([])).sort(), Object.keys(expected).sort());
});

Deno.test("config: --help shows each default as written, and that text parses to the default", () => {
  const loaded = loadConfig(["--help"], {});
  if (loaded.kind !== "help") throw new Error("expected help");
  const defaults = configOf([]);
  for (const option of OPTIONS) {
    const row = loaded.text.split("\n").find((line) => line.startsWith(`  --${option.flag} `));
    assertOk(row, `--help has no row for --${option.flag}`);
    const shown = /, default (.*)\)$/.exec(row)?.[1];
    if (option.default === "") {
      // "Not set": help explains what that means; passing the empty text changes nothing.
      assertOk(option.defaultHelp, `--${option.flag} defaults to unset but does not say to what`);
      assertEquals(shown, option.defaultHelp);
      assertEquals(configOf([`--${option.flag}=`]), defaults, `--${option.flag}=`);
    } else {
      assertEquals(option.defaultHelp, undefined, `--${option.flag} has a default and defaultHelp`);
      assertEquals(shown, option.default);
      assertEquals(configOf([`--${option.flag}`, shown!]), defaults, `--${option.flag} ${shown}`);
      assertEquals(configOf([], { [option.env]: shown! }), defaults, `${option.env}=${shown}`);
    }
  }
});

Deno.test("config: -h is --help, and --help wins over the other flags", () => {
  assertEquals(loadConfig(["-h"], {}).kind, "help");
  assertEquals(loadConfig(["--port", "x", "--help"], {}).kind, "help");
  assertMatch(configError(["--help=yes"]), /--help takes no value/);
});

Deno.test("config: --flag=value is the same as --flag value, even with = in the value", () => {
  assertEquals(configOf(["--hostname=0.0.0.0"]).hostname, "0.0.0.0");
  assertEquals(configOf(["--data-dir=/tmp/a=b"]).dataDir, "/tmp/a=b");
  assertEquals(configOf(["--log-requests=false"]).logRequests, false);
  assertEquals(configOf(["--require-verifiable-cids", "true"]).requireVerifiableCids, true);
  assertEquals(configOf(["--small-piece-cache=0"]).smallPieceCacheBytes, 0);
  assertEquals(configOf(["--hash-workers=0"]).hashWorkers, 0);
  assertEquals(configOf(["--hash-workers", "3"], { STORAGE_HASH_WORKERS: "5" }).hashWorkers, 3);
  assertEquals(configOf(["--hmac-key-reload=7"]).hmacKeyReloadMs, 7000);
});

Deno.test("config: flags apply in order; each one is checked, the last one wins", () => {
  assertEquals(configOf(["--port", "1", "--port=2"]).port, 2);
  assertMatch(configError(["--port", "x", "--port", "2"]), /--port/);
});

Deno.test("config: a bad value names the flag, in either form", () => {
  assertMatch(configError(["--port=abc"]), /^--port must be a whole number/);
  assertMatch(configError(["--hash-workers", "many"]), /^--hash-workers /);
  assertMatch(configError(["--log-requests", "maybe"]), /^--log-requests must be true or false/);
  assertMatch(
    configError([], { STORAGE_LOG_REQUESTS: "maybe" }),
    /^STORAGE_LOG_REQUESTS must be true or false/,
  );
  assertMatch(configError(["--hostname="]), /^--hostname must not be empty/);
});

Deno.test("config: unknown flags and stray arguments are refused", () => {
  assertEquals(configError(["--no-such-flag", "1"]), "Unknown flag --no-such-flag (see --help)");
  assertEquals(configError(["--no-such-flag=1"]), "Unknown flag --no-such-flag (see --help)");
  assertEquals(configError(["--PORT", "1"]), "Unknown flag --PORT (see --help)");
  assertMatch(configError(["-x"]), /^Unknown flag -x\b/);
  assertMatch(configError(["--port", "1", "stray"]), /^Unexpected argument: stray\b/);
});

Deno.test("config: a flag without its value is refused", () => {
  assertEquals(configError(["--port"]), "Flag --port needs a value");
  assertEquals(configError(["--log-requests"]), "Flag --log-requests needs a value");
  // The next flag is not taken for the value.
  assertMatch(configError(["--port", "--hostname", "x"]), /^Flag --port needs a value/);
  assertMatch(configError(["--base-url", "-x"]), /write --base-url=VALUE/);
});

Deno.test("config: a tier's term may not pass --max-term-days", () => {
  for (const args of [["--token-term-days", "2000"], ["--max-term-days", "20"]]) {
    let message = "";
    try {
      configOf(args);
    } catch (error) {
      message = (error as Error).message;
    }
    assertEquals(/must not exceed --max-term-days/.test(message), true, args.join(" "));
  }
});

Deno.test("config: --store s3 takes endpoint and bucket from flags and the keys from env only", () => {
  const env = {
    STORAGE_S3_ACCESS_KEY_ID: "AKIDEXAMPLE",
    STORAGE_S3_SECRET_ACCESS_KEY: "secret-example-key",
  };
  const config = configOf(
    ["--store", "s3", "--s3-endpoint", "https://acct.r2.example.org/", "--s3-bucket", "pieces-1"],
    env,
  );
  assertEquals(config.s3, {
    endpoint: "https://acct.r2.example.org",
    bucket: "pieces-1",
    region: "auto",
    accessKeyId: "AKIDEXAMPLE",
    secretAccessKey: "secret-example-key",
    sourceLabel: "r2",
  });
  // No flag takes a key: they are refused like any unknown flag.
  assertOk(configError(["--s3-secret-access-key", "x"]).includes("Unknown flag"));
  assertOk(
    configError(["--store", "s3", "--s3-endpoint", "https://s3.example.org"], env).includes(
      "--store s3 needs --s3-bucket",
    ),
  );
  assertOk(
    configError(["--store", "s3", "--s3-endpoint", "https://x.example", "--s3-bucket", "b-1"], {})
      .includes("STORAGE_S3_ACCESS_KEY_ID, STORAGE_S3_SECRET_ACCESS_KEY"),
  );
  assertOk(configError(["--s3-bucket", "b-1"]).includes("are for --store s3"));
  assertOk(configError(["--s3-bucket", "No_Such"]).includes("bucket name"));
  assertOk(configError(["--s3-source", "r2\r\nx: y"]).includes("--s3-source"));
  assertOk(configError(["--store", "tape"]).includes("--store"));
});

Deno.test("config: --x-accel-redirect takes a location prefix, for the disk store behind a proxy", () => {
  const proxy = ["--trusted-proxies", "127.0.0.1"];
  assertEquals(configOf([...proxy, "--x-accel-redirect", "/_pieces/"]).xAccelRedirect, "/_pieces/");
  assertEquals(
    configOf(proxy, { STORAGE_X_ACCEL_REDIRECT: "/a/b/" }).xAccelRedirect,
    "/a/b/",
  );
  for (const bad of ["_pieces/", "/_pieces", "/", "/a b/", "/a/../", "http://x/"]) {
    assertMatch(configError(["--x-accel-redirect", bad]), /--x-accel-redirect must be a path/);
  }
  const s3 = ["--store", "s3", "--s3-endpoint", "https://x.example", "--s3-bucket", "b-1"];
  const keys = { STORAGE_S3_ACCESS_KEY_ID: "a", STORAGE_S3_SECRET_ACCESS_KEY: "b" };
  assertMatch(
    configError([...s3, ...proxy, "--x-accel-redirect", "/_pieces/"], keys),
    /--x-accel-redirect is for --store disk/,
  );
  // Only requests through a trusted proxy are offloaded: without one, nothing ever would be.
  assertMatch(
    configError(["--x-accel-redirect", "/_pieces/"]),
    /--x-accel-redirect needs --trusted-proxies/,
  );
});

Deno.test("config: --database takes a postgres URL, from the flag or STORAGE_DATABASE", () => {
  const url = "postgres://svc:pw@db.internal:5432/storage";
  assertEquals(configOf(["--database", url]).databaseUrl, url);
  assertEquals(configOf([], { STORAGE_DATABASE: url }).databaseUrl, url);
  assertEquals(configOf(["--database", ""]).databaseUrl, null);
  assertOk(configError(["--database", "mysql://x/y"]).includes("postgres://"));
});

Deno.test("config: TLS on a public address needs --allow-unbounded-tls-handshakes, which names the risk", () => {
  const tls = ["--tls-cert", "cert.pem", "--tls-key", "key.pem"];
  for (const hostname of ["0.0.0.0", "::", "203.0.113.7", "files.example.org"]) {
    assertMatch(
      configError(["--hostname", hostname, ...tls]),
      /handshake that never completes.*nginx.*--allow-unbounded-tls-handshakes/,
    );
    const allowed = configOf([
      "--hostname",
      hostname,
      ...tls,
      "--allow-unbounded-tls-handshakes",
      "true",
    ]);
    assertEquals(allowed.tls, { certFile: "cert.pem", keyFile: "key.pem" });
  }
  for (const hostname of ["127.0.0.1", "localhost", "::1"]) {
    assertEquals(configOf(["--hostname", hostname, ...tls]).tls?.certFile, "cert.pem");
  }
});
