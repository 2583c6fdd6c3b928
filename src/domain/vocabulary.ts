/**
 * The service's own vocabulary, shared by every layer: the database stores
 * these values and records, auth and limits decide with them, handlers render
 * them. It imports only the API's wire types (kernel/wire.ts, which imports nothing),
 * so no layer has to import another to name them (db/ and auth/ in particular
 * never import each other). The records themselves, and the ports db/
 * implements for them, are declared beside it in domain/ (auth_records.ts,
 * catalog_records.ts, lifecycle_records.ts, resumable_upload_records.ts,
 * cap_ledger.ts, locks.ts).
 */

// Scopes and tiers are words of the API itself: defined with its bodies, named here too.
export { SCOPES, TIERS } from "../kernel/wire.ts";
export type { DealState, Scope, Tier } from "../kernel/wire.ts";
