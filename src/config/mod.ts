/**
 * The configuration's public face: what the rest of the program imports.
 * Inside this folder the parts are kept apart: the shape (types.ts), the
 * option table (options.ts), the command line and `--help`
 * (command_line.ts), loading flags and environment into the frozen object
 * (load.ts), and parsing single values (parse.ts).
 *
 * @example
 * const loaded = loadConfig(Deno.args, env);
 * if (loaded.kind === "help") console.log(loaded.text);
 */
export { ENV_NAMES, loadConfig } from "./load.ts";
export type { LoadResult } from "./load.ts";
export { helpText } from "./command_line.ts";
export { OPTIONS, S3_CREDENTIAL_ENV } from "./options.ts";
export { ConfigError, parseSize } from "./parse.ts";
export { LOG_FORMATS, SIGNUP_MODES, STORE_KINDS, TOKEN_ALGS } from "./types.ts";
export type {
  Config,
  LogFormat,
  S3Config,
  SignupMode,
  StoreKind,
  TierConfig,
  TokenAlg,
  WalletConfig,
} from "./types.ts";
