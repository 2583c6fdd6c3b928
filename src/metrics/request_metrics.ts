/**
 * What the request pipeline (src/http/pipeline/app.ts) counts, per answer: requests by
 * route and status, latency by route, bytes in and out, and for uploads the
 * tier and outcome, cap refusals and verification failures. Outcomes are read
 * from what the pipeline already has (status, error code, the fields handlers
 * put on the log line), so no handler counts anything itself.
 *
 * Labels stay bounded: a route is its path pattern ("/p/:cid"), or
 * "preflight", or "unmatched" for every unknown path, never the raw path.
 * Per route, the series are made once and kept: an answer costs a Map lookup,
 * an array index, a Content-Length read and a few additions. The fast path (a
 * cached piece) costs one clock read, one addition and one bucket scan on
 * series held in fields.
 */
import { TIERS } from "../domain/vocabulary.ts";
import type { ErrorCode } from "../kernel/errors.ts";
import type { Counter, CounterSeries, Histogram, HistogramSeries } from "./registry.ts";
import type { MetricsRegistry } from "./registry.ts";

/** Seconds: a cached piece in well under a millisecond up to a slow 30-second upload. */
export const LATENCY_BUCKETS_SECONDS = [
  0.0005,
  0.001,
  0.0025,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
  30,
] as const;

/** Refusals by a cap: the daily caps, the per-file and body caps, the per-client bounds. */
const CAP_CODES: ReadonlySet<string> = new Set<ErrorCode>([
  "rate_limited",
  "quota_exceeded",
  "too_large",
]);
const KNOWN_TIERS: ReadonlySet<string> = new Set(TIERS);

/** One answer of the pipeline's slow path, as app.ts knows it when the answer is ready. */
export interface AnsweredRequest {
  method: string;
  /** The route's path pattern, "preflight", or "unmatched". */
  route: string;
  status: number;
  /** The error code of an error answer; null otherwise. */
  code: ErrorCode | null;
  /** performance.now() when the request arrived. */
  started: number;
  /** What handlers noted for the log line: bytesIn, bytesOut, tier. */
  logFields: Readonly<Record<string, string | number | boolean>>;
  requestHeaders: Headers;
  responseHeaders: Headers;
}

export interface RequestMetricsOptions {
  registry: MetricsRegistry;
  /** The route of the pipeline's fast path (cached pieces are answered 200 there). */
  fastPathRoute: string;
  /** The route whose POSTs are uploads. */
  uploadRoute: string;
}

/** The series of one route, made on the route's first answer. */
class RouteSeries {
  readonly #route: string;
  readonly #requests: Counter;
  /** Indexed by status: a handful of entries per route. */
  readonly #byStatus: (CounterSeries | undefined)[] = [];
  readonly latency: HistogramSeries;
  readonly bytesIn: CounterSeries;
  readonly bytesOut: CounterSeries;

  constructor(
    route: string,
    families: { requests: Counter; latency: Histogram; bytesIn: Counter; bytesOut: Counter },
  ) {
    this.#route = route;
    this.#requests = families.requests;
    this.latency = families.latency.series(route);
    this.bytesIn = families.bytesIn.series(route);
    this.bytesOut = families.bytesOut.series(route);
  }

  requests(status: number): CounterSeries {
    return this.#byStatus[status] ??= this.#requests.series(this.#route, String(status));
  }
}

export class RequestMetrics {
  readonly #families: {
    requests: Counter;
    latency: Histogram;
    bytesIn: Counter;
    bytesOut: Counter;
  };
  readonly #routes = new Map<string, RouteSeries>();
  readonly #uploadRoute: string;
  readonly #uploads: Counter;
  readonly #capRefusals: Counter;
  readonly #verificationFailures: CounterSeries;
  readonly #streamAborts: Counter;
  readonly #fastPath: RouteSeries;
  readonly #fastPathOk: CounterSeries;

  constructor(options: RequestMetricsOptions) {
    const { registry } = options;
    this.#families = {
      requests: registry.counter({
        name: "storage_requests_total",
        help: "HTTP answers by route (path pattern; unmatched for unknown paths) and status",
        labelNames: ["route", "status"],
      }),
      latency: registry.histogram({
        name: "storage_request_duration_seconds",
        help: "Time from a request's arrival to its answer's head (body transfer not included)",
        labelNames: ["route"],
        buckets: LATENCY_BUCKETS_SECONDS,
      }),
      bytesIn: registry.counter({
        name: "storage_request_bytes_total",
        help: "Request body bytes by route: uploads and piece-cid bodies once admitted, and " +
          "the Content-Length of other requests answered with success",
        labelNames: ["route"],
      }),
      bytesOut: registry.counter({
        name: "storage_response_bytes_total",
        help: "Response body bytes by route, where known before sending (Content-Length, or a " +
          "piece's size when streamed from the store); cached pieces and JSON are not counted",
        labelNames: ["route"],
      }),
    };
    this.#uploadRoute = options.uploadRoute;
    this.#uploads = registry.counter({
      name: "storage_uploads_total",
      help: "Upload answers by tier (unknown when refused before the caller's tier was known) " +
        "and outcome (stored, or the error code)",
      labelNames: ["tier", "outcome"],
    });
    for (const tier of TIERS) this.#uploads.series(tier, "stored");
    this.#capRefusals = registry.counter({
      name: "storage_cap_refusals_total",
      help:
        "Requests refused by a cap, by route and code (rate_limited, quota_exceeded, too_large)",
      labelNames: ["route", "code"],
    });
    this.#verificationFailures = registry.counter({
      name: "storage_verification_failures_total",
      help: "Uploads whose bytes did not match their cid (cid_mismatch); nothing was stored",
    }).series();
    this.#streamAborts = registry.counter({
      name: "storage_stream_aborts_total",
      help: "Answers cut off mid-body by route: a split file's piece was missing, corrupt or " +
        "of another size when its turn came (the client saw a broken transfer, never wrong bytes)",
      labelNames: ["route"],
    });
    this.#fastPath = this.#route(options.fastPathRoute);
    this.#fastPathOk = this.#fastPath.requests(200);
  }

  /** The fast path answered 200 with a cached piece. */
  fastPathAnswered(started: number): void {
    this.#fastPathOk.value++;
    this.#fastPath.latency.observe((performance.now() - started) / 1000);
  }

  /** An answer's body was cut off after its head was sent (file_stream.ts says why, in the log). */
  streamAborted(route: string): void {
    this.#streamAborts.series(route).inc();
  }

  /** Any other answer, once the pipeline has it. */
  answered(answer: AnsweredRequest): void {
    const route = this.#route(answer.route);
    route.requests(answer.status).value++;
    route.latency.observe((performance.now() - answer.started) / 1000);
    route.bytesIn.value += bytesIn(answer);
    route.bytesOut.value += bytesOut(answer);
    const { code } = answer;
    if (code !== null && CAP_CODES.has(code)) this.#capRefusals.series(answer.route, code).inc();
    if (answer.route === this.#uploadRoute && answer.method === "POST") {
      const tier = String(answer.logFields.tier);
      const outcome = code ?? (answer.status === 200 ? "stored" : String(answer.status));
      this.#uploads.series(KNOWN_TIERS.has(tier) ? tier : "unknown", outcome).inc();
      if (code === "cid_mismatch") this.#verificationFailures.inc();
    }
  }

  #route(route: string): RouteSeries {
    let series = this.#routes.get(route);
    if (series === undefined) {
      series = new RouteSeries(route, this.#families);
      this.#routes.set(route, series);
    }
    return series;
  }
}

/** Bytes a handler said it read, or the Content-Length of a request it accepted. */
function bytesIn(answer: AnsweredRequest): number {
  const noted = answer.logFields.bytesIn;
  if (typeof noted === "number") return noted;
  if (answer.status >= 400) return 0;
  return Number(answer.requestHeaders.get("content-length")) || 0;
}

/** The answer's Content-Length, or the piece size the retrieval handler noted; 0 without a body. */
function bytesOut(answer: AnsweredRequest): number {
  if (answer.method === "HEAD" || answer.status === 204 || answer.status === 304) return 0;
  const length = Number(answer.responseHeaders.get("content-length"));
  if (length > 0) return length;
  const noted = answer.logFields.bytesOut;
  return typeof noted === "number" ? noted : 0;
}
