/**
 * S3's multipart upload calls, as the driver uses them: start one, send a
 * part (bytes, or a byte range copied from another object), complete it, or
 * abort it. The staging writer (staging_writer.ts) sends parts; the
 * server-side copy of a big piece (server_side_copy.ts) copies them.
 */
import { S3RequestError } from "./s3_errors.ts";
import type { S3Client } from "./s3_client.ts";
import { xmlEscape, xmlText } from "./s3_xml.ts";

/** S3's limit on parts per upload; part sizes grow to keep a piece under it. */
export const MAX_PARTS = 10_000;
/** S3's smallest part (but the last). */
export const MIN_PART_BYTES = 5 * 1024 * 1024;

export interface CompletedPart {
  partNumber: number;
  etag: string;
}

export interface UploadTarget {
  key: string;
  uploadId: string;
}

/** Starts a multipart upload of key; its upload id. */
export async function createMultipartUpload(
  client: S3Client,
  key: string,
  signal?: AbortSignal,
): Promise<UploadTarget> {
  const answer = await client.text({ method: "POST", key, query: { uploads: "" }, signal });
  const uploadId = xmlText(answer.body, "UploadId");
  if (!uploadId) {
    throw new S3RequestError("rejected", `S3 started an upload of ${key} without an UploadId`, {
      status: answer.status,
      code: null,
      retryable: false,
    });
  }
  return { key, uploadId };
}

/** Sends part `partNumber` (1-based) of target: buffered bytes, retried by the client. */
export async function uploadPart(
  client: S3Client,
  target: UploadTarget,
  part: { partNumber: number; body: Uint8Array<ArrayBuffer>; signal?: AbortSignal },
): Promise<CompletedPart> {
  const answer = await client.text({
    method: "PUT",
    key: target.key,
    query: { partNumber: String(part.partNumber), uploadId: target.uploadId },
    body: part.body,
    signal: part.signal,
  });
  return { partNumber: part.partNumber, etag: etagOf(answer.headers, target.key) };
}

/** Makes part `partNumber` of target a copy of bytes first..last (inclusive) of sourceKey. */
export async function uploadPartCopy(
  client: S3Client,
  target: UploadTarget,
  part: {
    partNumber: number;
    sourceKey: string;
    first: number;
    last: number;
    signal?: AbortSignal;
  },
): Promise<CompletedPart> {
  const answer = await client.text({
    method: "PUT",
    key: target.key,
    query: { partNumber: String(part.partNumber), uploadId: target.uploadId },
    headers: {
      "x-amz-copy-source": client.copySourceOf(part.sourceKey),
      "x-amz-copy-source-range": `bytes=${part.first}-${part.last}`,
    },
    signal: part.signal,
    errorInBody: true,
  });
  const etag = xmlText(answer.body, "ETag");
  if (!etag) throw missingEtag(target.key, answer.status);
  return { partNumber: part.partNumber, etag };
}

/**
 * Joins the parts into the object. Should the first attempt succeed and its
 * answer be lost, the retry finds the upload gone (NoSuchUpload): then the
 * object is there with `expectedBytes`, which a HEAD confirms.
 */
export async function completeMultipartUpload(
  client: S3Client,
  target: UploadTarget,
  completion: { parts: CompletedPart[]; expectedBytes: number; signal?: AbortSignal },
): Promise<void> {
  const parts = [...completion.parts].sort((a, b) => a.partNumber - b.partNumber);
  const body = `<CompleteMultipartUpload>${
    parts.map((part) =>
      `<Part><PartNumber>${part.partNumber}</PartNumber><ETag>${xmlEscape(part.etag)}</ETag></Part>`
    ).join("")
  }</CompleteMultipartUpload>`;
  try {
    await client.text({
      method: "POST",
      key: target.key,
      query: { uploadId: target.uploadId },
      headers: { "content-type": "application/xml" },
      body,
      signal: completion.signal,
      errorInBody: true,
    });
  } catch (error) {
    if (!(error instanceof S3RequestError) || error.code !== "NoSuchUpload") throw error;
    const head = await client.open({
      method: "HEAD",
      key: target.key,
      allow: [404],
      signal: completion.signal,
    });
    await head.body?.cancel();
    if (head.status !== 200 || sizeOf(head.headers) !== completion.expectedBytes) throw error;
  }
}

/** Aborts target, dropping its parts; an upload already gone is fine. */
export async function abortMultipartUpload(client: S3Client, target: UploadTarget): Promise<void> {
  await client.text({
    method: "DELETE",
    key: target.key,
    query: { uploadId: target.uploadId },
    allow: [404],
  });
}

/** Content-Length of an answer as a number (-1 when absent). */
export function sizeOf(headers: Headers): number {
  const value = headers.get("content-length");
  return value === null ? -1 : Number(value);
}

function etagOf(headers: Headers, key: string): string {
  const etag = headers.get("etag");
  if (!etag) throw missingEtag(key, 200);
  return etag;
}

function missingEtag(key: string, status: number): S3RequestError {
  return new S3RequestError("rejected", `S3 stored a part of ${key} without an ETag`, {
    status,
    code: null,
    retryable: false,
  });
}
