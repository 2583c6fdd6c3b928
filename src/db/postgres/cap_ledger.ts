/**
 * Daily-cap reservations in PostgreSQL, so uploads spread over N instances
 * never jointly pass a cap. Reserving is one conditional UPDATE of the
 * subject's usage row:
 *
 *   SET reserved_bytes = reserved_bytes + n
 *   WHERE bytes + reserved_bytes + n <= cap
 *
 * The row lock makes concurrent reservations take turns, and under READ
 * COMMITTED a waiting UPDATE re-checks its WHERE against the row the winner
 * wrote, so two instances can never both take the last free bytes.
 *
 * Each reservation is also a row owned by its instance. Releasing deletes
 * that row and subtracts its bytes in one transaction, so a release counts
 * once however often it is called. A successful upload's row goes in the
 * deal's own transaction instead (catalog_records.ts: recordUpload), so its
 * bytes move from reserved to used in one step. An instance that dies (SIGKILL, lost host)
 * cannot release: its heartbeat stops and a live instance releases its rows
 * (instances.ts). A release that fails because the database is briefly away
 * is retried by this instance's heartbeat. A lasting reservation (a resumable
 * upload's) has no instance: its upload's finish, end or expiry releases it.
 */
import type { Clock } from "../../kernel/clock.ts";
import { utcDay } from "../../kernel/clock.ts";
import { capStatusOf } from "../../domain/cap_ledger.ts";
import type {
  CapLedger,
  CapStatus,
  HeldReservation,
  Reservation,
  ReserveOptions,
  ReserveResult,
} from "../../domain/cap_ledger.ts";
import type { Sql } from "./connection.ts";

export interface PostgresCapLedgerOptions {
  sql: Sql;
  clock: Clock;
  /** This process's row in `instances`: its reservations go when it is seen dead. */
  instanceId: string;
}

export class PostgresCapLedger implements CapLedger {
  readonly #options: PostgresCapLedgerOptions;
  /** Releases that failed (database away), retried by retryReleases. */
  readonly #unreleased = new Set<string>();

  constructor(options: PostgresCapLedgerOptions) {
    this.#options = options;
  }

  async status(subject: string, capBytes: number): Promise<CapStatus> {
    const now = this.#options.clock.now();
    const [row] = await this.#options.sql`SELECT bytes, reserved_bytes FROM usage_daily
      WHERE subject = ${subject} AND day = ${utcDay(now)}`;
    return capStatusOf({
      now,
      capBytes,
      usedBytes: Number(row?.bytes ?? 0),
      reservedBytes: Number(row?.reserved_bytes ?? 0),
    });
  }

  async reserve(
    subject: string,
    bytes: number,
    capBytes: number,
    options: ReserveOptions = {},
  ): Promise<ReserveResult> {
    const { sql, clock } = this.#options;
    // A lasting reservation (a resumable upload's) is no instance's: its upload releases it.
    const instanceId = options.lasting ? null : this.#options.instanceId;
    const now = clock.now();
    const day = utcDay(now);
    const id = crypto.randomUUID();
    const counters = await sql.begin(async (tx) => {
      await tx`INSERT INTO usage_daily (subject, day) VALUES (${subject}, ${day})
        ON CONFLICT (subject, day) DO NOTHING`;
      const [taken] = await tx`UPDATE usage_daily SET reserved_bytes = reserved_bytes + ${bytes}
        WHERE subject = ${subject} AND day = ${day}
          AND bytes + reserved_bytes + ${bytes} <= ${capBytes}
        RETURNING bytes, reserved_bytes`;
      if (taken) {
        await tx`INSERT INTO cap_reservations (id, subject, day, bytes, instance_id)
          VALUES (${id}, ${subject}, ${day}, ${bytes}, ${instanceId})`;
        return { ok: true, used: Number(taken.bytes), reserved: Number(taken.reserved_bytes) };
      }
      const [current] = await tx`SELECT bytes, reserved_bytes FROM usage_daily
        WHERE subject = ${subject} AND day = ${day}`;
      return { ok: false, used: Number(current.bytes), reserved: Number(current.reserved_bytes) };
    });
    const status = capStatusOf({
      now,
      capBytes,
      usedBytes: counters.used,
      reservedBytes: counters.reserved,
    });
    if (!counters.ok) return { ok: false, status };
    return { ok: true, reservation: this.#handleOn({ id, subject, day, bytes }), status };
  }

  holdAgain(held: HeldReservation): Reservation {
    return this.#handleOn(held);
  }

  /** A handle on a reservation's row: released once, however often it is asked to be. */
  #handleOn(held: HeldReservation): Reservation {
    let released: Promise<void> | null = null;
    return {
      ...held,
      release: () => released ??= this.#release(held.id),
      // recordUpload deleted the row in the deal's transaction.
      markSettled: () => void (released ??= Promise.resolve()),
    };
  }

  async reservedTotal(): Promise<number> {
    const [row] = await this.#options.sql`SELECT COALESCE(SUM(bytes), 0)::int8 AS total
      FROM cap_reservations`;
    return Number(row.total);
  }

  /** Tries again the releases that failed; called from the heartbeat. */
  async retryReleases(): Promise<void> {
    for (const id of [...this.#unreleased]) await this.#release(id);
  }

  async #release(id: string): Promise<void> {
    try {
      await this.#options.sql.begin(async (tx) => {
        const [gone] = await tx`DELETE FROM cap_reservations WHERE id = ${id}
          RETURNING subject, day, bytes`;
        if (gone) {
          await tx`UPDATE usage_daily SET reserved_bytes = reserved_bytes - ${gone.bytes}
            WHERE subject = ${gone.subject} AND day = ${gone.day}`;
        }
      });
      this.#unreleased.delete(id);
    } catch {
      // Never rejects: the upload's answer does not depend on it. Retried by the heartbeat.
      this.#unreleased.add(id);
    }
  }
}
