/**
 * GET /metrics as a real Prometheus sees it: the Debian package's server
 * (/usr/bin/prometheus) scrapes the test server every second, and the series
 * are queried back through its HTTP API. Unit tests parse the format with our
 * own reader; this one proves Prometheus accepts it, the token included.
 *
 * Each test writes a prometheus.yml into a temp directory, starts Prometheus
 * on 127.0.0.1 and a free port, waits until /api/v1/targets reports the
 * target's health, queries, and stops Prometheus by its PID. Without the
 * binary the tests are skipped, except in CI, where .ci/run installs it.
 */
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { bearer, startTestServer } from "../helpers/server.ts";
import { eventually } from "../helpers/wait.ts";
import { ignoredWithout, requireTool } from "../helpers/debian_tools.ts";

const ignore = ignoredWithout("Prometheus scrape tests", "prometheus");
/** Prometheus starts in a second or two here; a loaded CI machine gets more. */
const START_TIMEOUT_MS = 30_000;

/** A port nobody listens on now: taken from the OS and given back at once. */
function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  return port;
}

interface ScrapeJob {
  name: string;
  /** host:port of the server. */
  target: string;
  /** Sent as Authorization: Bearer; none when absent. */
  token?: string;
}

interface Target {
  job: string;
  health: "up" | "down" | "unknown";
  lastError: string;
}

interface Prometheus extends AsyncDisposable {
  targets(): Promise<Target[]>;
  /** An instant query's samples: labels and the value as Prometheus prints it. */
  query(expression: string): Promise<{ metric: Record<string, string>; value: string }[]>;
}

function configOf(jobs: ScrapeJob[]): string {
  // JSON is YAML: no quoting rules to get wrong.
  return JSON.stringify({
    global: { scrape_interval: "1s", scrape_timeout: "1s", evaluation_interval: "1s" },
    scrape_configs: jobs.map((job) => ({
      job_name: job.name,
      metrics_path: "/metrics",
      static_configs: [{ targets: [job.target] }],
      ...(job.token ? { authorization: { type: "Bearer", credentials: job.token } } : {}),
    })),
  });
}

async function startPrometheus(jobs: ScrapeJob[]): Promise<Prometheus> {
  const dir = await Deno.makeTempDir({ prefix: "prometheus-test-" });
  await Deno.writeTextFile(`${dir}/prometheus.yml`, configOf(jobs));
  const port = freePort();
  const child = new Deno.Command(requireTool("prometheus"), {
    args: [
      `--config.file=${dir}/prometheus.yml`,
      `--storage.tsdb.path=${dir}/data`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  // Kept for the failure message; read to the end so a chatty Prometheus never blocks on it.
  const log = new Response(child.stderr).text();
  const api = `http://127.0.0.1:${port}/api/v1`;
  const get = async (path: string) => {
    const response = await fetch(`${api}${path}`);
    const body = await response.json();
    if (body.status !== "success") throw new Error(`${path}: ${JSON.stringify(body)}`);
    return body.data;
  };
  const prometheus: Prometheus = {
    async targets() {
      const data = await get("/targets?state=active");
      return data.activeTargets.map((t: Record<string, unknown>) => ({
        job: (t.labels as Record<string, string>).job,
        health: t.health,
        lastError: t.lastError,
      }));
    },
    async query(expression) {
      const data = await get(`/query?query=${encodeURIComponent(expression)}`);
      return data.result.map((r: { metric: Record<string, string>; value: [number, string] }) => ({
        metric: r.metric,
        value: r.value[1],
      }));
    },
    async [Symbol.asyncDispose]() {
      // Ours alone, by its PID.
      Deno.kill(child.pid, "SIGTERM");
      await child.status;
      await log;
      await Deno.remove(dir, { recursive: true });
    },
  };
  try {
    await eventually(
      () => prometheus.targets().then((t) => t.length === jobs.length, () => false),
      `Prometheus answering on port ${port} with its ${jobs.length} target(s)`,
      { timeoutMs: START_TIMEOUT_MS, intervalMs: 100 },
    );
  } catch (error) {
    await prometheus[Symbol.asyncDispose]();
    throw new Error(`${(error as Error).message}\n${await log}`);
  }
  return prometheus;
}

/** Waits until every job's target has been scraped once and has this health. */
async function targetsScraped(prometheus: Prometheus, health: Record<string, Target["health"]>) {
  await eventually(
    async () => {
      const targets = await prometheus.targets();
      return targets.every((t) => t.health === health[t.job]);
    },
    `targets with health ${JSON.stringify(health)}`,
    { timeoutMs: START_TIMEOUT_MS, intervalMs: 100 },
  );
  return await prometheus.targets();
}

/** The value of the one series an expression selects, once Prometheus has it. */
async function valueOf(prometheus: Prometheus, expression: string): Promise<string> {
  let result: { value: string }[] = [];
  await eventually(
    async () => (result = await prometheus.query(expression)).length > 0,
    `a sample of ${expression}`,
    { timeoutMs: START_TIMEOUT_MS, intervalMs: 100 },
  );
  assertEquals(result.length, 1, `${expression} selects one series`);
  return result[0].value;
}

Deno.test({
  name: "metrics with Prometheus: a real scrape, queried back by route pattern and status",
  ignore,
  async fn() {
    await using server = await startTestServer();
    assertEquals((await server.upload("promscrape01", "scraped bytes")).status, 200);
    for (let i = 0; i < 5; i++) {
      // The first retrieval reads the store; the next four are the fast path's (cached).
      assertEquals(await (await server.get("/p/promscrape01")).text(), "scraped bytes");
    }
    await (await server.get("/p/promscrape01/extra")).body?.cancel();
    const target = `127.0.0.1:${server.server.port}`;
    await using prometheus = await startPrometheus([{ name: "storage", target }]);
    await targetsScraped(prometheus, { storage: "up" });

    assertEquals(await valueOf(prometheus, 'up{job="storage"}'), "1");
    assertEquals(
      await valueOf(prometheus, 'storage_requests_total{route="/p/:cid",status="200"}'),
      "5",
    );
    assertEquals(await valueOf(prometheus, 'storage_requests_total{route="unmatched"}'), "1");
    assertEquals(
      await valueOf(prometheus, 'storage_request_duration_seconds_count{route="/p/:cid"}'),
      "5",
    );
    // Prometheus reads the buckets as a histogram: a quantile of them is a number of seconds.
    const p99 = await valueOf(
      prometheus,
      'histogram_quantile(0.99, storage_request_duration_seconds_bucket{route="/p/:cid"})',
    );
    assertOk(Number(p99) > 0 && Number(p99) <= 30, `p99 ${p99}`);
    assertEquals(
      await valueOf(prometheus, 'storage_uploads_total{tier="sponsored",outcome="stored"}'),
      "1",
    );
    assertEquals(await valueOf(prometheus, "storage_pieces_stored"), "1");
    assertEquals(await valueOf(prometheus, "storage_stored_bytes"), "13");
  },
});

Deno.test({
  name: "metrics with Prometheus: --metrics-token lets the job with the token in, not the other",
  ignore,
  async fn() {
    const token = "prometheus-scrape-token-42";
    await using server = await startTestServer({ args: ["--metrics-token", token] });
    const target = `127.0.0.1:${server.server.port}`;
    await using prometheus = await startPrometheus([
      { name: "with-token", target, token },
      { name: "without-token", target },
    ]);
    const targets = await targetsScraped(prometheus, {
      "with-token": "up",
      "without-token": "down",
    });
    const refused = targets.find((t) => t.job === "without-token")!;
    assertMatch(refused.lastError, /401/);
    assertEquals(await valueOf(prometheus, 'up{job="with-token"}'), "1");
    assertEquals(await valueOf(prometheus, 'up{job="without-token"}'), "0");
    // The server counted the refused scrapes like any other answer, and Prometheus read them.
    const refusals = await valueOf(
      prometheus,
      'storage_requests_total{job="with-token",route="/metrics",status="401"}',
    );
    assertOk(Number(refusals) >= 1, `refused scrapes: ${refusals}`);
    const ok = await server.get("/metrics", { headers: bearer(token) });
    assertEquals(ok.status, 200);
    await ok.body?.cancel();
  },
});
