/**
 * An independent look at tokens, as a third party would take it: plain
 * base64url JSON decoding and HMAC-SHA256 from node:crypto (not jose, which
 * the service itself uses), plus forging helpers for attack tests.
 */
import { createHmac } from "node:crypto";

/** Unpadded base64url, as JWTs use it. */
export function base64urlEncode(data: string | Uint8Array): string {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  return bytes.toBase64({ alphabet: "base64url", omitPadding: true });
}

export function base64urlDecode(text: string): string {
  return new TextDecoder().decode(Uint8Array.fromBase64(text, { alphabet: "base64url" }));
}

export function decodeToken(token: string): {
  header: Record<string, unknown>;
  payload: Record<string, unknown>;
  signature: string;
  signingInput: string;
} {
  const jwt = token.replace(/^pk_live_/, "");
  const [h, p, s] = jwt.split(".");
  return {
    header: JSON.parse(base64urlDecode(h)),
    payload: JSON.parse(base64urlDecode(p)),
    signature: s,
    signingInput: `${h}.${p}`,
  };
}

export function hmacSha256(keyHex: string, input: string): string {
  return base64urlEncode(
    createHmac("sha256", Uint8Array.fromHex(keyHex.trim())).update(input).digest(),
  );
}

/** Builds `pk_live_<jwt>` from any header and payload, signed with keyHex (or unsigned). */
export function forgeToken(
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
  keyHex: string | null,
): string {
  const input = `${base64urlEncode(JSON.stringify(header))}.${
    base64urlEncode(JSON.stringify(payload))
  }`;
  return `pk_live_${input}.${keyHex === null ? "" : hmacSha256(keyHex, input)}`;
}
