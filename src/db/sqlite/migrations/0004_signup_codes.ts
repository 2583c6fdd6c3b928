/**
 * Signup codes of `--signup verify`: one pending code per e-mail address (a
 * new signup replaces it, keeping its count of wrong tries), stored as its
 * SHA-256 with the token fields it will mint, when it was sent and when it
 * expires.
 */
import { signupCodesTable, SQLITE_DDL } from "../../shared_tables.ts";

export const sql = `
${signupCodesTable(SQLITE_DDL, { perClient: false })}
`;
