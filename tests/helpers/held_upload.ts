/**
 * An upload held open by a client on any loopback source address (127.0.0.x
 * plays another client): the request head and part of the body are sent, the
 * rest when the test says. node:net binds the source address, which
 * Deno.connect cannot.
 */
import * as net from "node:net";
import { parseResponse } from "./raw_http.ts";
import type { RawResponse } from "./raw_http.ts";

export interface HeldUpload {
  /** The server's answer, once one has arrived whole; null if the connection closed without one. */
  readonly response: Promise<RawResponse | null>;
  /** Whether an answer (or the close) has arrived. */
  readonly answered: boolean;
  send(bytes: Uint8Array): Promise<void>;
  close(): void;
}

export interface HoldOptions {
  port: number;
  /** Source address, e.g. "127.0.0.2". */
  from: string;
  /** POST unless given (PATCH for a tus append). */
  method?: string;
  path: string;
  /** The body's Content-Type (default application/octet-stream). */
  contentType?: string;
  /** The declared Content-Length. */
  length: number;
  /** Extra request head lines, e.g. ["Authorization: Bearer …"]. */
  headers?: string[];
  /** Body bytes sent at once (default 1 KiB of zeros). */
  first?: Uint8Array;
}

export async function holdUpload(options: HoldOptions): Promise<HeldUpload> {
  const socket = net.connect({ host: "127.0.0.1", port: options.port, localAddress: options.from });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  let answered = false;
  const response = new Promise<RawResponse | null>((resolve) => {
    let text = "";
    const settle = (value: RawResponse | null) => {
      answered = true;
      resolve(value);
    };
    socket.on("data", (chunk: Uint8Array) => {
      text += new TextDecoder().decode(chunk);
      const headEnd = text.indexOf("\r\n\r\n");
      if (headEnd === -1) return;
      const parsed = parseResponse(text);
      const length = Number(parsed.headers.get("content-length") ?? "0");
      if (new TextEncoder().encode(parsed.body).length >= length) settle(parsed);
    });
    socket.on("close", () => settle(text.includes("\r\n\r\n") ? parseResponse(text) : null));
    socket.on("error", () => {}); // a reset shows as the close above
  });
  const send = (bytes: Uint8Array) =>
    new Promise<void>((resolve) => {
      if (socket.destroyed) return resolve();
      socket.write(bytes, () => resolve());
    });
  const head = [
    `${options.method ?? "POST"} ${options.path} HTTP/1.1`,
    "Host: 127.0.0.1",
    `Content-Type: ${options.contentType ?? "application/octet-stream"}`,
    `Content-Length: ${options.length}`,
    ...(options.headers ?? []),
    "",
    "",
  ].join("\r\n");
  await send(new TextEncoder().encode(head));
  await send(options.first ?? new Uint8Array(1024));
  return {
    response,
    get answered() {
      return answered;
    },
    send,
    close: () => socket.destroy(),
  };
}
