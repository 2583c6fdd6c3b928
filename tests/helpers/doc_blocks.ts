/**
 * The code blocks of the docs, for the tests that run them as written: the
 * first fenced block of a language after a marker (a heading, a bold lead).
 */
export function blockAfter(markdown: string, marker: string, language: string): string {
  const at = markdown.indexOf(marker);
  if (at === -1) throw new Error(`no "${marker}" in the document`);
  const match = new RegExp("```" + language + "\\n([\\s\\S]*?)```").exec(markdown.slice(at));
  if (!match) throw new Error(`no ${language} block after ${marker}`);
  return match[1];
}

/** A sh block's command, its continuation lines joined. */
export function commandOf(block: string): string {
  return block.replace(/\\\n\s*/g, "").trim();
}
