/**
 * The document declares what the routes really answer: a scenario table per
 * operation (tests/http/openapi_scenarios/, one file per area) provokes, from
 * outside and against the real server, every answer it can (each error code,
 * each success), and each scenario checks both that it got the status and
 * code it expects and that the served /openapi.json declares that (status,
 * code) for the operation. Every other answer seen on the way (signups,
 * uploads made as setup) is judged against the document too. A last test
 * checks that every declared answer is provoked here or listed in
 * OUT_OF_REACH with the reason it cannot be.
 */
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { startTestServer } from "../helpers/server.ts";
import { ApiContract } from "./openapi_contract.ts";
import { createProbe } from "./openapi_probe.ts";
import { OUT_OF_REACH, SCENARIOS } from "./openapi_scenarios/mod.ts";

/** Answers the scenarios provoked, by operation: "status code", or "status" without a code. */
const provoked = new Map<string, Set<string>>();
let scenariosRun = 0;
const scenarioCount = Object.values(SCENARIOS).flat().length;

for (const [operationId, scenarios] of Object.entries(SCENARIOS)) {
  for (const scenario of scenarios) {
    const expected = `${scenario.status}${scenario.code ? ` ${scenario.code}` : ""}`;
    Deno.test(`openapi declared: ${operationId}: ${scenario.name} → ${expected}`, async () => {
      await using server = await startTestServer({ args: scenario.args });
      const contract = await ApiContract.fetchFrom(server.url);
      const probe = createProbe(server, contract);
      const answer = await scenario.send(probe);
      assertEquals(
        `${answer.status}${answer.code ? ` ${answer.code}` : ""}`,
        expected,
        `${answer.method} ${answer.pathname}: ${answer.body}`,
      );
      // The answer belongs to this operation (or, for 405, to a method its path lacks).
      const resolved = contract.resolve(answer.method, answer.pathname);
      const operations = resolved.kind === "operation"
        ? [resolved.operation]
        : resolved.kind === "other_method"
        ? resolved.operations
        : [];
      const operation = operations.find((o) => o.operationId === operationId);
      assertOk(operation, `${answer.method} ${answer.pathname} is not ${operationId}`);
      if (probe.violations.length > 0) throw new Error(probe.violations.join("\n"));
      assertOk(
        contract.declares(operation, answer.status, answer.code),
        `${operationId} does not declare ${expected}`,
      );
      const seen = provoked.get(operationId) ?? new Set();
      provoked.set(operationId, seen.add(expected));
      scenariosRun++;
    });
  }
}

Deno.test("openapi declared: every declared answer is provoked above or out of reach", async (t) => {
  await using server = await startTestServer();
  const contract = await ApiContract.fetchFrom(server.url);
  assertEquals(
    Object.keys(SCENARIOS).sort(),
    contract.operations.map((o) => o.operationId).sort(),
    "one scenario list per operation of the document",
  );
  if (scenariosRun !== scenarioCount) {
    await t.step({ name: "(skipped: not every scenario ran)", ignore: true, fn: () => {} });
    return;
  }
  const unprovoked: string[] = [];
  for (const operation of contract.operations) {
    // A HEAD answer has no body, so its codes cannot be seen; its GET twin covers them.
    if (operation.method === "HEAD") continue;
    const seen = provoked.get(operation.operationId) ?? new Set();
    const excused = { ...OUT_OF_REACH["*"], ...OUT_OF_REACH[operation.operationId] };
    for (const status of contract.statuses(operation)) {
      const codes = contract.codes(operation, status);
      const answers = codes === null ? [String(status)] : codes.map((c) => `${status} ${c}`);
      for (const answer of answers) {
        if (!seen.has(answer) && !(answer in excused)) {
          unprovoked.push(`${operation.operationId}: ${answer}`);
        }
      }
    }
  }
  assertEquals(unprovoked, [], "declared, but neither provoked nor listed in OUT_OF_REACH");
});
