/**
 * The client SDK: upload files (split into pieces plus a manifest when they
 * are over the tier's per-file cap, resumable, retried), download them back
 * checked against their cids, compute piece cids locally, and call the
 * account API. Web APIs only (fetch, streams, Blob, WebAssembly, Workers), so
 * the same module runs in Deno and bundled for a browser; reading files from
 * disk is ./fs.ts (Deno), the runtime's fast SHA-256 ./native_sha256.ts.
 *
 * @example
 * import { StorageClient } from "./src/client/sdk/mod.ts";
 * import { fileSource } from "./src/client/sdk/fs.ts";
 * using client = new StorageClient({ server: "http://127.0.0.1:8080", token });
 * const result = await client.upload(await fileSource("video.mp4"), {
 *   filename: "video.mp4",
 *   contentType: "video/mp4",
 *   onProgress: (p) => console.log(p.phase, p.bytesHashed, p.bytesSent),
 * });
 * const bytes = await client.download(result.cid); // ReadableStream of the original bytes
 */
export { StorageClient } from "./client.ts";
export { uploadThroughLink } from "./upload_link.ts";
export type { LinkUploadOptions } from "./upload_link.ts";
export { pieceCid } from "./piece_cid.ts";
export type { CidSource, PieceCid, PieceCidOptions } from "./piece_cid.ts";
export { NetworkError, StorageError, VerificationError } from "./errors.ts";
export type { VerificationFailure } from "./errors.ts";
export { MANIFEST_CONTENT_TYPE } from "./types.ts";
// types.ts holds the public shapes and nothing else: all of it is the SDK's surface.
export type * from "./types.ts";
export type * from "./api_types.ts";
export { parseManifest, serializeManifest } from "./manifest.ts";
export { SplitFiles } from "./split_files.ts";
export type { ListedFile, ListedPart, ManifestReader } from "./split_files.ts";
export { DEFAULT_PIECE_SIZE, planPieces } from "./upload.ts";
export { RESUMABLE_ABOVE_BYTES } from "./piece_sending.ts";
export { createSha256 } from "./sha256.ts";
export { HashWorkerPool } from "../../kernel/piece_cid/mod.ts";
