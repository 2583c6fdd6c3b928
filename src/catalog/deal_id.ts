/**
 * Synthetic deal ids for the pre-mainnet era: "stage-" + a 26-character,
 * time-ordered id (48-bit milliseconds + 80 random bits, Crockford base32,
 * like a ULID). The prefix keeps them apart from on-chain ids, which are bare
 * numbers; the time order lets listings sort and paginate by id.
 */
import type { Clock } from "../kernel/clock.ts";

export const DEAL_ID_PREFIX = "stage-";
const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";

export class DealIdGenerator {
  readonly #clock: Clock;
  #lastMs = -1;
  #lastRandom = new Uint8Array(10);

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Returns a new id, strictly greater than every id this generator returned before. */
  next(): string {
    let ms = this.#clock.now();
    if (ms <= this.#lastMs) {
      // Same millisecond (or a clock step back): keep order by incrementing the random part.
      ms = this.#lastMs;
      incrementBytes(this.#lastRandom);
    } else {
      this.#lastMs = ms;
      crypto.getRandomValues(this.#lastRandom);
      this.#lastRandom[0] &= 0x7f; // headroom so increments never overflow in practice
    }
    return DEAL_ID_PREFIX + encodeTime(ms) + encodeRandom(this.#lastRandom);
  }
}

function encodeTime(ms: number): string {
  let out = "";
  let value = ms;
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[value % 32] + out;
    value = Math.floor(value / 32);
  }
  return out;
}

function encodeRandom(bytes: Uint8Array): string {
  let bits = 0n;
  for (const b of bytes) bits = (bits << 8n) | BigInt(b);
  let out = "";
  for (let i = 0; i < 16; i++) {
    out = ALPHABET[Number(bits & 31n)] + out;
    bits >>= 5n;
  }
  return out;
}

function incrementBytes(bytes: Uint8Array): void {
  for (let i = bytes.length - 1; i >= 0; i--) {
    if (bytes[i] < 255) {
      bytes[i]++;
      return;
    }
    bytes[i] = 0;
  }
}
