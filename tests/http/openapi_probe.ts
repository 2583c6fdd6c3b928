/**
 * What a scenario of tests/http/openapi_declared_codes_test.ts sends requests with:
 * fetch, raw HTTP/1.1 (no Content-Length, chunked, bodies cut short or
 * stalled), signup and upload. Every answer, setup requests included, is
 * judged against the served document; the violations are kept for the test
 * to fail on, each naming route, status and code.
 */
import type { ApiContract, ObservedAnswer } from "./openapi_contract.ts";
import { errorCodeOf, observe } from "./openapi_contract.ts";
import type { TestServer } from "../helpers/server.ts";

export type Answer = ObservedAnswer & { body: string };

export interface SendInit {
  headers?: Record<string, string>;
  body?: BodyInit;
}

export interface RawInit {
  /** Bytes after the head; may be fewer than the Content-Length sent. */
  body?: string;
  /** Close our sending side after the body (the server sees a body cut short). */
  closeWrite?: boolean;
}

export interface Probe {
  server: TestServer;
  send(method: string, path: string, init?: SendInit): Promise<Answer>;
  /** A raw request: `head` is the request line and header lines, "\n"-separated. */
  raw(head: string, init?: RawInit): Promise<Answer>;
  /** Signs up (a fresh e-mail each time unless given) and returns the token. */
  token(body?: Record<string, unknown>): Promise<string>;
  upload(cid: string, body: string | Uint8Array<ArrayBuffer>, init?: SendInit): Promise<Answer>;
  /** Every answer that broke the document, in order. */
  violations: string[];
}

export function createProbe(server: TestServer, contract: ApiContract): Probe {
  const violations: string[] = [];
  const judged = (answer: Answer): Answer => {
    const violation = contract.violation(answer);
    if (violation) violations.push(violation);
    return answer;
  };
  let signups = 0;

  const probe: Probe = {
    server,
    violations,
    async send(method, path, init = {}) {
      const url = `${server.url}${path}`;
      const response = await fetch(url, { method, headers: init.headers, body: init.body });
      return judged(await observe(method, url, response));
    },
    async raw(head, init = {}) {
      return judged(await rawExchange(server.server.port, head, init));
    },
    async token(body = {}) {
      const answer = await probe.send("POST", "/api/auth/signup", {
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email: `user${++signups}@example.org`, label: "probe", ...body }),
      });
      if (answer.status !== 201) throw new Error(`signup failed: ${answer.body}`);
      return JSON.parse(answer.body).token;
    },
    upload(cid, body, init = {}) {
      return probe.send("POST", `/api/upload?cid=${encodeURIComponent(cid)}`, {
        headers: { "content-type": "application/octet-stream", ...init.headers },
        body,
      });
    },
  };
  return probe;
}

/**
 * One request over TCP, read back to the end of its answer (head, then as many
 * bytes as its Content-Length says). The socket stays open until the answer
 * arrives, so a stalled body is answered when the server gives up on it.
 */
async function rawExchange(port: number, head: string, init: RawInit): Promise<Answer> {
  const [method, target] = head.split(" ");
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    const encoder = new TextEncoder();
    const request = head.replace(/\n?$/, "\n").replace(/\n/g, "\r\n") + "\r\n" +
      (init.body ?? "");
    await conn.write(encoder.encode(request));
    if (init.closeWrite) await conn.closeWrite();
    const { status, headers, body } = await readAnswer(conn);
    return {
      method,
      pathname: new URL(target, "http://x").pathname,
      status,
      code: errorCodeOf(body, headers),
      headers,
      body,
    };
  } finally {
    conn.close();
  }
}

async function readAnswer(conn: Deno.Conn) {
  const decoder = new TextDecoder();
  const buffer = new Uint8Array(65536);
  let text = "";
  while (true) {
    const headEnd = text.indexOf("\r\n\r\n");
    if (headEnd !== -1) {
      const [statusLine, ...lines] = text.slice(0, headEnd).split("\r\n");
      const headers = new Headers();
      for (const line of lines) {
        const colon = line.indexOf(":");
        headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
      }
      const length = Number(headers.get("content-length") ?? "0");
      let body = text.slice(headEnd + 4);
      while (encoderLength(body) < length) {
        const n = await conn.read(buffer);
        if (n === null) break;
        body += decoder.decode(buffer.subarray(0, n));
      }
      return { status: Number(statusLine.split(" ")[1]), headers, body };
    }
    const n = await conn.read(buffer);
    if (n === null) throw new Error(`connection closed before an answer: ${JSON.stringify(text)}`);
    text += decoder.decode(buffer.subarray(0, n));
  }
}

function encoderLength(text: string): number {
  return new TextEncoder().encode(text).byteLength;
}
