/**
 * A PUT of an object whose bytes are sent while they arrive, with their
 * length declared up front: a resumable upload's part streams to the bucket
 * while its PATCH is still being received, so receiving and storing overlap
 * (partial_writer.ts). Deno's fetch cannot send it (a stream body goes
 * chunked, without Content-Length, and S3 refuses a chunked PUT); node:http's
 * client sends a plain Content-Length body written piece by piece.
 *
 * It is one attempt, never retried: its bytes are not kept by it. The caller
 * keeps them (the part's buffer) and, when this fails or is stopped, sends
 * them again with S3Client.text, retries, deadlines and liveness included.
 * Its deadlines, once the last byte is handed over: the answer must come
 * within the client's request timeout, and it is stopped with everything else
 * waiting on the bucket when the bucket goes silent (src/kernel/liveness.ts). It is
 * not sent while the bucket is known to be offline.
 */
import { request as httpRequest } from "node:http";
import type { ClientRequest, IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import type { S3Client } from "./s3_client.ts";

export interface StreamedPutOptions {
  client: S3Client;
  key: string;
  /** Where the bytes are: `source[0, size)`, filled in order; untouched until `done` settles. */
  source: Uint8Array;
  size: number;
}

export class StreamedPut {
  readonly key: string;
  readonly size: number;
  /** Resolves true once S3 stored the object, false when it did not (failed or stopped). */
  readonly done: Promise<boolean>;
  readonly #options: StreamedPutOptions;
  #request: ClientRequest | null = null;
  #available = 0;
  #sent = 0;
  #stopped = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopWaiting: () => void = () => {};
  #settle: (stored: boolean) => void = () => {};

  constructor(options: StreamedPutOptions) {
    this.#options = options;
    this.key = options.key;
    this.size = options.size;
    this.done = new Promise<boolean>((resolve) => this.#settle = resolve)
      .finally(() => {
        clearTimeout(this.#timer);
        this.#stopWaiting();
      });
    this.#start().catch(() => this.stop());
  }

  /** Bytes `[0, available)` of the source are in: sends what was not sent yet. */
  advance(available: number): void {
    this.#available = Math.min(available, this.size);
    this.#flush();
  }

  /** Gives up on the PUT (a body that will not be whole, a failed append). */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#request?.destroy();
    this.#settle(false);
  }

  async #start(): Promise<void> {
    const { client, key, size } = this.#options;
    await client.admit();
    const { url, headers } = await client.signed({ method: "PUT", key });
    if (this.#stopped) return;
    const target = new URL(url);
    const send = target.protocol === "https:" ? httpsRequest : httpRequest;
    const request = send(target, {
      method: "PUT",
      headers: { ...Object.fromEntries(headers), "content-length": String(size) },
    });
    request.on("error", () => this.stop());
    request.on("response", (response) => this.#answered(response));
    this.#request = request;
    this.#flush();
  }

  #flush(): void {
    const request = this.#request;
    if (!request || this.#stopped || this.#sent >= this.#available) return;
    request.write(this.#options.source.subarray(this.#sent, this.#available));
    this.#sent = this.#available;
    if (this.#sent < this.size) return;
    request.end();
    const { client } = this.#options;
    this.#timer = setTimeout(() => this.stop(), client.requestTimeoutMs);
    const halt = new AbortController();
    halt.signal.addEventListener("abort", () => this.stop(), { once: true });
    this.#stopWaiting = client.liveness.waiting(halt);
  }

  #answered(response: IncomingMessage): void {
    this.#options.client.liveness.answered();
    const status = response.statusCode ?? 0;
    response.on("error", () => this.stop());
    // A refusal is not reported from here: the caller's buffered PUT meets it again and says why.
    response.on("end", () => status >= 200 && status < 300 ? this.#settle(true) : this.stop());
    response.resume();
  }
}
