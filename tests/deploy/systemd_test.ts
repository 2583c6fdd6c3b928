/**
 * deploy/storage-service.service and deploy/storage-service.env.
 *
 * `systemd-analyze verify` (Debian's systemd package) checks the unit as systemd would load it.
 * It also checks that ExecStart's binary exists, so it runs against a temporary root holding
 * the unit in /etc/systemd/system, a stand-in executable at /usr/local/bin/storage-service, and
 * a copy of the system's own units (the default dependencies, sysinit.target and the like): the
 * unit file itself is not changed. Any output at all is a failure: verify reports unknown keys
 * and bad values as warnings with exit status 0.
 *
 * The other test reads the unit and the env file the way systemd would and feeds them to the
 * service's own configuration code, so the example settings, the stop timeout and the addresses
 * nginx expects stay true to the service.
 */
import { ENV_NAMES, loadConfig } from "../../src/config/mod.ts";
import { resolveClientKey } from "../../src/net/ip.ts";
import { DEFAULT_DATA_DIR, MALLOC_ENV, runtimeFlags } from "../../scripts/compile.ts";
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { ignoredWithout } from "../helpers/debian_tools.ts";
import { withTempDir } from "../helpers/files.ts";

const UNIT = new URL("../../deploy/storage-service.service", import.meta.url);
const ENV_FILE = new URL("../../deploy/storage-service.env", import.meta.url);
const NGINX_SITE = new URL("../../deploy/nginx.conf", import.meta.url);
const SYSTEM_UNITS = "/usr/lib/systemd/system";

const ignore = ignoredWithout("systemd-analyze verify", "systemd-analyze");

Deno.test({
  name: "systemd: systemd-analyze verify accepts the unit without a single warning",
  ignore,
  async fn() {
    await withTempDir("systemd-test-", async (root) => {
      await Deno.mkdir(`${root}/etc/systemd/system`, { recursive: true });
      await Deno.copyFile(UNIT, `${root}/etc/systemd/system/storage-service.service`);
      await Deno.mkdir(`${root}/usr/local/bin`, { recursive: true });
      await Deno.writeTextFile(`${root}/usr/local/bin/storage-service`, "#!/bin/sh\nexit 0\n", {
        mode: 0o755,
      });
      await Deno.mkdir(`${root}/usr/lib/systemd`, { recursive: true });
      const copied = await new Deno.Command("cp", {
        args: ["-a", SYSTEM_UNITS, `${root}/usr/lib/systemd/`],
      }).output();
      assertEquals(copied.code, 0, new TextDecoder().decode(copied.stderr));

      const verify = await new Deno.Command("systemd-analyze", {
        args: ["verify", `--root=${root}`, "storage-service.service"],
        stdin: "null",
        env: { SYSTEMD_LOG_COLOR: "0", SYSTEMD_PAGER: "" },
      }).output();
      const output = new TextDecoder().decode(verify.stdout) +
        new TextDecoder().decode(verify.stderr);
      assertEquals({ code: verify.code, output }, { code: 0, output: "" });
    });
  },
});

/** [Service] (and other sections') settings as systemd reads them: repeated keys accumulate. */
function unitSettings(text: string): Map<string, string[]> {
  const settings = new Map<string, string[]>();
  const joined = text.replace(/\\\n/g, " ");
  for (const raw of joined.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";") || line.startsWith("[")) {
      continue;
    }
    const eq = line.indexOf("=");
    const key = line.slice(0, eq);
    settings.set(key, [...settings.get(key) ?? [], line.slice(eq + 1)]);
  }
  return settings;
}

/** An EnvironmentFile's assignments, and the names of the commented-out examples. */
function envFile(text: string): { env: Record<string, string>; examples: string[] } {
  const env: Record<string, string> = {};
  const examples: string[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    const example = /^#([A-Z][A-Z0-9_]*)=/.exec(line);
    if (example) examples.push(example[1]);
    if (line === "" || line.startsWith("#")) continue;
    const eq = line.indexOf("=");
    env[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return { env, examples };
}

Deno.test("systemd: the unit and the env file configure the service nginx expects", async () => {
  const unitText = await Deno.readTextFile(UNIT);
  const unit = unitSettings(unitText);
  const one = (key: string) => {
    const values = unit.get(key) ?? [];
    assertEquals(values.length, 1, `${key}= once`);
    return values[0];
  };
  const { env: fileEnv, examples } = envFile(await Deno.readTextFile(ENV_FILE));
  for (const name of [...Object.keys(fileEnv), ...examples]) {
    assertOk(ENV_NAMES.includes(name), `${name} in deploy/storage-service.env is a setting`);
  }

  // The service as the unit starts it: Environment=, then the EnvironmentFile over it.
  const [binary, ...args] = one("ExecStart").split(/\s+/);
  assertEquals(binary, "/usr/local/bin/storage-service");
  const env: Record<string, string> = {};
  for (const assignment of (unit.get("Environment") ?? []).join(" ").split(/\s+/)) {
    const eq = assignment.indexOf("=");
    env[assignment.slice(0, eq)] = assignment.slice(eq + 1);
  }
  // glibc's malloc settings of the start task (scripts/compile.ts MALLOC_ENV says why).
  for (const [name, value] of Object.entries(MALLOC_ENV)) assertEquals(env[name], value, name);
  assertEquals(one("EnvironmentFile"), "/etc/storage-service/storage-service.env");
  const loaded = loadConfig(args, { ...env, ...fileEnv });
  assertOk(loaded.kind === "config");
  const config = loaded.config;

  // Its data directory is the StateDirectory, and the one compile-server bakes in by default.
  assertEquals(config.dataDir, DEFAULT_DATA_DIR);
  assertEquals(`/var/lib/${one("StateDirectory")}`, DEFAULT_DATA_DIR);
  // The commented deno-run alternative has the binary's permissions.
  const commented = unitText.replace(/\\\n#\s*/g, " ");
  const denoRun = /^#\s*ExecStart=.*deno run .*$/m.exec(commented)?.[0] ?? "";
  for (const flag of runtimeFlags(DEFAULT_DATA_DIR)) {
    assertOk(denoRun.includes(` ${flag} `), `the deno run ExecStart has ${flag}`);
  }

  // It listens where nginx's upstream points, and believes nginx's X-Forwarded-For.
  const site = await Deno.readTextFile(NGINX_SITE);
  assertOk(site.includes(`server ${config.hostname}:${config.port};`), "nginx's upstream");
  assertEquals(
    resolveClientKey("127.0.0.1", "198.51.100.7", config.trustedProxies),
    "v4:198.51.100.7",
  );
  assertEquals(config.signup, "closed");
  assertEquals(config.baseUrl, "https://files.example.org");

  // systemd waits longer than the upload drain plus the 2 s the server gives idle connections.
  const stopSeconds = Number(/^(\d+)s?$/.exec(one("TimeoutStopSec"))?.[1]);
  assertOk(
    stopSeconds >= config.shutdownTimeoutMs / 1000 + 10,
    `TimeoutStopSec=${stopSeconds} leaves room after --shutdown-timeout`,
  );
  assertEquals(one("KillSignal"), "SIGTERM");
  assertEquals(one("Restart"), "on-failure");
  assertEquals(one("CapabilityBoundingSet"), "");
  for (
    const [key, value] of [
      ["ProtectSystem", "strict"],
      ["ProtectHome", "yes"],
      ["PrivateTmp", "yes"],
      ["NoNewPrivileges", "yes"],
    ]
  ) {
    assertEquals(one(key), value, key);
  }
});
