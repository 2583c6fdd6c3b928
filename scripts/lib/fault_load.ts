/**
 * A steady upload and retrieval load on a set of instances, for the fault
 * tests and the fault bench: `workers` clients, each sending uploads to the
 * instances in turn and, every `readEvery` uploads, retrieving a piece it
 * had acknowledged. Every request is recorded (when it started, how long it
 * took, its status and whether a 503 said Retry-After), and every upload
 * answered 200 is remembered (by size and seed, not bytes: patternBytes
 * makes them again), so that a test or the bench can check afterwards that
 * nothing acknowledged was lost.
 *
 * Bounded: a request gives up after `requestTimeoutMs` (recorded as status
 * 0, "no answer"), and the load stops after `maxRequests` or stop().
 * It talks to the URLs it is given only (127.0.0.1 in tests and the bench).
 */

export interface FaultLoadOptions {
  /** Base URLs of the instances, e.g. http://127.0.0.1:8080. */
  urls: readonly string[];
  /** Clients sending at once (default 4). */
  workers?: number;
  /** The size of upload number n (default: 1 to 16 KiB). */
  sizeOf?: (n: number) => number;
  /** A retrieval after every this many uploads of a client (default 2). */
  readEvery?: number;
  /** A request without an answer for this long is given up (default 30 s). */
  requestTimeoutMs?: number;
  /** The load stops by itself after this many requests (default 100 000). */
  maxRequests?: number;
  /** Pause of each client between two requests (default 0). */
  pauseMs?: number;
}

export interface RequestRecord {
  kind: "upload" | "retrieval";
  url: string;
  cid: string;
  /** ms since the epoch. */
  startedAt: number;
  ms: number;
  /** 0: no answer (refused, reset, or given up after requestTimeoutMs). */
  status: number;
  /** Whether a 503 carried Retry-After. */
  retryAfter: boolean;
  /** For a retrieval answered 200: whether the bytes were the ones uploaded. */
  intact?: boolean;
}

export interface Acknowledged {
  cid: string;
  size: number;
  seed: number;
}

export class FaultLoad {
  readonly records: RequestRecord[] = [];
  readonly acknowledged: Acknowledged[] = [];
  readonly #options: Required<FaultLoadOptions>;
  #running: Promise<void>[] = [];
  #stopping = false;
  #uploads = 0;

  constructor(options: FaultLoadOptions) {
    this.#options = {
      workers: 4,
      sizeOf: (n) => 1024 + (n * 7919) % (15 * 1024),
      readEvery: 2,
      requestTimeoutMs: 30_000,
      maxRequests: 100_000,
      pauseMs: 0,
      ...options,
    };
  }

  start(): void {
    this.#running = Array.from({ length: this.#options.workers }, (_, w) => this.#worker(w));
  }

  /** Stops sending; resolves once the requests in flight have ended. */
  async stop(): Promise<void> {
    this.#stopping = true;
    await Promise.all(this.#running);
  }

  /** Records of requests that started at or after `since` (ms since the epoch). */
  since(since: number): RequestRecord[] {
    return this.records.filter((record) => record.startedAt >= since);
  }

  async #worker(worker: number): Promise<void> {
    const { urls, readEvery, maxRequests, pauseMs } = this.#options;
    const mine: Acknowledged[] = [];
    for (let n = 0; !this.#stopping && this.records.length < maxRequests; n++) {
      const url = urls[(worker + n) % urls.length];
      if (n % (readEvery + 1) === readEvery && mine.length > 0) {
        await this.#retrieve(url, mine[(n * 31) % mine.length]);
      } else {
        const uploaded = await this.#upload(url, worker);
        if (uploaded) mine.push(uploaded);
      }
      if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  }

  async #upload(url: string, worker: number): Promise<Acknowledged | null> {
    const n = this.#uploads++;
    const piece = {
      cid: `bafkload${worker}x${n}x${randomTag()}`,
      size: this.#options.sizeOf(n),
      seed: n,
    };
    const { status, response } = await this.#send("upload", url, piece.cid, {
      method: "POST",
      headers: { "content-type": "application/octet-stream" },
      body: patternBytes(piece.size, piece.seed),
    });
    await response?.body?.cancel().catch(() => {});
    if (status !== 200) return null;
    this.acknowledged.push(piece);
    return piece;
  }

  async #retrieve(url: string, piece: Acknowledged): Promise<void> {
    await this.#send("retrieval", url, piece.cid, {}, piece);
  }

  async #send(
    kind: RequestRecord["kind"],
    url: string,
    cid: string,
    init: RequestInit,
    expected?: Acknowledged,
  ): Promise<{ status: number; response: Response | null }> {
    const startedAt = Date.now();
    const started = performance.now();
    const signal = AbortSignal.timeout(this.#options.requestTimeoutMs);
    const path = kind === "upload" ? `/api/upload?cid=${cid}` : `/p/${cid}`;
    const record: RequestRecord = {
      kind,
      url,
      cid,
      startedAt,
      ms: 0,
      status: 0,
      retryAfter: false,
    };
    let response: Response | null = null;
    try {
      response = await fetch(`${url}${path}`, { ...init, signal });
      record.status = response.status;
      record.retryAfter = response.headers.has("retry-after");
      if (expected && response.status === 200) {
        const got = new Uint8Array(await response.arrayBuffer());
        record.intact = sameBytes(got, patternBytes(expected.size, expected.seed));
        response = null;
      } else if (kind === "retrieval") {
        await response.body?.cancel();
        response = null;
      }
    } catch {
      record.status = 0;
      response = null;
    }
    record.ms = performance.now() - started;
    this.records.push(record);
    return { status: record.status, response };
  }
}

/** Deterministic bytes: byte i = (i * 31 + 7 + seed) % 256 (as tests/helpers/server.ts). */
export function patternBytes(size: number, seed = 0): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(size);
  for (let i = 0; i < size; i++) out[i] = (i * 31 + 7 + seed) & 0xff;
  return out;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

function randomTag(): string {
  return crypto.getRandomValues(new Uint8Array(4)).toHex();
}
