/**
 * How many uploads may be in flight, so slow or stalled clients cannot
 * exhaust the server's memory, nor starve each other. Each upload pins its
 * read buffers (two of up to 1 MiB, sized to the body) plus what the runtime
 * buffers for its connection for as long as it is open; 100 stalled uploads
 * that had each sent 1 MiB took RSS from 61 to 332 MiB before these bounds.
 * All decided before a byte is read:
 *
 * - the memory all uploads pin together (the pool, --upload-memory);
 * - a client's fair share of it. A client is an IP key (an IPv4 address, an
 *   IPv6 /64) and, for a token caller, also its subject. A client that holds
 *   nothing may always start one upload that fits in the pool; a client that
 *   holds some may grow to a quarter of the pool, and never past what the
 *   pool would still have free: with k greedy clients the pool keeps about
 *   1/(k+1) of itself free, so a newcomer's upload fits beside up to ~45 of
 *   them at the defaults (where the quarter alone gives way to four). Past
 *   its share only that client's requests get 503 server_busy;
 * - the uploads one client address has open (past it: 429).
 *
 * A slow client cannot sit on its share either: bodies below --body-min-rate
 * are cut (kernel/streams/read_watchdog.ts) and give back what they reserved.
 */
import { ApiError } from "../kernel/errors.ts";
import { chunkBufferBytes } from "../kernel/streams/chunk_reader.ts";
import { releaseOnce } from "./release_once.ts";

/**
 * What one upload pins besides its read buffers (the runtime's connection and
 * body buffers): 100 stalled uploads that had each sent 1 MiB grew RSS by
 * about 2.75 MiB apiece, of which 2 MiB are the read buffers.
 */
const PER_UPLOAD_OVERHEAD_BYTES = 768 * 1024;
/** Read buffers per upload (chunk N is written while N+1 is read). */
const BUFFERS_PER_UPLOAD = 2;
/** The most of the pool one client may hold. */
const MAX_SHARE = 1 / 4;

export interface UploadAdmissionOptions {
  /** Memory all uploads in flight may pin together. */
  maxPinnedBytes: number;
  /** Uploads in flight per client key. */
  maxPerClient: number;
}

/** Who asks: the request's IP key, and the token subject of a token caller. */
export interface AdmissionClient {
  clientKey: string;
  /** A token's sub; null for a sponsored caller. */
  subject: string | null;
}

export type RefusalReason = "memory" | "share" | "client";

export type Admission =
  | { ok: true; release(): void }
  | { ok: false; reason: RefusalReason };

/** The answer to a body that is not admitted: retried a second later, it often gets in. */
export function notAdmitted(reason: RefusalReason): ApiError {
  const headers = { "retry-after": "1" };
  switch (reason) {
    case "memory":
      return new ApiError(
        "server_busy",
        "Too many uploads in flight on this server; retry shortly",
        {
          headers,
        },
      );
    case "share":
      return new ApiError(
        "server_busy",
        "Your uploads in flight hold your share of this server's upload memory; retry when one " +
          "of them is done",
        { headers },
      );
    case "client":
      return new ApiError(
        "rate_limited",
        "Too many uploads in flight from this address; wait for one to finish",
        { headers },
      );
  }
}

export class UploadAdmission {
  readonly #options: UploadAdmissionOptions;
  readonly #openPerClient = new Map<string, number>();
  /** Pinned bytes per share holder: "ip:<client key>" and "sub:<token subject>". */
  readonly #heldPerHolder = new Map<string, number>();
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

  /** Bytes a client (its IP key) holds in flight. */
  heldBy(clientKey: string): number {
    return this.#heldPerHolder.get(`ip:${clientKey}`) ?? 0;
  }

  /** Admits an upload of expectedBytes from client, or says which bound it would pass. */
  admit(client: AdmissionClient, expectedBytes: number): Admission {
    const open = this.#openPerClient.get(client.clientKey) ?? 0;
    if (open >= this.#options.maxPerClient) return { ok: false, reason: "client" };
    const pinned = UploadAdmission.pinnedBytesOf(expectedBytes);
    const holders = [`ip:${client.clientKey}`];
    if (client.subject !== null) holders.push(`sub:${client.subject}`);
    const refusal = this.#refusalOf(holders, pinned);
    if (refusal !== null) return { ok: false, reason: refusal };
    this.#pinnedBytes += pinned;
    addTo(this.#openPerClient, client.clientKey, 1);
    for (const holder of holders) addTo(this.#heldPerHolder, holder, pinned);
    return {
      ok: true,
      release: releaseOnce(() => {
        this.#pinnedBytes -= pinned;
        addTo(this.#openPerClient, client.clientKey, -1);
        for (const holder of holders) addTo(this.#heldPerHolder, holder, -pinned);
      }),
    };
  }

  #refusalOf(holders: string[], pinned: number): RefusalReason | null {
    // One upload is always let through, however small the pool: the server must make progress.
    if (this.#pinnedBytes === 0) return null;
    const pool = this.#options.maxPinnedBytes;
    const freeAfter = pool - this.#pinnedBytes - pinned;
    if (freeAfter < 0) return "memory";
    for (const holder of holders) {
      const held = this.#heldPerHolder.get(holder) ?? 0;
      // A client's first upload only needs room; after that it grows to its share.
      if (held > 0 && (held + pinned > pool * MAX_SHARE || held + pinned > freeAfter)) {
        return "share";
      }
    }
    return null;
  }
}

/** Adds delta to a counter, forgetting it at zero (the maps stay as small as what is in flight). */
function addTo(counts: Map<string, number>, key: string, delta: number): void {
  const value = (counts.get(key) ?? 0) + delta;
  if (value === 0) counts.delete(key);
  else counts.set(key, value);
}
