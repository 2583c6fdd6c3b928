/**
 * StorageClient: one server, one token, one hash pool. Uploads (upload.ts)
 * and downloads (download.ts) are their own modules; this class holds what
 * they share and the account calls, which are thin typed wrappers over the
 * JSON API (docs/api.md), returned as the server sends them.
 *
 * The hash pool's Workers start on the first piece large enough to need them
 * and end with close() (or `await using`).
 *
 * @example
 * const client = new StorageClient({ server: "http://127.0.0.1:8080", token });
 * try {
 *   const { cid, retrievalUrl } = await client.upload(file, { filename: "video.mp4" });
 *   const stream = await client.download(cid);
 * } finally {
 *   client.close();
 * }
 */
import type {
  DownloadInfo,
  DownloadOptions,
  IncrementalSha256,
  StorageClientOptions,
  UploadOptions,
  UploadResult,
  UploadSource,
} from "./types.ts";
import type {
  Deal,
  FilesPage,
  Limits,
  PieceUploadResponse,
  RevokeResult,
  SessionInfo,
  SignupRequest,
  SignupResult,
  SignupVerificationSent,
  TokenList,
  UploadLink,
  UploadLinkRequest,
  Usage,
} from "./api_types.ts";
import type { HashWorkerPool } from "../../kernel/piece_cid/mod.ts";
import { Transport } from "./transport.ts";
import { retryPolicyOf } from "./retry.ts";
import { createSha256 } from "./sha256.ts";
import { newPool, pieceCid } from "./piece_cid.ts";
import type { CidSource, PieceCid } from "./piece_cid.ts";
import { upload } from "./upload.ts";
import { createDeal } from "./piece_sending.ts";
import { download, downloadInfo } from "./download.ts";
import { SplitFiles } from "./split_files.ts";
import type { ListedFile } from "./split_files.ts";

export class StorageClient implements Disposable {
  readonly #transport: Transport;
  readonly #hashWorkers: number | undefined;
  readonly #hashWorkerUrl: string | undefined;
  readonly #sha256: () => IncrementalSha256;
  #pool: HashWorkerPool | null | undefined = undefined;
  #closed = false;

  constructor(options: StorageClientOptions) {
    if (typeof options.server !== "string" || !/^https?:\/\//i.test(options.server)) {
      throw new TypeError(`server must be an http(s) URL (got ${options.server})`);
    }
    this.#transport = new Transport({
      server: options.server,
      token: options.token ?? null,
      fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
      policy: retryPolicyOf(options.retry),
    });
    this.#hashWorkers = options.hashWorkers;
    this.#hashWorkerUrl = options.hashWorkerUrl;
    this.#sha256 = options.sha256 ?? createSha256;
  }

  /** The server's base URL, without a trailing slash. */
  get server(): string {
    return this.#transport.server;
  }

  /** `<server>/p/<cid>`. */
  retrievalUrl(cid: string): string {
    return this.#transport.retrievalUrl(cid);
  }

  /** `<server>/f/<cid>`: the whole file, split or not, ranges included (the one URL to share). */
  fileUrl(cid: string): string {
    return this.#transport.fileUrl(cid);
  }

  /** Uploads a file, split into pieces plus a manifest when it is over the tier's per-file cap. */
  async upload(source: UploadSource, options: UploadOptions = {}): Promise<UploadResult> {
    return await upload(this.#context(), source, options);
  }

  /** The original bytes of a cid (a manifest is followed), checked as they stream. */
  async download(
    cid: string,
    options: DownloadOptions = {},
  ): Promise<ReadableStream<Uint8Array>> {
    return await download(this.#context(), cid, options);
  }

  /** Size, name and type of what download(cid) gives, without reading the file. */
  async downloadInfo(cid: string, options: { signal?: AbortSignal } = {}): Promise<DownloadInfo> {
    return await downloadInfo(this.#context(), cid, options);
  }

  /** The PieceCIDv2 (and v1) of a source, hashed on this client's pool. */
  pieceCid(source: CidSource, options: { signal?: AbortSignal } = {}): Promise<PieceCid> {
    return pieceCid(source, { signal: options.signal, pool: this.#hashPool() });
  }

  /** Whether a piece is stored and served (GET /api/pieces/{cid} says yes). */
  async isStored(cid: string, options: { signal?: AbortSignal } = {}): Promise<boolean> {
    return await this.#transport.isStored(cid, options.signal);
  }

  // Account calls. Each answers the server's JSON; errors are StorageError.

  /** 201 (open mode): the token, shown once. 202 (verify mode): a code was mailed. */
  signup(request: SignupRequest): Promise<SignupResult | SignupVerificationSent> {
    return this.#transport.json({
      method: "POST",
      path: "/api/auth/signup",
      body: request,
      auth: false,
      repeatable: "only-if-not-done",
    });
  }

  /** Exchanges a mailed code for the token (verify mode). Also takes `{ email, code }`. */
  verifySignup(email: string, code: string): Promise<SignupResult>;
  verifySignup(request: { email: string; code: string }): Promise<SignupResult>;
  verifySignup(emailOrRequest: string | { email: string; code: string }, code?: string) {
    const body = typeof emailOrRequest === "string"
      ? { email: emailOrRequest, code: code ?? "" }
      : { email: emailOrRequest.email, code: emailOrRequest.code };
    return this.#transport.json<SignupResult>({
      method: "POST",
      path: "/api/auth/signup/verify",
      body,
      auth: false,
      repeatable: "only-if-not-done",
    });
  }

  /**
   * Who this client acts as (GET /api/auth/session): its token, or, in a browser on
   * the server's own page, the session cookie; `signedIn: false` when neither.
   */
  session(): Promise<SessionInfo> {
    return this.#transport.json({ method: "GET", path: "/api/auth/session", repeatable: "safe" });
  }

  /**
   * Signs the server's own web page in with `token`: the server sets its HttpOnly
   * session cookie, so the page keeps no token in script reach. Only the server's
   * own origin may (403 csrf_rejected elsewhere); a CLI or backend sends its
   * token instead.
   */
  startSession(token: string): Promise<SessionInfo> {
    return this.#transport.json({
      method: "POST",
      path: "/api/auth/session",
      body: { token },
      auth: false,
      repeatable: "only-if-not-done",
    });
  }

  /** Ends the page's cookie session (the token itself stays valid). */
  endSession(): Promise<SessionInfo> {
    return this.#transport.json({
      method: "DELETE",
      path: "/api/auth/session",
      auth: false,
      repeatable: "safe",
    });
  }

  /**
   * A signed link for one upload of exactly this cid, size and Content-Type, which
   * anyone may POST once without credentials (uploadThroughLink) within the hour
   * at most; it counts as this token's upload (scope `put`).
   */
  createUploadLink(request: UploadLinkRequest): Promise<UploadLink> {
    return this.#transport.json({
      method: "POST",
      path: "/api/upload-links",
      body: request,
      repeatable: "only-if-not-done",
    });
  }

  /** Every token of the caller's user, newest first (scope `list`). */
  listTokens(): Promise<TokenList> {
    return this.#transport.json({ method: "GET", path: "/api/tokens", repeatable: "safe" });
  }

  /** The same as listTokens(). */
  tokens(): Promise<TokenList> {
    return this.listTokens();
  }

  /** Revokes a token of the caller's user; idempotent. */
  revokeToken(jti: string): Promise<RevokeResult> {
    return this.#transport.json({
      method: "POST",
      path: "/api/tokens/revoke",
      body: { jti },
      repeatable: "safe",
    });
  }

  /** One page of the caller's uploads, newest first (scope `list`). */
  listFiles(
    options: { limit?: number; cursor?: string | null; cid?: string } = {},
  ): Promise<FilesPage> {
    return this.#transport.json({
      method: "GET",
      path: "/api/files",
      query: { limit: options.limit, cursor: options.cursor ?? undefined, cid: options.cid },
      repeatable: "safe",
    });
  }

  /**
   * Folds listed deals into files, page after page (split_files.ts): a split
   * file is one ListedFile with its real size and its parts, not its
   * manifest's deal and one deal per part.
   */
  splitFiles(): SplitFiles {
    return new SplitFiles(async (cid) => {
      try {
        return (await this.downloadInfo(cid)).manifest;
      } catch {
        return null; // unreadable now: listed as the deal it is
      }
    });
  }

  /**
   * Deletes a listed file: its deal, and for a split file the caller's deals
   * on its parts too (found by cid and part name), so that the whole file can
   * go. The deals deleted, the file's own first.
   */
  async deleteFile(file: ListedFile): Promise<Deal[]> {
    const deleted = [await this.deleteDeal(file.deal.dealId)];
    for (const part of file.parts) {
      const page = await this.listFiles({ cid: part.cid, limit: 100 });
      for (const deal of page.files) {
        if (deal.filename === part.name && deal.state === "active") {
          deleted.push(await this.deleteDeal(deal.dealId));
        }
      }
    }
    return deleted;
  }

  /** The same as listFiles(). */
  files(options: { limit?: number; cursor?: string | null } = {}): Promise<FilesPage> {
    return this.listFiles(options);
  }

  /** Every upload of the caller, page after page. */
  async *allFiles(options: { pageSize?: number } = {}): AsyncGenerator<Deal, void, undefined> {
    let cursor: string | null = null;
    do {
      const page: FilesPage = await this.listFiles({ limit: options.pageSize, cursor });
      yield* page.files;
      cursor = page.nextCursor;
    } while (cursor !== null);
  }

  /** Uploads per UTC day over a range (`YYYY-MM-DD`), and what is left of today's quota. */
  usage(options: { from?: string; to?: string } = {}): Promise<Usage> {
    return this.#transport.json({
      method: "GET",
      path: "/api/usage",
      query: { from: options.from, to: options.to },
      repeatable: "safe",
    });
  }

  /** The caller's tier, caps and what is left today; with `size`, whether that upload would pass. */
  limits(options: { size?: number } = {}): Promise<Limits> {
    return this.#transport.json({
      method: "GET",
      path: "/api/limits",
      query: { size: options.size },
      repeatable: "safe",
    });
  }

  /**
   * A deal on bytes already stored (someone's upload), without sending them: charged as
   * an upload of them would be (scope `put`; sponsored without a token). 404 not_found
   * when the cid is not stored.
   */
  createDeal(cid: string, options: { signal?: AbortSignal } = {}): Promise<PieceUploadResponse> {
    return createDeal(this.#transport, cid, options.signal);
  }

  /**
   * One of the caller's deals (scope `list`): on a server that hands pieces to
   * a storage provider, with its piece's `handoff` (its state there and, once
   * live, its on-chain data set and piece ids).
   */
  deal(dealId: string): Promise<Deal> {
    return this.#transport.json({
      method: "GET",
      path: `/api/deals/${encodeURIComponent(dealId)}`,
      repeatable: "safe",
    });
  }

  /** Extends one of the caller's deals by a term (scope `pin`); each call adds one. */
  extendDeal(dealId: string): Promise<Deal> {
    return this.#transport.json({
      method: "POST",
      path: `/api/deals/${encodeURIComponent(dealId)}/extend`,
      repeatable: "only-if-not-done",
    });
  }

  /**
   * Ends one of the caller's deals now (scope `pin`): its state becomes `deleted`.
   * The quota the upload used is not given back; once no deal keeps the piece, the
   * server removes it after its grace period. Deleting a deleted deal returns it
   * unchanged, so this is safe to repeat.
   */
  deleteDeal(dealId: string): Promise<Deal> {
    return this.#transport.json({
      method: "DELETE",
      path: `/api/deals/${encodeURIComponent(dealId)}`,
      repeatable: "safe",
    });
  }

  /** Ends the hash pool's Workers. Uploads and downloads still running fail. */
  close(): void {
    this.#closed = true;
    this.#pool?.close();
    this.#pool = null;
  }

  [Symbol.dispose](): void {
    this.close();
  }

  #context() {
    if (this.#closed) throw new Error("This StorageClient is closed");
    return { transport: this.#transport, pool: this.#hashPool(), sha256: this.#sha256 };
  }

  #hashPool(): HashWorkerPool | null {
    if (this.#pool === undefined) this.#pool = newPool(this.#hashWorkers, this.#hashWorkerUrl);
    return this.#pool;
  }
}
