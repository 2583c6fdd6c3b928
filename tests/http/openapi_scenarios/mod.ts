/**
 * Every area's declared-codes scenarios, one list per operation of the
 * document, and the answers no scenario can provoke (each with its reason).
 */
import * as account from "./account.ts";
import * as auth from "./auth.ts";
import * as files from "./files.ts";
import * as ipfs from "./ipfs.ts";
import * as links from "./links.ts";
import * as resumable from "./resumable.ts";
import * as retrieval from "./retrieval.ts";
import type { OutOfReach, Scenario } from "./scenario.ts";
import * as service from "./service.ts";
import * as uploads from "./uploads.ts";

const AREAS = [uploads, links, resumable, retrieval, files, ipfs, auth, account, service];

export type { Scenario } from "./scenario.ts";

export const SCENARIOS: Record<string, Scenario[]> = {};
export const OUT_OF_REACH: OutOfReach = {
  "*": {
    "500 internal_error": "an exception nobody anticipated: a bug, never provoked on purpose",
    "503 storage_offline": "needs SQLite busy past --db-busy-timeout or the store offline; " +
      "provoked on upload, signup and getPiece",
  },
};
for (const area of AREAS) {
  for (const [operationId, scenarios] of Object.entries(area.scenarios)) {
    if (operationId in SCENARIOS) throw new Error(`${operationId}: scenarios in two areas`);
    SCENARIOS[operationId] = scenarios;
  }
  Object.assign(OUT_OF_REACH, area.outOfReach);
}
