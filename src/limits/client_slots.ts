/**
 * A few slots per client address for work that costs the server more than a
 * request usually does (a gateway walk of a DAG): a client holds at most
 * `perClient` at once, and a slot is given back once, however often its
 * release is called. Keyed by the client key of the per-IP caps (IPv6: /64).
 */
import { releaseOnce } from "./release_once.ts";

export class ClientSlots {
  readonly #perClient: number;
  readonly #held = new Map<string, number>();

  constructor(perClient: number) {
    this.#perClient = perClient;
  }

  /** A slot's release, or null when the client holds all of its slots. */
  take(clientKey: string): (() => void) | null {
    const held = this.#held.get(clientKey) ?? 0;
    if (held >= this.#perClient) return null;
    this.#held.set(clientKey, held + 1);
    return releaseOnce(() => {
      const now = (this.#held.get(clientKey) ?? 1) - 1;
      if (now === 0) this.#held.delete(clientKey);
      else this.#held.set(clientKey, now);
    });
  }

  /** Slots held now, by every client together. */
  get held(): number {
    let total = 0;
    for (const n of this.#held.values()) total += n;
    return total;
  }
}
