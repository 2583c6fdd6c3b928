/**
 * tus requests written out by hand, for tests of the protocol's details that a
 * stock client never shows (a wrong offset, a missing header, another caller):
 * each returns the fetch Response, its body read or cancelled by the caller.
 */
import { PieceHasher } from "../../src/kernel/piece_cid/hasher.ts";
import { pieceCidV2 } from "../../src/kernel/piece_cid/cid_codec.ts";

export const TUS = { "tus-resumable": "1.0.0" };
const OFFSET_BODY = { "content-type": "application/offset+octet-stream" };

/** Upload-Metadata of `key base64(value)` pairs, as tus clients write it. */
export function uploadMetadata(fields: Record<string, string>): string {
  return Object.entries(fields)
    .map(([key, value]) => `${key} ${new TextEncoder().encode(value).toBase64()}`)
    .join(",");
}

export interface CreateInit {
  cid: string;
  length: number;
  filetype?: string;
  filename?: string;
  headers?: Record<string, string>;
  /** creation-with-upload: the first bytes (or all). */
  body?: Uint8Array<ArrayBuffer>;
  /** Another client: e.g. Deno.createHttpClient({ localAddress: "127.0.0.2" }). */
  client?: Deno.HttpClient;
}

/** POST /api/tus. */
export function tusCreate(baseUrl: string, init: CreateInit): Promise<Response> {
  const metadata: Record<string, string> = {
    cid: init.cid,
    filetype: init.filetype ?? "application/octet-stream",
  };
  if (init.filename !== undefined) metadata.filename = init.filename;
  return fetch(`${baseUrl}/api/tus`, {
    method: "POST",
    headers: {
      ...TUS,
      "upload-length": String(init.length),
      "upload-metadata": uploadMetadata(metadata),
      ...(init.body ? OFFSET_BODY : {}),
      ...init.headers,
    },
    body: init.body,
    client: init.client,
  });
}

/** Creates an upload and returns its URL (the 201's Location). */
export async function tusCreated(baseUrl: string, init: CreateInit): Promise<string> {
  const response = await tusCreate(baseUrl, init);
  await response.body?.cancel();
  if (response.status !== 201) throw new Error(`creation answered ${response.status}`);
  return response.headers.get("location")!;
}

/** PATCH bytes at offset. */
export function tusPatch(
  url: string,
  offset: number,
  bytes: Uint8Array<ArrayBuffer>,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(url, {
    method: "PATCH",
    headers: { ...TUS, ...OFFSET_BODY, "upload-offset": String(offset), ...headers },
    body: bytes,
  });
}

/** HEAD of an upload: its Upload-Offset as a number (null without one) and the status. */
export async function tusHead(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; offset: number | null; headers: Headers }> {
  const response = await fetch(url, { method: "HEAD", headers: { ...TUS, ...headers } });
  await response.body?.cancel();
  const offset = response.headers.get("upload-offset");
  return {
    status: response.status,
    offset: offset === null ? null : Number(offset),
    headers: response.headers,
  };
}

/** The PieceCIDv2 of bytes, computed here (as a client would). */
export function pieceCidOf(bytes: Uint8Array): string {
  const hasher = new PieceHasher();
  hasher.update(bytes);
  const digest = hasher.digest();
  return pieceCidV2(digest.root, digest.height, digest.padding);
}
