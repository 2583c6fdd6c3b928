/**
 * Signup codes per address and client: each client that asks for a code for
 * an address gets its own, with its own tries, so nobody can use up the tries
 * of the address's owner (or replace the code the owner was sent). Pending
 * codes live 15 minutes; those in flight at the upgrade are dropped, and their
 * people sign up again.
 */
import { signupCodesTable, SQLITE_DDL } from "../../shared_tables.ts";

export const sql = `
DROP TABLE signup_codes;
${signupCodesTable(SQLITE_DDL, { perClient: true })}
`;
