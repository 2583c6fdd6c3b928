/**
 * tus-js-client (the tus reference client, its Node build through Deno's
 * node:http) for tests: one upload run to its end, or aborted (optionally
 * terminated) once a share of its bytes was sent, or resumed from an earlier
 * one's URL, with the URLs kept in memory as a browser keeps them in
 * localStorage.
 */
import { Buffer } from "node:buffer";
import * as tus from "tus-js-client";

/** The Node build takes a Buffer (not a bare Uint8Array): wrapped without copying. */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** URL storage in memory: the Node build ships only a file-based one and a no-op. */
export class MemoryUrlStorage implements tus.UrlStorage {
  readonly map = new Map<string, tus.PreviousUpload>();
  findAllUploads(): Promise<tus.PreviousUpload[]> {
    return Promise.resolve([...this.map].map(([key, value]) => ({ ...value, urlStorageKey: key })));
  }
  findUploadsByFingerprint(fingerprint: string): Promise<tus.PreviousUpload[]> {
    return Promise.resolve(
      [...this.map].filter(([key]) => key.startsWith(`tus::${fingerprint}::`))
        .map(([key, value]) => ({ ...value, urlStorageKey: key })),
    );
  }
  removeUpload(key: string): Promise<void> {
    this.map.delete(key);
    return Promise.resolve();
  }
  addUpload(fingerprint: string, upload: tus.PreviousUpload): Promise<string> {
    const key = `tus::${fingerprint}::${crypto.randomUUID()}`;
    this.map.set(key, upload);
    return Promise.resolve(key);
  }
}

export interface TusOutcome {
  /** The upload's URL (null if it was never created). */
  url: string | null;
  aborted: boolean;
  /** How many earlier uploads of the same file the URL storage had (resume: true). */
  previous?: number;
  /** The answer that finished the upload. */
  lastResponse?: tus.HttpResponse;
  /** Bytes the client counted as sent, each onProgress. */
  progress: number[];
}

export interface TusControl {
  /** Abort once this share of the bytes was sent (0..1). */
  abortAt?: number;
  /** With abortAt: terminate (DELETE) instead of a plain abort. */
  terminate?: boolean;
  /** Continue the newest upload the URL storage has of this file. */
  resume?: boolean;
}

/** Runs one tus-js-client Upload; resolves when it succeeds or is aborted, rejects on its error. */
export function tusUpload(
  file: Uint8Array,
  options: tus.UploadOptions,
  control: TusControl = {},
): Promise<TusOutcome> {
  return new Promise((resolve, reject) => {
    const outcome: TusOutcome = { url: null, aborted: false, progress: [] };
    const upload = new tus.Upload(asBuffer(file), {
      retryDelays: [0, 200, 500],
      ...options,
      onProgress(sent, total) {
        outcome.progress.push(sent);
        if (control.abortAt === undefined || outcome.aborted || sent < control.abortAt * total) {
          return;
        }
        outcome.aborted = true;
        upload.abort(control.terminate).then(() => {
          outcome.url = upload.url;
          resolve(outcome);
        }, reject);
      },
      onSuccess({ lastResponse }) {
        outcome.url = upload.url;
        outcome.lastResponse = lastResponse;
        resolve(outcome);
      },
      onError: reject,
    });
    if (!control.resume) return upload.start();
    upload.findPreviousUploads().then((previous) => {
      outcome.previous = previous.length;
      if (previous.length > 0) upload.resumeFromPreviousUpload(previous[0]);
      upload.start();
    }, reject);
  });
}

/** Upload-Metadata as tus-js-client sends it: the keys the service reads. */
export function tusMetadata(cid: string, filename?: string): Record<string, string> {
  return {
    cid,
    filetype: "application/octet-stream",
    ...(filename === undefined ? {} : { filename }),
  };
}
