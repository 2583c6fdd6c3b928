/**
 * The served /openapi.json is a valid OpenAPI 3.1 document (checked by
 * swagger-parser), says what the route table says and no less (operationIds,
 * required lists, error codes per status, response headers, security), and a
 * client generated from it by openapi-typescript type-checks against the
 * types the handlers build their answers as and the SDK returns (src/kernel/wire.ts,
 * named per schema by src/http/docs/schemas/bodies.ts).
 */
import SwaggerParser from "@apidevtools/swagger-parser";
import openapiTS, { astToString } from "openapi-typescript";
import ts from "typescript";
import { assertEquals, assertMatch, assertOk } from "../helpers/assert.ts";
import { startTestServer } from "../helpers/server.ts";
import { ERROR_STATUS } from "../../src/kernel/errors.ts";
import type { ErrorCode } from "../../src/kernel/errors.ts";
import { ApiContract } from "./openapi_contract.ts";
import { withTempDir } from "../helpers/files.ts";

type Json = Record<string, unknown>;

const PIPELINE_ERRORS: ErrorCode[] = ["method_not_allowed", "internal_error", "storage_offline"];

async function servedDocument(): Promise<{ contract: ApiContract; routes: RouteRow[] }> {
  await using server = await startTestServer();
  const contract = await ApiContract.fetchFrom(server.url);
  return { contract, routes: server.server.routes.map((r) => ({ ...r.doc, method: r.method })) };
}

interface RouteRow {
  method: string;
  operationId: string;
  auth: string;
  scope?: string;
  errors: readonly string[];
}

/** Every schema object in a JSON tree, with where it is. */
function* schemasIn(value: unknown, at = "#"): Generator<[string, Json]> {
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) yield* schemasIn(item, `${at}/${i}`);
    return;
  }
  if (value === null || typeof value !== "object") return;
  const object = value as Json;
  if (object.type === "object" || "properties" in object) yield [at, object];
  for (const [key, child] of Object.entries(object)) yield* schemasIn(child, `${at}/${key}`);
}

Deno.test("openapi: the served document is valid OpenAPI 3.1 (swagger-parser)", async () => {
  const { contract } = await servedDocument();
  // validate() dereferences in place: give it a copy.
  const validated = await SwaggerParser.validate(structuredClone(contract.document) as never);
  assertEquals((validated as unknown as Json).openapi, "3.1.0");
});

Deno.test("openapi: swagger-parser refuses a broken document (the validator really validates)", async () => {
  const { contract } = await servedDocument();
  const broken = structuredClone(contract.document) as Json;
  const paths = broken.paths as Record<string, Record<string, Json>>;
  delete (paths["/api/upload"].post.responses as Record<string, Json>)["200"].description;
  let refused: unknown = null;
  await SwaggerParser.validate(broken as never).catch((error) => refused = error);
  assertOk(refused instanceof Error, "a response without a description is refused");
});

Deno.test("openapi: operations are the route table's rows, with their ids, security and HEAD twins", async () => {
  const { contract, routes } = await servedDocument();
  const ids = contract.operations.map((o) => o.operationId);
  assertEquals(new Set(ids).size, ids.length, "operationIds are unique");
  for (const operation of contract.operations) {
    assertMatch(operation.operationId, /^[a-z][A-Za-z]+$/);
  }
  const gets = contract.operations.filter((o) => o.method === "GET");
  const heads = contract.operations.filter((o) => o.method === "HEAD");
  assertEquals(heads.map((o) => o.path).sort(), gets.map((o) => o.path).sort());
  assertEquals(contract.operation("headPiece").path, "/p/{cid}");
  assertEquals(
    contract.statuses(contract.operation("headPiece")),
    [200, 206, 304, 400, 404, 405, 410, 416, 500, 503],
  );

  const paths = contract.document.paths as Record<string, Record<string, Json>>;
  for (const row of routes) {
    const operation = contract.operation(row.operationId);
    assertEquals(operation.method, row.method, row.operationId);
    const security = paths[operation.path][row.method.toLowerCase()].security;
    const roles = row.scope ? [row.scope] : [];
    const token = [{ bearer: roles }, { queryToken: roles }];
    const expected = row.auth === "public" ? [] : row.auth === "optional" ? [{}, ...token] : token;
    assertEquals(security, expected, `security of ${row.operationId}`);
  }
});

Deno.test("openapi: each operation lists its row's error codes and the pipeline's, under their status", async () => {
  const { contract, routes } = await servedDocument();
  for (const row of routes) {
    for (const operation of [row.operationId, ...(row.method === "GET" ? [headOf(row)] : [])]) {
      const op = contract.operation(operation);
      const expected = new Set([...row.errors, ...PIPELINE_ERRORS] as ErrorCode[]);
      const statuses = new Set([...expected].map((code) => ERROR_STATUS[code]));
      const errorStatuses = contract.statuses(op).filter((s) => s >= 400);
      // Health's 503 is also a success (degraded); every other error status is an error's.
      assertEquals(errorStatuses, [...statuses].sort((a, b) => a - b), operation);
      if (op.method === "HEAD") continue;
      const listed = new Set<string>();
      for (const status of errorStatuses) {
        for (const code of contract.codes(op, status) ?? []) {
          assertEquals(ERROR_STATUS[code as ErrorCode], status, `${operation}: ${code}`);
          listed.add(code);
        }
      }
      assertEquals([...listed].sort(), [...expected].sort(), operation);
    }
  }
});

function headOf(row: RouteRow): string {
  const rest = row.operationId.replace(/^get(?=[A-Z])/, "");
  return `head${rest[0].toUpperCase()}${rest.slice(1)}`;
}

Deno.test("openapi: objects list what is always sent as required; nullables are typed so", async () => {
  const { contract } = await servedDocument();
  for (const [at, schema] of schemasIn(contract.document.components)) {
    const properties = Object.keys((schema.properties ?? {}) as Json);
    if (properties.length === 0) continue;
    assertOk(Array.isArray(schema.required), `${at} has no required list`);
    for (const name of schema.required as string[]) {
      assertOk(properties.includes(name), `${at}: required ${name} is not a property`);
    }
  }
  const schemas = (contract.document.components as Json).schemas as Record<string, Json>;
  const upload = schemas.UploadResult;
  // Every field is always sent, but `handoff`, sent only by a server that hands pieces off.
  const always = Object.keys(upload.properties as Json).filter((name) => name !== "handoff");
  assertEquals((upload.required as string[]).sort(), always.sort());
  assertEquals(((upload.properties as Json).owner as Json).type, ["string", "null"]);
});

Deno.test("openapi: parameters, bodies and response headers", async () => {
  const { contract } = await servedDocument();
  const paths = contract.document.paths as Record<string, Record<string, Json>>;
  for (const [path, item] of Object.entries(paths)) {
    for (const operation of Object.values(item)) {
      for (const parameter of (operation.parameters ?? []) as Json[]) {
        assertOk(
          String(parameter.name).toLowerCase() !== "content-length",
          `${path}: Content-Length is not a parameter`,
        );
      }
    }
  }
  const upload = paths["/api/upload"].post;
  const requestBody = upload.requestBody as Json;
  assertMatch(String(requestBody.description), /Content-Length/);
  const binary = { type: "string", format: "binary", contentMediaType: "application/octet-stream" };
  assertEquals(requestBody.content, {
    "application/octet-stream": { schema: binary },
    "*/*": { schema: binary },
  });
  assertEquals(
    (paths["/p/{cid}"].get.responses as Record<string, Json>)["200"].content as Json,
    { "*/*": { schema: binary } },
  );
  // A text body (the Prometheus exposition) is a string of its one media type.
  assertEquals(
    (paths["/metrics"].get.responses as Record<string, Json>)["200"].content as Json,
    { "text/plain": { schema: { type: "string" } } },
  );

  const required = (operationId: string, status: number) =>
    contract.requiredHeaders(contract.operation(operationId), status).sort();
  assertEquals(required("upload", 200), ["RateLimit", "RateLimit-Policy"]);
  assertEquals(required("upload", 429), ["RateLimit", "RateLimit-Policy", "Retry-After"]);
  assertEquals(required("signup", 429), ["Retry-After"]);
  assertEquals(required("listFiles", 401), ["WWW-Authenticate"]);
  assertEquals(required("listFiles", 403), ["WWW-Authenticate"]);
  for (const operation of contract.operations) {
    assertEquals(required(operation.operationId, 405), ["Allow"], operation.operationId);
  }
  const pieceHeaders = [
    "Accept-Ranges",
    "Cache-Control",
    "Content-Disposition",
    "Content-Length",
    "Content-Security-Policy",
    "Content-Type",
    "ETag",
    "X-Content-Type-Options",
    "X-Service-Piece-Cid",
    "X-Service-Source",
  ];
  assertEquals(required("getPiece", 200), pieceHeaders);
  assertEquals(required("headPiece", 200), pieceHeaders);
  assertEquals(required("getPiece", 304), pieceHeaders.filter((h) => h !== "Content-Length"));
  const deprecation = (upload.responses as Record<string, Json>)["200"].headers as Json;
  assertEquals(Object.keys(deprecation).filter((h) => h === "Deprecation" || h === "Link"), [
    "Deprecation",
    "Link",
  ]);
});

/** The client a user would generate: openapi-typescript, with binary bodies as Blob. */
async function generateClientTypes(document: Json): Promise<string> {
  const blob = ts.factory.createTypeReferenceNode(ts.factory.createIdentifier("Blob"));
  const ast = await openapiTS(structuredClone(document) as never, {
    transform: (schema) => schema.format === "binary" ? blob : undefined,
  });
  return astToString(ast);
}

const BODIES_MODULE = new URL("../../src/http/docs/schemas/bodies.ts", import.meta.url).href;
const WIRE_MODULE = new URL("../../src/kernel/wire.ts", import.meta.url).href;

/** Type-level checks of the generated client: each line only compiles if the document is right. */
function clientChecks(schemaNames: string[]): string {
  return `import type { components, operations, paths } from "./api.d.ts";
import type { SchemaTypes } from "${BODIES_MODULE}";
import type * as Own from "${WIRE_MODULE}";

type NotAny<T> = 0 extends (1 & T) ? false : true;
type Same<A, B> = NotAny<A> extends true ? NotAny<B> extends true
  ? [A] extends [B] ? [B] extends [A] ? true : false : false : false : false;
type Assert<T extends true> = T;
type Json<O, S extends keyof O> = O[S] extends { content: { "application/json": infer B } } ? B
  : never;

// Operations are named (not Record<string, never>), HEAD included.
export type OperationsNamed = Assert<Same<string extends keyof operations ? false : true, true>>;
export type UploadIsNamed = Assert<Same<paths["/api/upload"]["post"], operations["upload"]>>;
export type HeadIsNamed = Assert<Same<paths["/p/{cid}"]["head"], operations["headPiece"]>>;

// The client's type of every schema is the type the handlers build their answers as.
${
    schemaNames.map((name) =>
      `export type Schema${name} = Assert<Same<components["schemas"]["${name}"], SchemaTypes["${name}"]>>;`
    ).join("\n")
  }

// Required fields are required, nullable ones are null rather than absent.
type UploadOk = Json<operations["upload"]["responses"], 200>;
export type CidIsString = Assert<Same<UploadOk["cid"], string>>;
export type CidRequired = Assert<Same<{} extends Pick<UploadOk, "cid"> ? false : true, true>>;
export type OwnerNullable = Assert<Same<UploadOk["owner"], string | null>>;
export type Created = Assert<Same<Json<operations["signup"]["responses"], 201>, Own.SignupResult>>;

// Error responses narrow the code to those of their status.
export type TooMany = Assert<
  Same<Json<operations["upload"]["responses"], 429>["error"], "rate_limited" | "quota_exceeded">
>;
export type Timeout = Assert<
  Same<Json<operations["upload"]["responses"], 408>["error"], "request_timeout">
>;

// Response headers a client can rely on.
export type RetryAfter = Assert<
  Same<operations["upload"]["responses"][429]["headers"]["Retry-After"], number>
>;
export type RateLimit = Assert<
  Same<operations["upload"]["responses"][200]["headers"]["RateLimit"], string>
>;
export type Challenge = Assert<
  Same<operations["listFiles"]["responses"][401]["headers"]["WWW-Authenticate"], string>
>;
export type Allow = Assert<Same<operations["getPiece"]["responses"][405]["headers"]["Allow"], string>>;
export type ETag = Assert<Same<operations["headPiece"]["responses"][200]["headers"]["ETag"], string>>;

// Bytes are Blobs; HEAD answers have no body; Content-Length is never a parameter.
export type UploadBytes = Assert<
  Same<operations["upload"]["requestBody"]["content"]["application/octet-stream"], Blob>
>;
export type PieceBytes = Assert<
  Same<operations["getPiece"]["responses"][200]["content"]["*/*"], Blob>
>;
export type HeadNoBody = Assert<
  Same<operations["headPiece"]["responses"][200]["content"], undefined>
>;
export type CidQuery = Assert<Same<operations["upload"]["parameters"]["query"]["cid"], string>>;
export type NoContentLength = Assert<
  Same<
    "Content-Length" extends keyof NonNullable<operations["upload"]["parameters"]["header"]>
      ? false
      : true,
    true
  >
>;
`;
}

async function denoCheck(dir: string, file: string): Promise<{ ok: boolean; output: string }> {
  const { success, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["check", "--quiet", file],
    cwd: dir,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return { ok: success, output: decoder.decode(stdout) + decoder.decode(stderr) };
}

Deno.test("openapi: a client generated by openapi-typescript type-checks against the service's types", async () => {
  const { contract } = await servedDocument();
  await withTempDir("openapi-client-", async (dir) => {
    const types = await generateClientTypes(contract.document);
    assertOk(!types.includes("operations = Record<string, never>"), "operations are named");
    await Deno.writeTextFile(`${dir}/api.d.ts`, types);
    const schemaNames = Object.keys((contract.document.components as Json).schemas as Json);
    await Deno.writeTextFile(`${dir}/client_check.ts`, clientChecks(schemaNames));
    const checked = await denoCheck(dir, "client_check.ts");
    assertOk(checked.ok, checked.output);

    // The checks can fail: the same file with one wrong expectation does not compile.
    await Deno.writeTextFile(
      `${dir}/client_check_wrong.ts`,
      clientChecks(schemaNames).replace(
        'Same<UploadOk["cid"], string>',
        'Same<UploadOk["cid"], number>',
      ),
    );
    const wrong = await denoCheck(dir, "client_check_wrong.ts");
    assertOk(!wrong.ok, "a wrong expectation is caught");
    assertMatch(wrong.output, /CidIsString|TS2344/);
  });
});
