/**
 * Why: the provider's parts wired together (the chain, Curio's records, the
 * pull store and its worker, the offense throttle) and the one clock step
 * that moves them: transactions land, watchers record, the pull scheduler
 * starts due work. The step runs on every request and on a timer, one at a
 * time, so nothing races and a test sees a state reached in Curio's order.
 * Also the answer helpers: Curio answers errors as text (Go's http.Error),
 * most of them with an "[eid: …]" suffix.
 */
import { FakeChain } from "./chain.ts";
import type { FakePdpOptions } from "./config.ts";
import { PullWorker } from "./pull_worker.ts";
import { PullStore } from "./pulls.ts";
import { CurioRecords } from "./records.ts";
import { OffenseThrottle } from "./throttle.ts";

/** Curio's service label under NullAuth: every request is the "public" service. */
export const SERVICE = "public";

export class FakeCore {
  readonly options: FakePdpOptions;
  readonly chain: FakeChain;
  readonly records: CurioRecords;
  readonly pulls: PullStore;
  readonly worker: PullWorker;
  readonly throttle: OffenseThrottle;
  /** While set, an add's transaction is sent but its answer waits (holdAddAnswers). */
  addAnswers: PromiseWithResolvers<void> | null = null;
  #step: Promise<void> = Promise.resolve();

  constructor(options: FakePdpOptions) {
    this.options = options;
    this.chain = new FakeChain(options);
    this.records = new CurioRecords(options.settleAfterMs);
    this.pulls = new PullStore(options);
    this.worker = new PullWorker(options, this.pulls);
    this.throttle = new OffenseThrottle(options);
  }

  /** Moves everything to now; calls queue behind each other. */
  tick(): Promise<void> {
    this.#step = this.#step.then(async () => {
      const now = this.options.now();
      await this.chain.advance(now);
      this.records.settle(now, this.chain);
      this.worker.tick(now);
    });
    return this.#step;
  }
}

/** Go's http.Error: text/plain, the message and a newline. */
export function text(status: number, message: string, headers: HeadersInit = {}): Response {
  return new Response(message + "\n", {
    status,
    headers: { "content-type": "text/plain; charset=utf-8", ...headers },
  });
}

/** Curio's httpServerError: the message with an error id, as an operator would grep for. */
export function serverError(status: number, message: string): Response {
  return text(status, `${message} [eid: ${crypto.randomUUID()}]`);
}

export function json(body: unknown, status = 200, headers: HeadersInit = {}): Response {
  return new Response(JSON.stringify(body) + "\n", {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

/** Reads a JSON body; null when it is not JSON (the caller answers 400). */
export async function readJson(request: Request): Promise<Record<string, unknown> | null> {
  try {
    const body = await request.json();
    return body !== null && typeof body === "object" ? body as Record<string, unknown> : null;
  } catch {
    return null;
  }
}

/** Curio's decodeExtraData: hex with or without 0x; null if not hex. */
export function hexBytes(value: string): Uint8Array | null {
  const digits = value.startsWith("0x") ? value.slice(2) : value;
  if (digits.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(digits)) return null;
  return Uint8Array.from(digits.match(/../g) ?? [], (pair) => parseInt(pair, 16));
}

export const ZERO_ADDRESS = /^(0x)?0{40}$/i;
