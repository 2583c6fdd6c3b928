/**
 * Resumable uploads (tus, http/tus/tus.ts speaks the protocol): an upload's terms
 * are fixed and its length reserved against the daily cap when it is created
 * (from the intake's ticket, intake.ts); each request appends bytes at the
 * recorded offset; the last byte finishes the checks POST /api/upload's body
 * goes through (body_checks.ts: the cid, a CAR, a manifest) and commits
 * exactly as it does (commit.ts).
 *
 * Where each part of an upload lives, so any instance can continue it:
 *   - its record (terms, offset, the store's description of its bytes, its last
 *     activity) in the database (domain/resumable_upload_records.ts);
 *   - its bytes in the store's partial area (driver.ts: PartialStore);
 *   - its cap reservation in the ledger, lasting (a data directory's ledger is
 *     in memory: `holdReservationsAgain` re-holds them at start);
 *   - the cid check's running hash (and a CAR's parser, with the blocks it
 *     found) in this process's memory, rebuilt from the stored bytes when
 *     missing (carried_checks.ts).
 *
 * An append is recorded only if the offset it started from is still the
 * recorded one, so of two writers one wins. The deal of the last byte and the
 * upload's "finished" mark are one commit (recordUpload), so an upload makes
 * at most one deal, and a crash before that commit loses nothing but the last
 * request (the client sends it again).
 *
 * Uploads expire 24 h after their creation: `sweepExpired` (run by
 * expiry_sweep.ts) removes them, their bytes and their reservation. A finished
 * upload's record stays a day too, for GET /api/tus/{id}.
 */
import { toRfc3339 } from "../kernel/clock.ts";
import type { Clock } from "../kernel/clock.ts";
import { ResumableUploadMovedError } from "../domain/catalog_records.ts";
import type { DealRecord } from "../domain/catalog_records.ts";
import type {
  ResumableUploadRecord,
  ResumableUploadRecords,
} from "../domain/resumable_upload_records.ts";
import type { CapLedger, Reservation } from "../domain/cap_ledger.ts";
import type { Tier } from "../domain/vocabulary.ts";
import { RESUMABLE_EXPIRY_MS, ResumableError } from "./resumable_outcomes.ts";
import type { AppendInput, AppendOutcome } from "./resumable_outcomes.ts";
import type { Logger } from "../kernel/log.ts";
import type { HashWorkerPool } from "../kernel/piece_cid/pool.ts";
import type { PieceCatalog } from "../catalog/catalog.ts";
import type { PartialState, PieceStore } from "../driver/driver.ts";
import type { BodyChecks } from "./body_checks.ts";
import { CarriedChecks, termsOf } from "./carried_checks.ts";
import type { UploadCommits } from "./commit.ts";
import type { BytesTicket } from "./intake.ts";
import { dealOfRecord, recordOfTicket } from "./resumable_record.ts";
import { UploadLocks } from "./upload_locks.ts";
import { OpenUploads } from "./open_uploads.ts";
import { IdleReservations } from "./idle_reservations.ts";
import { removeOrphanPartials } from "./expiry_sweep.ts";

/** How long a request waits for the one before it on the same upload to let go. */
const LOCK_WAIT_MS = 15_000;

export interface ResumableUploadsOptions {
  records: ResumableUploadRecords;
  store: PieceStore;
  /** Where a finished upload's deal is read, and a manifest's pieces are checked. */
  catalog: PieceCatalog;
  /** How the last byte commits, as every upload does. */
  commits: UploadCommits;
  ledger: CapLedger;
  hashPool: HashWorkerPool | null;
  clock: Clock;
  logger: Logger;
  /** Most blocks a CAR upload may hold, by the upload's tier (413 too_many_blocks past it). */
  carMaxBlocks: Readonly<Record<Tier, number>>;
  /** The sponsored daily cap an idle upload's released reservation is taken again under. */
  sponsoredDailyCapBytes: number;
}

export class ResumableUploads {
  readonly #options: ResumableUploadsOptions;
  readonly #locks = new UploadLocks();
  readonly #openUploads = new OpenUploads();
  readonly #idle: IdleReservations;
  readonly #checks: CarriedChecks;

  constructor(options: ResumableUploadsOptions) {
    this.#options = options;
    this.#idle = new IdleReservations({
      ...options,
      locks: this.#locks,
      reservationOf: (upload) => this.#reservationOf(upload),
    });
    this.#checks = new CarriedChecks({
      pool: options.hashPool,
      partials: options.store.partials,
      catalog: options.catalog,
    });
  }

  /**
   * Creates an empty upload from the intake's ticket (a lasting reservation, released if creating
   * fails), with the Upload-Metadata header as sent (HEAD echoes it); open_uploads.ts bounds them.
   */
  async create(ticket: BytesTicket, metadata: string): Promise<ResumableUploadRecord> {
    const { records, store, clock } = this.#options;
    const id = crypto.randomUUID().replaceAll("-", "");
    let done = () => {};
    try {
      done = await this.#openUploads.admit(records, clock, ticket.policy);
      const state = await store.partials.create(id, { length: ticket.size });
      const now = clock.now();
      const record = recordOfTicket(ticket, {
        id,
        metadata,
        staging: JSON.stringify(state),
        createdAt: toRfc3339(now),
        expiresMs: now + RESUMABLE_EXPIRY_MS,
        lastActivityMs: now,
      });
      await records.insert(record).catch(async (error) => {
        await store.partials.remove(id).catch(() => {});
        throw error;
      });
      return record;
    } catch (error) {
      await ticket.release();
      throw error;
    } finally {
      done();
    }
  }

  /** The caller's upload as it stands, once the request before it has let go. */
  async current(id: string, subject: string): Promise<ResumableUploadRecord> {
    return await this.#locked(id, () => this.#find(id, subject));
  }

  /** The caller's upload without waiting for anything (GET of a finished upload's result). */
  async peek(id: string, subject: string): Promise<ResumableUploadRecord> {
    return await this.#find(id, subject);
  }

  /** Appends a request's body; the last byte verifies and commits. */
  async append(id: string, input: AppendInput): Promise<AppendOutcome> {
    return await this.#locked(id, async (signal) => {
      const upload = await this.#find(id, input.subject);
      if (input.offset !== upload.received) {
        throw new ResumableError(
          "offset_mismatch",
          `Upload-Offset is ${input.offset}, but the upload has ${upload.received} bytes`,
          upload.received,
        );
      }
      const lacking = upload.length - upload.received;
      if (input.declaredBytes !== null && input.declaredBytes > lacking) {
        throw new ResumableError(
          "too_long",
          `The body has ${input.declaredBytes} bytes, but the upload lacks only ${lacking}`,
        );
      }
      if (upload.dealId !== null || input.declaredBytes === 0) {
        await input.body.cancel().catch(() => {});
        return upload.dealId !== null
          ? { kind: "finished", upload, deal: await this.dealOf(upload) }
          : { kind: "partial", upload, cut: null };
      }
      const held = await this.#idle.requestStarts(upload);
      return await this.#appendLocked(held, input, AbortSignal.any([input.signal, signal]));
    });
  }

  /** Lets go of idle sponsored uploads' reservations (idle_reservations.ts); how many. */
  async releaseIdleReservations(): Promise<number> {
    return await this.#idle.releaseIdle();
  }

  /** Ends an upload (tus termination): its bytes and reservation go; a finished one's deal stays. */
  async terminate(id: string, subject: string): Promise<void> {
    await this.#locked(id, async () => {
      const upload = await this.#find(id, subject);
      await this.#remove(upload);
    });
  }

  /** Removes uploads past their expiry (up to `limit`); how many went. */
  async sweepExpired(limit = 100): Promise<number> {
    const expired = await this.#options.records.expiredBefore(this.#options.clock.now(), limit);
    let removed = 0;
    for (const upload of expired) {
      const lock = await this.#locks.acquire(upload.id, 0);
      if (lock === null) continue; // in use: not expired after all
      try {
        const current = await this.#options.records.get(upload.id);
        if (current && this.#expired(current)) {
          await this.#remove(current);
          removed++;
        }
      } finally {
        lock.release();
      }
    }
    return removed;
  }

  /** Removes partial bytes no record names (left by a crash), once older than olderThanMs. */
  async sweepOrphans(olderThanMs: number): Promise<number> {
    const { records, store, clock } = this.#options;
    return await removeOrphanPartials(records, store.partials, clock.now() - olderThanMs);
  }

  /** Holds the reservations of the uploads still waiting for bytes again, at start. */
  async holdReservationsAgain(): Promise<number> {
    return await this.#idle.holdAllAgain();
  }

  /** Appends under the lock; records it; the last byte finishes the upload. */
  async #appendLocked(
    upload: ResumableUploadRecord,
    input: AppendInput,
    signal: AbortSignal,
  ): Promise<AppendOutcome> {
    const { store, records } = this.#options;
    const before = partialOf(upload);
    let checks: BodyChecks | null = null;
    try {
      checks = await this.#checks.take(
        termsOf(upload, this.#options.carMaxBlocks),
        before,
        signal,
      );
      const appended = await store.partials.append(before, input.body, {
        expectedBytes: input.declaredBytes ?? upload.length - upload.received,
        onChunk: this.#idle.whileReceiving(upload.id, checks.onChunk),
        signal,
        idleTimeoutMs: input.idleTimeoutMs,
        minRate: input.minRate,
      });
      const after = appended.state;
      if (after.size === upload.length) {
        // What the last append carried over (an S3 tail) is in `after` now.
        await store.partials.release(before, after);
        const finished = await this.#finish(upload, after, checks, input.callerStillValid);
        checks = null;
        return finished;
      }
      if (after.size === before.size) {
        this.#checks.put(upload.id, checks);
        return { kind: "partial", upload, cut: appended.cut };
      }
      // The expiry stays where the creation set it: bytes never keep an upload longer.
      const update = {
        fromBytes: upload.received,
        received: after.size,
        staging: JSON.stringify(after),
        expiresMs: upload.expiresMs,
        lastActivityMs: this.#options.clock.now(),
      };
      if (!await records.advance(upload.id, update)) {
        await store.partials.release(after, before);
        throw await this.#lostRace(upload);
      }
      await store.partials.release(before, after);
      this.#checks.put(upload.id, checks);
      return { kind: "partial", upload: { ...upload, ...update }, cut: appended.cut };
    } catch (error) {
      if (checks) this.#checks.drop(upload.id);
      const carRefusal = checks?.carRefusal();
      if (!carRefusal) throw error;
      // A CAR with a bad block can never finish: nothing of it is kept, as for POST /api/upload.
      await this.#remove(upload);
      throw carRefusal;
    }
  }

  /**
   * Finishes the checks (the cid, a CAR, a manifest read back) and commits the
   * deal; a failed check or commit removes the upload.
   */
  async #finish(
    upload: ResumableUploadRecord,
    state: PartialState,
    checks: BodyChecks,
    callerStillValid: () => Promise<void>,
  ): Promise<AppendOutcome> {
    const { store, clock, commits } = this.#options;
    this.#checks.drop(upload.id);
    const staged = store.partials.staged(state, { sha256: checks.sha256Hex() });
    const reservation = this.#reservationOf(upload);
    try {
      const checked = await checks.finish(
        staged,
        () => store.partials.read(state, { from: 0, to: state.size }),
      );
      // A token revoked (or expired) while the bytes came makes no deal: the upload goes.
      await callerStillValid();
      const deal = await commits.upload({
        ...dealOfRecord(upload, reservation),
        staged,
        contentType: upload.contentType,
        filename: upload.filename,
        cidVerified: checked.verified,
        blocks: checked.blocks,
        finishesResumable: {
          id: upload.id,
          fromBytes: upload.received,
          expiresMs: clock.now() + RESUMABLE_EXPIRY_MS,
          roots: checked.roots,
        },
      }, "resumable");
      const finished = {
        ...upload,
        received: upload.length,
        dealId: deal.id,
        staging: "null",
        roots: checked.roots,
      };
      return { kind: "finished", upload: finished, deal };
    } catch (error) {
      await staged.discard().catch(() => {});
      // Another writer got there first: the upload is theirs to keep as it is.
      if (error instanceof ResumableUploadMovedError) throw await this.#lostRace(upload);
      // Otherwise nothing of it is kept: a finished upload is never half there.
      await this.#remove(upload);
      throw error;
    }
  }

  /** Removes the record first (nobody continues it), then the reservation and the bytes. */
  async #remove(upload: ResumableUploadRecord): Promise<void> {
    const { records, store, logger } = this.#options;
    const removed = await records.delete(upload.id);
    this.#checks.drop(upload.id);
    if (!removed) return;
    const held = upload.dealId === null && !upload.reservationReleased;
    if (held) await this.#reservationOf(upload).release();
    await store.partials.remove(upload.id).catch((error) =>
      // The orphan sweep takes it later.
      logger.warn("cannot remove a resumable upload's bytes", {
        upload: upload.id,
        error: String(error),
      })
    );
  }

  async #find(id: string, subject: string): Promise<ResumableUploadRecord> {
    const upload = /^[0-9a-f]{32}$/.test(id) ? await this.#options.records.get(id) : null;
    if (upload === null || upload.usageSubject !== subject) {
      throw new ResumableError("not_found", "No such upload (of yours): it may have expired");
    }
    if (this.#expired(upload)) {
      await this.#remove(upload);
      throw new ResumableError("not_found", "This upload expired: a day passed since its creation");
    }
    return upload;
  }

  #expired(upload: ResumableUploadRecord): boolean {
    return upload.expiresMs <= this.#options.clock.now();
  }

  /** The 409 for an append another writer recorded first. */
  async #lostRace(upload: ResumableUploadRecord): Promise<ResumableError> {
    const now = await this.#options.records.get(upload.id);
    const offset = now?.received ?? upload.received;
    return new ResumableError(
      "offset_mismatch",
      `Another request appended to this upload first; it has ${offset} bytes`,
      offset,
    );
  }

  /** The deal a finished upload made. */
  async dealOf(upload: ResumableUploadRecord): Promise<DealRecord> {
    const deal = await this.#options.catalog.getDeal(upload.dealId!);
    if (deal === null) throw new ResumableError("not_found", "This upload's deal is gone");
    return deal;
  }

  #reservationOf(upload: ResumableUploadRecord): Reservation {
    return this.#options.ledger.holdAgain({
      id: upload.reservationId,
      subject: upload.usageSubject,
      day: upload.reservationDay,
      bytes: upload.length,
    });
  }

  async #locked<T>(id: string, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const lock = await this.#locks.acquire(id, LOCK_WAIT_MS);
    if (lock === null) {
      throw new ResumableError("locked", "Another request for this upload is still running");
    }
    try {
      return await fn(lock.signal);
    } finally {
      lock.release();
    }
  }
}

/** The store's description of an upload's bytes, as its record keeps it. */
function partialOf(upload: ResumableUploadRecord): PartialState {
  return JSON.parse(upload.staging) as PartialState;
}
