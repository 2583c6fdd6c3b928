/**
 * The intake of every way of storing bytes (POST /api/upload, the tus
 * creation, POST /api/deals): one sequence, so each is refused and charged
 * exactly as the others. In the order decisions.md fixes: the cid's format,
 * the caller (token validity, revocation, put scope), what the request says
 * of the bytes (length, type, name), the per-file cap, the reservation of the
 * length against the daily cap (decided before a byte is read, so parallel
 * uploads cannot jointly pass it), the admission of the body (the upload
 * memory and each client's share of it), and the deal's owner.
 *
 * What comes out is a ticket: everything the commit needs, and what it holds
 * (the reservation, the admission) until it is handed to exactly one of
 * UploadPipeline.storeBody, UploadPipeline.makeDeal (pipeline.ts) or
 * ResumableUploads.create (resumable.ts), which let go of it.
 *
 * The endpoints (http/upload/, http/tus/) are adapters: they read the HTTP
 * (headers, query, body framing) and give the intake what they read.
 */
import type { Caller } from "../auth/caller.ts";
import { requireScope } from "../auth/scopes.ts";
import type { AcceptDealInput, PieceCatalog } from "../catalog/catalog.ts";
import type { Config } from "../config/mod.ts";
import { normalizeCid } from "../kernel/cid_format.ts";
import { ApiError } from "../kernel/errors.ts";
import type { CapLedger, CapStatus, Reservation } from "../domain/cap_ledger.ts";
import type { UploadPolicies, UploadPolicy } from "../limits/tiers.ts";
import { notAdmitted } from "../limits/upload_admission.ts";
import type { UploadAdmission } from "../limits/upload_admission.ts";
import { notStored } from "./commit.ts";
import { checkManifestSize } from "./manifest_check.ts";
import {
  checkFileCap,
  checkLengthOfCid,
  dealOwnerOf,
  reserveUpload,
  uploadCidOf,
} from "./terms.ts";
import type { UploadCid } from "./terms.ts";

/** The request's log line: the intake adds the tier once known and the bytes once admitted. */
export type LogFields = Record<string, string | number | boolean>;

export interface IntakeDeps {
  config: Config;
  policies: UploadPolicies;
  ledger: CapLedger;
  /** Bounds the uploads in flight: server-wide (memory), each client's share, per address. */
  admission: UploadAdmission;
  /** Where a deal without bytes finds the piece it is on. */
  catalog: PieceCatalog;
}

/** What the request says of the bytes it brings. */
export interface BytesDescription {
  length: number;
  contentType: string;
  filename: string | null;
}

/** A request that brings bytes, as its adapter read it. */
export interface BytesRequest {
  /** The cid as given (null: it was not), checked first; `cidWhere` names it in the message. */
  cid: string | null;
  cidWhere: string;
  /** Who asks (authenticated once, when first asked). */
  caller(): Promise<Caller>;
  /** What the request says of its bytes, read once the caller may put (its errors come after). */
  describe(): BytesDescription;
  /**
   * The bytes come over many requests (tus): the reservation lasts until the
   * upload finishes, ends or expires, a manifest over its size limit is
   * refused now, and each request's body is admitted as it comes. Otherwise
   * they come in this request: reserved for it, and admitted now.
   */
  resumable: boolean;
  /** Key of the client's per-address bounds. */
  clientKey: string;
  logFields: LogFields;
}

/** A request for a deal on bytes stored already, as its adapter read it. */
export interface StoredPieceRequest {
  /** Who asks (authenticated once, when first asked). */
  caller(): Promise<Caller>;
  /** The cid as given, read once the caller may put (anything but a string is no cid). */
  cid(): Promise<unknown>;
  logFields: LogFields;
}

/** What the intake let through: the deal to make, and what it holds until let go of. */
export interface UploadTicket {
  /** The cid as given (answered back) and canonical (stored). */
  cid: { given: string; cid: string };
  /** The bytes charged: the body's length, or the stored piece's size. */
  size: number;
  policy: UploadPolicy;
  /** The length reserved against the daily cap: the commit settles it. */
  reservation: Reservation;
  /** The deal the commit records, with the reservation (catalog.acceptDeal's input). */
  deal: AcceptDealInput;
  /** The caller's daily cap with this reservation counted (a tus creation answers it). */
  capReserved: CapStatus;
  logFields: LogFields;
  /** Lets go of the admission and the reservation (a no-op for one a commit settled). */
  release(): Promise<void>;
}

/** A ticket for bytes still to come. */
export interface BytesTicket extends UploadTicket {
  cid: UploadCid;
  contentType: string;
  filename: string | null;
}

export class UploadIntake {
  readonly #deps: IntakeDeps;

  constructor(deps: IntakeDeps) {
    this.#deps = deps;
  }

  /** POST /api/upload and the tus creation: the cid first, then the caller, then the bytes. */
  async forBytes(request: BytesRequest): Promise<BytesTicket> {
    const cid = uploadCidOf(request.cid, this.#deps.config, request.cidWhere);
    const caller = mayPut(await request.caller());
    const body = request.describe();
    checkLengthOfCid(cid.parsed, body.length);
    // A manifest over its size limit is refused now, as an upload of it is at its first byte.
    if (request.resumable) checkManifestSize(body.contentType, body.length);
    const charged = await this.#charge(caller, cid, body.length, {
      lasting: request.resumable,
      logFields: request.logFields,
    });
    const ticket = { ...charged, cid, contentType: body.contentType, filename: body.filename };
    if (request.resumable) return ticket;
    request.logFields.bytesIn = body.length;
    const releaseAdmission = await this.#admitOrRelease(charged, request.clientKey, caller);
    return {
      ...ticket,
      release: async () => {
        releaseAdmission();
        await charged.release();
      },
    };
  }

  /** POST /api/deals: the caller first (the cid is in the body), then the piece stored. */
  async forStoredPiece(request: StoredPieceRequest): Promise<UploadTicket> {
    const caller = mayPut(await request.caller());
    const given = await request.cid();
    const cid = typeof given === "string" ? normalizeCid(given) : null;
    if (cid === null) {
      throw new ApiError("invalid_cid", "cid (8 to 80 letters or digits) is required");
    }
    const piece = await this.#deps.catalog.getPiece(cid);
    if (piece === null) throw notStored(cid);
    return await this.#charge(caller, { given: given as string, cid }, piece.size, {
      lasting: false,
      logFields: request.logFields,
    });
  }

  /**
   * Admits a request's body of (about) `expectedBytes` as any upload body is:
   * 503 server_busy or 429 rate_limited when it would pass a bound. Returns
   * what lets go of it.
   */
  admitBody(client: { clientKey: string; caller: Caller }, expectedBytes: number): () => void {
    const admitted = this.#deps.admission.admit({
      clientKey: client.clientKey,
      subject: client.caller.kind === "token" ? client.caller.sub : null,
    }, expectedBytes);
    if (!admitted.ok) throw notAdmitted(admitted.reason);
    return () => admitted.release();
  }

  /** The tier's per-file cap, then the reservation: a ticket holding it. */
  async #charge(
    caller: Caller,
    cid: UploadTicket["cid"],
    size: number,
    options: { lasting: boolean; logFields: LogFields },
  ): Promise<UploadTicket> {
    const policy = await this.#deps.policies.policyFor(caller);
    // Known from here on, so refusals at the caps are logged (and counted) with it.
    options.logFields.tier = policy.tier;
    checkFileCap(policy, size);
    const { reservation, status } = await reserveUpload(
      this.#deps,
      policy,
      size,
      options.lasting ? { lasting: true } : {},
    );
    return {
      cid,
      size,
      policy,
      reservation,
      deal: {
        cid: cid.cid,
        tier: policy.tier,
        owner: dealOwnerOf(caller),
        termDays: policy.termDays,
        usageSubject: policy.usageSubject,
        usageDay: reservation.day,
        reservation,
      },
      capReserved: status,
      logFields: options.logFields,
      release: () => reservation.release(),
    };
  }

  /** Admits the ticket's body, or releases its reservation and throws the refusal. */
  async #admitOrRelease(
    ticket: UploadTicket,
    clientKey: string,
    caller: Caller,
  ): Promise<() => void> {
    try {
      return this.admitBody({ clientKey, caller }, ticket.size);
    } catch (error) {
      await ticket.release();
      throw error;
    }
  }
}

/** A caller that may store bytes: sponsored, or a token with the put scope (403 without). */
export function mayPut(caller: Caller): Caller {
  if (caller.kind === "token") requireScope(caller, "put");
  return caller;
}
