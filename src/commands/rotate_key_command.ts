/**
 * `main.ts rotate-key` — replaces the token signing key where the server
 * keeps it (backends/open.ts finds the place): the data directory's hmac.key
 * or the --hmac-key-file (written atomically; a running server re-reads it),
 * or, with --database and no key file, the key in the database, which every
 * instance re-reads. Every token issued before stops working. Under
 * --token-alg RS256 it rotates the RSA keys instead (the data directory's, or
 * with --database the ones every instance shares): a new key signs from now
 * on, and the previous one's public half stays published (tokens it signed
 * keep working) until the last of them expires. It takes the server's flags
 * only (its --help is the server's).
 */
import { ConfigError } from "../config/mod.ts";
import type { OperatorCommandOptions } from "./command_args.ts";
import { runOperatorCommand } from "./run_command.ts";
import { rotateRsaKeys } from "../auth/rsa_keys.ts";
import type { RsaKeyStore } from "../domain/signing_keys.ts";
import type { Config } from "../config/mod.ts";

export function runRotateKeyCommand(options: OperatorCommandOptions): Promise<number> {
  return runOperatorCommand(options, {
    commandLine: "server flags",
    async run({ config }, open) {
      // Only the key's place: a file is not opened before it is replaced, a database is.
      const backends = await open(config, {
        needs: { metadata: false, store: false, hmacKey: false },
        dataDir: "existing",
      });
      if (config.tokenAlg === "RS256" && backends.rsaKeyStore !== null) {
        return { report: await rotateRsaKeysIn(backends.rsaKeyStore, config) };
      }
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

/** A new RSA signing key; the previous public key is kept as long as a token it signed may live. */
async function rotateRsaKeysIn(store: RsaKeyStore, config: Config): Promise<string> {
  const nowMs = Date.now();
  const keepPublicMs = config.tokenLifetimeDays * 86_400_000;
  await rotateRsaKeys(store, { nowMs, keepPublicMs });
  const until = new Date(nowMs + keepPublicMs).toISOString().replace(/\.\d{3}Z$/, "Z");
  return `Rotated the RSA key in ${store.where}. New tokens are signed with the new key; tokens ` +
    `issued before keep working, and the previous public key stays in /.well-known/jwks.json, ` +
    `until ${until}. ${store.shared ? "Every instance picks" : "A running server picks"} the ` +
    `new key up within ${config.hmacKeyReloadMs / 1000} s.`;
}
