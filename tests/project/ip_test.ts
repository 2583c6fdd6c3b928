import { assertEquals } from "../helpers/assert.ts";
import { parseForwardedHop, parseIp, parseIpRanges, resolveClientKey } from "../../src/net/ip.ts";

const key = (peer: string, xff: string | null = null, proxies = "") =>
  resolveClientKey(peer, xff, parseIpRanges(proxies));

Deno.test("ip: IPv4, IPv6 and IPv4-mapped addresses parse", () => {
  assertEquals(parseIp("1.2.3.4"), new Uint8Array([1, 2, 3, 4]));
  assertEquals(parseIp("::ffff:1.2.3.4"), new Uint8Array([1, 2, 3, 4]));
  assertEquals(parseIp("::1")?.length, 16);
  assertEquals(parseIp("2001:db8::1")?.[1], 0x01);
  for (const bad of ["1.2.3", "256.1.1.1", "1::2::3", "gggg::1", "", "1.2.3.4.5"]) {
    assertEquals(parseIp(bad), null, bad);
  }
});

Deno.test("ip: IPv6 clients are grouped by /64", () => {
  assertEquals(key("2001:db8:0:1::1"), "v6:2001:db8:0:1::/64");
  assertEquals(key("2001:db8:0:1:ffff:ffff:ffff:ffff"), "v6:2001:db8:0:1::/64");
  assertEquals(key("2001:db8:0:2::1") === key("2001:db8:0:1::1"), false);
  assertEquals(key("198.51.100.7"), "v4:198.51.100.7");
});

Deno.test("ip: X-Forwarded-For is ignored unless the peer is a trusted proxy", () => {
  assertEquals(key("198.51.100.7", "203.0.113.9"), "v4:198.51.100.7");
  assertEquals(key("198.51.100.7", "203.0.113.9", "10.0.0.0/8"), "v4:198.51.100.7");
  assertEquals(key("10.1.2.3", "203.0.113.9", "10.0.0.0/8"), "v4:203.0.113.9");
});

Deno.test("ip: the rightmost untrusted hop of X-Forwarded-For is the client", () => {
  // A client-supplied left part cannot choose the bucket.
  assertEquals(
    key("10.0.0.2", "1.1.1.1, 203.0.113.9, 10.0.0.1", "10.0.0.0/8"),
    "v4:203.0.113.9",
  );
});

Deno.test("ip: hops with a port count as their address; other hops are their own opaque key", () => {
  const proxies = "10.0.0.0/8";
  assertEquals(key("10.0.0.2", "203.0.113.9:5678", proxies), "v4:203.0.113.9");
  assertEquals(key("10.0.0.2", "[2001:db8:0:1::7]:443", proxies), "v6:2001:db8:0:1::/64");
  assertEquals(key("10.0.0.2", "[2001:db8:0:1::7]", proxies), "v6:2001:db8:0:1::/64");
  // Not an address: a bucket of its own, never the proxy's (which every such client would share).
  assertEquals(key("10.0.0.2", "unknown", proxies), "hop:unknown");
  assertEquals(key("10.0.0.2", "203.0.113.9, _hidden", proxies), "hop:_hidden");
  assertEquals(key("10.0.0.2", "unknown\u0001x", proxies), "hop:unknown?x");
  assertEquals(parseForwardedHop("1.2.3.4:80"), new Uint8Array([1, 2, 3, 4]));
});
