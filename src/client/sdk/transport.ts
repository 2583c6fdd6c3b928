/**
 * The one place the SDK talks HTTP: builds URLs and headers, sends the token,
 * turns a fetch TypeError into NetworkError and an error answer into
 * StorageError (code from the JSON body), and repeats what retry.ts says may
 * be repeated. Every response body is either handed to the caller or
 * consumed here, so no connection is left dangling.
 */
import { NetworkError, StorageError } from "./errors.ts";
import { parseRetryAfter, withRetry } from "./retry.ts";
import type { Repeatable, RetryPolicy } from "./retry.ts";
import type { PieceStatus, PieceUploadResponse } from "./api_types.ts";

export interface TransportOptions {
  server: string;
  token: string | null;
  fetch: typeof fetch;
  policy: RetryPolicy;
}

export interface JsonRequest {
  method: "GET" | "POST" | "DELETE";
  path: string;
  query?: Record<string, string | number | undefined>;
  /** Serialised as the JSON request body. */
  body?: unknown;
  /** Send the token (default true when one is configured). */
  auth?: boolean;
  repeatable: Repeatable;
  signal?: AbortSignal;
}

export interface PieceUploadRequest {
  cid: string;
  size: number;
  /** Made only when the request is (again on every retry): a Blob slice, or the bytes. */
  body: () => Promise<Blob | Uint8Array<ArrayBuffer>>;
  contentType: string;
  filename: string | null;
  signal?: AbortSignal;
}

/** Codes for answers without a body (HEAD), per docs/api.md#head-pcid. */
const BODILESS_CODES: Record<number, string> = {
  400: "invalid_cid",
  401: "invalid_token",
  403: "insufficient_scope",
  404: "not_found",
  405: "method_not_allowed",
  429: "rate_limited",
  500: "internal_error",
  503: "storage_offline",
};

export class Transport {
  readonly server: string;
  readonly #token: string | null;
  readonly #fetch: typeof fetch;
  readonly policy: RetryPolicy;

  constructor(options: TransportOptions) {
    this.server = options.server.replace(/\/+$/, "");
    this.#token = options.token;
    this.#fetch = options.fetch;
    this.policy = options.policy;
  }

  /** `<server>/p/<cid>`: where anyone retrieves a piece. */
  retrievalUrl(cid: string): string {
    return `${this.server}/p/${encodeURIComponent(cid)}`;
  }

  /** `<server>/f/<cid>`: where anyone retrieves a whole file, split or not. */
  fileUrl(cid: string): string {
    return `${this.server}/f/${encodeURIComponent(cid)}`;
  }

  /** A JSON call; answers 2xx with the parsed body, otherwise throws StorageError. */
  async json<T>(request: JsonRequest): Promise<T> {
    const url = this.#url(request.path, request.query);
    const headers = this.#headers(request.auth ?? true);
    let body: string | undefined;
    if (request.body !== undefined) {
      headers.set("content-type", "application/json");
      body = JSON.stringify(request.body);
    }
    return await this.#retrying(request.repeatable, request.signal, async () => {
      const response = await this.#send(url, { method: request.method, headers, body }, request);
      return await readJson<T>(response);
    });
  }

  /**
   * Whether a piece is stored and served (GET /api/pieces/{cid}: 200 with yes or
   * no). Not HEAD /p/{cid}: its 404 for a new piece is logged by browsers as a
   * failed load, and a removed piece's 410 is no reason to fail an upload of it.
   */
  async isStored(cid: string, signal?: AbortSignal): Promise<boolean> {
    const response = await this.#send(
      this.#url(`/api/pieces/${encodeURIComponent(cid)}`),
      { method: "GET", headers: this.#headers(false) },
      { signal },
    );
    return (await readJson<PieceStatus>(response)).stored === true;
  }

  /** HEAD /p/{cid}, retried; a missing piece is StorageError not_found. */
  async headPiece(cid: string, signal?: AbortSignal): Promise<Response> {
    return await this.#retrieve("HEAD", cid, signal);
  }

  /** GET /p/{cid}, retried until the status line is in; the caller owns the body. */
  async getPiece(cid: string, signal?: AbortSignal): Promise<Response> {
    return await this.#retrieve("GET", cid, signal);
  }

  /**
   * GET /p/{cid} from byte `offset` on (to resume a read that broke off), retried until
   * the status line is in. `If-Range` holds the answer to the piece's own ETag: pieces
   * never change, but a 200 then means a server that ignores ranges, and the caller
   * skips what it has (ranged: false).
   */
  async getPieceFrom(
    cid: string,
    offset: number,
    signal?: AbortSignal,
  ): Promise<{ response: Response; ranged: boolean }> {
    const headers = this.#headers(false);
    headers.set("range", `bytes=${offset}-`);
    headers.set("if-range", `"${cid.toLowerCase()}"`);
    const response = await this.#retrying(
      "safe",
      signal,
      () => this.#send(this.retrievalUrl(cid), { method: "GET", headers }, { signal }),
    );
    if (response.status === 200) return { response, ranged: false };
    const from = /^bytes (\d+)-/.exec(response.headers.get("content-range") ?? "");
    if (response.status !== 206 || from === null || Number(from[1]) !== offset) {
      await response.body?.cancel();
      throw new NetworkError(
        `GET ${this.retrievalUrl(cid)} from byte ${offset} answered ${response.status} ` +
          `(${response.headers.get("content-range")})`,
      );
    }
    return { response, ranged: true };
  }

  async #retrieve(method: "GET" | "HEAD", cid: string, signal?: AbortSignal): Promise<Response> {
    const init = { method, headers: this.#headers(false) };
    return await this.#retrying(
      "safe",
      signal,
      () => this.#send(this.retrievalUrl(cid), init, { signal }),
    );
  }

  /**
   * POST /api/upload of one piece (piece_sending.ts decides when), retried as
   * a whole when that is safe: each attempt asks HEAD first, so a POST whose
   * answer was lost is not sent (and charged) again once the piece is there;
   * null then.
   */
  async postPiece(request: PieceUploadRequest): Promise<PieceUploadResponse | null> {
    const url = this.url("/api/upload", { cid: request.cid });
    const headers = this.headers(true);
    headers.set("content-type", request.contentType);
    if (request.filename !== null) headers.set("x-filename", encodeURIComponent(request.filename));
    return await this.retrying("safe", request.signal, async (attempt) => {
      if (attempt > 1 && await this.isStored(request.cid, request.signal)) return null;
      const body = await request.body();
      const size = body instanceof Blob ? body.size : body.byteLength;
      if (size !== request.size) {
        throw new Error(
          `Cannot upload ${request.cid}: the source gave ${size} bytes, expected ${request.size}`,
        );
      }
      const response = await this.#send(url, { method: "POST", headers, body }, request);
      return await readJson<PieceUploadResponse>(response);
    });
  }

  /** Whether requests carry a token (a sponsored client has none). */
  get hasToken(): boolean {
    return this.#token !== null;
  }

  /** One request, not retried: errors become StorageError (unless accepted) or NetworkError. */
  async request(
    url: string,
    init: RequestInit & { acceptStatus?: number[] },
    signal?: AbortSignal,
  ): Promise<Response> {
    return await this.#send(url, init, { signal });
  }

  /** Runs `run` again as retry.ts says the errors it throws allow. */
  retrying<T>(
    repeatable: Repeatable,
    signal: AbortSignal | undefined,
    run: (attempt: number) => Promise<T>,
  ): Promise<T> {
    return this.#retrying(repeatable, signal, run);
  }

  /** A URL of the server: path and query. */
  url(path: string, query: Record<string, string | number | undefined> = {}): string {
    return this.#url(path, query);
  }

  /** Fresh request headers, with the token when `auth` and there is one. */
  headers(auth: boolean): Headers {
    return this.#headers(auth);
  }

  #retrying<T>(
    repeatable: Repeatable,
    signal: AbortSignal | undefined,
    run: (attempt: number) => Promise<T>,
  ) {
    return withRetry(run, { policy: this.policy, repeatable, signal });
  }

  /** One request. Non-2xx answers (other than those accepted) become StorageError. */
  async #send(
    url: string,
    init: RequestInit & { acceptStatus?: number[] },
    options: { signal?: AbortSignal },
  ): Promise<Response> {
    let response: Response;
    try {
      response = await this.#fetch(url, {
        method: init.method,
        headers: init.headers,
        body: init.body,
        signal: options.signal,
      });
    } catch (error) {
      options.signal?.throwIfAborted();
      if (error instanceof TypeError) {
        throw new NetworkError(`${init.method} ${url} failed: ${error.message}`, { cause: error });
      }
      throw error;
    }
    if (response.ok || init.acceptStatus?.includes(response.status)) return response;
    throw await storageErrorOf(response, init.method ?? "GET");
  }

  #url(path: string, query: Record<string, string | number | undefined> = {}): string {
    const url = new URL(this.server + path);
    for (const [key, value] of Object.entries(query)) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    return url.href;
  }

  #headers(auth: boolean): Headers {
    const headers = new Headers();
    if (auth && this.#token) headers.set("authorization", `Bearer ${this.#token}`);
    return headers;
  }
}

export async function readJson<T>(response: Response): Promise<T> {
  try {
    return await response.json() as T;
  } catch (error) {
    if (error instanceof TypeError) {
      throw new NetworkError(`Reading the answer from ${response.url} failed: ${error.message}`, {
        cause: error,
      });
    }
    throw new StorageError(
      response.status,
      "invalid_response",
      `${response.url} answered ${response.status} with a body that is not JSON`,
    );
  }
}

/** Reads the JSON error body (when there is one) into a StorageError. */
export async function storageErrorOf(response: Response, method: string): Promise<StorageError> {
  const retryAfterSeconds = parseRetryAfter(response.headers.get("retry-after"));
  let code = BODILESS_CODES[response.status] ?? `http_${response.status}`;
  let message = `${method} ${response.url} answered ${response.status}`;
  try {
    const text = await response.text();
    if (text !== "") {
      const body = JSON.parse(text);
      if (typeof body?.error === "string") code = body.error;
      if (typeof body?.message === "string") message = body.message;
    }
  } catch {
    // Not JSON (a proxy's page) or cut off: the status decides.
  }
  return new StorageError(response.status, code, message, { retryAfterSeconds });
}
