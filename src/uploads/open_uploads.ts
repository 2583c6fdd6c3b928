/**
 * How many unfinished resumable uploads one client may hold (decisions:
 * "Holding up, second pass"): --sponsored-tus-max-open per address,
 * --tus-max-open per token user. A creation past it is 429 too_many_uploads,
 * nothing created or reserved. Before, 3,000 anonymous creations of one byte
 * took 6.5 s, each a row and a file for a day. Creations of one subject are
 * counted one at a time in this process, so two cannot both pass the count.
 */
import type { ResumableUploadRecords } from "../domain/resumable_upload_records.ts";
import type { Clock } from "../kernel/clock.ts";
import { ResumableError } from "./resumable_outcomes.ts";

export class OpenUploads {
  readonly #turns = new Turns();

  /** Waits for the subject's turn and counts; its release (call it once created, or not). */
  async admit(
    records: ResumableUploadRecords,
    clock: Clock,
    policy: { usageSubject: string; tusMaxOpen: number },
  ): Promise<() => void> {
    const turn = this.#turns.take(policy.usageSubject);
    try {
      await turn.ready;
      const open = await records.countOpen(policy.usageSubject, clock.now());
      if (open >= policy.tusMaxOpen) {
        throw new ResumableError(
          "too_many",
          `${open} unfinished uploads of yours are open, as many as your tier allows: finish ` +
            "or end one (DELETE) first, or wait for one to expire",
        );
      }
      return turn.done;
    } catch (error) {
      turn.done();
      throw error;
    }
  }
}

/** Work keyed by a subject, one at a time per key, in the order asked (a promise chain per key). */
export class Turns {
  readonly #tails = new Map<string, Promise<void>>();

  take(key: string): { ready: Promise<void>; done(): void } {
    const before = this.#tails.get(key) ?? Promise.resolve();
    const { promise: finished, resolve } = Promise.withResolvers<void>();
    const tail = before.then(() => finished);
    this.#tails.set(key, tail);
    return {
      ready: before,
      done: () => {
        resolve();
        if (this.#tails.get(key) === tail) this.#tails.delete(key);
      },
    };
  }
}
