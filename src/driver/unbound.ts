/**
 * The driver used when no storage backend is bound (no data directory
 * configured, or it could not be prepared at start-up). The server still
 * starts, so /healthz can say why; every piece operation is "offline".
 */
import { StoreError } from "./driver.ts";
import type {
  OpenedPiece,
  PartialState,
  PartialStore,
  PieceStat,
  PieceStore,
  StagedPiece,
  StoreHealth,
} from "./driver.ts";

export class UnboundStore implements PieceStore {
  readonly source = "stage";
  readonly #reason: string;

  constructor(reason: string) {
    this.#reason = reason;
  }

  check(): Promise<StoreHealth> {
    return Promise.resolve({ ok: false, detail: this.#reason });
  }

  stat(): Promise<PieceStat | null> {
    return Promise.reject(this.#offline());
  }

  open(): Promise<OpenedPiece | null> {
    return Promise.reject(this.#offline());
  }

  sha256Of(): Promise<string | null> {
    return Promise.reject(this.#offline());
  }

  async stage(body: ReadableStream<Uint8Array>): Promise<StagedPiece> {
    await body.cancel().catch(() => {});
    throw this.#offline();
  }

  delete(): Promise<boolean> {
    return Promise.reject(this.#offline());
  }

  async *list(): AsyncIterable<string> {}

  cleanup(): Promise<{ removedTemporaryFiles: number }> {
    return Promise.resolve({ removedTemporaryFiles: 0 });
  }

  readonly partials: PartialStore = {
    create: () => Promise.reject(this.#offline()),
    append: async (_state: PartialState, body: ReadableStream<Uint8Array>) => {
      await body.cancel().catch(() => {});
      throw this.#offline();
    },
    read: () => new ReadableStream({ start: (controller) => controller.error(this.#offline()) }),
    staged: () => {
      throw this.#offline();
    },
    release: () => Promise.resolve(),
    remove: () => Promise.reject(this.#offline()),
    list: async function* () {},
  };

  #offline(): StoreError {
    return new StoreError("offline", `No storage backend bound: ${this.#reason}`);
  }
}
