/**
 * The PostgreSQL URL as the service takes it (--database): libpq's form,
 * with one host or several for a primary and its standbys,
 *
 *   postgres://user:pass@db1:5432,db2:5432/storage?target_session_attrs=read-write
 *
 * A WHATWG URL cannot hold a host list, so it is split here into one URL per
 * host (the rest, query parameters such as sslmode included, kept as given):
 * the client connects to them in turn (db/postgres/failover.ts). Read by the
 * config parser (to refuse a bad URL at start) and by the database code.
 */

export interface PostgresUrl {
  /** One URL per host, in the order given, each otherwise the URL as given. */
  hostUrls: string[];
  /** Only a server that takes writes will do: several hosts, or target_session_attrs asks it. */
  readWrite: boolean;
  /** host:port[,host:port…]/database, without user or password (for messages and logs). */
  where: string;
}

const SHAPE = /^(postgres(?:ql)?:\/\/)(?:(.*)@)?([^/?#]*)(.*)$/s;
const READ_WRITE = new Set(["read-write", "primary"]);

/** Splits url into its hosts; throws a TypeError saying what is wrong. */
export function parsePostgresUrl(url: string): PostgresUrl {
  const match = SHAPE.exec(url);
  if (match === null) throw new TypeError("it must start with postgres:// or postgresql://");
  const [, scheme, userinfo, hostList, rest] = match;
  const hosts = hostList.split(",");
  if (hosts.some((host) => host === "")) throw new TypeError("it names an empty host");
  const hostUrls = hosts.map((host) => `${scheme}${userinfo ? `${userinfo}@` : ""}${host}${rest}`);
  const parsed = hostUrls.map((single) => {
    try {
      return new URL(single);
    } catch {
      throw new TypeError(`${single.replace(/\/\/.*@/, "//…@")} is not a URL`);
    }
  });
  const first = parsed[0];
  const attrs = first.searchParams.get("target_session_attrs") ?? "any";
  if (attrs !== "any" && !READ_WRITE.has(attrs)) {
    throw new TypeError(`target_session_attrs must be any, read-write or primary (got ${attrs})`);
  }
  const database = first.pathname.replace(/^\//, "");
  return {
    hostUrls,
    readWrite: hosts.length > 1 || READ_WRITE.has(attrs),
    where: `${parsed.map((one) => one.host).join(",")}/${database}`,
  };
}

/** host:port/database of a URL, without user or password; never throws (for messages). */
export function whereOf(url: string): string {
  try {
    return parsePostgresUrl(url).where;
  } catch {
    return "(unparseable URL)";
  }
}
