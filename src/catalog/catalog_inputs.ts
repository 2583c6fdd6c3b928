/**
 * What the piece catalog (catalog.ts) is asked to accept, and the conflict it
 * refuses: an upload's bytes with their terms, a deal on bytes stored already,
 * and what such a deal found. Apart so the catalog's module is its work.
 */
import type {
  BlockLocations,
  DealRecord,
  RecordUploadInput,
  SettledReservation,
} from "../domain/catalog_records.ts";
import type { Tier } from "../domain/vocabulary.ts";
import type { StagedPiece } from "../driver/driver.ts";

export class CidConflictError extends Error {
  constructor(cid: string) {
    super(`Cannot store ${cid}: different bytes are already stored under it`);
    this.name = "CidConflictError";
  }
}

export interface AcceptUploadInput {
  cid: string;
  staged: StagedPiece;
  contentType: string;
  filename: string | null;
  tier: Tier;
  /** The uploader's user id and the name shown as its owner (e-mail or EIP-55 address). */
  owner: { sub: string; name: string } | null;
  /** The bytes were checked against the cid on the way in (a verifiable cid); default false. */
  cidVerified?: boolean;
  termDays: number;
  /** The counter this upload is charged to, e.g. "ip:v4:1.2.3.4" or "user:<sub>". */
  usageSubject: string;
  usageDay: string;
  /** The cap reservation the deal's commit settles (domain/catalog_records.ts: SettledReservation). */
  reservation?: SettledReservation | null;
  /** The blocks of a CAR upload, indexed with the deal (ipfs/car_upload.ts). */
  blocks?: BlockLocations | null;
  /** The resumable upload this finishes, marked finished in the deal's commit. */
  finishesResumable?: RecordUploadInput["finishesResumable"];
}

/** A deal on bytes already stored: the upload's terms without the bytes. */
export type AcceptDealInput = Omit<
  AcceptUploadInput,
  "staged" | "contentType" | "filename" | "cidVerified" | "finishesResumable" | "blocks"
>;

/** What a deal without bytes found: the deal, or why there is none. */
export type AcceptDealOutcome =
  | { kind: "deal"; deal: DealRecord }
  | { kind: "not_stored" }
  | { kind: "corrupt" };
