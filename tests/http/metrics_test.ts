/**
 * GET /metrics without a Prometheus: the exposition is the text format 0.0.4
 * (parsed back here line by line, label escaping included), the registry
 * refuses names Prometheus would, the token is required when set, metrics off
 * is a 404 with nothing counted, and the counters move for what they count:
 * routes by pattern, the fast path, uploads by tier and outcome, cap refusals
 * and verification failures; the gauges read the server's state.
 * tests/deploy/metrics_prometheus_test.ts scrapes the same endpoint with a real one.
 */
import { throws } from "node:assert/strict";
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { bearer, patternBytes, signup, startTestServer } from "../helpers/server.ts";
import type { TestServer } from "../helpers/server.ts";
import { MetricsRegistry } from "../../src/metrics/registry.ts";
import { StoredTotals } from "../../src/metrics/stored_totals.ts";
import { escapeLabelValue, EXPOSITION_CONTENT_TYPE } from "../../src/metrics/exposition.ts";
import { PieceHasher } from "../../src/kernel/piece_cid/hasher.ts";
import { pieceCidV2 } from "../../src/kernel/piece_cid/cid_codec.ts";

/** One sample line, its labels unescaped. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * Parses an exposition as Prometheus reads it, and fails on anything it would
 * refuse: every sample belongs to a family announced by HELP and TYPE lines
 * before it, names and label names are valid, values are floats.
 */
function parseExposition(text: string): Sample[] {
  assertOk(text.endsWith("\n"), "the exposition ends with a newline");
  const types = new Map<string, string>();
  const helped = new Set<string>();
  const samples: Sample[] = [];
  for (const line of text.slice(0, -1).split("\n")) {
    const comment = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
    if (comment) {
      const [, kind, name, rest] = comment;
      if (kind === "HELP") helped.add(name);
      else {
        assertMatch(rest, /^(counter|gauge|histogram)$/);
        assertOk(!types.has(name), `${name} has one TYPE line`);
        types.set(name, rest);
      }
      continue;
    }
    const sample = parseSample(line);
    const family = familyOf(sample.name, types);
    assertOk(family !== null, `${sample.name} belongs to a family with a TYPE line`);
    assertOk(helped.has(family), `${family} has a HELP line`);
    samples.push(sample);
  }
  return samples;
}

function familyOf(name: string, types: Map<string, string>): string | null {
  if (types.has(name)) return name;
  const base = name.replace(/_(bucket|sum|count)$/, "");
  return types.get(base) === "histogram" ? base : null;
}

function parseSample(line: string): Sample {
  const head = /^([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(line);
  assertOk(head, `a sample line starts with a metric name: ${line}`);
  const name = head[1];
  let at = name.length;
  const labels: Record<string, string> = {};
  if (line[at] === "{") {
    at++;
    while (line[at] !== "}") {
      const label = /^([a-zA-Z_][a-zA-Z0-9_]*)="/.exec(line.slice(at));
      assertOk(label, `a label at ${at} of: ${line}`);
      at += label[0].length;
      let value = "";
      while (line[at] !== '"') {
        if (line[at] === "\\") {
          const escaped = line[at + 1];
          assertOk(escaped === "\\" || escaped === '"' || escaped === "n", `escape in ${line}`);
          value += escaped === "n" ? "\n" : escaped;
          at += 2;
        } else {
          assertOk(at < line.length, `an unterminated label value: ${line}`);
          value += line[at++];
        }
      }
      labels[label[1]] = value;
      at++;
      if (line[at] === ",") at++;
    }
    at++;
  }
  const value = /^ (\S+)$/.exec(line.slice(at));
  assertOk(value, `one value after the labels: ${line}`);
  const number = value[1] === "+Inf"
    ? Infinity
    : value[1] === "-Inf"
    ? -Infinity
    : Number(value[1]);
  assertOk(!Number.isNaN(number) || value[1] === "NaN", `a float: ${line}`);
  return { name, labels, value: number };
}

/** The value of the one sample with this name and these labels (among others), or undefined. */
function valueOf(
  samples: Sample[],
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const found = samples.filter((s) =>
    s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)
  );
  assertOk(found.length <= 1, `${name} ${JSON.stringify(labels)} names one series`);
  return found[0]?.value;
}

async function scrape(server: TestServer, headers: Record<string, string> = {}) {
  const response = await server.get("/metrics", { headers });
  const text = await response.text();
  assertEquals(response.status, 200, text);
  assertEquals(response.headers.get("content-type"), EXPOSITION_CONTENT_TYPE);
  return parseExposition(text);
}

/** The PieceCIDv2 of bytes, computed here (the server recomputes it on upload). */
function pieceCidOf(bytes: Uint8Array): string {
  const hasher = new PieceHasher();
  hasher.update(bytes);
  const digest = hasher.digest();
  return pieceCidV2(digest.root, digest.height, digest.padding);
}

Deno.test("metrics: the registry renders the text format, parsed back to the same values", async () => {
  const registry = new MetricsRegistry();
  const requests = registry.counter({
    name: "t_requests_total",
    help: "Requests\nby route \\ status",
    labelNames: ["route", "status"],
  });
  requests.series("/p/:cid", "200").inc();
  requests.series("/p/:cid", "200").inc(2);
  requests.series("/api/upload", "413").inc();
  const latency = registry.histogram({
    name: "t_duration_seconds",
    help: "Latency",
    labelNames: ["route"],
    buckets: [0.01, 0.1, 1],
  });
  for (const seconds of [0.005, 0.01, 0.05, 0.5, 2]) latency.series("/x").observe(seconds);
  registry.collected({
    name: "t_free_bytes",
    help: "A gauge",
    type: "gauge",
    collect: () => [{ value: 1.5e12 }],
  });
  registry.collected({
    name: "t_broken",
    help: "A source that throws",
    type: "gauge",
    collect: () => {
      throw new Error("busy");
    },
  });
  const text = await registry.render();
  assertOk(text.includes("# HELP t_requests_total Requests\\nby route \\\\ status\n"));
  const samples = parseExposition(text);
  assertEquals(valueOf(samples, "t_requests_total", { route: "/p/:cid", status: "200" }), 3);
  assertEquals(valueOf(samples, "t_requests_total", { route: "/api/upload", status: "413" }), 1);
  const bucket = (le: string) => valueOf(samples, "t_duration_seconds_bucket", { route: "/x", le });
  // Cumulative: an observation on a bound counts in that bucket (le is "less or equal").
  assertEquals([bucket("0.01"), bucket("0.1"), bucket("1"), bucket("+Inf")], [2, 3, 4, 5]);
  assertEquals(valueOf(samples, "t_duration_seconds_count", { route: "/x" }), 5);
  assertEquals(valueOf(samples, "t_duration_seconds_sum", { route: "/x" }), 2.565);
  assertEquals(valueOf(samples, "t_free_bytes"), 1.5e12);
  assertOk(text.includes("# TYPE t_broken gauge\n"), "a failed source keeps its family");
  assertEquals(valueOf(samples, "t_broken"), undefined);
});

Deno.test("metrics: label values are escaped (backslash, double quote, newline) and read back", async () => {
  assertEquals(escapeLabelValue('a\\b"c\nd'), 'a\\\\b\\"c\\nd');
  const registry = new MetricsRegistry();
  const counter = registry.counter({ name: "t_odd_total", help: "h", labelNames: ["v"] });
  const odd = ["back\\slash", 'double"quote', "new\nline", 'all \\"\n of them', "{},= é"];
  odd.forEach((value, i) => counter.series(value).inc(i + 1));
  const samples = parseExposition(await registry.render());
  odd.forEach((value, i) => assertEquals(valueOf(samples, "t_odd_total", { v: value }), i + 1));
});

Deno.test("metrics: the registry refuses what Prometheus would", () => {
  const registry = new MetricsRegistry();
  throws(() => registry.counter({ name: "t_requests", help: "h" }), /_total/);
  throws(() => registry.counter({ name: "t-bad_total", help: "h" }), /metric name/);
  throws(
    () => registry.counter({ name: "t_x_total", help: "h", labelNames: ["__name"] }),
    /label name/,
  );
  throws(
    () => registry.histogram({ name: "t_h", help: "h", buckets: [1, 1] }),
    /ascend/,
  );
  throws(
    () => registry.histogram({ name: "t_h", help: "h", labelNames: ["le"], buckets: [1] }),
    /reserved/,
  );
  const counter = registry.counter({ name: "t_ok_total", help: "h", labelNames: ["a"] });
  throws(() => counter.series("x", "y"), /label values/);
  throws(() => registry.counter({ name: "t_ok_total", help: "h" }), /twice/);
});

Deno.test("metrics: stored totals are counted at most once per TTL", async () => {
  await using server = await startTestServer();
  let now = 0;
  const totals = new StoredTotals({
    count: () => server.server.services.records.storedTotals(),
    ttlMs: 5000,
    now: () => now,
  });
  assertEquals(await totals.read(), { pieces: 0, bytes: 0 });
  assertEquals((await server.upload("totalsone01", "12345")).status, 200);
  now = 4999;
  assertEquals(await totals.read(), { pieces: 0, bytes: 0 }, "within the TTL: the cached answer");
  now = 5000;
  assertEquals(await totals.read(), { pieces: 1, bytes: 5 });
});

Deno.test("metrics: --metrics false answers 404 not_found and makes no metrics", async () => {
  await using server = await startTestServer({ args: ["--metrics", "false"] });
  assertEquals(server.server.services.metrics, null, "nothing to count with");
  assertEquals((await server.upload("metricsoff01", "bytes")).status, 200);
  const response = await server.get("/metrics");
  assertEquals(response.status, 404);
  assertEquals((await response.json()).error, "not_found");
});

Deno.test("metrics: --metrics-token is required as a bearer token, compared whole", async () => {
  const token = "scrape-secret-0123456789";
  await using server = await startTestServer({ args: ["--metrics-token", token] });
  for (
    const headers of [
      {},
      bearer(`${token}0`),
      bearer(token.slice(0, -1)),
      { authorization: token },
      { authorization: `Basic ${token}` },
    ]
  ) {
    const response = await server.get("/metrics", { headers });
    assertEquals(response.status, 401, JSON.stringify(headers));
    assertEquals(response.headers.get("www-authenticate"), 'Bearer error="invalid_token"');
    assertEquals((await response.json()).error, "invalid_token");
  }
  const query = await server.get(`/metrics?token=${token}`);
  assertEquals(query.status, 401, "the query form is not accepted");
  await query.body?.cancel();
  await scrape(server, bearer(token));
  await scrape(server, { authorization: `bearer ${token}` });
});

Deno.test("metrics: requests are counted by route pattern and status, the fast path too", async () => {
  await using server = await startTestServer();
  assertEquals((await server.upload("routecount01", "small piece")).status, 200);
  for (let i = 0; i < 3; i++) {
    // The first read fills the cache; the next two are answered by the fast path.
    assertEquals(await (await server.get("/p/routecount01")).text(), "small piece");
  }
  await (await server.get("/p/nosuchpiece01")).body?.cancel();
  await (await server.get("/no/such/path")).body?.cancel();
  await (await server.get("/p/routecount01", { method: "OPTIONS" })).body?.cancel();
  await (await server.get("/api/upload")).body?.cancel();
  const samples = await scrape(server);
  const requests = (route: string, status: string) =>
    valueOf(samples, "storage_requests_total", { route, status });
  assertEquals(requests("/p/:cid", "200"), 3);
  assertEquals(requests("/p/:cid", "404"), 1);
  assertEquals(requests("/api/upload", "200"), 1);
  assertEquals(requests("/api/upload", "405"), 1);
  assertEquals(requests("unmatched", "404"), 1);
  assertEquals(requests("preflight", "204"), 1);
  const routes = new Set(
    samples.filter((s) => s.name === "storage_requests_total").map((s) => s.labels.route),
  );
  assertEquals([...routes].filter((r) => r.includes("routecount01") || r.includes("/no/")), []);
  assertEquals(
    valueOf(samples, "storage_request_duration_seconds_count", { route: "/p/:cid" }),
    4,
  );
  assertEquals(
    valueOf(samples, "storage_request_duration_seconds_bucket", { route: "/p/:cid", le: "+Inf" }),
    4,
  );
  assertEquals(valueOf(samples, "storage_request_bytes_total", { route: "/api/upload" }), 11);
  // The first read streamed from the store (its size is known); cached answers are not counted.
  assertEquals(valueOf(samples, "storage_response_bytes_total", { route: "/p/:cid" }), 11);
});

Deno.test("metrics: uploads by tier and outcome, cap refusals, verification failures", async () => {
  await using server = await startTestServer({
    args: ["--sponsored-max-file-size", "64KiB", "--sponsored-daily-cap", "100KiB"],
  });
  const { token } = await signup(server, { quotaMb: 1 });
  const ok = async (response: Promise<Response>) => {
    const answer = await response;
    assertEquals(answer.status, 200, await answer.text());
  };
  const refused = async (response: Promise<Response>, status: number, code: string) => {
    const answer = await response;
    const body = await answer.json();
    assertEquals([answer.status, body.error], [status, code]);
  };
  await ok(server.upload("tierstored01", patternBytes(60 * 1024)));
  await refused(server.upload("tierlarge001", patternBytes(65 * 1024)), 413, "too_large");
  await refused(server.upload("tierdaily001", patternBytes(50 * 1024)), 429, "rate_limited");
  await ok(server.upload("tokenfill001", patternBytes(1024 * 1024), { headers: bearer(token) }));
  await refused(
    server.upload("tokenover01", "x", { headers: bearer(token) }),
    429,
    "quota_exceeded",
  );
  // A PieceCIDv2 of other bytes of the same length: hashed on the way in, then refused.
  const cid = pieceCidOf(patternBytes(1000, 1));
  await refused(server.upload(cid, patternBytes(1000, 2)), 400, "cid_mismatch");
  await refused(server.upload("bad!cid", "x"), 400, "invalid_cid");

  const samples = await scrape(server);
  const uploads = (tier: string, outcome: string) =>
    valueOf(samples, "storage_uploads_total", { tier, outcome });
  assertEquals(uploads("sponsored", "stored"), 1);
  assertEquals(uploads("token", "stored"), 1);
  assertEquals(uploads("wallet", "stored"), 0, "known tiers are there from the start");
  assertEquals(uploads("sponsored", "too_large"), 1);
  assertEquals(uploads("sponsored", "rate_limited"), 1);
  assertEquals(uploads("token", "quota_exceeded"), 1);
  assertEquals(uploads("sponsored", "cid_mismatch"), 1);
  assertEquals(uploads("unknown", "invalid_cid"), 1, "refused before the tier was known");
  const refusals = (code: string) =>
    valueOf(samples, "storage_cap_refusals_total", { route: "/api/upload", code });
  assertEquals([refusals("too_large"), refusals("rate_limited"), refusals("quota_exceeded")], [
    1,
    1,
    1,
  ]);
  assertEquals(valueOf(samples, "storage_verification_failures_total"), 1);
});

Deno.test("metrics: gauges read the server's state at scrape time", async () => {
  await using server = await startTestServer();
  assertEquals((await server.upload("gaugepiece01", "abc")).status, 200);
  assertEquals((await server.upload("gaugepiece02", "defgh")).status, 200);
  await server.server.services.digests.whenIdle();
  const samples = await scrape(server);
  assertEquals(valueOf(samples, "storage_pieces_stored"), 2);
  assertEquals(valueOf(samples, "storage_stored_bytes"), 8);
  assertEquals(valueOf(samples, "storage_digest_backlog"), 0);
  assertEquals(valueOf(samples, "storage_digest_failures_total"), 0);
  assertEquals(valueOf(samples, "storage_uploads_in_flight"), 0);
  assertEquals(valueOf(samples, "storage_hash_pool_segments_in_flight"), 0);
  assertOk(valueOf(samples, "storage_hash_pool_workers")! >= 1);
  assertOk(valueOf(samples, "storage_database_size_bytes", { file: "db" })! > 0);
  assertOk(valueOf(samples, "storage_database_size_bytes", { file: "wal" })! >= 0);
  assertOk(valueOf(samples, "storage_disk_free_bytes")! > 0, "statfs is permitted in tests");
  assertOk(
    valueOf(samples, "storage_disk_size_bytes")! >= valueOf(samples, "storage_disk_free_bytes")!,
  );
  assertOk(valueOf(samples, "storage_process_resident_memory_bytes")! > 0);
  assertOk(valueOf(samples, "storage_process_heap_bytes", { kind: "used" })! > 0);
  assertOk(valueOf(samples, "storage_process_start_time_seconds")! * 1000 <= Date.now());
});

Deno.test("metrics: without a data directory the database and disk gauges are left out", async () => {
  await using server = await startTestServer({ args: ["--data-dir", "", "--hash-workers", "0"] });
  const samples = await scrape(server);
  const names = new Set(samples.map((s) => s.name));
  for (
    const absent of [
      "storage_pieces_stored",
      "storage_database_size_bytes",
      "storage_disk_free_bytes",
      "storage_hash_pool_workers",
    ]
  ) {
    assertOk(!names.has(absent), absent);
  }
  assertOk(names.has("storage_process_resident_memory_bytes"));
});
