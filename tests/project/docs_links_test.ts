/**
 * The README and docs/ must stand on their own in a clone: every relative
 * link points at a file inside the repository, every `file.md#anchor` at a
 * heading of that file, and nothing refers to files outside the repository.
 * And no text goes stale when files move: every repository path the README,
 * docs/, the code's comments or the deployment files name (`src/…`,
 * `tests/…`, `scripts/…`, `deploy/…`, `docs/…`) exists.
 */
import { pathExists } from "../../src/kernel/fs/files.ts";
import { listFiles } from "../helpers/files.ts";

function assert(condition: boolean, message = "assertion failed"): asserts condition {
  if (!condition) throw new Error(message);
}

const ROOT = new URL("../..", import.meta.url);

/** README.md and every .md under docs/, as paths relative to the repository root. */
async function documents(): Promise<string[]> {
  const docs = await listFiles(ROOT.pathname, "docs");
  return ["README.md", ...docs.filter((path) => path.endsWith(".md"))].sort();
}

/** Markdown link targets `](target)` and `<a href="target">`, outside code. */
export function linkTargets(markdown: string): string[] {
  const text = stripCode(markdown);
  const targets: string[] = [];
  for (const match of text.matchAll(/\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g)) {
    targets.push(match[1]);
  }
  for (const match of text.matchAll(/<a\s[^>]*href\s*=\s*["']([^"']*)["']/gi)) {
    targets.push(match[1]);
  }
  return targets;
}

/** Removes fenced code blocks and inline code spans, which hold examples rather than links. */
function stripCode(markdown: string): string {
  return markdown
    .replace(/^(`{3,}|~{3,})[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "")
    .replace(/(`+)[\s\S]*?\1/g, "");
}

/** GitHub's heading anchors: lowercase, punctuation dropped (but - and _), spaces to -. */
export function slugify(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M} _-]/gu, "")
    .replace(/ /g, "-");
}

/** Every anchor a Markdown file offers; repeated headings get -1, -2, … as on GitHub. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const withoutFences = markdown.replace(/^(`{3,}|~{3,})[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "");
  for (const match of withoutFences.matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    // Inline Markdown in a heading shows as its text: drop code ticks, emphasis, link targets.
    const text = match[1]
      .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
      .replace(/[`*]/g, "");
    const base = slugify(text);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  for (const match of markdown.matchAll(/<a\s[^>]*(?:name|id)\s*=\s*["']([^"']+)["']/gi)) {
    anchors.add(match[1]);
  }
  return anchors;
}

Deno.test("README and docs/ link only to files and headings inside the repository", async () => {
  const problems: string[] = [];
  const anchorCache = new Map<string, Set<string>>();
  const anchorsAt = async (url: URL) => {
    let anchors = anchorCache.get(url.href);
    if (!anchors) {
      anchors = anchorsOf(await Deno.readTextFile(url));
      anchorCache.set(url.href, anchors);
    }
    return anchors;
  };

  const docs = await documents();
  assert(docs.length > 1, "expected README.md and at least one file under docs/");
  for (const doc of docs) {
    const docUrl = new URL(doc, ROOT);
    const text = await Deno.readTextFile(docUrl);
    if (text.includes("../shared")) problems.push(`${doc}: mentions ../shared`);

    for (const target of linkTargets(text)) {
      if (target === "") {
        problems.push(`${doc}: empty link target`);
        continue;
      }
      if (/^(https?|mailto):/i.test(target)) continue;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("//")) {
        problems.push(`${doc}: ${target}: not a relative link or an http(s)/mailto URL`);
        continue;
      }
      const hashAt = target.indexOf("#");
      const pathPart = hashAt === -1 ? target : target.slice(0, hashAt);
      const anchor = hashAt === -1 ? null : decodeURIComponent(target.slice(hashAt + 1));

      if (pathPart === "") {
        // A pure #anchor link: nothing to resolve.
        continue;
      }
      const resolved = pathPart.startsWith("/")
        ? new URL(`.${decodeURIComponent(pathPart)}`, ROOT)
        : new URL(decodeURIComponent(pathPart), docUrl);
      if (!resolved.href.startsWith(ROOT.href)) {
        problems.push(`${doc}: ${target}: leaves the repository`);
        continue;
      }
      if (!await pathExists(resolved)) {
        const relative = resolved.href.slice(ROOT.href.length);
        problems.push(`${doc}: ${target}: ${relative} does not exist`);
        continue;
      }
      if (anchor !== null && anchor !== "" && resolved.pathname.endsWith(".md")) {
        if (!(await anchorsAt(resolved)).has(anchor)) {
          problems.push(`${doc}: ${target}: no heading with anchor #${anchor}`);
        }
      }
    }
  }
  assert(problems.length === 0, `Broken documentation links:\n  ${problems.join("\n  ")}`);
});

Deno.test("slugify follows GitHub's heading anchors", () => {
  const cases: [string, string][] = [
    ["GET /p/{cid}", "get-pcid"],
    ["POST /api/deals/{dealId}/extend", "post-apidealsdealidextend"],
    ["GET /api/piece-cids", "get-apipiece-cids"],
    ["Five-minute tour", "five-minute-tour"],
    ["snake_case stays", "snake_case-stays"],
  ];
  for (const [heading, slug] of cases) {
    assert(slugify(heading) === slug, `${heading} → ${slugify(heading)}, expected ${slug}`);
  }
  const anchors = anchorsOf("# A\n\n```\n# not a heading\n```\n\n## A\n### `GET /x`\n");
  assert(anchors.has("a") && anchors.has("a-1") && anchors.has("get-x"));
  assert(!anchors.has("not-a-heading"));
});

/** Files whose text may name repository paths: the docs, the code, the deployment files. */
async function textFiles(): Promise<string[]> {
  const found = [...await documents(), "main.ts", ".npmrc", ".ci/run"];
  for (const dir of ["src", "tests", "scripts", "deploy"]) {
    const files = await listFiles(ROOT.pathname, dir);
    found.push(...files.filter((path) => /\.(ts|md|sol|c|sh|env|conf|service)$/.test(path)));
  }
  return found;
}

/**
 * Repository paths named in a text: a top folder, a slash, then the rest up to
 * a letter or digit. Not when part of a longer path or a URL (`../../src/x.ts`,
 * `https://host/docs/x`): an import is checked by the compiler, a URL is not ours.
 */
export function repositoryPaths(text: string): string[] {
  const pattern = /(?<![\w./@-])(?:src|tests|scripts|deploy|docs)\/[\w./-]*\w/g;
  return [...new Set(text.match(pattern) ?? [])];
}

Deno.test("every repository path named in the README, docs/ and the code exists", async () => {
  const missing: string[] = [];
  let named = 0;
  for (const file of await textFiles()) {
    const text = await Deno.readTextFile(new URL(file, ROOT));
    for (const path of repositoryPaths(text)) {
      named++;
      if (!await pathExists(new URL(path, ROOT))) missing.push(`${file}: ${path}`);
    }
  }
  assert(named > 100, `only ${named} paths named: the walk missed the files`);
  assert(missing.length === 0, `Paths that do not exist:\n  ${missing.join("\n  ")}`);
});

Deno.test("repositoryPaths finds paths in prose and code spans, not in imports or URLs", () => {
  const text = "See `src/kernel/log.ts`, tests/http/ and docs/api.md. " +
    'import x from "../../src/kernel/wire.ts"; https://prometheus.io/docs/instrumenting/x; ' +
    "tests/<area>/x_test.ts; src/driver/disk/layout.ts:12";
  assert(
    JSON.stringify(repositoryPaths(text)) ===
      JSON.stringify([
        "src/kernel/log.ts",
        "tests/http",
        "docs/api.md",
        "src/driver/disk/layout.ts",
      ]),
    JSON.stringify(repositoryPaths(text)),
  );
});
