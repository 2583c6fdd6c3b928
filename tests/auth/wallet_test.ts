/**
 * The wallet tier against a real chain: anvil with the Test USD Coin
 * contract, balances set by real transactions, the real server reading them
 * with eth_call. Sign-in (EIP-4361) with real keys, every way a message can
 * be wrong, caps from balances, parallel uploads at the cap, and the chain
 * going away and coming back.
 */
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { catchUpToNow, deployTestUsdc, startAnvil, usdc } from "../helpers/anvil.ts";
import type { Anvil, TestUsdc } from "../helpers/anvil.ts";
import { FakeClock } from "../helpers/clock.ts";
import { decodeToken } from "../helpers/jwt.ts";
import { bearer, errorOf, patternBytes, startTestServer } from "../helpers/server.ts";
import { eventually } from "../helpers/wait.ts";
import type { TestServer } from "../helpers/server.ts";
import {
  devKey,
  postSignIn,
  signedMessage,
  TEST_CHAIN_ID,
  walletArgs,
  walletSignIn,
} from "../helpers/wallet.ts";
import { loadConfig } from "../../src/config/mod.ts";
import { nextUtcMidnight } from "../../src/kernel/clock.ts";
import { privateKeyToAccount } from "viem/accounts";
import { withTempDir } from "../helpers/files.ts";

const KIB = 1024;
/** With 1 KiB per USDC, a balance of n USDC is a daily cap of n KiB. */
const BYTES_PER_USDC = ["--wallet-bytes-per-usdc", "1KiB"];
const ALICE = 1;
const BOB = 2;
/** Never funded: where Alice moves her coins. */
const CAROL = 3;

interface WalletWorld extends AsyncDisposable {
  anvil: Anvil;
  token: TestUsdc;
  server: TestServer;
  clock: FakeClock;
}

/** anvil, the token, and a wallet-tier server reading balances from them. */
async function walletWorld(
  options: { extraArgs?: string[]; fund?: Record<number, number>; pruneHistory?: boolean } = {},
): Promise<WalletWorld> {
  const anvil = await startAnvil({ pruneHistory: options.pruneHistory });
  try {
    const token = await deployTestUsdc(anvil);
    for (const [index, amount] of Object.entries(options.fund ?? { [ALICE]: 2 })) {
      await token.mint(anvil.accounts[Number(index)].address, usdc(amount));
    }
    const clock = new FakeClock(Date.now());
    const server = await startTestServer({
      clock,
      args: walletArgs(anvil.rpcUrl, token.address, [
        ...BYTES_PER_USDC,
        ...(options.extraArgs ?? []),
      ]),
    });
    return {
      anvil,
      token,
      server,
      clock,
      async [Symbol.asyncDispose]() {
        try {
          await server[Symbol.asyncDispose]();
        } finally {
          await anvil[Symbol.asyncDispose]();
        }
      },
    };
  } catch (error) {
    await anvil[Symbol.asyncDispose]();
    throw error;
  }
}

async function json(response: Response): Promise<Record<string, unknown>> {
  return await response.json();
}

async function limitsOf(server: TestServer, token: string) {
  const response = await server.get("/api/limits", { headers: bearer(token) });
  const body = await json(response);
  assertEquals(response.status, 200, JSON.stringify(body));
  return body as {
    tier: string;
    dailyCapBytes: number;
    remainingTodayBytes: number;
    maxFileBytes: number | null;
    wallet: {
      address: string;
      usdcBalance: string;
      dayStartUsdcBalance: string | null;
      stale: boolean;
    };
  };
}

function postAs(server: TestServer, path: string, token: string, body?: unknown) {
  return fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { ...bearer(token), "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function uploadAs(server: TestServer, token: string, cid: string, size: number) {
  return await server.upload(cid, patternBytes(size, size), { headers: bearer(token) });
}

Deno.test("wallet: sign-in gives a 24-hour wallet token, listed, revocable, with the wallet's files", async () => {
  await using world = await walletWorld();
  const { server, anvil, clock } = world;
  const alice = anvil.accounts[ALICE];
  const signed = await signedMessage(server.url, alice.privateKey, { now: new Date(clock.now()) });
  const response = await postSignIn(server.url, signed);
  const result = await json(response);
  assertEquals(response.status, 201, JSON.stringify(result));
  assertEquals(result.wallet, alice.address);
  assertEquals(result.scopes, ["put", "get", "list", "pin"]);
  const token = result.token as string;
  assertOk(token.startsWith("pk_live_"));

  // Claims: sub from the lowercased address, the EIP-55 wallet, a day's lifetime, no e-mail.
  const { payload } = decodeToken(token);
  assertEquals(Object.keys(payload).sort(), ["exp", "iat", "jti", "scopes", "sub", "wallet"]);
  assertEquals(payload.wallet, alice.address);
  assertEquals(payload.sub, result.userId);
  assertEquals((payload.exp as number) - (payload.iat as number), 86_400);
  assertEquals(payload.jti, result.jti);

  // Every sign-in of an address is the same user.
  const again = await walletSignIn(server.url, alice.privateKey, new Date(clock.now()));
  assertEquals(again.userId, result.userId);

  // Uploads are the wallet tier's, owned by the address.
  const uploaded = await uploadAs(server, token, "bafkwalletfile01", 100);
  const deal = await json(uploaded);
  assertEquals(uploaded.status, 200, JSON.stringify(deal));
  assertEquals([deal.sponsored, deal.owner, deal.term], [false, alice.address, "365 days"]);
  const files = await json(await server.get("/api/files", { headers: bearer(again.token) }));
  assertEquals((files.files as { cid: string }[]).map((f) => f.cid), ["bafkwalletfile01"]);
  const usage = await json(await server.get("/api/usage", { headers: bearer(token) }));
  assertEquals([usage.quotaBytes, usage.remainingTodayBytes], [2 * KIB, 2 * KIB - 100]);
  const extended = await postAs(server, `/api/deals/${deal.dealId}/extend`, token);
  assertEquals((await json(extended)).term, "730 days");

  // Listed like any token, without a quota of its own; revoked like any token.
  const listed = await json(await server.get("/api/tokens", { headers: bearer(token) }));
  const tokens = listed.tokens as { jti: string; quotaMb: number | null; label: string }[];
  assertEquals(tokens.length, 2);
  assertOk(tokens.every((t) => t.quotaMb === null && t.label === "wallet sign-in"));
  const revoke = await postAs(server, "/api/tokens/revoke", token, { jti: result.jti });
  assertEquals(revoke.status, 200);
  await revoke.body?.cancel();
  const refused = await server.get("/api/limits", { headers: bearer(token) });
  assertEquals([refused.status, (await errorOf(refused)).error], [401, "revoked_token"]);
});

Deno.test("wallet: every wrong message or signature is 401 invalid_signature, and the nonce is spent once", async () => {
  await using world = await walletWorld();
  const { server, clock } = world;
  const key = devKey(ALICE);
  const now = () => new Date(clock.now());
  const refusedWith = async (body: unknown, pattern: RegExp, what: string) => {
    const response = await postSignIn(server.url, body);
    const error = await errorOf(response);
    assertEquals([response.status, error.error], [401, "invalid_signature"], what);
    assertMatch(error.message, pattern, what);
  };

  /** A good message edited, then signed as edited by the same key. */
  const resigned = (edit: (message: string) => string) => async () => {
    const changed = edit((await signedMessage(server.url, key, { now: now() })).message);
    return {
      message: changed,
      signature: await privateKeyToAccount(key).signMessage({ message: changed }),
    };
  };
  const cases: [string, () => Promise<unknown>, RegExp][] = [
    [
      "wrong domain",
      () => signedMessage(server.url, key, { now: now(), overrides: { domain: "evil.example" } }),
      /domain/,
    ],
    [
      "wrong uri",
      () =>
        signedMessage(server.url, key, {
          now: now(),
          overrides: { uri: "https://evil.example/" },
        }),
      /uri/,
    ],
    [
      "wrong chain",
      () => signedMessage(server.url, key, { now: now(), overrides: { chainId: 1 } }),
      /chain id/,
    ],
    [
      "expired message",
      () =>
        signedMessage(server.url, key, {
          now: new Date(clock.now() - 8 * 60_000),
          overrides: { expirationTime: new Date(clock.now() - 60_000) },
        }),
      /expired/,
    ],
    [
      "issued a year ago",
      () =>
        signedMessage(server.url, key, {
          now: now(),
          overrides: { issuedAt: new Date(clock.now() - 365 * 86_400_000) },
        }),
      /issued-at/,
    ],
    [
      "expiring 650 s ahead",
      () =>
        signedMessage(server.url, key, {
          now: now(),
          overrides: { expirationTime: new Date(clock.now() + 650_000) },
        }),
      /expiration/,
    ],
    // Signed as edited: only the layout is wrong. A wallet would not show these as SIWE.
    ["a line after the last field", resigned((m) => `${m}\nhello`), /line \d+ is not part/],
    [
      "a second field block",
      resigned((m) => `${m}\nURI: https://evil.example\nVersion: 1`),
      /not part/,
    ],
    [
      "a statement over two lines",
      resigned((m) => m.replace("Sign in to", "Sign in\nto")),
      /statement/,
    ],
    [
      "a zero-padded chain id",
      resigned((m) => m.replace("Chain ID: ", "Chain ID: 00")),
      /Chain ID/,
    ],
    [
      "an address without its checksum",
      resigned((m) => m.replace(/^0x[0-9a-fA-F]{40}$/m, (a) => a.toLowerCase())),
      /checksummed/,
    ],
    [
      "an address with a wrong checksum",
      resigned((m) =>
        m.replace(/^(0x[0-9a-fA-F]{40})$/m, (a) => a.replace(/[a-f]/, (c) => c.toUpperCase()))
      ),
      /checksummed/,
    ],
    [
      "no expiration time",
      () =>
        signedMessage(server.url, key, { now: now(), overrides: { expirationTime: undefined } }),
      /expiration/,
    ],
    [
      "expiring too far ahead",
      () =>
        signedMessage(server.url, key, {
          now: now(),
          overrides: { expirationTime: new Date(clock.now() + 3_600_000) },
        }),
      /expiration/,
    ],
    [
      "issued in the future",
      () => signedMessage(server.url, key, { now: new Date(clock.now() + 5 * 60_000) }),
      /issued-at/,
    ],
    [
      "a nonce the server never issued",
      () => signedMessage(server.url, key, { now: now(), nonce: "abcdef0123456789" }),
      /nonce/,
    ],
    [
      "another address's signature",
      async () => {
        const mine = await signedMessage(server.url, key, { now: now() });
        const theirs = await signedMessage(server.url, devKey(BOB), { now: now() });
        return { message: mine.message, signature: theirs.signature };
      },
      /not 0x[0-9a-fA-F]{40}'s signature/,
    ],
    [
      "a tampered message (statement changed after signing)",
      async () => {
        const signed = await signedMessage(server.url, key, { now: now() });
        return { ...signed, message: signed.message.replace("Sign in", "Sign on") };
      },
      /signature/,
    ],
    [
      "a signature that is not hex",
      async () => ({ ...await signedMessage(server.url, key, { now: now() }), signature: "0xzz" }),
      /hex/,
    ],
    [
      "not a SIWE message",
      () => Promise.resolve({ message: "hello", signature: "0x1234" }),
      /EIP-4361/,
    ],
  ];
  for (const [what, body, pattern] of cases) await refusedWith(await body(), pattern, what);

  // No statement is fine (the standard's layout then has two empty lines).
  const bare = await signedMessage(server.url, key, {
    now: now(),
    overrides: { statement: undefined },
  });
  assertOk(bare.message.includes(`${bare.address}\n\n\nURI: `));
  const bareAnswer = await postSignIn(server.url, bare);
  assertEquals(bareAnswer.status, 201, await bareAnswer.clone().text());
  await bareAnswer.body?.cancel();

  // A signed message works once; a nonce is spent by the first try that names it, right or wrong.
  const signed = await signedMessage(server.url, key, { now: now() });
  const first = await postSignIn(server.url, signed);
  assertEquals(first.status, 201);
  await first.body?.cancel();
  await refusedWith(signed, /nonce/, "replayed");
  const spentByWrong = await signedMessage(server.url, key, { now: now() });
  await refusedWith(
    {
      ...spentByWrong,
      signature: (await signedMessage(server.url, devKey(BOB), { now: now() })).signature,
    },
    /signature/,
    "wrong signature",
  );
  await refusedWith(spentByWrong, /nonce/, "the right signature after a wrong one");

  // A nonce lives ten minutes.
  const late = await signedMessage(server.url, key, { now: now() });
  clock.advance(10 * 60_000 + 1000);
  await refusedWith(late, /nonce|expired/, "an expired nonce");
});

Deno.test("wallet: a nonce survives a restart and is still single-use", async () => {
  await using anvil = await startAnvil();
  const token = await deployTestUsdc(anvil);
  await withTempDir("wallet-restart-", async (dataDir) => {
    const args = walletArgs(anvil.rpcUrl, token.address);
    let signed;
    let port;
    {
      await using first = await startTestServer({ dataDir, args });
      signed = await signedMessage(first.url, devKey(ALICE));
      port = String(first.server.port);
    }
    // The base URL is part of the message: the server comes back on the same port.
    await using second = await startTestServer({ dataDir, args: [...args, "--port", port] });
    const response = await postSignIn(second.url, signed);
    assertEquals(response.status, 201, JSON.stringify(await response.clone().json()));
    await response.body?.cancel();
    const replay = await postSignIn(second.url, signed);
    assertEquals((await errorOf(replay)).error, "invalid_signature");
  });
});

Deno.test("wallet: the daily cap is the balance × bytes per USDC; a transfer lowers it after the TTL", async () => {
  await using world = await walletWorld({ extraArgs: ["--wallet-balance-ttl", "30"] });
  const { server, anvil, token, clock } = world;
  const signedIn = await walletSignIn(server.url, devKey(ALICE), new Date(clock.now()));
  const limits = await limitsOf(server, signedIn.token);
  assertEquals(
    [limits.tier, limits.dailyCapBytes, limits.maxFileBytes, limits.wallet.usdcBalance],
    ["wallet", 2 * KIB, null, "2"],
  );
  assertEquals(limits.wallet.stale, false);

  const within = await uploadAs(server, signedIn.token, "bafkwalletcap01", 1500);
  assertEquals(within.status, 200);
  await within.body?.cancel();
  const past = await uploadAs(server, signedIn.token, "bafkwalletcap02", 600);
  const error = await errorOf(past);
  assertEquals([past.status, error.error], [429, "quota_exceeded"]);
  assertMatch(error.message, /balance of 2 USDC/);

  // Alice gives away 1.5 USDC: the cap follows once the cached balance is older than the TTL.
  await token.transfer(anvil.accounts[ALICE].privateKey, anvil.accounts[BOB].address, usdc(1.5));
  assertEquals((await limitsOf(server, signedIn.token)).dailyCapBytes, 2 * KIB, "still cached");
  clock.advance(30_000);
  const after = await limitsOf(server, signedIn.token);
  assertEquals([after.dailyCapBytes, after.wallet.usdcBalance], [512, "0.5"]);
  assertEquals(after.remainingTodayBytes, 0, "1500 bytes used of 512");
  const refused = await uploadAs(server, signedIn.token, "bafkwalletcap03", 1);
  assertEquals((await errorOf(refused)).error, "quota_exceeded");
});

Deno.test("wallet: coins moved during the day buy no quota; the cap is the smaller of now and the day's start", async () => {
  await using world = await walletWorld({ fund: { [ALICE]: 1 } });
  const { server, anvil, token, clock } = world;
  // Alice's 1 USDC was minted on an earlier day; this block opens the server's today.
  await catchUpToNow(anvil);
  const alice = await walletSignIn(server.url, devKey(ALICE), new Date(clock.now()));
  const used = await uploadAs(server, alice.token, "bafkrecycle0001", 1000);
  assertEquals(used.status, 200);
  await used.body?.cancel();

  // She moves the coin to a fresh address: its balance now is 1 USDC, at the day's start 0.
  await token.transfer(anvil.accounts[ALICE].privateKey, anvil.accounts[CAROL].address, usdc(1));
  const carol = await walletSignIn(server.url, devKey(CAROL), new Date(clock.now()));
  const limits = await limitsOf(server, carol.token);
  assertEquals(
    [limits.dailyCapBytes, limits.wallet.usdcBalance, limits.wallet.dayStartUsdcBalance],
    [0, "1", "0"],
  );
  const recycled = await uploadAs(server, carol.token, "bafkrecycle0002", 1000);
  const refused = await errorOf(recycled);
  assertEquals([recycled.status, refused.error], [429, "quota_exceeded"]);
  assertMatch(refused.message, /balance of 0 USDC/);
  // Alice's own cap follows her balance down (the smaller of 0 now and 1 at the day's start).
  clock.advance(31_000);
  assertEquals((await limitsOf(server, alice.token)).dailyCapBytes, 0);

  // The next UTC day, before anything moves on it, Carol's coin counts in full.
  clock.advance(nextUtcMidnight(clock.now()) - clock.now() + 1000);
  const tomorrow = await limitsOf(server, carol.token);
  assertEquals([tomorrow.dailyCapBytes, tomorrow.wallet.dayStartUsdcBalance], [KIB, null]);
});

Deno.test("wallet: a node without the day's first block's state leaves the current balance to count, logged once", async () => {
  await using world = await walletWorld({ fund: { [ALICE]: 2 }, pruneHistory: true });
  const { server, anvil, clock } = world;
  await catchUpToNow(anvil);
  await catchUpToNow(anvil); // the day's first block is in the past now, and its state pruned
  const { token } = await walletSignIn(server.url, devKey(ALICE), new Date(clock.now()));
  for (const cid of ["bafkpruned0001", "bafkpruned0002"]) {
    const uploaded = await uploadAs(server, token, cid, 100);
    assertEquals(uploaded.status, 200);
    await uploaded.body?.cancel();
  }
  const limits = await limitsOf(server, token);
  assertEquals([limits.dailyCapBytes, limits.wallet.dayStartUsdcBalance], [2 * KIB, null]);
  const warnings = server.logs.filter((l) => String(l.msg).includes("day's first block"));
  assertEquals(warnings.length, 1, JSON.stringify(warnings));
});

Deno.test("wallet: parallel uploads never jointly pass a balance-derived cap", async () => {
  await using world = await walletWorld({ fund: { [ALICE]: 3 } });
  const { server, clock } = world;
  const { token } = await walletSignIn(server.url, devKey(ALICE), new Date(clock.now()));
  // 3 KiB of cap, ten uploads of 1000 bytes at once: exactly three fit.
  const answers = await Promise.all(
    Array.from({ length: 10 }, (_, i) => uploadAs(server, token, `bafkparallel${i}0`, 1000)),
  );
  const statuses = await Promise.all(answers.map(async (a) => {
    await a.body?.cancel();
    return a.status;
  }));
  assertEquals(statuses.filter((s) => s === 200).length, 3, String(statuses));
  assertEquals(statuses.filter((s) => s === 429).length, 7, String(statuses));
  assertEquals((await limitsOf(server, token)).remainingTodayBytes, 3 * KIB - 3000);
});

Deno.test("wallet: chain down → cached balance for 10 minutes, then 503; chain back → service resumes", async () => {
  await using world = await walletWorld({ extraArgs: ["--wallet-balance-ttl", "30"] });
  const { server, anvil, clock } = world;
  const { token } = await walletSignIn(server.url, devKey(ALICE), new Date(clock.now()));
  assertEquals((await limitsOf(server, token)).wallet.stale, false);
  const healthy = await json(await server.get("/healthz"));
  assertEquals((healthy.wallet as { ok: boolean }).ok, true);

  await anvil.stop();
  clock.advance(60_000);
  // Past the TTL the chain is asked, cannot answer, and the minute-old balance stands in.
  const stale = await limitsOf(server, token);
  assertEquals([stale.dailyCapBytes, stale.wallet.stale], [2 * KIB, true]);
  const upload = await uploadAs(server, token, "bafkchaindown01", 100);
  assertEquals(upload.status, 200);
  await upload.body?.cancel();
  const health = await server.get("/healthz");
  const down = await json(health);
  assertEquals(health.status, 200, "an RPC outage does not make the server degraded");
  const wallet = down.wallet as { enabled: boolean; ok: boolean; lastError: string };
  assertEquals([wallet.enabled, wallet.ok], [true, false]);
  assertOk(!wallet.lastError.includes(anvil.rpcUrl), "the RPC URL is not shown");

  // A sign-in needs no chain for a key's signature.
  const again = await walletSignIn(server.url, devKey(ALICE), new Date(clock.now()));

  clock.advance(10 * 60_000);
  for (
    const response of [
      await server.get("/api/limits", { headers: bearer(again.token) }),
      await uploadAs(server, token, "bafkchaindown02", 100),
      await server.get("/api/usage", { headers: bearer(token) }),
    ]
  ) {
    const error = await errorOf(response);
    assertEquals([response.status, error.error], [503, "wallet_unavailable"]);
  }
  // What went wrong is logged, but never the RPC URL (an API key often rides in it).
  assertOk(server.logs.some((line) => JSON.stringify(line).includes("fetch failed")));
  assertOk(!JSON.stringify(server.logs).includes(anvil.rpcUrl), "the RPC URL is not logged");
  // Files and tokens do not need the chain.
  const files = await server.get("/api/files", { headers: bearer(token) });
  assertEquals(files.status, 200);
  await files.body?.cancel();

  await anvil.start();
  const resumed = await limitsOf(server, token);
  assertEquals([resumed.dailyCapBytes, resumed.wallet.stale], [2 * KIB, false]);
  clock.advance(10_000);
  const back = await json(await server.get("/healthz"));
  assertEquals((back.wallet as { ok: boolean; lastError: null }).ok, true);
});

Deno.test("wallet: an RPC on another chain is refused, and said so in /healthz", async () => {
  await using anvil = await startAnvil({ chainId: 5 });
  const token = await deployTestUsdc(anvil);
  await using server = await startTestServer({ args: walletArgs(anvil.rpcUrl, token.address) });
  const { token: bearerToken } = await walletSignIn(server.url, devKey(ALICE));
  const response = await server.get("/api/limits", { headers: bearer(bearerToken) });
  assertEquals([response.status, (await errorOf(response)).error], [503, "wallet_unavailable"]);
  const health = await json(await server.get("/healthz"));
  const wallet = health.wallet as {
    ok: boolean;
    chainId: number;
    rpcChainId: number;
    lastError: string;
  };
  assertEquals([wallet.ok, wallet.chainId, wallet.rpcChainId], [false, TEST_CHAIN_ID, 5]);
  assertMatch(wallet.lastError, /chain 5, not the configured 31337/);
});

Deno.test("wallet: --wallet-max-file-size caps a file; without it there is none", async () => {
  await using world = await walletWorld({ extraArgs: ["--wallet-max-file-size", "1000"] });
  const { server, clock } = world;
  const { token } = await walletSignIn(server.url, devKey(ALICE), new Date(clock.now()));
  assertEquals((await limitsOf(server, token)).maxFileBytes, 1000);
  const tooLarge = await uploadAs(server, token, "bafkwalletbig01", 1001);
  assertEquals([tooLarge.status, (await errorOf(tooLarge)).error], [413, "too_large"]);
});

Deno.test("wallet: without wallet flags the endpoints answer 503 and /api/limits lists two tiers", async () => {
  await using server = await startTestServer();
  for (
    const response of [
      await server.get("/api/auth/wallet/nonce"),
      await postSignIn(server.url, { message: "x", signature: "0x00" }),
    ]
  ) {
    const error = await errorOf(response);
    assertEquals([response.status, error.error], [503, "wallet_unavailable"]);
    assertMatch(error.message, /no wallet tier/);
  }
  const limits = await json(await server.get("/api/limits"));
  assertEquals((limits.tiers as { tier: string }[]).map((t) => t.tier), ["sponsored", "token"]);
  const health = await json(await server.get("/healthz"));
  assertEquals((health.wallet as { enabled: boolean }).enabled, false);
});

Deno.test("wallet: the three chain flags go together, and an address needs a valid checksum", () => {
  const load = (args: string[]) => () => loadConfig(args, {});
  const rpc = ["--wallet-rpc-url", "http://127.0.0.1:8545"];
  const chain = ["--wallet-chain-id", "31337"];
  const address = ["--wallet-usdc-address", "0x5fbdb2315678afecb367f032d93f642f64180aa3"];
  assertThrowsMessage(load([...rpc, ...chain]), /missing --wallet-usdc-address/);
  assertThrowsMessage(load([...address]), /missing --wallet-rpc-url, --wallet-chain-id/);
  assertThrowsMessage(
    load([...rpc, ...chain, "--wallet-usdc-address", "0x5FBDB2315678afecb367f032d93F642f64180aa3"]),
    /checksum/,
  );
  assertThrowsMessage(load([...rpc.slice(0, 1), "ftp://x", ...chain, ...address]), /http/);
  const loaded = loadConfig([...rpc, ...chain, ...address], {});
  assertOk(loaded.kind === "config");
  // Lowercase is accepted and kept checksummed.
  assertEquals(loaded.config.wallet.usdcAddress, "0x5FbDB2315678afecb367f032d93F642f64180aa3");
});

function assertThrowsMessage(fn: () => unknown, pattern: RegExp): void {
  try {
    fn();
  } catch (error) {
    assertMatch((error as Error).message, pattern);
    return;
  }
  throw new Error(`expected an error matching ${pattern}`);
}

Deno.test("wallet: /healthz does not wait out an RPC that accepts and never answers", async () => {
  const hanging = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of hanging) held.push(conn);
  })();
  try {
    await using server = await startTestServer({
      args: walletArgs(`http://127.0.0.1:${hanging.addr.port}`),
    });
    const first = await json(await server.get("/healthz"));
    // Answered while the probe still waits on the RPC (its 5 s timeout would have set lastError).
    assertEquals(first.wallet, {
      enabled: true,
      ok: false,
      chainId: TEST_CHAIN_ID,
      rpcChainId: null,
      lastError: null,
      lastSuccessAt: null,
    });
    await eventually(() => held.length > 0, "the probe's connection to the hanging RPC");
    // The RPC hangs up: the probe fails, and the next answer says so.
    for (const conn of held) conn.close();
    await eventually(async () => {
      const health = await json(await server.get("/healthz"));
      return (health.wallet as { lastError: string | null }).lastError !== null;
    }, "/healthz reporting the failed probe");
  } finally {
    hanging.close();
    await accepting.catch(() => {});
  }
});
