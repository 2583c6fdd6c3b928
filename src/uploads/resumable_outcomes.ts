/**
 * What the resumable uploads' domain (resumable.ts) takes and answers: the
 * input of an append, what an append came to, and the failures of its own
 * (the checks' and the commit's are ApiErrors already), which the tus
 * handlers (http/tus/tus.ts) turn into answers.
 */
import { DAY_MS } from "../kernel/clock.ts";
import type { DealRecord } from "../domain/catalog_records.ts";
import type { ResumableUploadRecord } from "../domain/resumable_upload_records.ts";
import type { StoreError } from "../driver/driver.ts";
import type { MinBodyRate } from "../kernel/streams/read_watchdog.ts";

/** How long an upload lives after its last byte (decisions: 24 hours). */
export const RESUMABLE_EXPIRY_MS = DAY_MS;
export type ResumableFailure =
  /** No such upload, it expired, or it is someone else's. */
  | "not_found"
  /** Upload-Offset is not the recorded offset (`offset` says what is). */
  | "offset_mismatch"
  /** The request before it did not let go in time. */
  | "locked"
  /** More bytes than the upload lacks. */
  | "too_long"
  /** The caller holds as many unfinished uploads as its tier allows. */
  | "too_many"
  /** An idle upload's reservation was released, and its bytes no longer fit today's cap. */
  | "over_cap";

export class ResumableError extends Error {
  readonly failure: ResumableFailure;
  /** The recorded offset, for offset_mismatch. */
  readonly offset: number | null;
  constructor(failure: ResumableFailure, message: string, offset: number | null = null) {
    super(message);
    this.name = "ResumableError";
    this.failure = failure;
    this.offset = offset;
  }
}

export interface AppendInput {
  /** The caller's usage subject: only the creator may continue. */
  subject: string;
  /** Upload-Offset. */
  offset: number;
  /** Content-Length, or null for a body of unknown length (up to what the upload lacks). */
  declaredBytes: number | null;
  body: ReadableStream<Uint8Array>;
  signal: AbortSignal;
  idleTimeoutMs: number;
  /** The body's least average rate (--body-min-rate), as for POST /api/upload; null: none. */
  minRate: MinBodyRate | null;
  /** Throws (401) if the credentials were revoked or expired while the body came. */
  callerStillValid(): Promise<void>;
}

export type AppendOutcome =
  | { kind: "partial"; upload: ResumableUploadRecord; cut: StoreError | null }
  | { kind: "finished"; upload: ResumableUploadRecord; deal: DealRecord };
