/**
 * deploy/nginx.conf in front of the real service, run by the real nginx (Debian's package,
 * /usr/sbin/nginx, as the current user, everything it writes in a temp directory): the fixture
 * of tests/deploy/nginx_test.ts and nginx_offload_test.ts.
 *
 * The site file is the shipped one with only its ports, certificate paths, ACME root, the data
 * directory of the offload location and (for the drip test) header timeout swapped, each swap
 * checked to hit exactly once, so a change to the shipped file is what the tests run. The main
 * nginx.conf around it copies what Debian's /etc/nginx/nginx.conf sets around the sites it
 * includes (gzip on, sendfile on, among others). TLS is real: a throwaway CA and a certificate
 * for 127.0.0.1 made with openssl, trusted by the test's clients through
 * Deno.createHttpClient({ caCerts }); fetch talks HTTP/2 to nginx.
 *
 * Without nginx or openssl the tests are ignored (`nginxIgnored`), except in CI (CI=true), where
 * .ci/run installs both and their absence is a failure.
 */
import { startTestServer } from "./server.ts";
import type { TestServer } from "./server.ts";
import { eventually, within } from "./wait.ts";
import { ignoredWithout, requireTool } from "./debian_tools.ts";
import { openssl } from "./openssl.ts";

const SITE = new URL("../../deploy/nginx.conf", import.meta.url);

/** Whether the nginx tests are ignored here (warned about once, at import). */
export const nginxIgnored = ignoredWithout("nginx tests", "nginx", "openssl");

/** fetch, but a request gives up after 15 s: a hung proxy or server fails the test, not stalls it. */
export function fetch(
  input: string,
  init: RequestInit & { client?: Deno.HttpClient } = {},
): Promise<Response> {
  return globalThis.fetch(input, { signal: AbortSignal.timeout(15_000), ...init });
}

// ---------------------------------------------------------------------------------------------
// The fixture: service + nginx + certificates

export interface Proxy extends AsyncDisposable {
  service: TestServer;
  /** https://127.0.0.1:<port>, nginx's TLS server block. */
  https: string;
  /** http://127.0.0.1:<port>, nginx's port-80 server block. */
  http: string;
  tlsPort: number;
  /** The throwaway CA (PEM) that signed nginx's certificate. */
  caCert: string;
  dir: string;
  /** An HTTP client trusting the CA, optionally bound to a source address; closed on dispose. */
  client(localAddress?: string): Deno.HttpClient;
  errorLog(): Promise<string>;
  accessLog(): Promise<string>;
}

export interface ProxyOptions {
  serviceArgs?: string[];
  /** Replaces the shipped client_header_timeout (10s), to see it fire quickly. */
  headerTimeout?: string;
  /**
   * The group nginx's workers run with (`user nobody <group>`, when started as root): the
   * group the service's data directory is shared with, as an operator adds www-data to it.
   */
  workerGroup?: string;
}

/** A test behind a proxy of its own (startProxy with `options`), ignored as nginxIgnored says. */
export function proxyTest(
  name: string,
  options: ProxyOptions,
  fn: (proxy: Proxy) => Promise<void>,
): void {
  Deno.test({
    name,
    ignore: nginxIgnored,
    async fn() {
      await using proxy = await startProxy(options);
      await fn(proxy);
    },
  });
}

export async function startProxy(options: ProxyOptions = {}): Promise<Proxy> {
  const service = await startTestServer({
    args: ["--trusted-proxies", "127.0.0.1", ...(options.serviceArgs ?? [])],
  });
  const dir = await Deno.makeTempDir({ prefix: "nginx-test-" });
  const clients: Deno.HttpClient[] = [];
  let nginx: Nginx | null = null;
  try {
    // Started as root, nginx runs its workers as nobody: they must be able to enter the directory.
    await Deno.chmod(dir, 0o755);
    const caCert = await makeCertificates(dir);
    await Deno.mkdir(`${dir}/acme/.well-known/acme-challenge`, { recursive: true });
    const servicePort = Number(new URL(service.url).port);
    // A free port can be taken between our probe and nginx's bind: try a few pairs.
    for (let attempt = 1; nginx === null; attempt++) {
      const [tlsPort, httpPort] = [freePort(), freePort()];
      const site = siteConfig(await Deno.readTextFile(SITE), {
        tlsPort,
        httpPort,
        servicePort,
        dir,
        dataDir: service.dataDir,
        headerTimeout: options.headerTimeout,
      });
      await Deno.writeTextFile(`${dir}/site.conf`, site);
      await Deno.writeTextFile(`${dir}/nginx.conf`, mainConfig(dir, options.workerGroup));
      try {
        nginx = await startNginx(dir, tlsPort, httpPort);
      } catch (error) {
        if (attempt >= 3 || !/Address already in use/.test(String(error))) throw error;
      }
    }
    const running = nginx;
    return {
      service,
      https: `https://127.0.0.1:${running.tlsPort}`,
      http: `http://127.0.0.1:${running.httpPort}`,
      tlsPort: running.tlsPort,
      caCert,
      dir,
      client(localAddress) {
        const client = Deno.createHttpClient({ caCerts: [caCert], localAddress });
        clients.push(client);
        return client;
      },
      errorLog: () => Deno.readTextFile(`${dir}/error.log`),
      accessLog: () => Deno.readTextFile(`${dir}/access.log`),
      async [Symbol.asyncDispose]() {
        for (const client of clients) client.close();
        await running.stop();
        await service[Symbol.asyncDispose]();
        await Deno.remove(dir, { recursive: true });
      },
    };
  } catch (error) {
    for (const client of clients) client.close();
    await nginx?.stop();
    await service[Symbol.asyncDispose]();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    throw error;
  }
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/** A CA and a certificate for 127.0.0.1 it signed, as certbot's fullchain.pem and privkey.pem. */
async function makeCertificates(dir: string): Promise<string> {
  const ecKey = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  await openssl(
    `req -x509 ${ecKey} -days 1 -keyout ${dir}/ca.key -out ${dir}/ca.pem`,
    "-subj",
    "/CN=nginx test CA",
  );
  await openssl(
    `req ${ecKey} -subj /CN=127.0.0.1 -keyout ${dir}/privkey.pem -out ${dir}/server.csr`,
  );
  await Deno.writeTextFile(
    `${dir}/server.ext`,
    "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n" +
      "subjectAltName=IP:127.0.0.1\n",
  );
  await openssl(
    `x509 -req -in ${dir}/server.csr -CA ${dir}/ca.pem -CAkey ${dir}/ca.key -set_serial 1 ` +
      `-days 1 -extfile ${dir}/server.ext -out ${dir}/fullchain.pem`,
  );
  return await Deno.readTextFile(`${dir}/ca.pem`);
}

interface SiteOptions {
  tlsPort: number;
  httpPort: number;
  servicePort: number;
  dir: string;
  /** The service's data directory, which the offload location serves from. */
  dataDir: string;
  headerTimeout?: string;
}

/** The shipped site with its addresses and paths swapped for the test's; nothing else changes. */
export function siteConfig(shipped: string, o: SiteOptions): string {
  let site = shipped.replace(/(^|\s)#.*$/gm, "$1");
  const swap = (from: string, to: string) => {
    const count = site.split(from).length - 1;
    if (count !== 1) throw new Error(`deploy/nginx.conf has ${count} × "${from}", expected 1`);
    site = site.replace(from, to);
  };
  swap("listen 80;", `listen 127.0.0.1:${o.httpPort};`);
  swap("listen [::]:80;", "");
  swap("listen 443 ssl http2;", `listen 127.0.0.1:${o.tlsPort} ssl http2;`);
  swap("listen [::]:443 ssl http2;", "");
  swap("server 127.0.0.1:8080;", `server 127.0.0.1:${o.servicePort};`);
  swap("/etc/letsencrypt/live/files.example.org/fullchain.pem", `${o.dir}/fullchain.pem`);
  swap("/etc/letsencrypt/live/files.example.org/privkey.pem", `${o.dir}/privkey.pem`);
  swap("root /var/www/html;", `root ${o.dir}/acme;`);
  swap("alias /var/lib/storage-service/;", `alias ${o.dataDir}/;`);
  if (o.headerTimeout !== undefined) {
    swap("client_header_timeout 10s;", `client_header_timeout ${o.headerTimeout};`);
  }
  return site;
}

/** nginx.conf around the site: Debian's http-level settings, every path in the test's dir. */
function mainConfig(dir: string, workerGroup?: string): string {
  const user = workerGroup === undefined ? "" : `user nobody ${workerGroup};\n`;
  return `${user}worker_processes 1;
error_log ${dir}/error.log info;
events {
    worker_connections 256;
}
http {
    sendfile on;
    tcp_nopush on;
    types_hash_max_size 2048;
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    ssl_protocols TLSv1 TLSv1.1 TLSv1.2 TLSv1.3;
    ssl_prefer_server_ciphers on;
    gzip on;
    log_format proxied '$remote_addr "$request" $status $server_protocol';
    access_log ${dir}/access.log proxied;
    client_body_temp_path ${dir}/client_body_temp;
    proxy_temp_path ${dir}/proxy_temp;
    fastcgi_temp_path ${dir}/fastcgi_temp;
    uwsgi_temp_path ${dir}/uwsgi_temp;
    scgi_temp_path ${dir}/scgi_temp;
    include ${dir}/site.conf;
}
`;
}

interface Nginx {
  tlsPort: number;
  httpPort: number;
  stop(): Promise<void>;
}

/** Starts nginx in the foreground and resolves once both ports accept connections. */
async function startNginx(dir: string, tlsPort: number, httpPort: number): Promise<Nginx> {
  const child = new Deno.Command(requireTool("nginx"), {
    args: ["-p", dir, "-c", `${dir}/nginx.conf`, "-g", `daemon off; pid ${dir}/nginx.pid;`],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  let exited = false;
  const status = child.status.then((s) => {
    exited = true;
    return s;
  });
  const stop = async () => {
    if (!exited) child.kill("SIGTERM");
    // SIGTERM is nginx's fast shutdown; if it hangs, SIGKILL the master (ours, by its pid).
    await within(status, 10_000, "nginx exits on SIGTERM").catch(() => {
      if (!exited) child.kill("SIGKILL");
      return status;
    });
    await stderr;
  };
  const accepts = async (port: number) => {
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
      return true;
    } catch {
      return false;
    }
  };
  try {
    await eventually(
      async () => {
        if (exited) throw new Error(`nginx exited at start: ${await stderr}`);
        return await accepts(tlsPort) && await accepts(httpPort);
      },
      "nginx listening on both ports",
      { timeoutMs: 10_000, intervalMs: 20 },
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { tlsPort, httpPort, stop };
}
