/**
 * The text log format (for a person at a terminal), how --log-format picks
 * between it and JSON, and the lines a real server logs at start-up and at
 * shutdown: every setting an operator checks, and no secret.
 */
import { assertEquals, assertMatch } from "../helpers/assert.ts";
import { deadRpcUrl, walletArgs } from "../helpers/wallet.ts";
import { createStderrLogger, createTextLogger, resolveLogFormat } from "../../src/kernel/log.ts";
import { spawnServer } from "../../scripts/lib/spawn_server.ts";
import { VERSION } from "../../src/kernel/version.ts";
import { withTempDir } from "../helpers/files.ts";

const TIME = String.raw`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z`;

/** A text logger that keeps its lines, without the time (checked once, in its own test). */
function textLines() {
  const lines: string[] = [];
  const logger = createTextLogger((line) => lines.push(line));
  const untimed = () => lines.map((line) => line.replace(new RegExp(`^${TIME} `), ""));
  return { logger, lines, untimed };
}

Deno.test("log format: text is time, level, message, then key=value, quoted only when needed", () => {
  const { logger, lines, untimed } = textLines();
  logger.info("listening", { url: "http://127.0.0.1:8080", tls: "off", port: 8080, ok: true });
  logger.warn("odd values", {
    spaced: "two words",
    quote: 'say "hi"',
    equals: "a=b",
    empty: "",
    gone: undefined,
    none: null,
  });
  logger.error("failed", { stack: "Error: x\n    at f (a.ts:1:1)" });
  assertMatch(lines[0], new RegExp(`^${TIME} info  listening `));
  assertEquals(untimed(), [
    "info  listening url=http://127.0.0.1:8080 tls=off port=8080 ok=true",
    'warn  odd values spaced="two words" quote="say \\"hi\\"" equals="a=b" empty="" none=null',
    'error failed stack="Error: x\\n    at f (a.ts:1:1)"',
  ]);
});

Deno.test("log format: the request log's raw JSON fast path comes out as text too", () => {
  const { logger, untimed } = textLines();
  logger.raw!(`"level":"info","msg":"request","method":"GET","route":"/p/:cid","status":200`);
  assertEquals(untimed(), ["info  request method=GET route=/p/:cid status=200"]);
});

Deno.test("log format: auto is text on a terminal and JSON otherwise; text and json are forced", () => {
  assertEquals(resolveLogFormat("auto", () => true), "text");
  assertEquals(resolveLogFormat("auto", () => false), "json");
  assertEquals(resolveLogFormat("text", () => false), "text");
  assertEquals(resolveLogFormat("json", () => true), "json");
});

Deno.test("log format: the stderr logger writes the format it is given", async () => {
  const written: string[] = [];
  const output = {
    write(bytes: Uint8Array) {
      written.push(new TextDecoder().decode(bytes));
      return Promise.resolve(bytes.byteLength);
    },
  };
  const text = createStderrLogger({ output, format: "text" });
  text.info("hello", { n: 1 });
  await text.flush();
  const json = createStderrLogger({ output });
  json.info("hello", { n: 1 });
  await json.flush();
  const [textLine, jsonLine] = written.join("").trimEnd().split("\n");
  assertMatch(textLine, new RegExp(`^${TIME} info  hello n=1$`));
  assertEquals({ ...JSON.parse(jsonLine), time: "" }, {
    time: "",
    level: "info",
    msg: "hello",
    n: 1,
  });
});

Deno.test("log format: a real server's start-up summary and shutdown line, as text, with no secret", async () => {
  const secrets = ["rpcsecretkey1234", "smtpsecretpass99", "metricssecret0123456"];
  const args = [
    "--log-format",
    "text",
    "--sponsored-daily-cap",
    "300MiB",
    "--token-term-days",
    "400",
  ];
  args.push("--signup", "verify", "--smtp-url", `smtp://mailer:${secrets[1]}@127.0.0.1:2525`);
  args.push("--mail-from", "stage@example.org", "--metrics-token", secrets[2]);
  const rpcUrl = `${deadRpcUrl()}/v3/${secrets[0]}`;
  await withTempDir("log-summary-", async (dataDir) => {
    await using server = await spawnServer(dataDir, [...args, ...walletArgs(rpcUrl)]);
    server.process.kill("SIGTERM");
    assertEquals(await server.exited, 0);
    const lines = server.stderr().trimEnd().split("\n");
    for (const line of lines) assertMatch(line, new RegExp(`^${TIME} (info |warn |error) \\S`));
    const untimed = lines.map((line) => line.slice(line.indexOf(" ") + 1));
    const first = untimed.findIndex((line) => line.startsWith("info  starting "));
    assertEquals(untimed.slice(first, first + 9), [
      `info  starting version=${VERSION} deno=${Deno.version.deno} dataDir=${dataDir}`,
      "info  backends database=sqlite store=disk source=stage",
      `info  listening url=${server.url} baseUrl=${server.url} tls=off`,
      "info  connections bounded=true maxConnections=4096 maxPerClient=256 headerTimeoutS=10 " +
      "keepAliveTimeoutS=75",
      'info  tier name=sponsored maxFileSize=100MiB dailyCap=300MiB termDays=30 per="client IP"',
      "info  tier name=token maxFileSize=5GiB dailyCap=1GiB termDays=400 per=user",
      "info  tier name=wallet maxFileSize=none dailyCapPerUsdc=1GiB termDays=365 chainId=31337 " +
      `rpcHost=${new URL(rpcUrl).host}`,
      `info  signup mode=verify hmacKey=${dataDir}/hmac.key hmacKeySource="data dir"`,
      'info  metrics enabled=true access="bearer token"',
    ]);
    assertMatch(
      untimed.at(-1)!,
      /^info {2}stopped uploadsFinished=0 uploadsAborted=0 connectionsClosed=true ms=\d+$/,
    );
    for (const secret of secrets) assertEquals(lines.join("\n").includes(secret), false, secret);
  });
});
