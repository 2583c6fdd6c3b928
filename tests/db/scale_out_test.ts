/**
 * Scale-out for real: two instances of main.ts (as processes, with the start
 * task's permissions) on one PostgreSQL and one S3 bucket (Ceph radosgw),
 * behind the real nginx. A mixed load runs through nginx while one instance
 * is SIGKILLed; every upload that was answered 200 must come back
 * byte-identical through the survivor, and once the store's cleanup has run
 * no multipart upload or staging object may be left. Then a daily cap is
 * shared exactly by parallel uploads sent to both instances.
 */
import { existsSync } from "../helpers/files.ts";
import { assertEquals, assertOk } from "../helpers/assert.ts";
import { eventually, within } from "../helpers/wait.ts";
import { objectKeys, uploadKeys } from "../helpers/s3.ts";
import { scaleOutAvailable, scaleOutForTests } from "../helpers/scale_out.ts";
import { S3Store } from "../../src/driver/s3/s3_store.ts";
import { patternBytes } from "../helpers/server.ts";
import { pieceCid } from "../../src/client/sdk/piece_cid.ts";

const NGINX = "/usr/sbin/nginx";
const ci = Deno.env.get("CI") === "true";
const ignore = !scaleOutAvailable() || (!ci && !existsSync(NGINX));
/** What every instance runs with besides the deployment's database and bucket. */
const QUIET = ["--log-requests", "false"];

/** nginx in front of the instances: round robin, a dead upstream skipped (idempotent requests retried). */
async function startBalancer(upstreams: string[]): Promise<{ url: string; stop(): Promise<void> }> {
  const dir = await Deno.makeTempDir({ prefix: "scale-out-nginx-" });
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const servers = upstreams.map((u) => `server ${new URL(u).host} max_fails=1 fail_timeout=30s;`);
  await Deno.writeTextFile(
    `${dir}/nginx.conf`,
    `worker_processes 1;
error_log ${dir}/error.log warn;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  upstream storage { ${servers.join(" ")} }
  server {
    listen 127.0.0.1:${port};
    client_max_body_size 0;
    proxy_request_buffering off;
    proxy_buffering off;
    proxy_http_version 1.1;
    location / { proxy_pass http://storage; proxy_next_upstream error timeout; }
  }
}
`,
  );
  const child = new Deno.Command(NGINX, {
    args: ["-p", dir, "-c", `${dir}/nginx.conf`, "-g", `daemon off; pid ${dir}/nginx.pid;`],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const url = `http://127.0.0.1:${port}`;
  await eventually(
    async () => {
      try {
        (await Deno.connect({ hostname: "127.0.0.1", port })).close();
        return true;
      } catch {
        return false;
      }
    },
    "nginx listening",
    { timeoutMs: 10_000, intervalMs: 20 },
  );
  return {
    url,
    async stop() {
      child.kill("SIGTERM");
      await within(child.status, 10_000, "nginx exits").catch(() => {
        child.kill("SIGKILL");
        return child.status;
      });
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

async function upload(base: string, bytes: Uint8Array<ArrayBuffer>): Promise<{
  cid: string;
  status: number;
}> {
  const { cid } = await pieceCid(bytes, { pool: 0 });
  try {
    const response = await fetch(`${base}/api/upload?cid=${cid}`, {
      method: "POST",
      headers: { "content-type": "application/octet-stream" },
      body: bytes,
    });
    await response.body?.cancel();
    return { cid, status: response.status };
  } catch {
    return { cid, status: 0 }; // the connection died with the instance: not acknowledged
  }
}

Deno.test({
  name: "scale-out: two instances behind nginx, one SIGKILLed mid-load, nothing acknowledged lost",
  ignore,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using deployment = await scaleOutForTests({ args: QUIET });
    const { s3 } = deployment;
    const doomed = await deployment.spawnInstance();
    const survivor = await deployment.spawnInstance();
    const balancer = await startBalancer([doomed.url, survivor.url]);
    try {
      for (const instance of [doomed, survivor]) {
        const health = await (await fetch(`${instance.url}/healthz`)).json();
        assertEquals([health.database.backend, health.storage.source], ["postgres", "r2"]);
      }
      // The load: 60 uploads (mostly small, some of several 5 MiB parts) with reads in between.
      const sizes = Array.from(
        { length: 60 },
        (_, i) => i % 15 === 7 ? 11 * 1024 * 1024 : 1 + i * 997,
      );
      const acknowledged: { cid: string; bytes: Uint8Array<ArrayBuffer> }[] = [];
      let statuses: number[] = [];
      let killed = false;
      const queue = sizes.map((size, i) => ({ size, i }));
      const worker = async () => {
        for (let job; (job = queue.shift()) !== undefined;) {
          if (job.i === 25 && !killed) {
            killed = true;
            doomed.process.kill("SIGKILL");
          }
          const bytes = patternBytes(job.size, job.i);
          const result = await upload(balancer.url, bytes);
          statuses.push(result.status);
          if (result.status === 200) acknowledged.push({ cid: result.cid, bytes });
          if (acknowledged.length > 0 && job.i % 3 === 0) {
            const earlier = acknowledged[job.i % acknowledged.length];
            const got = await fetch(`${balancer.url}/p/${earlier.cid}`).catch(() => null);
            await got?.body?.cancel();
          }
        }
      };
      await Promise.all([worker(), worker(), worker(), worker()]);
      assertEquals(await doomed.exited, 137, "SIGKILLed");
      statuses = statuses.filter((s) => s !== 200);
      assertOk(
        acknowledged.length >= 40,
        `${acknowledged.length} of 60 acknowledged (${statuses})`,
      );
      assertOk(statuses.every((s) => s === 0 || s === 502), `refusals: ${statuses}`);
      // Every acknowledged upload, byte-identical, from the survivor and through the balancer.
      for (const { cid, bytes } of acknowledged) {
        for (const base of [survivor.url, balancer.url]) {
          const response = await fetch(`${base}/p/${cid}`);
          assertEquals(response.status, 200, cid);
          assertEquals(response.headers.get("x-service-source"), "r2");
          const got = await response.arrayBuffer().catch((error) => {
            throw new Error(
              `${base}/p/${cid} (${bytes.length} B): ${error}\n${survivor.stderr().slice(-3000)}`,
            );
          });
          assertEquals(new Uint8Array(got), bytes, cid);
        }
      }
      // What the killed instance left (a multipart upload, a staging object) goes with cleanup.
      const store = new S3Store({
        endpoint: s3.endpoint,
        bucket: s3.bucket,
        region: s3.region,
        accessKeyId: s3.accessKeyId,
        secretAccessKey: s3.secretAccessKey,
        staleUploadMs: 0,
      });
      await store.cleanup();
      assertEquals(await uploadKeys(s3), [], "no multipart upload left");
      assertEquals(await objectKeys(s3, "staging/"), [], "no staging object left");
      const stored = new Set(await objectKeys(s3, "pieces/"));
      for (const { cid } of acknowledged) assertOk(stored.has(`pieces/${cid}`), cid);
    } finally {
      await balancer.stop();
    }
  },
});

Deno.test({
  name: "scale-out: parallel uploads through two instances share one daily cap exactly",
  ignore,
  fn: sharedCap,
});

async function sharedCap(): Promise<void> {
  await using deployment = await scaleOutForTests({
    args: [...QUIET, "--sponsored-daily-cap", "20KiB"],
  });
  const a = await deployment.spawnInstance();
  const b = await deployment.spawnInstance();
  // 40 different 1 KiB pieces from one client address, half to each instance, all at once.
  const results = await Promise.all(
    Array.from(
      { length: 40 },
      (_, i) => upload(i % 2 === 0 ? a.url : b.url, patternBytes(1024, 1000 + i)),
    ),
  );
  const accepted = results.filter((r) => r.status === 200).length;
  assertEquals(accepted, 20, `statuses: ${results.map((r) => r.status)}`);
  assertEquals(results.filter((r) => r.status === 429).length, 20);
  const limits = await (await fetch(`${b.url}/api/limits`)).json();
  assertEquals(limits.usedTodayBytes, 20 * 1024, JSON.stringify(limits));
}
