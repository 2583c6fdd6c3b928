/**
 * The EIP-4361 layout check on its own: every shape viem's createSiweMessage
 * writes passes, and the ways a message can be bent past viem's lenient
 * parser are each refused with a reason.
 */
import { createSiweMessage } from "viem/siwe";
import type { SiweMessage } from "viem/siwe";
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { siweLayoutProblem } from "../../src/auth/siwe_layout.ts";

const BASE: SiweMessage = {
  address: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
  domain: "127.0.0.1:8080",
  uri: "http://127.0.0.1:8080",
  version: "1",
  chainId: 31337,
  nonce: "0123456789abcdef0123456789abcdef",
  issuedAt: new Date("2026-11-22T12:00:00Z"),
};

Deno.test("siwe layout: every shape createSiweMessage writes is accepted", () => {
  const shapes: Partial<SiweMessage>[] = [
    {},
    { statement: "Sign in to the storage staging service" },
    { expirationTime: new Date("2026-11-22T12:05:00Z") },
    {
      statement: "With everything",
      scheme: "https",
      expirationTime: new Date("2026-11-22T12:05:00Z"),
      notBefore: new Date("2026-11-22T11:59:00Z"),
      requestId: "req-1",
      resources: ["ipfs://bafybeiexample", "https://example.org/terms"],
    },
  ];
  for (const shape of shapes) {
    const message = createSiweMessage({ ...BASE, ...shape });
    assertEquals(siweLayoutProblem(message), null, message);
  }
});

Deno.test("siwe layout: bent messages are refused with the reason", () => {
  const good = createSiweMessage({ ...BASE, statement: "Hello", resources: ["https://a.example"] });
  const bent: [string, string, RegExp][] = [
    ["a trailing line", `${good}\nextra`, /resource/],
    ["a trailing empty line", `${good}\n`, /resource|not part/],
    ["a second block", `${good.replace(/\nResources:[^]*$/, "")}\nURI: x`, /not part/],
    ["two statement lines", good.replace("Hello", "Hello\nWorld"), /statement/],
    ["a control character", good.replace("Hello", "Hel\u0007lo"), /statement/],
    [
      "fields out of order",
      good.replace(/Version: 1\nChain ID: 31337/, "Chain ID: 31337\nVersion: 1"),
      /Version/,
    ],
    ["a padded chain id", good.replace("Chain ID: 31337", "Chain ID: 031337"), /Chain ID/],
    ["a short nonce", good.replace(BASE.nonce, "abc"), /Nonce/],
    [
      "a date that is not RFC 3339",
      good.replace(/Issued At: .*/, "Issued At: yesterday"),
      /Issued At/,
    ],
    ["no header", good.split("\n").slice(1).join("\n"), /first line/],
    ["a short address", good.replace(BASE.address, "0x1234"), /address/],
    ["an empty resource list", good.replace(/\n- https:\/\/a\.example$/, ""), /at least one/],
    ["a resource with a space", `${good} x`, /resource/],
    ["nothing at all", "", /first line/],
  ];
  for (const [what, message, reason] of bent) {
    const problem = siweLayoutProblem(message);
    assertOk(problem !== null, `${what} was accepted`);
    assertMatch(problem, reason, what);
  }
});

Deno.test("siwe layout: a long crafted message is refused in one pass", () => {
  // viem's unanchored field regex is quadratic on this; the layout check reads line 1 and stops.
  assertMatch(siweLayoutProblem("URI: ".repeat(50_000)) ?? "", /first line/);
});
