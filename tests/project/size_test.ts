/**
 * Sizes the house style sets for the service's code (src/ and main.ts): no
 * file over 400 lines, no function over 120, so each still reads in one
 * sitting. Functions are found by parsing with the TypeScript compiler
 * (declarations, methods, accessors, constructors, arrows and function
 * expressions, nested ones on their own), not by pattern, so a long arrow
 * inside an object literal counts as much as a declaration.
 *
 * Left out: generated modules (`*.gen.ts`, rebuilt by a script) and the
 * option table (src/config/options.ts: one row per flag, grouped by area,
 * data rather than logic).
 */
import ts from "typescript";
import { assertEquals } from "../helpers/assert.ts";
import { listFiles } from "../helpers/files.ts";

const ROOT = new URL("../../", import.meta.url);
const MAX_FILE_LINES = 400;
const MAX_FUNCTION_LINES = 120;
const EXEMPT_FILES = new Set(["src/config/options.ts"]);

/** The service's TypeScript files, as paths relative to the repository root. */
async function serviceFiles(): Promise<string[]> {
  const inSrc = await listFiles(ROOT.pathname, "src");
  return ["main.ts", ...inSrc.filter((path) => /\.tsx?$/.test(path))]
    .filter((path) => !path.endsWith(".gen.ts") && !EXEMPT_FILES.has(path));
}

function lineCount(text: string): number {
  return text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
}

/** Every function in the source longer than `limit` lines: "file:line name (N lines)". */
export function longFunctions(path: string, text: string, limit: number): string[] {
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const lineOf = (position: number) => source.getLineAndCharacterOfPosition(position).line;
  const long: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && "body" in node && node.body) {
      const lines = lineOf(node.getEnd()) - lineOf(node.getStart()) + 1;
      if (lines > limit) {
        const name = nameOf(node, source);
        long.push(`${path}:${lineOf(node.getStart()) + 1} ${name} (${lines} lines)`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return long;
}

/** A function's name, or that of the variable or property it is the value of. */
function nameOf(node: ts.SignatureDeclaration, source: ts.SourceFile): string {
  if (node.name) return node.name.getText(source);
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) {
    return parent.name.getText(source);
  }
  return "(anonymous)";
}

Deno.test(`size: no file of src/ passes ${MAX_FILE_LINES} lines`, async () => {
  const long: string[] = [];
  for (const path of await serviceFiles()) {
    const lines = lineCount(await Deno.readTextFile(new URL(path, ROOT)));
    if (lines > MAX_FILE_LINES) long.push(`${path} (${lines} lines)`);
  }
  assertEquals(long, [], "split these files by responsibility");
});

Deno.test(`size: no function of src/ passes ${MAX_FUNCTION_LINES} lines`, async () => {
  const files = await serviceFiles();
  const long: string[] = [];
  for (const path of files) {
    long.push(
      ...longFunctions(path, await Deno.readTextFile(new URL(path, ROOT)), MAX_FUNCTION_LINES),
    );
  }
  assertEquals(files.length > 100, true, "the walk found the service's files");
  assertEquals(long, [], "split these functions");
});

Deno.test("size: every kind of function is measured, nested ones on their own", () => {
  const body = (lines: number) => Array.from({ length: lines }, (_, i) => `  f${i}();`).join("\n");
  const source = [
    `function declared() {\n${body(5)}\n}`,
    `const arrow = () => {\n${body(5)}\n};`,
    `class C {\n  method() {\n${body(5)}\n  }\n  get value() {\n${body(5)}\n    return 1;\n  }\n}`,
    `const table = { handler: function () {\n${body(2)}\n  const inner = () => {\n${
      body(5)
    }\n  };\n} };`,
    `run(() => {\n${body(5)}\n});`,
    `function short() {\n${body(1)}\n}`,
  ].join("\n");
  assertEquals(longFunctions("x.ts", source, 6), [
    "x.ts:1 declared (7 lines)",
    "x.ts:8 arrow (7 lines)",
    "x.ts:16 method (7 lines)",
    "x.ts:23 value (8 lines)",
    "x.ts:32 handler (11 lines)",
    "x.ts:35 inner (7 lines)",
    "x.ts:43 (anonymous) (7 lines)",
  ]);
});
