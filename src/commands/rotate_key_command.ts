/**
 * `main.ts rotate-key` — replaces the token signing key where the server
 * keeps it (backends/open.ts finds the place): the data directory's hmac.key
 * or the --hmac-key-file (written atomically; a running server re-reads it),
 * or, with --database and no key file, the key in the database, which every
 * instance re-reads. Every token issued before stops working. It takes the
 * server's flags only (its --help is the server's).
 */
import { ConfigError } from "../config/mod.ts";
import type { OperatorCommandOptions } from "./command_args.ts";
import { runOperatorCommand } from "./run_command.ts";

export function runRotateKeyCommand(options: OperatorCommandOptions): Promise<number> {
  return runOperatorCommand(options, {
    commandLine: "server flags",
    async run({ config }, open) {
      // Only the key's place: a file is not opened before it is replaced, a database is.
      const backends = await open(config, {
        needs: { metadata: false, store: false, hmacKey: false },
        dataDir: "existing",
      });
      const place = backends.keyPlace;
      if (place === null) throw new ConfigError("no key file: set --data-dir or --hmac-key-file");
      await place.rotate();
      const seconds = config.hmacKeyReloadMs / 1000;
      return {
        report: place.shared
          ? `Rotated the HMAC key in the database at ${backends.postgres!.where}. Every token ` +
            `issued before now is invalid; every instance picks the new key up within ${seconds} s.`
          : `Rotated the HMAC key in ${place.where}. Every token issued before now is invalid; ` +
            `a running server picks the new key up within ${seconds} s.`,
      };
    },
  });
}
