/**
 * Resumable (tus) uploads: one row each from creation until a day after it
 * finished or after its last byte. The bytes live in the store's partial
 * area; `staging` is the store's description of them. The cap reservation
 * of the length is named here, so a restart can hold it again (the daily-cap
 * ledger of a data directory keeps reservations in memory). `deal_id` is set
 * in the same transaction as the deal the last byte made, with `roots` (a
 * JSON array) when the upload was a CAR, for the finished upload's result.
 */
import { resumableUploadsTable, SQLITE_DDL } from "../../shared_tables.ts";

export const sql = `
${resumableUploadsTable(SQLITE_DDL)}
`;
