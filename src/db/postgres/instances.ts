/**
 * Instance heartbeats: every instance has a row it touches every few
 * seconds. Each beat also sweeps: instances not heard from for `deadAfterMs`
 * are removed, and the cap reservations they held are released, so bytes
 * reserved by an instance that was SIGKILLed mid-upload come back within
 * about deadAfterMs + heartbeatMs. A live instance whose row was swept (it
 * could not reach the database for that long) puts its row back.
 */
import type { Logger } from "../../kernel/log.ts";
import type { Sql } from "./connection.ts";

export interface InstanceHeartbeatOptions {
  sql: Sql;
  instanceId: string;
  heartbeatMs: number;
  deadAfterMs: number;
  logger: Logger;
  /** Runs after each beat (the cap ledger retries releases that failed). */
  onBeat?: () => Promise<void>;
}

export class InstanceHeartbeat {
  readonly #options: InstanceHeartbeatOptions;
  #timer: ReturnType<typeof setInterval> | null = null;
  #beating: Promise<void> | null = null;

  constructor(options: InstanceHeartbeatOptions) {
    this.#options = options;
  }

  /** Registers this instance and starts beating. */
  async start(): Promise<void> {
    await this.beat();
    this.#timer = setInterval(() => {
      this.#beating ??= this.beat()
        .catch((error) =>
          this.#options.logger.warn("database heartbeat failed", { error: String(error) })
        )
        .finally(() => this.#beating = null);
    }, this.#options.heartbeatMs);
    Deno.unrefTimer(this.#timer);
  }

  /** One beat: touch (or put back) this instance's row, then sweep the dead. */
  async beat(): Promise<void> {
    const { sql, instanceId } = this.#options;
    await sql`INSERT INTO instances (id) VALUES (${instanceId})
      ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()`;
    const released = await sweepDeadInstances(sql, this.#options.deadAfterMs);
    if (released.instances > 0) {
      this.#options.logger.warn("released the cap reservations of instances gone silent", {
        ...released,
      });
    }
    await this.#options.onBeat?.();
  }

  /** Stops beating and removes this instance with its reservations (a clean stop). */
  async stop(): Promise<void> {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    await this.#beating;
    const { sql, instanceId } = this.#options;
    await sql`DELETE FROM instances WHERE id = ${instanceId}`.catch(() => {});
    await releaseOrphanReservations(sql).catch(() => {});
  }
}

/** Removes instances silent for deadAfterMs and releases what they had reserved. */
export async function sweepDeadInstances(
  sql: Sql,
  deadAfterMs: number,
): Promise<{ instances: number; reservations: number; bytes: number }> {
  const dead = await sql`DELETE FROM instances
    WHERE heartbeat_at < now() - make_interval(secs => ${deadAfterMs / 1000})`;
  if (dead.count === 0) return { instances: 0, reservations: 0, bytes: 0 };
  return { instances: dead.count, ...await releaseOrphanReservations(sql) };
}

/**
 * Releases reservations whose instance has no row any more, and lasting ones
 * (no instance) whose resumable upload is gone for an hour (a crash between
 * its removal and the release), in one statement.
 */
async function releaseOrphanReservations(
  sql: Sql,
): Promise<{ reservations: number; bytes: number }> {
  const [row] = await sql`WITH gone AS (
      DELETE FROM cap_reservations r
      WHERE (r.instance_id IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM instances i WHERE i.id = r.instance_id))
        OR (r.instance_id IS NULL AND r.created_at < now() - interval '1 hour'
          AND NOT EXISTS (SELECT 1 FROM resumable_uploads u WHERE u.reservation_id = r.id))
      RETURNING subject, day, bytes
    ), sums AS (
      SELECT subject, day, SUM(bytes)::int8 AS bytes, COUNT(*)::int8 AS n
      FROM gone GROUP BY subject, day
    ), released AS (
      UPDATE usage_daily u SET reserved_bytes = u.reserved_bytes - s.bytes
      FROM sums s WHERE u.subject = s.subject AND u.day = s.day
      RETURNING s.bytes, s.n
    )
    SELECT COALESCE(SUM(n), 0)::int8 AS reservations, COALESCE(SUM(bytes), 0)::int8 AS bytes
    FROM released`;
  return { reservations: Number(row.reservations), bytes: Number(row.bytes) };
}
