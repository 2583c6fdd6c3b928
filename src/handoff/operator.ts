/**
 * What the operator asks of the hand-off (`main.ts handoff status|retry`,
 * src/commands/handoff_command.ts), read from and written to the records
 * alone, so it works beside running servers or with none: where pieces
 * stand, which failed and why, and sending failed pieces back to the queue
 * (a failed piece is retried only when the operator asks).
 */
import type { HandoffPiece, HandoffRecords, HandoffState } from "../domain/handoff_records.ts";
import { toRfc3339 } from "../kernel/clock.ts";

export interface HandoffStatusReport {
  pieces: Record<string, number>;
  bytes: Record<string, number>;
  oldestQueuedAt: string | null;
  /** The failed pieces (up to `limit`), with what is known of why. */
  failed: { cid: string; pieceCid: string | null; error: string | null; at: string }[];
}

export async function handoffStatus(
  records: HandoffRecords,
  limit = 100,
): Promise<HandoffStatusReport> {
  const { byState, oldestQueuedAt } = await records.counts();
  const failed = await records.inState("failed", "", limit);
  return {
    pieces: Object.fromEntries(byState.map((c) => [c.state, c.pieces])),
    bytes: Object.fromEntries(byState.map((c) => [c.state, c.bytes])),
    oldestQueuedAt: oldestQueuedAt === null ? null : toRfc3339(oldestQueuedAt),
    failed: failed.map((p) => ({
      cid: p.cid,
      pieceCid: p.pieceCidV2,
      error: p.error,
      at: toRfc3339(p.updatedAt),
    })),
  };
}

/** Sends failed pieces (these cids, or every failed one) back to the queue; how many went. */
export async function retryHandoffs(
  records: HandoffRecords,
  which: readonly string[] | "failed",
  now: number,
): Promise<number> {
  const cids = which === "failed" ? await allInState(records, "failed") : which;
  return await records.move(cids, {
    from: ["failed"],
    to: "queued",
    at: now,
    callId: null,
    error: null,
  });
}

async function allInState(records: HandoffRecords, state: HandoffState): Promise<string[]> {
  const cids: string[] = [];
  for (let after = "";;) {
    const page: HandoffPiece[] = await records.inState(state, after, 1000);
    cids.push(...page.map((p) => p.cid));
    if (page.length < 1000) return cids;
    after = page[page.length - 1].cid;
  }
}

/** The status as an operator reads it in a terminal. */
export function statusText(report: HandoffStatusReport): string {
  const lines = ["state       pieces  bytes"];
  for (const [state, pieces] of Object.entries(report.pieces)) {
    lines.push(`${state.padEnd(11)} ${String(pieces).padStart(6)}  ${report.bytes[state]}`);
  }
  lines.push(`oldest queued: ${report.oldestQueuedAt ?? "none"}`);
  if (report.failed.length > 0) {
    lines.push("", "failed (main.ts handoff retry --failed sends them again):");
    for (const f of report.failed) lines.push(`  ${f.cid}  ${f.at}  ${f.error ?? ""}`);
  }
  return lines.join("\n");
}
