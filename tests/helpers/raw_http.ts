/**
 * Raw HTTP/1.1 over TCP, for what fetch cannot send: no Content-Length,
 * chunked bodies, a body cut short, or headers without a body to prove the
 * server answered before reading it.
 */
export interface RawResponse {
  status: number;
  headers: Headers;
  body: string;
}

export interface RawRequestOptions {
  /** Bytes to send after the request head (may be fewer than Content-Length). */
  body?: Uint8Array | string;
  /** Close our side after sending, simulating a client that goes away. */
  abortAfterSend?: boolean;
}

export async function rawRequest(
  port: number,
  head: string,
  options: RawRequestOptions = {},
): Promise<RawResponse | null> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    const encoder = new TextEncoder();
    await writeAll(conn, encoder.encode(head.replace(/\r?\n/g, "\r\n") + "\r\n"));
    if (options.body !== undefined) {
      const body = typeof options.body === "string" ? encoder.encode(options.body) : options.body;
      await writeAll(conn, body);
    }
    if (options.abortAfterSend) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      return null;
    }
    return await readResponse(conn);
  } finally {
    try {
      conn.close();
    } catch { /* already closed */ }
  }
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < bytes.length) offset += await conn.write(bytes.subarray(offset));
}

async function readResponse(conn: Deno.Conn): Promise<RawResponse> {
  const decoder = new TextDecoder();
  let text = "";
  const buffer = new Uint8Array(65536);
  while (true) {
    const headEnd = text.indexOf("\r\n\r\n");
    if (headEnd !== -1) {
      const [statusLine, ...lines] = text.slice(0, headEnd).split("\r\n");
      const headers = new Headers();
      for (const line of lines) {
        const i = line.indexOf(":");
        headers.append(line.slice(0, i).trim(), line.slice(i + 1).trim());
      }
      const length = Number(headers.get("content-length") ?? "0");
      let body = text.slice(headEnd + 4);
      while (new TextEncoder().encode(body).length < length) {
        const n = await conn.read(buffer);
        if (n === null) break;
        body += decoder.decode(buffer.subarray(0, n));
      }
      return { status: Number(statusLine.split(" ")[1]), headers, body };
    }
    const n = await conn.read(buffer);
    if (n === null) throw new Error(`connection closed before a response: ${JSON.stringify(text)}`);
    text += decoder.decode(buffer.subarray(0, n));
  }
}
