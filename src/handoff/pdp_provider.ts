/**
 * The provider's PDP HTTP API (a Curio node with Warm Storage), as the hand-off
 * worker calls it: pull, create the data set, add pieces, poll both, list the
 * data set, schedule a removal, ping.
 *
 * Why not synapse-core's `sp` request functions themselves: in 0.5.2 each
 * wraps an HTTP error into an error carrying only the answer's text
 * (`new PullError(await response.text())`), so a 429 with its Retry-After, a
 * 503 and a 400 cannot be told apart, and their timeout is fixed at minutes.
 * The worker must back off on the first two and fail a piece on the last. So
 * the requests are sent here, built exactly as synapse-core's
 * `pullPiecesApiRequest`, `createDataSetApiRequest`, `addPiecesApiRequest`,
 * `getDataSet` and `deletePiece` build them (read from its source), and the
 * answers are read with synapse-core's own schemas; the signed `extraData`
 * comes from its typed-data signers (payer.ts).
 */
import {
  AddPiecesRejectedSchema,
  AddPiecesSuccessSchema,
  CreateDataSetRejectedSchema,
  CreateDataSetSuccessSchema,
  DataSetSchema,
} from "@filoz/synapse-core/sp";

/** The provider did not answer usefully now (network, timeout, 429, 5xx): back off and try again. */
export class ProviderUnavailable extends Error {
  constructor(
    message: string,
    readonly retryAfterMs: number | null,
    readonly status: number | null,
  ) {
    super(message);
    this.name = "ProviderUnavailable";
  }
}

/** The provider answered a 4xx: this request will not succeed as it is. */
export class ProviderRefused extends Error {
  constructor(message: string, readonly status: number) {
    super(message);
    this.name = "ProviderRefused";
  }
}

export type PullStatus = "pending" | "inProgress" | "retrying" | "complete" | "failed";

export interface PullBody {
  extraData: string;
  recordKeeper: string;
  pieces: { pieceCid: string; sourceUrl: string }[];
  dataSetId?: number;
}

export type CreationStatus =
  | { state: "pending" }
  | { state: "created"; dataSetId: number }
  | { state: "rejected" };

export type AddStatus =
  | { state: "pending" }
  | { state: "added"; pieceIds: number[]; txHash: string }
  | { state: "rejected"; txHash: string };

/** One request's outcome, for the metrics: ok, refused (4xx) or unavailable. */
export type RequestOutcome = "ok" | "refused" | "unavailable";

export interface PdpProviderOptions {
  /** The service URL (--pdp-url). */
  url: string;
  /** Bound of one request. */
  timeoutMs: number;
  /** Hears of every request: its route, outcome and duration. */
  onRequest?: (route: string, outcome: RequestOutcome, ms: number) => void;
}

export class PdpProvider {
  readonly url: string;
  readonly #base: string;
  readonly #options: PdpProviderOptions;

  constructor(options: PdpProviderOptions) {
    this.#options = options;
    this.url = options.url;
    // new URL("pdp/…", base) keeps a path prefix only with a trailing slash (as synapse-core's serviceURL).
    this.#base = options.url.endsWith("/") ? options.url : `${options.url}/`;
  }

  async ping(): Promise<void> {
    await this.#send("ping", "GET", "pdp/ping");
  }

  /** Sends a pull, or the same one again: each piece's own status. */
  async pull(body: PullBody): Promise<{ pieceCid: string; status: PullStatus }[]> {
    const response = await this.#send("pull", "POST", "pdp/piece/pull", body);
    const answer = await response.json() as { pieces?: { pieceCid: string; status: PullStatus }[] };
    if (!Array.isArray(answer.pieces)) {
      throw new ProviderUnavailable("a pull answer without pieces", null, 200);
    }
    return answer.pieces;
  }

  async createDataSet(
    input: { recordKeeper: string; extraData: string },
  ): Promise<{ statusUrl: string; txHash: string }> {
    const body = { recordKeeper: input.recordKeeper, extraData: input.extraData };
    return this.#located(await this.#send("create", "POST", "pdp/data-sets", body));
  }

  async creationStatus(statusUrl: string): Promise<CreationStatus> {
    const answer = await (await this.#send("create-status", "GET", statusUrl)).json();
    const created = CreateDataSetSuccessSchema.safeParse(answer);
    if (created.success) return { state: "created", dataSetId: Number(created.data.dataSetId) };
    if (CreateDataSetRejectedSchema.safeParse(answer).success) return { state: "rejected" };
    return { state: "pending" };
  }

  /** Adds pieces (PieceCIDv2s) to a data set, each its own sub-piece, as synapse-core sends them. */
  async addPieces(
    input: { dataSetId: number; pieceCids: readonly string[]; extraData: string },
  ): Promise<{ statusUrl: string; txHash: string }> {
    const body = {
      pieces: input.pieceCids.map((pieceCid) => ({
        pieceCid,
        subPieces: [{ subPieceCid: pieceCid }],
      })),
      extraData: input.extraData,
    };
    const path = `pdp/data-sets/${input.dataSetId}/pieces`;
    return this.#located(await this.#send("add", "POST", path, body));
  }

  async addStatus(statusUrl: string): Promise<AddStatus> {
    const answer = await (await this.#send("add-status", "GET", statusUrl)).json();
    const added = AddPiecesSuccessSchema.safeParse(answer);
    if (added.success) {
      return {
        state: "added",
        pieceIds: added.data.confirmedPieceIds.map(Number),
        txHash: added.data.txHash,
      };
    }
    const rejected = AddPiecesRejectedSchema.safeParse(answer);
    if (rejected.success) return { state: "rejected", txHash: rejected.data.txHash };
    // Pending, or confirmed and not yet recorded by the provider's watcher: both wait.
    return { state: "pending" };
  }

  /** The pieces the data set holds now (a removed piece drops out at its proving period). */
  async dataSetPieces(dataSetId: number): Promise<{ pieceId: number; pieceCid: string }[]> {
    const response = await this.#send("data-set", "GET", `pdp/data-sets/${dataSetId}`);
    const dataSet = DataSetSchema.parse(await response.json());
    return dataSet.pieces.map((p) => ({
      pieceId: Number(p.pieceId),
      pieceCid: p.pieceCid.toString(),
    }));
  }

  /** Schedules a piece's removal (SchedulePieceRemovals signed in extraData); the transaction. */
  async removePiece(
    input: { dataSetId: number; pieceId: number; extraData: string },
  ): Promise<{ txHash: string }> {
    const path = `pdp/data-sets/${input.dataSetId}/pieces/${input.pieceId}`;
    const response = await this.#send("remove", "DELETE", path, { extraData: input.extraData });
    const answer = await response.json() as { txHash?: string };
    return { txHash: String(answer.txHash ?? "") };
  }

  #located(response: Response): { statusUrl: string; txHash: string } {
    const location = response.headers.get("location");
    const txHash = location?.split("/").pop() ?? "";
    if (!location || !/^0x[0-9a-fA-F]+$/.test(txHash)) {
      throw new ProviderUnavailable(
        `an answer without a usable Location (${location})`,
        null,
        response.status,
      );
    }
    return { statusUrl: new URL(location, this.#base).toString(), txHash };
  }

  async #send(route: string, method: string, path: string, body?: unknown): Promise<Response> {
    const started = performance.now();
    const report = (outcome: RequestOutcome) =>
      this.#options.onRequest?.(route, outcome, performance.now() - started);
    let response: Response;
    try {
      response = await fetch(new URL(path, this.#base), {
        method,
        headers: body === undefined ? {} : { "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.#options.timeoutMs),
      });
    } catch (error) {
      report("unavailable");
      const why = (error as Error).name === "TimeoutError"
        ? `no answer within ${this.#options.timeoutMs} ms`
        : (error as Error).message;
      throw new ProviderUnavailable(`${method} ${path}: ${why}`, null, null);
    }
    if (response.ok) {
      report("ok");
      return response;
    }
    const text = (await response.text().catch(() => "")).trim().slice(0, 300);
    const what = `${method} ${path} answered ${response.status}${text ? `: ${text}` : ""}`;
    if (response.status === 429 || response.status >= 500) {
      report("unavailable");
      throw new ProviderUnavailable(what, retryAfterMs(response.headers), response.status);
    }
    report("refused");
    throw new ProviderRefused(what, response.status);
  }
}

function retryAfterMs(headers: Headers): number | null {
  const value = headers.get("retry-after");
  if (value === null) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}
