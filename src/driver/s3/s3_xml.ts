/**
 * Reads the few values the S3 driver needs out of S3's XML answers (error
 * codes, upload ids, listing entries), with regular expressions. Not an XML
 * parser, and on purpose: the answers are flat, machine-written documents whose
 * leaf elements hold plain text, so a dependency would buy nothing here.
 * Self-closing elements (`<Prefix/>`) read as absent.
 */

/** The text of the first `<tag>…</tag>` in xml, entities decoded; null if there is none. */
export function xmlText(xml: string, tag: string): string | null {
  const match = elementPattern(tag).exec(xml);
  return match ? decodeEntities(match[1]) : null;
}

/** The inner XML of every `<tag>…</tag>` in xml, in order (read their leaves with xmlText). */
export function xmlElements(xml: string, tag: string): string[] {
  const pattern = new RegExp(elementPattern(tag).source, "g");
  return Array.from(xml.matchAll(pattern), (match) => match[1]);
}

/** Escapes text for an element's content (the only XML the driver writes: part lists). */
export function xmlEscape(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

function elementPattern(tag: string): RegExp {
  // Tags are the driver's own constants; nothing to escape in them.
  return new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`);
}

const NAMED: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|amp|lt|gt|quot|apos);/g, (whole, name: string) => {
    if (name.startsWith("#x")) return String.fromCodePoint(parseInt(name.slice(2), 16));
    if (name.startsWith("#")) return String.fromCodePoint(parseInt(name.slice(1), 10));
    return NAMED[name] ?? whole;
  });
}
