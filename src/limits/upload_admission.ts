/**
 * How many uploads may be in flight, so slow or stalled clients cannot
 * exhaust the server's memory. Each upload pins its read buffers (two of up
 * to 1 MiB, sized to the body) plus what the runtime buffers for its
 * connection for as long as it is open; 100 stalled uploads that had each
 * sent 1 MiB took RSS from 61 to 332 MiB before these bounds (113 MiB with
 * the defaults: 16 in flight from that one address). Two bounds, both decided before a byte is read:
 * the memory all uploads pin together (past it: 503 server_busy with
 * Retry-After), and the uploads one client address has open (past it: 429).
 */
import { ApiError } from "../errors.ts";
import { chunkBufferBytes } from "../streams/chunk_reader.ts";

/**
 * What one upload pins besides its read buffers (the runtime's connection and
 * body buffers): 100 stalled uploads that had each sent 1 MiB grew RSS by
 * about 2.75 MiB apiece, of which 2 MiB are the read buffers.
 */
const PER_UPLOAD_OVERHEAD_BYTES = 768 * 1024;
/** Read buffers per upload (chunk N is written while N+1 is read). */
const BUFFERS_PER_UPLOAD = 2;

export interface UploadAdmissionOptions {
  /** Memory all uploads in flight may pin together. */
  maxPinnedBytes: number;
  /** Uploads in flight per client key. */
  maxPerClient: number;
}

export type Admission =
  | { ok: true; release(): void }
  | { ok: false; reason: "memory" | "client" };

/** The answer to a body that is not admitted: retried a second later, it often gets in. */
export function notAdmitted(reason: "memory" | "client"): ApiError {
  const headers = { "retry-after": "1" };
  return reason === "memory"
    ? new ApiError("server_busy", "Too many uploads in flight on this server; retry shortly", {
      headers,
    })
    : new ApiError(
      "rate_limited",
      "Too many uploads in flight from this address; wait for one to finish",
      { headers },
    );
}

export class UploadAdmission {
  readonly #options: UploadAdmissionOptions;
  readonly #perClient = new Map<string, number>();
  #pinnedBytes = 0;

  constructor(options: UploadAdmissionOptions) {
    this.#options = options;
  }

  /** Bytes an upload of this length pins while in flight. */
  static pinnedBytesOf(expectedBytes: number): number {
    return BUFFERS_PER_UPLOAD * chunkBufferBytes(expectedBytes) + PER_UPLOAD_OVERHEAD_BYTES;
  }

  get pinnedBytes(): number {
    return this.#pinnedBytes;
  }

  /** Admits an upload of expectedBytes from clientKey, or says which bound it would pass. */
  admit(clientKey: string, expectedBytes: number): Admission {
    const open = this.#perClient.get(clientKey) ?? 0;
    if (open >= this.#options.maxPerClient) return { ok: false, reason: "client" };
    const pinned = UploadAdmission.pinnedBytesOf(expectedBytes);
    // One upload is always let through, however small the bound: the server must make progress.
    if (this.#pinnedBytes > 0 && this.#pinnedBytes + pinned > this.#options.maxPinnedBytes) {
      return { ok: false, reason: "memory" };
    }
    this.#pinnedBytes += pinned;
    this.#perClient.set(clientKey, open + 1);
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        this.#pinnedBytes -= pinned;
        const left = (this.#perClient.get(clientKey) ?? 1) - 1;
        if (left === 0) this.#perClient.delete(clientKey);
        else this.#perClient.set(clientKey, left);
      },
    };
  }
}
