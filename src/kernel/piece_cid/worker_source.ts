/**
 * The hashing Worker's code, as a data: URL. A Worker started from a file
 * needs read permission on that file, which the server's narrow permission
 * flags (and a compiled binary) do not grant; a data: URL needs none. A web
 * page under a strict Content-Security-Policy cannot start data: Workers: the
 * server serves the same code (hashWorkerSource) at a URL of its own. The
 * code is this file's `workerMain`, serialised with Function#toString, so it
 * is type-checked like everything else but must not refer to anything outside
 * itself: the kernel arrives as base64 in its arguments.
 */
import { COMMP_WASM_BASE64 } from "./wasm/commp_wasm.ts";
import { SEGMENT_BYTES, SEGMENT_CHUNKS, SEGMENT_LEVEL } from "./segment.ts";

export interface SegmentRequest {
  id: number;
  buffer: ArrayBuffer;
}

export interface SegmentResponse {
  id: number;
  root: Uint8Array;
  buffer: ArrayBuffer;
}

interface WorkerScope {
  onmessage: ((event: MessageEvent<SegmentRequest>) => void) | null;
  postMessage(message: SegmentResponse, transfer: Transferable[]): void;
}

function workerMain(wasmBase64: string, segment: { bytes: number; chunks: number; level: number }) {
  const scope = globalThis as unknown as WorkerScope;
  const binary = Uint8Array.fromBase64(wasmBase64);
  // deno-lint-ignore no-explicit-any
  const kernel = new WebAssembly.Instance(new WebAssembly.Module(binary), {}).exports as any;
  kernel.init();
  const io = new Uint8Array(kernel.memory.buffer, kernel.io_pointer(), 127 * kernel.io_chunks());
  scope.onmessage = (event) => {
    const { id, buffer } = event.data;
    io.set(new Uint8Array(buffer, 0, segment.bytes));
    kernel.reset();
    kernel.update(segment.chunks);
    kernel.finish(0, segment.level);
    scope.postMessage({ id, root: io.slice(0, 32), buffer }, [buffer]);
  };
}

let source: string | null = null;
let url: string | null = null;

/** The hashing Worker's script: workerMain called with the kernel (built once). */
export function hashWorkerSource(): string {
  source ??= `(${workerMain.toString()})(${JSON.stringify(COMMP_WASM_BASE64)}, ${
    JSON.stringify({ bytes: SEGMENT_BYTES, chunks: SEGMENT_CHUNKS, level: SEGMENT_LEVEL })
  });`;
  return source;
}

/** The data: URL of the hashing Worker (built once). */
export function hashWorkerUrl(): string {
  url ??= "data:application/javascript," + encodeURIComponent(hashWorkerSource());
  return url;
}
