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
  /**
   * Simulates a client that goes away: once the body is sent, waits for this
   * (something observable, e.g. the server has the bytes), then closes our side
   * without reading an answer.
   */
  abortWhen?: () => Promise<void>;
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
    if (options.abortWhen) {
      await options.abortWhen();
      return null;
    }
    return await readResponse(conn);
  } finally {
    try {
      conn.close();
    } catch { /* already closed */ }
  }
}

export async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < bytes.length) offset += await conn.write(bytes.subarray(offset));
}

const HEAD_END = new TextEncoder().encode("\r\n\r\n");

function indexOfHeadEnd(bytes: Uint8Array): number {
  outer: for (let i = 0; i + HEAD_END.length <= bytes.length; i++) {
    for (let j = 0; j < HEAD_END.length; j++) if (bytes[i + j] !== HEAD_END[j]) continue outer;
    return i;
  }
  return -1;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

function parseHead(head: string): { status: number; headers: Headers } {
  const [statusLine, ...lines] = head.split("\r\n");
  const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
  if (!match) throw new Error(`not an HTTP/1.1 status line: ${JSON.stringify(statusLine)}`);
  const headers = new Headers();
  for (const line of lines) {
    const i = line.indexOf(":");
    headers.append(line.slice(0, i).trim(), line.slice(i + 1).trim());
  }
  return { status: Number(match[1]), headers };
}

/**
 * Reads one response from conn: its head, then Content-Length bytes of body
 * (without Content-Length, only what arrived with the head).
 */
export async function readResponse(conn: Deno.Conn): Promise<RawResponse> {
  let received: Uint8Array = new Uint8Array(0);
  const buffer = new Uint8Array(65536);
  const more = async (): Promise<boolean> => {
    const n = await conn.read(buffer);
    if (n === null) return false;
    received = concat(received, buffer.subarray(0, n));
    return true;
  };
  let headEnd: number;
  while ((headEnd = indexOfHeadEnd(received)) === -1) {
    if (!await more()) {
      throw new Error(
        `connection closed before a response: ${
          JSON.stringify(new TextDecoder().decode(received))
        }`,
      );
    }
  }
  const { status, headers } = parseHead(new TextDecoder().decode(received.subarray(0, headEnd)));
  const bodyStart = headEnd + HEAD_END.length;
  const length = Number(headers.get("content-length") ?? "0");
  while (received.length - bodyStart < length && await more()) { /* read on */ }
  return { status, headers, body: new TextDecoder().decode(received.subarray(bodyStart)) };
}

/** Parses a whole response read as text (head and body), e.g. after reading to the end. */
export function parseResponse(text: string): RawResponse {
  const headEnd = text.indexOf("\r\n\r\n");
  if (headEnd === -1) throw new Error(`not an HTTP response: ${JSON.stringify(text)}`);
  return { ...parseHead(text.slice(0, headEnd)), body: text.slice(headEnd + 4) };
}

/** The head of `POST /api/upload?cid=…` declaring `length` bytes, for a body sent by hand. */
export function uploadHead(cid: string, length: number, options: { host?: string } = {}) {
  return new TextEncoder().encode(
    `POST /api/upload?cid=${cid} HTTP/1.1\r\nHost: ${options.host ?? "x"}\r\n` +
      `Content-Type: application/octet-stream\r\nContent-Length: ${length}\r\n\r\n`,
  );
}
