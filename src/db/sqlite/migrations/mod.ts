/**
 * The numbered migrations, oldest first. A migration is never edited once it
 * has shipped; a change to the schema is a new file with the next number.
 * Tables PostgreSQL creates alike come from src/db/shared_tables.ts; every
 * migration's text is pinned by tests/db/migration_text_test.ts.
 */
import { sql as initial } from "./0001_initial.ts";
import { sql as tokens } from "./0002_tokens.ts";
import { sql as deferredSha256 } from "./0003_deferred_sha256.ts";
import { sql as signupCodes } from "./0004_signup_codes.ts";
import { sql as wallet } from "./0005_wallet.ts";
import { sql as corruptPieces } from "./0006_corrupt_pieces.ts";
import { sql as corruptMarkOrder } from "./0007_corrupt_mark_order.ts";
import { sql as signupCodesPerClient } from "./0008_signup_codes_per_client.ts";
import { sql as blocks } from "./0009_blocks.ts";
import { sql as lifecycle } from "./0010_lifecycle.ts";
import { sql as resumableUploads } from "./0011_resumable_uploads.ts";
import { sql as pieceCids } from "./0012_piece_cids.ts";
import { sql as handoff } from "./0013_handoff.ts";
import { sql as blocksBeforePieces } from "./0014_blocks_before_pieces.ts";
import { sql as openUploadsBySubject } from "./0015_open_uploads_by_subject.ts";
import { sql as sessions } from "./0016_sessions.ts";
import { sql as uploadLinks } from "./0017_upload_links.ts";
import { sql as uploadActivity } from "./0018_upload_activity.ts";

export interface Migration {
  version: number;
  name: string;
  sql: string;
  /**
   * Rebuilds a table that others reference (create new, copy, drop, rename):
   * runs with foreign keys off, as SQLite's documented procedure requires, and
   * checks them all before committing.
   */
  rebuildsTables?: boolean;
}

export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: "initial", sql: initial },
  { version: 2, name: "tokens", sql: tokens },
  { version: 3, name: "deferred_sha256", sql: deferredSha256, rebuildsTables: true },
  { version: 4, name: "signup_codes", sql: signupCodes },
  { version: 5, name: "wallet", sql: wallet, rebuildsTables: true },
  { version: 6, name: "corrupt_pieces", sql: corruptPieces },
  { version: 7, name: "corrupt_mark_order", sql: corruptMarkOrder, rebuildsTables: true },
  { version: 8, name: "signup_codes_per_client", sql: signupCodesPerClient },
  { version: 9, name: "blocks", sql: blocks },
  { version: 10, name: "lifecycle", sql: lifecycle },
  { version: 11, name: "resumable_uploads", sql: resumableUploads },
  { version: 12, name: "piece_cids", sql: pieceCids },
  { version: 13, name: "handoff", sql: handoff },
  { version: 14, name: "blocks_before_pieces", sql: blocksBeforePieces },
  { version: 15, name: "open_uploads_by_subject", sql: openUploadsBySubject },
  { version: 16, name: "sessions", sql: sessions },
  { version: 17, name: "upload_links", sql: uploadLinks },
  { version: 18, name: "upload_activity", sql: uploadActivity },
];
