/**
 * docs/api.md and the generated /openapi.json describe the same API: every
 * operation of one is in the other, and each operation's section lists
 * exactly the error codes the document declares for it. A route or code added
 * to the route table without its prose (or the other way round) fails here.
 *
 * In docs/api.md each operation is a `### METHOD /path` section under
 * `## Endpoints`, whose error codes are the backticked snake_case words of
 * its section that name a code of src/kernel/errors.ts.
 */
import { assertEquals } from "../helpers/assert.ts";
import { startTestServer } from "../helpers/server.ts";
import { ERROR_STATUS } from "../../src/kernel/errors.ts";

const API_MD = new URL("../../docs/api.md", import.meta.url);

interface Section {
  operation: string;
  codes: string[];
}

function sectionsOf(markdown: string): Section[] {
  const endpoints = markdown.split(/^## Endpoints\s*$/m)[1]?.split(/^## /m)[0] ?? "";
  return endpoints.split(/^### /m).slice(1).map((section) => {
    const [heading, ...body] = section.split("\n");
    const codes = new Set<string>();
    for (const [, word] of body.join("\n").matchAll(/`([a-z_]+)`/g)) {
      if (word in ERROR_STATUS) codes.add(word);
    }
    return { operation: heading.trim(), codes: [...codes].sort() };
  });
}

type Json = Record<string, unknown>;

/** "METHOD /path" → the error codes its responses list. */
function declaredCodes(document: Json): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [path, item] of Object.entries(document.paths as Record<string, Json>)) {
    for (const [method, operation] of Object.entries(item)) {
      const responses = (operation as Json).responses as Record<string, Json>;
      const codes = new Set<string>();
      // Codes are listed in each response's description and, where it has a body, in the
      // enum of its Error schema (HEAD answers have only the description).
      for (const [status, response] of Object.entries(responses)) {
        if (Number(status) < 400) continue; // a success body may name codes as values (limits)
        // The codes follow the status text ("Not found: not_found, …"); the enum lists them too.
        const listed = `${String(response.description).split(": ").at(-1)} ${
          JSON.stringify(response.content ?? {})
        }`;
        for (const [word] of listed.matchAll(/[a-z]+(?:_[a-z]+)*/g)) {
          if (word in ERROR_STATUS) codes.add(word);
        }
      }
      out.set(`${method.toUpperCase()} ${path}`, [...codes].sort());
    }
  }
  return out;
}

Deno.test("docs/api.md documents exactly the operations and error codes of /openapi.json", async () => {
  await using server = await startTestServer();
  const document = await (await server.get("/openapi.json")).json();
  const declared = declaredCodes(document);
  const sections = sectionsOf(await Deno.readTextFile(API_MD));
  const documented = new Map(sections.map((s) => [s.operation, s.codes]));
  assertEquals(sections.length, documented.size, "one section per operation");

  // HEAD is served by every GET route; api.md gives it a section of its own only for
  // retrieval, where it differs (no body read from the store). Others share their GET's.
  const expected = [...declared.keys()].filter((op) =>
    !op.startsWith("HEAD ") || documented.has(op)
  );
  assertEquals([...documented.keys()].sort(), expected.sort(), "operations in api.md vs openapi");
  for (const operation of expected) {
    assertEquals(
      { operation, codes: documented.get(operation) },
      { operation, codes: declared.get(operation) },
      `${operation}: the codes in its api.md section vs those its OpenAPI responses declare`,
    );
  }
  // Every code of the error table appears in the document, in api.md's table, and so for users.
  const markdown = await Deno.readTextFile(API_MD);
  for (const code of Object.keys(ERROR_STATUS)) {
    assertEquals(markdown.includes(`\`${code}\``), true, `api.md names ${code}`);
  }
});
