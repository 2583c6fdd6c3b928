/** Temp directories and listing what lies under one, for tests that check what was (or was not) written. */

/** Every file under a directory (not the directories), as relative paths, sorted; none if it is not there. */
export async function listFiles(dir: string, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  try {
    for await (const entry of Deno.readDir(`${dir}/${prefix}`)) {
      const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.isDirectory) out.push(...await listFiles(dir, rel));
      else out.push(rel);
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return out.sort();
}

/** Whether a path exists (false only for "not found"), for module-level checks of what is installed. */
export function existsSync(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/**
 * Runs fn with a fresh temp directory, removed with all it holds afterwards
 * (whatever fn did): the try/finally each test that writes files needs.
 */
export async function withTempDir(
  prefix: string,
  fn: (dir: string) => Promise<void> | void,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
