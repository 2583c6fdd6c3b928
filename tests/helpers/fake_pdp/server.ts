/**
 * Why: Curio's /pdp routes on 127.0.0.1 (filecoin-project/curio: pdp/handlers.go
 * Routes): every request first passes the offense throttle (a blocked client
 * is refused on every route), then moves the clock, then reaches its handler.
 * `GET /pdp/ping` answers the exact "curio-pdp" body that reachability probes
 * match. The listener can go down two ways for tests: "refused" closes it
 * (connection refused; it comes back on the same port) and "503" answers
 * every request 503 as a failing node behind a proxy does.
 */
import { type FakeCore, serverError, text } from "./core.ts";
import {
  handleAddStatus,
  handleCreationStatus,
  handleGetDataSet,
  handleGetPiece,
} from "./data_set_reads.ts";
import { handleAdd, handleCreate, handleDelete } from "./data_set_writes.ts";
import { handlePull } from "./pull_handler.ts";

export type DownMode = "refused" | "503";

function route(
  core: FakeCore,
  request: Request,
  clientIp: string,
): Response | Promise<Response> {
  const { pathname } = new URL(request.url);
  const p = pathname.replace(/\/+$/, "").split("/").slice(1);
  const m = request.method;
  if (p[0] !== "pdp") return text(404, "404 page not found");
  if (m === "GET" && p.length === 2 && p[1] === "ping") {
    return new Response("curio-pdp", { headers: { "content-type": "text/plain; charset=utf-8" } });
  }
  if (m === "POST" && p.length === 3 && p[1] === "piece" && p[2] === "pull") {
    return handlePull(core, request);
  }
  if (p[1] !== "data-sets") return text(404, "404 page not found");
  if (m === "POST" && p.length === 2) return handleCreate(core, request, false);
  if (m === "POST" && p.length === 3 && p[2] === "create-and-add") {
    return handleCreate(core, request, true);
  }
  if (m === "GET" && p.length === 4 && p[2] === "created") return handleCreationStatus(core, p[3]);
  if (m === "GET" && p.length === 3) return handleGetDataSet(core, p[2]);
  if (p[3] !== "pieces") return text(404, "404 page not found");
  if (m === "POST" && p.length === 4) return handleAdd(core, request, p[2], clientIp);
  if (m === "GET" && p.length === 6 && p[4] === "added") return handleAddStatus(core, p[2], p[5]);
  if (m === "GET" && p.length === 5) return handleGetPiece(core, p[2], p[4]);
  if (m === "DELETE" && p.length === 5) return handleDelete(core, request, p[2], p[4]);
  return text(404, "404 page not found");
}

export class PdpServer {
  readonly #core: FakeCore;
  #server: Deno.HttpServer<Deno.NetAddr> | null = null;
  #port = 0;
  #down: DownMode | null = null;

  constructor(core: FakeCore) {
    this.#core = core;
  }

  get port(): number {
    return this.#port;
  }

  listen(): void {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: this.#port, onListen: () => {} },
      (request, info) => this.#handle(request, info.remoteAddr.hostname),
    );
    this.#port = this.#server.addr.port;
  }

  async goDown(mode: DownMode): Promise<void> {
    this.#down = mode;
    if (mode === "refused") await this.#close();
  }

  comeUp(): void {
    this.#down = null;
    if (this.#server === null) this.listen();
  }

  async close(): Promise<void> {
    await this.#close();
  }

  async #close(): Promise<void> {
    const server = this.#server;
    this.#server = null;
    if (server) {
      await server.shutdown();
      await server.finished;
    }
  }

  async #handle(request: Request, clientIp: string): Promise<Response> {
    if (this.#down === "503") return text(503, "Service Unavailable");
    const blocked = this.#core.throttle.blocked(clientIp);
    if (blocked) {
      return text(429, blocked.reason, { "retry-after": String(blocked.retryAfterSeconds) });
    }
    try {
      await this.#core.tick();
      return await route(this.#core, request, clientIp);
    } catch (error) {
      return serverError(500, `Internal error: ${(error as Error).message}`);
    }
  }
}
