/**
 * Why: the pull task as Curio runs it (filecoin-project/curio:
 * tasks/pdpv0/task_pull_piece.go). Work is grouped by piece: one task per
 * piece at a time tries each supplied source URL with a real GET, accepts
 * only a 200 whose body is exactly the declared raw size (a 206, a short or a
 * long body fails), recomputes the PieceCID and fails on a mismatch. 404s,
 * size and CommP mismatches fail the piece at once; a 429 or 500, a network
 * error or a broken body sends it back to `pending`, due again after 30 s,
 * then 2 min, failed after 3 attempts. A piece the node already holds
 * completes without a fetch. Test controls: hold (schedule nothing until
 * released) and refuse a piece (it fails, nothing fetched).
 */
import type { FakePdpOptions } from "./config.ts";
import { pieceCidOfBytes, type PieceInfo } from "./piece.ts";
import { isActive, pieceKey, type PullItem, type PullStore } from "./pulls.ts";

/** One GET of a source, for inspection. */
export interface FetchRecord {
  pieceCid: string;
  sourceUrl: string;
  status: number | null;
  outcome: "ok" | "transient" | "permanent";
  reason?: string;
}

class SourceError extends Error {
  constructor(readonly transient: boolean, message: string, readonly status: number | null = null) {
    super(message);
  }
}

export class PullWorker {
  /** Pieces the node holds (Curio: complete parked pieces with a pdp_piecerefs row), by v1/size. */
  readonly parked = new Map<string, PieceInfo>();
  readonly fetches: FetchRecord[] = [];
  readonly refused = new Set<string>();
  held = false;
  readonly #options: FakePdpOptions;
  readonly #store: PullStore;
  readonly #abort = new AbortController();
  readonly #tasks = new Set<Promise<void>>();

  constructor(options: FakePdpOptions, store: PullStore) {
    this.#options = options;
    this.#store = store;
  }

  /** One scheduler pass: complete held pieces, expire over-budget items, start due groups. */
  tick(now: number): void {
    const groups = new Map<string, PullItem[]>();
    for (const item of this.#store.items()) {
      if (!isActive(item)) continue;
      if (this.parked.has(pieceKey(item.piece))) {
        item.complete = true;
        continue;
      }
      if (!item.running && now - item.createdAt > this.#options.pullItemBudgetMs) {
        item.failed = true;
        item.failReason = "pull budget exceeded";
        continue;
      }
      const group = groups.get(pieceKey(item.piece)) ?? [];
      group.push(item);
      groups.set(pieceKey(item.piece), group);
    }
    if (this.held || this.#abort.signal.aborted) return;
    for (const items of groups.values()) {
      if (items.some((item) => item.running)) continue;
      const eligible = items.filter((item) => item.attempts < this.#options.maxAttempts);
      if (!eligible.some((item) => item.nextAttemptAt <= now)) continue;
      for (const item of eligible) item.running = true;
      const task = this.#run(eligible).finally(() => this.#tasks.delete(task));
      this.#tasks.add(task);
    }
  }

  /** Aborts downloads under way and waits for their tasks to end. */
  async stop(): Promise<void> {
    this.#abort.abort();
    await Promise.allSettled([...this.#tasks]);
  }

  async #run(items: PullItem[]): Promise<void> {
    const piece = items[0].piece;
    const failures = new Map<string, SourceError>();
    for (const sourceUrl of new Set(items.map((item) => item.sourceUrl))) {
      try {
        await this.#tryPull(sourceUrl, piece);
        this.parked.set(pieceKey(piece), piece);
        for (const item of this.#store.items()) {
          if (isActive(item) && pieceKey(item.piece) === pieceKey(piece)) {
            item.complete = true;
            item.running = false;
          }
        }
        return;
      } catch (error) {
        const failure = error instanceof SourceError ? error : new SourceError(true, String(error));
        failures.set(sourceUrl, failure);
      }
    }
    this.#recordFailures(items, failures);
  }

  #recordFailures(items: PullItem[], failures: Map<string, SourceError>): void {
    const now = this.#options.now();
    const [first, later] = this.#options.retryDelaysMs;
    for (const item of items) {
      item.running = false;
      const failure = failures.get(item.sourceUrl);
      if (!failure || !isActive(item)) continue;
      if (!failure.transient) {
        item.failed = true;
        item.failReason = failure.message;
        continue;
      }
      item.attempts++;
      if (item.attempts >= this.#options.maxAttempts) {
        item.failed = true;
        item.failReason = failure.message;
      } else {
        item.nextAttemptAt = now + (item.attempts === 1 ? first : later);
      }
    }
  }

  async #tryPull(sourceUrl: string, piece: PieceInfo): Promise<void> {
    const log = (outcome: FetchRecord["outcome"], status: number | null, reason?: string) =>
      this.fetches.push({ pieceCid: piece.v2, sourceUrl, status, outcome, reason });
    if (this.refused.has(piece.v2)) {
      throw new SourceError(false, "refused by the provider");
    }
    try {
      await this.#download(sourceUrl, piece);
      log("ok", 200);
    } catch (error) {
      if (!(error instanceof SourceError)) throw error;
      log(error.transient ? "transient" : "permanent", error.status, error.message);
      throw error;
    }
  }

  async #download(sourceUrl: string, piece: PieceInfo): Promise<void> {
    const url = URL.parse(sourceUrl);
    const insecureOk = this.#options.allowInsecureSources && url?.protocol === "http:";
    if (!url || (url.protocol !== "https:" && !insecureOk)) {
      throw new SourceError(false, `source URL must use HTTPS scheme: ${sourceUrl}`);
    }
    let response: Response;
    try {
      response = await fetch(url, { signal: this.#abort.signal });
    } catch (error) {
      throw new SourceError(true, `request failed: ${error}`);
    }
    if (response.status !== 200) {
      await response.body?.cancel();
      const transient = response.status === 429 || response.status === 500;
      throw new SourceError(
        transient,
        `HTTP status ${response.status} from source`,
        response.status,
      );
    }
    const declared = Number(response.headers.get("content-length") ?? NaN);
    if (declared > piece.rawSize) {
      await response.body?.cancel();
      throw new SourceError(
        false,
        `size mismatch: expected ${piece.rawSize}, got ${declared}`,
        200,
      );
    }
    const bytes = await this.#readAtMost(response, piece.rawSize + 1);
    if (bytes.length !== piece.rawSize) {
      const got = bytes.length > piece.rawSize ? "more" : String(bytes.length);
      throw new SourceError(false, `size mismatch: expected ${piece.rawSize}, got ${got}`, 200);
    }
    const computed = await pieceCidOfBytes(bytes);
    if (computed !== piece.v2) {
      throw new SourceError(false, `CommP mismatch: expected ${piece.v2}, got ${computed}`, 200);
    }
  }

  async #readAtMost(response: Response, limit: number): Promise<Uint8Array> {
    const chunks: Uint8Array[] = [];
    let total = 0;
    const reader = response.body!.getReader();
    try {
      while (total < limit) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.push(value);
        total += value.length;
      }
    } catch (error) {
      throw new SourceError(true, `reading the body failed: ${error}`, 200);
    } finally {
      await reader.cancel().catch(() => {});
    }
    const bytes = new Uint8Array(total);
    let offset = 0;
    for (const chunk of chunks) {
      bytes.set(chunk, offset);
      offset += chunk.length;
    }
    return bytes.subarray(0, Math.min(total, limit));
  }
}
