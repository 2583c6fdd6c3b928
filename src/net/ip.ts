/**
 * Just enough IP address handling for per-client caps: parsing v4/v6,
 * CIDR ranges for trusted proxies, and the key a client is counted under
 * (an IPv4 address, or the /64 an IPv6 address belongs to, because one
 * IPv6 subscriber usually holds a whole /64).
 */

/** An address as 4 (IPv4) or 16 (IPv6) bytes. */
export type IpBytes = Uint8Array;

export interface IpRange {
  bytes: IpBytes;
  prefixLength: number;
}

/** Parses an IPv4 or IPv6 literal (IPv4-mapped IPv6 becomes IPv4); null if invalid. */
export function parseIp(text: string): IpBytes | null {
  const value = text.trim().replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  if (value.includes(":")) {
    const v6 = parseIpv6(value);
    if (v6 && isIpv4Mapped(v6)) return v6.slice(12);
    return v6;
  }
  return parseIpv4(value);
}

function parseIpv4(text: string): IpBytes | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  const bytes = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    if (!/^\d{1,3}$/.test(parts[i])) return null;
    const n = Number(parts[i]);
    if (n > 255) return null;
    bytes[i] = n;
  }
  return bytes;
}

function parseIpv6(text: string): IpBytes | null {
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const parseGroups = (part: string): number[] | null => {
    if (part === "") return [];
    const groups: number[] = [];
    const pieces = part.split(":");
    for (let i = 0; i < pieces.length; i++) {
      const piece = pieces[i];
      if (i === pieces.length - 1 && piece.includes(".")) {
        const v4 = parseIpv4(piece);
        if (!v4) return null;
        groups.push((v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]);
      } else {
        if (!/^[0-9a-f]{1,4}$/i.test(piece)) return null;
        groups.push(parseInt(piece, 16));
      }
    }
    return groups;
  };
  const head = parseGroups(halves[0]);
  const tail = halves.length === 2 ? parseGroups(halves[1]) : [];
  if (!head || !tail) return null;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const groups = [...head, ...new Array(halves.length === 2 ? missing : 0).fill(0), ...tail];
  const bytes = new Uint8Array(16);
  groups.forEach((g, i) => {
    bytes[2 * i] = g >> 8;
    bytes[2 * i + 1] = g & 0xff;
  });
  return bytes;
}

function isIpv4Mapped(bytes: IpBytes): boolean {
  for (let i = 0; i < 10; i++) if (bytes[i] !== 0) return false;
  return bytes[10] === 0xff && bytes[11] === 0xff;
}

/** Parses "10.0.0.0/8, ::1, 192.168.1.7" into ranges; throws on a bad entry. */
export function parseIpRanges(list: string): IpRange[] {
  const ranges: IpRange[] = [];
  for (const entry of list.split(",").map((s) => s.trim()).filter((s) => s !== "")) {
    const [address, prefix] = entry.split("/");
    const bytes = parseIp(address);
    if (!bytes) throw new Error(`not an IP address or CIDR range: "${entry}"`);
    const maxPrefix = bytes.length * 8;
    const prefixLength = prefix === undefined ? maxPrefix : Number(prefix);
    if (!Number.isInteger(prefixLength) || prefixLength < 0 || prefixLength > maxPrefix) {
      throw new Error(`bad prefix length in "${entry}"`);
    }
    ranges.push({ bytes, prefixLength });
  }
  return ranges;
}

export function rangeContains(range: IpRange, address: IpBytes): boolean {
  if (range.bytes.length !== address.length) return false;
  let bits = range.prefixLength;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((range.bytes[i] & mask) !== (address[i] & mask)) return false;
  }
  return true;
}

/** The key a client's per-IP caps are counted under: "v4:1.2.3.4" or "v6:2001:db8:0:1::/64". */
export function clientKeyOf(address: IpBytes): string {
  if (address.length === 4) return `v4:${address.join(".")}`;
  const groups: string[] = [];
  for (let i = 0; i < 8; i += 2) groups.push(((address[i] << 8) | address[i + 1]).toString(16));
  return `v6:${groups.join(":")}::/64`;
}

/**
 * Reads one X-Forwarded-For hop: a bare address, or an address with a port as
 * some proxies write it ("1.2.3.4:5678", "[2001:db8::1]:443"). Null when the
 * hop is not an address at all ("unknown", an obfuscated name).
 */
export function parseForwardedHop(hop: string): IpBytes | null {
  const text = hop.trim();
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(text);
  if (bracketed) return parseIp(bracketed[1]);
  const v4WithPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(text);
  if (v4WithPort) return parseIp(v4WithPort[1]);
  return parseIp(text);
}

/** Longest opaque hop kept in a client key; longer ones are cut (they only name a bucket). */
const MAX_OPAQUE_HOP_CHARS = 64;

/**
 * The key a request's per-IP caps are counted under: the peer's, unless the
 * peer is a trusted proxy, in which case X-Forwarded-For is walked from the
 * right and the first hop that is not itself trusted is the client. Without
 * trusted proxies the header is ignored, so a client cannot pick its own cap
 * bucket. A hop that is not an address is the client's own opaque key
 * ("hop:unknown"): falling back to the proxy's address would put every such
 * client in the proxy's one bucket.
 */
export function resolveClientKey(
  peer: string,
  forwardedFor: string | null,
  trustedProxies: readonly IpRange[],
): string {
  const peerBytes = parseIp(peer);
  if (!peerBytes) return `peer:${peer}`;
  const isTrusted = (bytes: IpBytes) => trustedProxies.some((r) => rangeContains(r, bytes));
  if (trustedProxies.length === 0 || !forwardedFor || !isTrusted(peerBytes)) {
    return clientKeyOf(peerBytes);
  }
  const hops = forwardedFor.split(",").map((s) => s.trim()).filter((s) => s !== "");
  let client = peerBytes;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = parseForwardedHop(hops[i]);
    if (!hop) {
      // deno-lint-ignore no-control-regex
      return `hop:${hops[i].slice(0, MAX_OPAQUE_HOP_CHARS).replace(/[\x00-\x1f\x7f]/g, "?")}`;
    }
    client = hop;
    if (!isTrusted(hop)) break;
  }
  return clientKeyOf(client);
}

/**
 * Whether a request came through a trusted proxy: the peer is one of
 * trustedProxies and it forwarded the request (X-Forwarded-For, which the
 * shipped nginx.conf always sets). A client on the proxy's own machine that
 * talks to the service directly sends no such header, so it is not one.
 */
export function cameThroughTrustedProxy(
  peer: string,
  forwardedFor: string | null,
  trustedProxies: readonly IpRange[],
): boolean {
  if (trustedProxies.length === 0 || forwardedFor === null || forwardedFor.trim() === "") {
    return false;
  }
  const peerBytes = parseIp(peer);
  return peerBytes !== null && trustedProxies.some((range) => rangeContains(range, peerBytes));
}

/** A listen address only this machine can reach: localhost, 127.0.0.0/8 or ::1. */
export function isLoopbackHostname(hostname: string): boolean {
  return hostname === "localhost" || hostname === "::1" || hostname === "[::1]" ||
    hostname.startsWith("127.");
}
