/**
 * Baselines the bench starts beside the service, each a child process on
 * 127.0.0.1 that is stopped by PID: the bare Deno server and, when the Debian
 * package is installed, nginx (sendfile for GET, the DAV module for PUT).
 */
import { freePort } from "./ports.ts";
export interface Baseline extends AsyncDisposable {
  name: string;
  url: string;
  pid: number;
  /** Path of a stored file named `name`. */
  getPath(name: string): string;
  /** Method and path that store a body under `name`. */
  upload(name: string): { method: string; path: string };
}

const ROOT = new URL("../..", import.meta.url).pathname;

async function waitForListenLine(process: Deno.ChildProcess): Promise<string> {
  const reader = process.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (true) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`baseline exited before listening: ${text}`);
    text += value;
    const match = /Listening on (http:\/\/\S+?)\/?$/m.exec(text);
    if (match) {
      (async () => {
        while (!(await reader.read()).done) { /* drain */ }
      })();
      return match[1];
    }
  }
}

export async function startBareDeno(dir: string): Promise<Baseline> {
  const process = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-net=127.0.0.1",
      `--allow-read=${dir}`,
      `--allow-write=${dir}`,
      `${ROOT}scripts/baselines/bare_deno.ts`,
      dir,
    ],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const url = await waitForListenLine(process);
  return servingBaseline(process, { name: "bare Deno.serve", url, uploadMethod: "POST" });
}

/** nginx with its own prefix and config, or null when nginx is not installed. */
export async function startNginx(dir: string): Promise<Baseline | null> {
  const binary = ["/usr/sbin/nginx", "/usr/bin/nginx"].find((p) => {
    try {
      return Deno.statSync(p).isFile;
    } catch {
      return false;
    }
  });
  if (!binary) return null;
  const prefix = await Deno.makeTempDir({ prefix: "bench-nginx-" });
  const port = freePort();
  await Deno.mkdir(`${prefix}/body`);
  await Deno.writeTextFile(
    `${prefix}/nginx.conf`,
    // As root, nginx's workers would drop to www-data, which cannot read our 0700 temp dirs.
    `${Deno.uid() === 0 ? "user root;\n" : ""}worker_processes auto;
pid ${prefix}/nginx.pid;
error_log stderr error;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  client_max_body_size 8g;
  client_body_temp_path ${prefix}/body;
  server {
    listen 127.0.0.1:${port};
    location = /ready { return 204; }
    location /f/ { alias ${dir}/; }
    location /u/ { alias ${dir}/; dav_methods PUT; create_full_put_path on; }
  }
}
`,
  );
  const process = new Deno.Command(binary, {
    args: ["-p", prefix, "-c", `${prefix}/nginx.conf`, "-g", "daemon off;"],
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    try {
      await (await fetch(`${url}/ready`)).body?.cancel();
      break;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return servingBaseline(process, {
    name: "nginx",
    url,
    uploadMethod: "PUT",
    cleanUp: () => Deno.remove(prefix, { recursive: true }).catch(() => {}),
  });
}

/**
 * A started baseline, serving the layout both share (bare_deno.ts and the
 * nginx config above): stored files under /f/, uploads under /u/. Disposing
 * it stops its process by PID, then cleans up what it was given to.
 */
function servingBaseline(
  process: Deno.ChildProcess,
  options: { name: string; url: string; uploadMethod: string; cleanUp?: () => Promise<void> },
): Baseline {
  return {
    name: options.name,
    url: options.url,
    pid: process.pid,
    getPath: (name) => `/f/${name}`,
    upload: (name) => ({ method: options.uploadMethod, path: `/u/${name}` }),
    async [Symbol.asyncDispose]() {
      process.kill("SIGTERM");
      await process.status;
      await options.cleanUp?.();
    },
  };
}
