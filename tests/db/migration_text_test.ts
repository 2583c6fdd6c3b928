/**
 * A shipped migration never changes: existing databases were migrated with
 * its text, and a fresh one must end up with the same schema. Some migrations
 * of both dialects are built from shared table definitions
 * (src/db/shared_tables.ts), so an edit there would change shipped migrations
 * without touching their files; this pins each migration's text by its
 * SHA-256. A new migration adds its line here; an old line never changes.
 */
import { assertEquals } from "../helpers/assert.ts";
import { MIGRATIONS } from "../../src/db/sqlite/migrations/mod.ts";
import { POSTGRES_MIGRATIONS } from "../../src/db/postgres/migrations.ts";

const SQLITE_SHA256: Record<number, string> = {
  1: "8c354f80ca7fa49515b5f73dc1aaf73780c71bb42cef7e3cb6efee42414033c9",
  2: "bb69c57f86b1b8f63fc30b7ac5f0093887f8a6a6e8f3bbf7fcd561cc6c610662",
  3: "6cfec31a1932e4f5cee3ae4872e7feae4be0ca0d3df2635d79bcda07a5f18f04",
  4: "8432d7b4fc3ad90559badc5e622f05d56ee1acb23e5f780403e163ec3aa68f85",
  5: "0e22395b072ea97b5de17512c4e19c12358fe0d9de9d41b892a4371f26070637",
  6: "779df1891cb6cdfbae17de61d4bd205cbb3d0954001d613cbe91c79e5ea6b853",
  7: "106a02137babb83bd3e0108922bb64a7aac9eaeed29b07c3efba4961d14bdd6a",
  8: "12b12b24922776ca02cd1d12190c124774e470b9a5e92355772ec8e0c18c6f99",
  9: "5144739e58147f96e9d7d472116f089a4302d6fb0db9f0639185fe7b87b5a8c8",
  10: "e4bdd01b0108568f04789199346eb4e3e0a602665605c246939920690ec73bab",
  11: "d1b3139413c619c7cbdcede2fe0098c4a29d1ade2b67c9ba139822a51e5a51f7",
  12: "328b2346afe55a040f487ca35aa5ec9c6ffbf308e1259d049a5852fd68f809bd",
  13: "64069c01c2e014bfd9bfe5625d8215142ddaa16ea563f18e204b5194dd42c60a",
  14: "134335478cd7d376f5595f1209eaac85c9b84850a9bcf0d5b98ed8216ed147d4",
  15: "0b4a0096faffa5073ebcac7ef543db95b63301627f08bc60b79241fe8e711277",
  16: "47420296aea25e855cae5f98b229b41803a43404c50032f2da2b4752d5c4ef1f",
  17: "204a548a100a4faef1ce62a69c89609f68f92f0a6ca29e5231de44eba8f56e2d",
  18: "4d86df06ec6361ee80a6af19a042efeae01ceb9b3072fadb8a62fb422c8bd666",
};

const POSTGRES_SHA256: Record<number, string> = {
  1: "1903819c6f7f81578f9950cecb893cc450becbf23d2b2a710ce80196571d7722",
  2: "ca9967985cc7121a9726b7dd83886a5c460a6ca82589768c877b027b8b4256a4",
  3: "bf4d71ce57926fde8a35d700e21eca7e6225ad04c4f3f31bf152dbe63f46fd3a",
  4: "770ff4e9e6050f467cfa3dd1d1fb7ffebd1788ff2bb86c6d4695222dad93dd59",
  5: "9ff25db577830facf7684b1957b6ab6231d828c587fae0bb9a744415c83de3fe",
  6: "4ec71e4ce01aaa28d97e846664ed9f737166abd1e3dcd562b7598627a2a4777d",
  7: "92f4c292a8d2b393295028cb24accad286a111bc7040a3a701af62a9ff29048e",
  8: "0b4a0096faffa5073ebcac7ef543db95b63301627f08bc60b79241fe8e711277",
  10: "99fcf903c369ddbe50f2dc9dbf94d5928f0563abbc5d766421a1aacb7eaa0dd8",
  11: "d2f840f44fb6f712034b278339b696a9ea4acf7acc515354631a1199f8a8bd78",
  12: "3f66569cb7de70ad94c730e5b28e1c3fe8afa7e5de9b4efb1a4c4b3c5faa0a45",
  13: "4108c781fd18a84dff67550d905afe0c77ce048be7e89ff5bdff5b23d2de2ef3",
};

async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** Each migration's digest by version, to compare with a pinned table as a whole. */
async function digestsOf(migrations: readonly { version: number; sql: string }[]) {
  const digests: Record<number, string> = {};
  for (const { version, sql } of migrations) digests[version] = await sha256Hex(sql);
  return digests;
}

Deno.test("migrations: the text of every shipped SQLite migration is as it shipped", async () => {
  assertEquals(await digestsOf(MIGRATIONS), SQLITE_SHA256);
});

Deno.test("migrations: the text of every shipped PostgreSQL migration is as it shipped", async () => {
  assertEquals(await digestsOf(POSTGRES_MIGRATIONS), POSTGRES_SHA256);
});
