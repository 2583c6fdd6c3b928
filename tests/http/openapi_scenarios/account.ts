/**
 * Declared-codes scenarios (see scenario.ts) of what a caller reads and does
 * with its account: files, usage, deal extensions, limits.
 */
import { assertEquals } from "../../helpers/assert.ts";
import {
  bearer,
  chainDown,
  CID,
  expecting,
  ownDeal,
  removedPiece,
  request,
  tokenScenarios,
  withToken,
  wrongMethod,
} from "./scenario.ts";
import type { OutOfReach, Scenario } from "./scenario.ts";

/** A request on a deal of the caller's own, as `deal` makes it (ownDeal, or removedPiece). */
function onDeal(
  name: string,
  deal: typeof ownDeal,
  method: string,
  pathOf: (dealId: string) => string,
  answer: string,
): Scenario {
  return {
    name,
    send: async (p) => {
      const { auth, dealId } = await deal(p);
      return p.send(method, pathOf(dealId), { headers: auth });
    },
    ...expecting(answer),
  };
}

const extendPath = (dealId: string) => `/api/deals/${dealId}/extend`;

export const scenarios: Record<string, Scenario[]> = {
  listFiles: [
    {
      name: "a page of the caller's uploads",
      send: async (p) => {
        const auth = bearer(await p.token());
        assertEquals((await p.upload(CID, "mine", { headers: auth })).status, 200);
        return p.send("GET", "/api/files?limit=1", { headers: auth });
      },
      status: 200,
    },
    withToken("limit=0", "GET /api/files?limit=0", "400 invalid_request"),
    withToken(
      "a cursor this service never returned",
      "GET /api/files?cursor=%21%21",
      "400 invalid_request",
    ),
    withToken("a cid that is none", "GET /api/files?cid=x", "400 invalid_cid"),
    withToken("only the deleted deals", "GET /api/files?state=deleted", "200"),
    withToken("a state there is not", "GET /api/files?state=gone", "400 invalid_request"),
    ...tokenScenarios("GET", "/api/files", { scope: "list" }),
    wrongMethod("DELETE", "/api/files"),
  ],
  headListFiles: [withToken("a token with the list scope", "HEAD /api/files", "200")],
  getUsage: [
    withToken("the default range", "GET /api/usage", "200"),
    withToken(
      "a date that does not exist",
      "GET /api/usage?from=2026-02-30",
      "400 invalid_request",
    ),
    ...tokenScenarios("GET", "/api/usage", { scope: "list" }),
    chainDown("a wallet token, its chain down", "GET /api/usage"),
    wrongMethod("POST", "/api/usage"),
  ],
  headUsage: [withToken("the default range", "HEAD /api/usage", "200")],
  extendDeal: [
    onDeal("the caller's deal", ownDeal, "POST", extendPath, "200"),
    withToken("an unknown deal", "POST /api/deals/no-such-deal/extend", "404 not_found"),
    onDeal("a deal whose piece a sweep removed", removedPiece, "POST", extendPath, "410 gone"),
    ...tokenScenarios("POST", "/api/deals/no-such-deal/extend", { scope: "pin" }),
    wrongMethod("GET", "/api/deals/no-such-deal/extend"),
  ],
  getDeal: [
    onDeal("the caller's deal", ownDeal, "GET", (dealId) => `/api/deals/${dealId}`, "200"),
    withToken("an unknown deal", "GET /api/deals/no-such-deal", "404 not_found"),
    ...tokenScenarios("GET", "/api/deals/no-such-deal", { scope: "list" }),
    wrongMethod("PATCH", "/api/deals/no-such-deal"),
  ],
  headDeal: [
    onDeal("the caller's deal", ownDeal, "HEAD", (dealId) => `/api/deals/${dealId}`, "200"),
    withToken("an unknown deal", "HEAD /api/deals/no-such-deal", "404"),
  ],
  deleteDeal: [
    onDeal("the caller's deal", ownDeal, "DELETE", (dealId) => `/api/deals/${dealId}`, "200"),
    withToken("an unknown deal", "DELETE /api/deals/no-such-deal", "404 not_found"),
    ...tokenScenarios("DELETE", "/api/deals/no-such-deal", { scope: "pin" }),
    wrongMethod("PUT", "/api/deals/no-such-deal"),
  ],
  getLimits: [
    request("sponsored", "GET /api/limits", "200"),
    withToken("with a token and ?size=", "GET /api/limits?size=10", "200"),
    request("size=0", "GET /api/limits?size=0", "400 invalid_request"),
    ...tokenScenarios("GET", "/api/limits").filter((s) => s.name !== "no token"),
    chainDown("a wallet token, its chain down", "GET /api/limits"),
    wrongMethod("POST", "/api/limits"),
  ],
  headLimits: [
    request("sponsored", "HEAD /api/limits", "200"),
    request("size=0", "HEAD /api/limits?size=0", "400"),
  ],
};

export const outOfReach: OutOfReach = {};
