/**
 * The account commands: signup (and signup verify), tokens list / revoke,
 * files, usage, limits, extend, delete (wallet login, which needs no client, is
 * wallet.ts). Each is one SDK call; this module validates
 * the flags (exit 2 before any request), and prints the answer: the server's
 * JSON object as is with --json, a short table or a few lines otherwise.
 *
 * The one secret that is ever printed is a new token from signup (or wallet
 * login): shown once, as the server shows it. The token the command runs with never is.
 */
import type { Deal, SignupResult, StorageClient } from "../sdk/mod.ts";
import { integerFlag, sizeFlag, UsageError } from "./args.ts";
import type { Flags, GlobalOptions } from "./args.ts";
import { printJson, printLines, table } from "./output.ts";
import type { CliIo } from "./output.ts";
import { formatBytes } from "./progress.ts";

export interface AccountCommandOptions {
  io: CliIo;
  global: GlobalOptions;
  client: StorageClient;
  args: readonly string[];
  flags: Flags;
}

type Handler = (options: AccountCommandOptions) => Promise<number>;

export const ACCOUNT_COMMANDS: Record<string, Handler> = {
  signup: signupCommand,
  "signup verify": signupVerifyCommand,
  "tokens list": tokensListCommand,
  "tokens revoke": tokensRevokeCommand,
  files: filesCommand,
  usage: usageCommand,
  limits: limitsCommand,
  extend: extendCommand,
  delete: deleteCommand,
};

function required(flags: Flags, name: string): string {
  const value = flags[name];
  if (typeof value !== "string" || value === "") throw new UsageError(`--${name} is required`);
  return value;
}

function optional(flags: Flags, name: string): string | undefined {
  const value = flags[name];
  return typeof value === "string" ? value : undefined;
}

async function signupCommand({ io, global, client, flags }: AccountCommandOptions) {
  const email = required(flags, "email");
  const label = required(flags, "label");
  const scopes = optional(flags, "scopes")?.split(",").map((s) => s.trim()).filter((s) => s);
  const quota = optional(flags, "quota-mb");
  const quotaMb = quota === undefined ? undefined : integerFlag("--quota-mb", quota, 1, 1 << 30);
  const result = await client.signup({ email, label, scopes, quotaMb });
  if (global.json) return await done(printJson(io, result));
  if (!("token" in result)) {
    return await done(printLines(io, [
      `A code was mailed to ${result.email}. Exchange it for the token with:`,
      `  storage signup verify --email ${result.email} --code CODE`,
    ]));
  }
  return await done(printLines(io, signupLines(result)));
}

async function signupVerifyCommand({ io, global, client, flags }: AccountCommandOptions) {
  const email = required(flags, "email");
  const code = required(flags, "code");
  const result = await client.verifySignup({ email, code });
  return await done(global.json ? printJson(io, result) : printLines(io, signupLines(result)));
}

function signupLines(r: SignupResult): string[] {
  return newTokenLines(
    r,
    `${r.email}: scopes ${r.scopes.join(",")}, ${r.quotaMb} MiB a day, expires ${r.expiresAt}`,
  );
}

/**
 * What a command that mints a token prints (signup, wallet login): the token
 * first and alone on its line, how to keep it, `about` (whose token it is and
 * what it may do), and the id to revoke it by.
 */
export function newTokenLines(r: { token: string; jti: string }, about: string): string[] {
  return [
    r.token,
    "",
    "This token is shown once. Keep it secret; give it to the CLI through the environment:",
    "  export STORAGE_TOKEN=<the token above>",
    about,
    `token id (jti, to revoke it): ${r.jti}`,
  ];
}

async function tokensListCommand({ io, global, client }: AccountCommandOptions) {
  const result = await client.tokens();
  if (global.json) return await done(printJson(io, result));
  const rows = result.tokens.map((t) => [
    t.jti,
    t.label,
    t.scopes.join(","),
    // A wallet token's quota is its wallet's USDC balance, read at each upload.
    t.quotaMb === null ? "USDC balance" : `${t.quotaMb} MiB`,
    t.expiresAt,
    t.revoked ? `revoked ${t.revokedAt}` : t.current ? "current" : "",
  ]);
  return await done(
    printLines(io, table(["JTI", "LABEL", "SCOPES", "QUOTA", "EXPIRES", "STATE"], rows)),
  );
}

async function tokensRevokeCommand({ io, global, client, args }: AccountCommandOptions) {
  const result = await client.revokeToken(args[0]);
  if (global.json) return await done(printJson(io, result));
  return await done(printLines(io, [`revoked ${result.jti} at ${result.revokedAt}`]));
}

/**
 * `files`: one row per file. A split file is one row (its name, its real
 * size, its manifest's cid and deal) with its parts on the lines under it,
 * not its manifest's deal and one deal per part; --json prints the server's
 * page of deals as it is.
 */
async function filesCommand({ io, global, client, flags }: AccountCommandOptions) {
  const rawLimit = optional(flags, "limit");
  const limit = rawLimit === undefined ? undefined : integerFlag("--limit", rawLimit, 1, 1000);
  const cursor = optional(flags, "cursor");
  const page = await client.files({ limit, cursor });
  if (global.json) return await done(printJson(io, page));
  // A server that hands pieces to a storage provider says where each stands there.
  const handedOff = page.files.some((f) => f.handoff !== undefined);
  const rows: string[][] = [];
  for (const file of await client.splitFiles().add(page.files)) {
    const f = file.deal;
    rows.push([
      f.cid,
      formatBytes(file.size),
      f.createdAt,
      f.termEndsAt,
      f.state,
      f.dealId,
      ...(handedOff ? [handoffText(f.handoff)] : []),
      (file.name ?? "") + (file.manifest ? ` (split file, ${file.parts.length} parts)` : ""),
    ]);
    for (const part of file.parts) {
      const blanks = Array(handedOff ? 5 : 4).fill("");
      rows.push([`  ${part.cid}`, formatBytes(part.size), ...blanks, part.name ?? ""]);
    }
  }
  const lines = table(
    [
      "CID",
      "SIZE",
      "CREATED",
      "TERM ENDS",
      "STATE",
      "DEAL",
      ...(handedOff ? ["PROVIDER"] : []),
      "NAME",
    ],
    rows,
  );
  if (page.nextCursor !== null) lines.push(`more: storage files --cursor ${page.nextCursor}`);
  return await done(printLines(io, lines));
}

async function usageCommand({ io, global, client, flags }: AccountCommandOptions) {
  const from = optional(flags, "from");
  const to = optional(flags, "to");
  for (const [flag, value] of [["--from", from], ["--to", to]]) {
    if (value !== undefined && !/^\d{4}-\d{2}-\d{2}$/.test(value)) {
      throw new UsageError(`${flag} must be a day like 2026-11-22, got "${value}"`);
    }
  }
  const usage = await client.usage({ from, to });
  if (global.json) return await done(printJson(io, usage));
  const rows = usage.days.filter((d) => d.uploads > 0).map((d) => [
    d.date,
    formatBytes(d.bytes),
    String(d.uploads),
  ]);
  const total = usage.days.reduce((n, d) => n + d.bytes, 0);
  return await done(printLines(io, [
    `${usage.from} to ${usage.to}: ${formatBytes(total)} uploaded`,
    ...(rows.length ? table(["DAY", "BYTES", "UPLOADS"], rows) : []),
    `today: ${formatBytes(usage.remainingTodayBytes)} left of ${formatBytes(usage.quotaBytes)}`,
  ]));
}

async function limitsCommand({ io, global, client, flags }: AccountCommandOptions) {
  const rawSize = optional(flags, "size");
  const size = rawSize === undefined ? undefined : sizeFlag("--size", rawSize);
  const limits = await client.limits({ size });
  if (global.json) return await done(printJson(io, limits));
  const lines = [
    `tier: ${limits.tier}`,
    `per file: ${limits.maxFileBytes === null ? "no cap" : formatBytes(limits.maxFileBytes)}`,
    `today: ${formatBytes(limits.remainingTodayBytes)} left of ${
      formatBytes(limits.dailyCapBytes)
    } (resets ${limits.resetsAt})`,
  ];
  if (limits.wallet) {
    const { address, usdcBalance, dayStartUsdcBalance, bytesPerUsdc, stale } = limits.wallet;
    lines.push(
      `wallet: ${address}, ${usdcBalance} USDC × ${formatBytes(bytesPerUsdc)} per USDC` +
        (dayStartUsdcBalance !== null && dayStartUsdcBalance !== usdcBalance
          ? ` (${dayStartUsdcBalance} USDC when the UTC day began; the smaller counts)`
          : "") +
        (stale ? " (balance from before the chain became unreachable)" : ""),
    );
  }
  if (limits.size !== undefined) {
    lines.push(
      limits.accepted
        ? `an upload of ${formatBytes(limits.size)} would be accepted now`
        : `an upload of ${formatBytes(limits.size)} would be refused: ${limits.reason}`,
    );
  }
  return await done(printLines(io, lines));
}

async function extendCommand({ io, global, client, args }: AccountCommandOptions) {
  const deal = await client.extendDeal(args[0]);
  if (global.json) return await done(printJson(io, deal));
  return await done(printLines(io, [`${deal.dealId}: ${deal.term}, ends ${deal.termEndsAt}`]));
}

/**
 * `delete DEAL_ID --yes`: ends the deal. Without --yes nothing is sent: a
 * deletion cannot be undone, so it is asked for in so many words.
 */
async function deleteCommand({ io, global, client, args, flags }: AccountCommandOptions) {
  if (flags.yes !== true) {
    throw new UsageError(
      `deleting ${args[0]} cannot be undone: run "storage delete ${args[0]} --yes" to confirm`,
    );
  }
  const deal = await client.deleteDeal(args[0]);
  if (global.json) return await done(printJson(io, deal));
  return await done(printLines(io, [
    `${deal.dealId}: deleted at ${deal.deletedAt} (${deal.filename ?? deal.cid})`,
  ]));
}

async function done(printing: Promise<void>): Promise<number> {
  await printing;
  return 0;
}

/** A deal's hand-off in one word or two: its state, and once live its on-chain ids. */
export function handoffText(handoff: Deal["handoff"]): string {
  if (!handoff) return "-";
  if (handoff.state === "live") return `live ${handoff.dataSetId}/${handoff.pieceId}`;
  return handoff.state;
}
