/**
 * A resumable upload's record (domain/resumable_upload_records.ts) holds
 * the intake's ticket across requests and restarts: it is made from the
 * ticket when the upload is created, and gives back the deal its last byte
 * commits. Both directions here, so the fields that go in are the ones that
 * come out.
 */
import type { AcceptDealInput } from "../catalog/catalog.ts";
import type { ResumableUploadRecord } from "../domain/resumable_upload_records.ts";
import type { SettledReservation } from "../domain/catalog_records.ts";
import type { BytesTicket } from "./intake.ts";

/** What a new upload's record is made of besides the ticket. */
export interface NewUploadFields {
  id: string;
  /** The Upload-Metadata header as sent (HEAD echoes it). */
  metadata: string;
  /** The store's description of its (no) bytes yet (PartialStore.create's state, as JSON). */
  staging: string;
  createdAt: string;
  expiresMs: number;
  /** Its creation's time, in ms: its first activity. */
  lastActivityMs: number;
}

/** The record of an upload created from the intake's ticket: no bytes, no deal yet. */
export function recordOfTicket(
  ticket: BytesTicket,
  fields: NewUploadFields,
): ResumableUploadRecord {
  const { cid, tier, usageSubject, owner, termDays } = ticket.deal;
  return {
    id: fields.id,
    cid,
    length: ticket.size,
    received: 0,
    contentType: ticket.contentType,
    filename: ticket.filename,
    metadata: fields.metadata,
    tier,
    usageSubject,
    ownerSub: owner?.sub ?? null,
    ownerName: owner?.name ?? null,
    termDays,
    reservationId: ticket.reservation.id,
    reservationDay: ticket.reservation.day,
    staging: fields.staging,
    createdAt: fields.createdAt,
    expiresMs: fields.expiresMs,
    dealId: null,
    roots: null,
    lastActivityMs: fields.lastActivityMs,
    reservationReleased: false,
  };
}

/** The deal an upload's last byte commits, settling its reservation (held again). */
export function dealOfRecord(
  upload: ResumableUploadRecord,
  reservation: SettledReservation,
): AcceptDealInput {
  return {
    cid: upload.cid,
    tier: upload.tier,
    owner: upload.ownerSub === null
      ? null
      : { sub: upload.ownerSub, name: upload.ownerName ?? upload.ownerSub },
    termDays: upload.termDays,
    usageSubject: upload.usageSubject,
    usageDay: upload.reservationDay,
    reservation,
  };
}
