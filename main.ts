/**
 * Entry point: parse configuration, start the server, print one
 * "Listening on" line on stdout, and shut down gracefully on SIGINT/SIGTERM.
 *
 *   deno task start [--port 8080] [--data-dir ./data] …   (see --help)
 */
import { ConfigError, ENV_NAMES, loadConfig } from "./src/config.ts";
import { startServer } from "./src/server.ts";

export async function main(args: string[]): Promise<number> {
  const env: Record<string, string | undefined> = {};
  for (const name of ENV_NAMES) env[name] = Deno.env.get(name);
  const positional = args[0] === "serve" ? args.slice(1) : args;

  let loaded;
  try {
    loaded = loadConfig(positional, env);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`error: ${error.message}`);
      return 2;
    }
    throw error;
  }
  if (loaded.kind === "help") {
    console.log(loaded.text);
    return 0;
  }

  const server = await startServer({ config: loaded.config });
  console.log(`Listening on ${server.url}/`);

  const stopped = Promise.withResolvers<void>();
  const onSignal = () => {
    server.shutdown().then(stopped.resolve, stopped.reject);
  };
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);
  await stopped.promise;
  Deno.removeSignalListener("SIGINT", onSignal);
  Deno.removeSignalListener("SIGTERM", onSignal);
  return 0;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
