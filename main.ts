/**
 * Entry point.
 *
 *   main.ts [serve] [flags]     run the service (see --help)
 *   main.ts rotate-key [flags]  replace the HMAC key: every token issued so far stops working
 *
 * Serving prints one "Listening on" line on stdout and shuts down gracefully
 * on SIGINT/SIGTERM.
 */
import { ConfigError, ENV_NAMES, loadConfig } from "./src/config.ts";
import type { Config } from "./src/config.ts";
import { KeyFileError, keyFilePath, rotateKeyFile } from "./src/auth/hmac_key.ts";
import { startServer } from "./src/server.ts";

export async function main(args: string[]): Promise<number> {
  const env: Record<string, string | undefined> = {};
  for (const name of ENV_NAMES) env[name] = Deno.env.get(name);
  const [command, rest] = args[0] === "serve" || args[0] === "rotate-key"
    ? [args[0], args.slice(1)]
    : ["serve", args];

  let config: Config;
  try {
    const loaded = loadConfig(rest, env);
    if (loaded.kind === "help") {
      console.log(loaded.text);
      return 0;
    }
    config = loaded.config;
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`error: ${error.message}`);
      return 2;
    }
    throw error;
  }

  try {
    return command === "rotate-key" ? await rotateKey(config) : await serve(config);
  } catch (error) {
    if (error instanceof KeyFileError) {
      console.error(`error: ${error.message}`);
      return 2;
    }
    throw error;
  }
}

async function serve(config: Config): Promise<number> {
  const server = await startServer({ config });
  console.log(`Listening on ${server.url}/`);
  const stopped = Promise.withResolvers<void>();
  const onSignal = () => server.shutdown().then(stopped.resolve, stopped.reject);
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);
  await stopped.promise;
  Deno.removeSignalListener("SIGINT", onSignal);
  Deno.removeSignalListener("SIGTERM", onSignal);
  return 0;
}

async function rotateKey(config: Config): Promise<number> {
  const path = keyFilePath({ dataDir: config.dataDir, keyFile: config.hmacKeyFile });
  if (path === null) {
    console.error("error: no key file: set --data-dir or --hmac-key-file");
    return 2;
  }
  await rotateKeyFile(path);
  console.log(
    `Rotated the HMAC key in ${path}. Every token issued before now is invalid; ` +
      `a running server picks the new key up within ${config.hmacKeyReloadMs / 1000} s.`,
  );
  return 0;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
