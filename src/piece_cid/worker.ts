/**
 * A hashing Worker: receives full segments, answers their subtree roots and
 * hands the buffer back for reuse. Stateless between messages.
 */
/// <reference lib="deno.worker" />
import { createKernel } from "./kernel.ts";
import { hashSegment, SEGMENT_BYTES } from "./segment.ts";

export interface SegmentRequest {
  id: number;
  buffer: ArrayBuffer;
}

export interface SegmentResponse {
  id: number;
  root: Uint8Array;
  buffer: ArrayBuffer;
}

const kernel = createKernel();

self.onmessage = (event: MessageEvent<SegmentRequest>) => {
  const { id, buffer } = event.data;
  kernel.io.set(new Uint8Array(buffer, 0, SEGMENT_BYTES));
  const root = hashSegment(kernel);
  const response: SegmentResponse = { id, root, buffer };
  self.postMessage(response, [buffer]);
};
