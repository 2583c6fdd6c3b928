/**
 * The offload to nginx (--x-accel-redirect PREFIX), built from the store's
 * optional localFileOf: the X-Accel-Redirect value of a piece is the prefix
 * and the piece file's path under the data directory, which deploy/nginx.conf
 * maps back with `alias <data directory>/`. A store without local files (a
 * bucket) has nothing to offload. The retrieval code only ever sees the
 * header's value.
 */
import { joinPath } from "../kernel/fs/files.ts";
import type { PieceOffload } from "../http/retrieval/mod.ts";
import type { PieceStore } from "../driver/driver.ts";

export function pieceOffloadOf(options: {
  prefix: string | null;
  dataDir: string | null;
  store: PieceStore;
}): PieceOffload | null {
  const { prefix, dataDir, store } = options;
  if (prefix === null || dataDir === null || store.localFileOf === undefined) return null;
  const under = joinPath(dataDir, "/");
  return {
    redirectFor(key) {
      const file = store.localFileOf!(key);
      // Anything but a file under the data directory stays with the service.
      if (!file.startsWith(under)) return null;
      return prefix + file.slice(under.length).split("/").map(encodeURIComponent).join("/");
    },
  };
}
