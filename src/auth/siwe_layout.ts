/**
 * The exact layout of an EIP-4361 message, checked line by line before any
 * field is read. viem's parser is lenient (its field regex is not anchored):
 * it accepts trailing lines, a second field block, a statement over several
 * lines, zero-padded chain ids. Wallets show their "this is not the site you
 * are on" warning only for messages they can parse as SIWE, so a message a
 * wallet would not recognise must not sign anyone in here either; and one
 * linear pass also keeps a crafted message from costing the parser quadratic
 * time.
 */

const HEADER =
  /^(?:[a-zA-Z][a-zA-Z0-9+.-]*:\/\/)?[^\s/?#]+ wants you to sign in with your Ethereum account:$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
/** RFC 3339 date-time, as EIP-4361 requires for its times. */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const NO_SPACE = /^\S+$/;

/** The fields after the statement, in the order the standard fixes; `required` ones first. */
const FIELDS: { label: string; value: RegExp; required: boolean }[] = [
  { label: "URI: ", value: NO_SPACE, required: true },
  { label: "Version: ", value: /^1$/, required: true },
  { label: "Chain ID: ", value: /^[1-9][0-9]{0,15}$/, required: true },
  { label: "Nonce: ", value: /^[a-zA-Z0-9]{8,}$/, required: true },
  { label: "Issued At: ", value: DATE_TIME, required: true },
  { label: "Expiration Time: ", value: DATE_TIME, required: false },
  { label: "Not Before: ", value: DATE_TIME, required: false },
  { label: "Request ID: ", value: /^\S*$/, required: false },
];

/** Why the message is not laid out as EIP-4361 says, or null when it is. */
export function siweLayoutProblem(message: string): string | null {
  const lines = message.split("\n");
  if (!HEADER.test(lines[0])) return "its first line must be '<domain> wants you to sign in …'";
  if (!ADDRESS.test(lines[1] ?? "")) return "its second line must be the address";
  if (lines[2] !== "") return "the address must be followed by an empty line";
  // Without a statement the standard has a second empty line (`[ statement LF ] LF`); some
  // libraries write only one. With one: a line of printable text, then an empty line.
  let at = 3;
  if (lines[at] === "") {
    at = 4;
  } else if (lines[at] !== undefined && !lines[at].startsWith("URI: ")) {
    if (/[\p{Cc}]/u.test(lines[at])) return "its statement is malformed";
    if (lines[at + 1] !== "") return "the statement must be one line, followed by an empty line";
    at = 5;
  }
  for (const field of FIELDS) {
    const line = lines[at];
    if (line === undefined || !line.startsWith(field.label)) {
      if (field.required) return `'${field.label.trim()}' is missing or out of order`;
      continue;
    }
    if (!field.value.test(line.slice(field.label.length))) {
      return `its '${field.label.trim()}' value is malformed`;
    }
    at++;
  }
  if (lines[at] === "Resources:") {
    at++;
    if (lines[at] === undefined) return "'Resources:' must list at least one URI";
    for (; at < lines.length; at++) {
      if (!lines[at].startsWith("- ") || !NO_SPACE.test(lines[at].slice(2))) {
        return "each resource must be a line '- <uri>'";
      }
    }
  }
  if (at !== lines.length) return `line ${at + 1} is not part of an EIP-4361 message`;
  return null;
}
