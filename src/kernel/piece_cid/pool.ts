/**
 * A small pool of hashing Workers shared by every upload of a process, so
 * hashing runs beside the event loop and on every core. Created lazily, ended
 * with close(). Segments go to the worker with the fewest in flight.
 */
import { SEGMENT_BYTES } from "./segment.ts";
import { hashWorkerUrl } from "./worker_source.ts";
import type { SegmentRequest, SegmentResponse } from "./worker_source.ts";

export interface HashPoolOptions {
  /** Number of Workers; default: the number of CPUs (at least 1, at most 8). */
  workers?: number;
  /**
   * Where the Workers' script is (the server serves it at /app/hash-worker.js);
   * default a data: URL of it, which a page's strict CSP would refuse.
   */
  workerUrl?: string;
}

interface Pending {
  owner: PooledWorker;
  resolve(response: SegmentResponse): void;
  reject(error: Error): void;
}

interface PooledWorker {
  worker: Worker;
  inFlight: number;
}

export class HashWorkerPool {
  readonly #size: number;
  readonly #workerUrl: string | undefined;
  #workers: PooledWorker[] | null = null;
  readonly #pending = new Map<number, Pending>();
  readonly #spareBuffers: ArrayBuffer[] = [];
  #nextId = 0;
  #closed = false;

  constructor(options: HashPoolOptions = {}) {
    this.#size = Math.max(1, Math.min(8, options.workers ?? navigator.hardwareConcurrency ?? 2));
    this.#workerUrl = options.workerUrl;
  }

  get size(): number {
    return this.#size;
  }

  /** Segments sent to a Worker and not yet answered (the metrics' hash-pool queue). */
  get segmentsInFlight(): number {
    return this.#pending.size;
  }

  /** A segment-sized buffer, recycled when possible. */
  takeBuffer(): ArrayBuffer {
    return this.#spareBuffers.pop() ?? new ArrayBuffer(SEGMENT_BYTES);
  }

  returnBuffer(buffer: ArrayBuffer): void {
    if (this.#spareBuffers.length < this.#size * 4) this.#spareBuffers.push(buffer);
  }

  /** Hashes a full segment on a Worker; the buffer is transferred and recycled afterwards. */
  hash(buffer: ArrayBuffer): Promise<Uint8Array> {
    if (this.#closed) return Promise.reject(new Error("Cannot hash: the pool is closed"));
    const workers = this.#workers ??= this.#start();
    const target = workers.reduce((a, b) => (b.inFlight < a.inFlight ? b : a));
    const id = this.#nextId++;
    target.inFlight++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, {
        owner: target,
        resolve: (response) => {
          target.inFlight--;
          this.returnBuffer(response.buffer);
          resolve(response.root);
        },
        reject,
      });
      const request: SegmentRequest = { id, buffer };
      target.worker.postMessage(request, [buffer]);
    });
  }

  close(): void {
    this.#closed = true;
    for (const { worker } of this.#workers ?? []) worker.terminate();
    this.#workers = null;
    for (const pending of this.#pending.values()) pending.reject(new Error("Hash pool closed"));
    this.#pending.clear();
  }

  #start(): PooledWorker[] {
    return Array.from({ length: this.#size }, () => {
      const worker = new Worker(this.#workerUrl ?? hashWorkerUrl(), { type: "module" });
      const pooled: PooledWorker = { worker, inFlight: 0 };
      worker.onmessage = (event: MessageEvent<SegmentResponse>) => {
        const pending = this.#pending.get(event.data.id);
        this.#pending.delete(event.data.id);
        pending?.resolve(event.data);
      };
      // A Worker that dies fails what it was hashing instead of leaving it waiting forever.
      worker.onerror = (event) => {
        event.preventDefault();
        for (const [id, pending] of this.#pending) {
          if (pending.owner !== pooled) continue;
          this.#pending.delete(id);
          pending.reject(new Error(`Hash worker failed: ${event.message}`));
        }
      };
      return pooled;
    });
  }
}
