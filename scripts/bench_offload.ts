/**
 * Bench workload 12: a 100 MiB GET behind nginx with the offload
 * (--x-accel-redirect /_pieces/: nginx sends the file itself) against nginx
 * serving the same file from its own location, in the same run. Goal: 0.8x or
 * more, with every header of the service's answer there and a range answered
 * by nginx. For context, the same GET through nginx without the offload and
 * from the service direct.
 *
 * nginx runs a config of its own around the shipped deploy/nginx.conf's
 * /_pieces/ location, taken from that file (its alias swapped for the
 * service's data directory), and a proxy location with the shipped proxy
 * settings that matter here (HTTP/1.1 keep-alive upstream, no buffering). No
 * TLS: it would cost the contenders alike and the ratio is what is measured.
 * Everything listens on 127.0.0.1 and is stopped by PID.
 */
import { spawnServer, streamUpload } from "./lib/spawn_server.ts";
import type { SpawnedServer } from "./lib/spawn_server.ts";
import { download, rotated, timed } from "./lib/measure.ts";
import { summarize } from "./bench_piece_cid.ts";
import type { Summary } from "./bench_piece_cid.ts";

const MIB = 1024 * 1024;
const SIZE = 100 * MIB;
const NGINX = "/usr/sbin/nginx";
const SITE = new URL("../deploy/nginx.conf", import.meta.url);

export interface OffloadResult {
  MBps: Record<string, Summary>;
  ratio: number;
  headersIntact: boolean;
  rangeAnswered: boolean;
}

/** The /_pieces/ location of the shipped site, its alias pointed at dataDir. */
export async function shippedOffloadLocation(dataDir: string): Promise<string> {
  const site = await Deno.readTextFile(SITE);
  const start = site.indexOf("    location /_pieces/ {");
  const end = site.indexOf("\n    }\n", start);
  if (start < 0 || end < 0) throw new Error("deploy/nginx.conf has no /_pieces/ location");
  const block = site.slice(start, end + 6).replace(/(^|\s)#.*$/gm, "$1");
  if (!block.includes("alias /var/lib/storage-service/;")) throw new Error("no alias to swap");
  return block.replace("alias /var/lib/storage-service/;", `alias ${dataDir}/;`);
}

export async function benchOffload(options: {
  runs: number;
  chunk: Uint8Array;
}): Promise<OffloadResult | { skipped: string }> {
  if (!await Deno.stat(NGINX).then(() => true, () => false)) {
    return { skipped: "nginx is not installed (apt-get install nginx)" };
  }
  const dirs = await Promise.all(
    ["offloaded", "plain", "files", "nginx"].map((name) =>
      Deno.makeTempDir({ prefix: `bench-offload-${name}-` })
    ),
  );
  const [offloadedDir, plainDir, filesDir, nginxDir] = dirs;
  try {
    const proxyArgs = ["--trusted-proxies", "127.0.0.1", "--sponsored-max-file-size", "1GiB"];
    await using offloaded = await spawnServer(offloadedDir, [
      ...proxyArgs,
      ...["--x-accel-redirect", "/_pieces/"],
    ]);
    await using plain = await spawnServer(plainDir, proxyArgs);
    for (const service of [offloaded, plain]) {
      const stored = await streamUpload({
        url: service.url,
        cid: "benchoffload1",
        size: SIZE,
        ...options,
      });
      if (stored.status !== 200) throw new Error(stored.body);
    }
    const big = new Uint8Array(SIZE);
    for (let i = 0; i < SIZE; i += options.chunk.length) big.set(options.chunk, i);
    await Deno.writeFile(`${filesDir}/big`, big);
    await using nginx = await startNginx({
      dir: nginxDir,
      offloaded,
      plain,
      filesDir,
      offloadLocation: await shippedOffloadLocation(offloadedDir),
    });
    const contenders = [
      { name: "nginx, offload", url: `${nginx.url}/p/benchoffload1` },
      { name: "nginx, its own file", url: `${nginx.url}/files/big` },
      { name: "nginx, no offload", url: `${nginx.url}/plain/p/benchoffload1` },
      { name: "service direct", url: `${plain.url}/p/benchoffload1` },
    ];
    const rates: Record<string, number[]> = Object.fromEntries(contenders.map((c) => [c.name, []]));
    for (const { url } of contenders) await download(url);
    for (let run = 0; run < options.runs; run++) {
      for (const { name, url } of rotated(contenders, run)) {
        let bytes = 0;
        const seconds = await timed(async () => bytes = await download(url));
        if (bytes !== SIZE) throw new Error(`${name}: ${bytes} bytes`);
        rates[name].push(SIZE / 1e6 / seconds);
      }
    }
    const MBps = Object.fromEntries(
      Object.entries(rates).map(([name, values]) => [name, summarize(values)]),
    );
    return {
      MBps,
      ratio: Math.round(
        (MBps["nginx, offload"].median / MBps["nginx, its own file"].median) * 100,
      ) / 100,
      ...await checkAnswers(nginx.url, plain.url),
    };
  } finally {
    for (const dir of dirs) await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** The offloaded answer has the service's headers (less the hop's), and nginx cuts a range. */
async function checkAnswers(nginxUrl: string, serviceUrl: string) {
  const viaGet = await fetch(`${nginxUrl}/p/benchoffload1`);
  await viaGet.body?.cancel();
  const direct = await fetch(`${serviceUrl}/p/benchoffload1`, { method: "HEAD" });
  await direct.body?.cancel();
  // Every header the service sends without the offload, with the same value (Date aside).
  const hop = new Set(["date", "connection", "keep-alive"]);
  const headersIntact =
    [...direct.headers].every(([name, value]) =>
      hop.has(name) || viaGet.headers.get(name) === value
    ) && viaGet.headers.get("last-modified") === null;
  const range = await fetch(`${nginxUrl}/p/benchoffload1`, { headers: { range: "bytes=100-199" } });
  const rangeAnswered = range.status === 206 &&
    range.headers.get("content-range") === `bytes 100-199/${SIZE}` &&
    (await range.arrayBuffer()).byteLength === 100;
  return { headersIntact, rangeAnswered };
}

interface Nginx extends AsyncDisposable {
  url: string;
}

async function startNginx(o: {
  dir: string;
  offloaded: SpawnedServer;
  plain: SpawnedServer;
  filesDir: string;
  offloadLocation: string;
}): Promise<Nginx> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const upstream = (url: string) => new URL(url).host;
  const proxy = `proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header X-Forwarded-For $remote_addr;
        proxy_buffering off;`;
  await Deno.mkdir(`${o.dir}/temp`);
  await Deno.writeTextFile(
    `${o.dir}/nginx.conf`,
    // As root, the workers are root too (the temp directories are 0700, the service's 0710).
    `${Deno.uid() === 0 ? "user root;\n" : ""}worker_processes auto;
pid ${o.dir}/nginx.pid;
error_log stderr error;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  include /etc/nginx/mime.types;
  default_type application/octet-stream;
  client_body_temp_path ${o.dir}/temp;
  proxy_temp_path ${o.dir}/temp;
  upstream offloaded { server ${upstream(o.offloaded.url)}; keepalive 16; }
  upstream plain { server ${upstream(o.plain.url)}; keepalive 16; }
  server {
    listen 127.0.0.1:${port};
    gzip off;
    location = /ready { return 204; }
    location /files/ { alias ${o.filesDir}/; }
${o.offloadLocation}
    location /plain/ {
        proxy_pass http://plain/;
        ${proxy}
    }
    location / {
        proxy_pass http://offloaded;
        ${proxy}
    }
  }
}
`,
  );
  const process = new Deno.Command(NGINX, {
    args: ["-p", o.dir, "-c", `${o.dir}/nginx.conf`, "-g", "daemon off;"],
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    const ready = await fetch(`${url}/ready`).then((r) => r.status === 204, () => false);
    if (ready) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    url,
    async [Symbol.asyncDispose]() {
      process.kill("SIGTERM");
      await process.status;
    },
  };
}
