/**
 * Pages through what the bucket holds under a prefix: its objects
 * (ListObjectsV2, for list() and cleanup()) and its unfinished multipart
 * uploads (ListMultipartUploads, for cleanup()). Each page is one request of
 * up to 1000 entries; entries are yielded as they arrive.
 */
import type { S3Client } from "./s3_client.ts";
import { xmlElements, xmlText } from "./s3_xml.ts";

export interface ListedObject {
  key: string;
  size: number;
  /** Milliseconds since the epoch, as S3 reports it. */
  lastModified: number;
}

export interface ListedUpload {
  key: string;
  uploadId: string;
  /** Milliseconds since the epoch, as S3 reports it. */
  initiated: number;
}

export async function* listObjects(
  client: S3Client,
  prefix: string,
): AsyncIterable<ListedObject> {
  let token: string | null = null;
  do {
    const query: Record<string, string> = { "list-type": "2", prefix };
    if (token !== null) query["continuation-token"] = token;
    const { body } = await client.text({ method: "GET", query });
    for (const entry of xmlElements(body, "Contents")) {
      yield {
        key: xmlText(entry, "Key") ?? "",
        size: Number(xmlText(entry, "Size") ?? -1),
        lastModified: Date.parse(xmlText(entry, "LastModified") ?? ""),
      };
    }
    token = isTruncated(body) ? xmlText(body, "NextContinuationToken") : null;
  } while (token !== null);
}

export async function* listMultipartUploads(
  client: S3Client,
  prefix: string,
): AsyncIterable<ListedUpload> {
  let markers: { key: string; uploadId: string } | null = null;
  do {
    const query: Record<string, string> = { uploads: "", prefix };
    if (markers !== null) {
      query["key-marker"] = markers.key;
      query["upload-id-marker"] = markers.uploadId;
    }
    const { body } = await client.text({ method: "GET", query });
    for (const entry of xmlElements(body, "Upload")) {
      yield {
        key: xmlText(entry, "Key") ?? "",
        uploadId: xmlText(entry, "UploadId") ?? "",
        initiated: Date.parse(xmlText(entry, "Initiated") ?? ""),
      };
    }
    const key = xmlText(body, "NextKeyMarker");
    const uploadId = xmlText(body, "NextUploadIdMarker");
    markers = isTruncated(body) && key !== null ? { key, uploadId: uploadId ?? "" } : null;
  } while (markers !== null);
}

function isTruncated(body: string): boolean {
  return xmlText(body, "IsTruncated") === "true";
}
