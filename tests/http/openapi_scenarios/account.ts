/**
 * Declared-codes scenarios (see scenario.ts) of what a caller reads and does
 * with its account: files, usage, deal extensions, limits.
 */
import { assertEquals } from "../../helpers/assert.ts";
import {
  bearer,
  chainDown,
  CID,
  ownDeal,
  removedPiece,
  tokenScenarios,
  wrongMethod,
} from "./scenario.ts";
import type { OutOfReach, Scenario } from "./scenario.ts";

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
    {
      name: "limit=0",
      send: async (p) => p.send("GET", "/api/files?limit=0", { headers: bearer(await p.token()) }),
      status: 400,
      code: "invalid_request",
    },
    {
      name: "a cursor this service never returned",
      send: async (p) =>
        p.send("GET", "/api/files?cursor=%21%21", { headers: bearer(await p.token()) }),
      status: 400,
      code: "invalid_request",
    },
    {
      name: "a cid that is none",
      send: async (p) => p.send("GET", "/api/files?cid=x", { headers: bearer(await p.token()) }),
      status: 400,
      code: "invalid_cid",
    },
    {
      name: "only the deleted deals",
      send: async (p) =>
        p.send("GET", "/api/files?state=deleted", { headers: bearer(await p.token()) }),
      status: 200,
    },
    {
      name: "a state there is not",
      send: async (p) =>
        p.send("GET", "/api/files?state=gone", { headers: bearer(await p.token()) }),
      status: 400,
      code: "invalid_request",
    },
    ...tokenScenarios("GET", "/api/files", { scope: "list" }),
    wrongMethod("DELETE", "/api/files"),
  ],
  headListFiles: [
    {
      name: "a token with the list scope",
      send: async (p) => p.send("HEAD", "/api/files", { headers: bearer(await p.token()) }),
      status: 200,
    },
  ],
  getUsage: [
    {
      name: "the default range",
      send: async (p) => p.send("GET", "/api/usage", { headers: bearer(await p.token()) }),
      status: 200,
    },
    {
      name: "a date that does not exist",
      send: async (p) =>
        p.send("GET", "/api/usage?from=2026-02-30", { headers: bearer(await p.token()) }),
      status: 400,
      code: "invalid_request",
    },
    ...tokenScenarios("GET", "/api/usage", { scope: "list" }),
    chainDown(
      "a wallet token, its chain down",
      (p, auth) => p.send("GET", "/api/usage", { headers: auth }),
    ),
    wrongMethod("POST", "/api/usage"),
  ],
  headUsage: [
    {
      name: "the default range",
      send: async (p) => p.send("HEAD", "/api/usage", { headers: bearer(await p.token()) }),
      status: 200,
    },
  ],
  extendDeal: [
    {
      name: "the caller's deal",
      send: async (p) => {
        const { auth, dealId } = await ownDeal(p);
        return p.send("POST", `/api/deals/${dealId}/extend`, { headers: auth });
      },
      status: 200,
    },
    {
      name: "an unknown deal",
      send: async (p) =>
        p.send("POST", "/api/deals/no-such-deal/extend", { headers: bearer(await p.token()) }),
      status: 404,
      code: "not_found",
    },
    {
      name: "a deal whose piece a sweep removed",
      send: async (p) => {
        const { auth, dealId } = await removedPiece(p);
        return p.send("POST", `/api/deals/${dealId}/extend`, { headers: auth });
      },
      status: 410,
      code: "gone",
    },
    ...tokenScenarios("POST", "/api/deals/no-such-deal/extend", { scope: "pin" }),
    wrongMethod("GET", "/api/deals/no-such-deal/extend"),
  ],
  deleteDeal: [
    {
      name: "the caller's deal",
      send: async (p) => {
        const { auth, dealId } = await ownDeal(p);
        return p.send("DELETE", `/api/deals/${dealId}`, { headers: auth });
      },
      status: 200,
    },
    {
      name: "an unknown deal",
      send: async (p) =>
        p.send("DELETE", "/api/deals/no-such-deal", { headers: bearer(await p.token()) }),
      status: 404,
      code: "not_found",
    },
    ...tokenScenarios("DELETE", "/api/deals/no-such-deal", { scope: "pin" }),
    wrongMethod("PUT", "/api/deals/no-such-deal"),
  ],
  getLimits: [
    { name: "sponsored", send: (p) => p.send("GET", "/api/limits"), status: 200 },
    {
      name: "with a token and ?size=",
      send: async (p) => p.send("GET", "/api/limits?size=10", { headers: bearer(await p.token()) }),
      status: 200,
    },
    {
      name: "size=0",
      send: (p) => p.send("GET", "/api/limits?size=0"),
      status: 400,
      code: "invalid_request",
    },
    ...tokenScenarios("GET", "/api/limits").filter((s) => s.name !== "no token"),
    chainDown(
      "a wallet token, its chain down",
      (p, auth) => p.send("GET", "/api/limits", { headers: auth }),
    ),
    wrongMethod("POST", "/api/limits"),
  ],
  headLimits: [
    { name: "sponsored", send: (p) => p.send("HEAD", "/api/limits"), status: 200 },
    { name: "size=0", send: (p) => p.send("HEAD", "/api/limits?size=0"), status: 400 },
  ],
};

export const outOfReach: OutOfReach = {};
