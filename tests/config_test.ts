import { assertEquals, assertMatch, assertOk } from "./helpers/assert.ts";
import { ConfigError, ENV_NAMES, loadConfig, OPTIONS } from "../src/config.ts";
import type { Config } from "../src/config.ts";

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
  });
  assertEquals(config.token, { maxFileBytes: 5 * 2 ** 30, dailyCapBytes: 2 ** 30, termDays: 365 });
  assertOk(Object.isFrozen(config) && Object.isFrozen(config.sponsored));
});

Deno.test("config: every setting has a STORAGE_ variable and the flag wins over it", () => {
  for (const name of ENV_NAMES) assertMatch(name, /^STORAGE_[A-Z_]+$/);
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
