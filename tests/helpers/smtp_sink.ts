/**
 * A real SMTP server on 127.0.0.1 that accepts every message and keeps it,
 * so signup tests read the code out of a mail that really went over SMTP.
 * It speaks just enough ESMTP for a client: EHLO/HELO, AUTH PLAIN/LOGIN
 * (any credentials), MAIL, RCPT, DATA with dot-unstuffing, RSET, NOOP, QUIT.
 * `refuse` makes it answer 554 to MAIL, as a mail server that will not relay.
 */
export interface SinkMessage {
  from: string;
  to: string[];
  /** The whole message: headers, blank line, body. */
  data: string;
}

export interface SmtpSink extends AsyncDisposable {
  port: number;
  url: string;
  messages: SinkMessage[];
  /** Resolves with the next message to arrive (or one that already did, not yet taken). */
  nextMessage(): Promise<SinkMessage>;
  refuse: boolean;
}

export function startSmtpSink(): SmtpSink {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const messages: SinkMessage[] = [];
  let taken = 0;
  const waiters: ((message: SinkMessage) => void)[] = [];
  const connections = new Set<Deno.Conn>();
  const sink: SmtpSink = {
    port,
    url: `smtp://sink:secret@127.0.0.1:${port}`,
    messages,
    refuse: false,
    nextMessage() {
      if (taken < messages.length) return Promise.resolve(messages[taken++]);
      return new Promise((resolve) => waiters.push(resolve));
    },
    async [Symbol.asyncDispose]() {
      listener.close();
      for (const conn of connections) {
        try {
          conn.close();
        } catch { /* closed already */ }
      }
      await accepting;
    },
  };
  const deliver = (message: SinkMessage) => {
    messages.push(message);
    const waiter = waiters.shift();
    if (waiter) {
      taken++;
      waiter(message);
    }
  };
  const accepting = (async () => {
    try {
      for await (const conn of listener) {
        connections.add(conn);
        serve(conn, sink, deliver).catch(() => {}).finally(() => connections.delete(conn));
      }
    } catch { /* listener closed */ }
  })();
  return sink;
}

async function serve(conn: Deno.Conn, sink: SmtpSink, deliver: (m: SinkMessage) => void) {
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  const reply = async (text: string) => {
    const bytes = encoder.encode(text + "\r\n");
    let offset = 0;
    while (offset < bytes.length) offset += await conn.write(bytes.subarray(offset));
  };
  await reply("220 sink.test ESMTP ready");
  let pending = "";
  let from = "";
  let to: string[] = [];
  let data: string[] | null = null;
  let authStep: "none" | "user" | "pass" = "none";
  const buffer = new Uint8Array(64 * 1024);
  while (true) {
    const n = await conn.read(buffer);
    if (n === null) return;
    pending += decoder.decode(buffer.subarray(0, n), { stream: true });
    let end: number;
    while ((end = pending.indexOf("\r\n")) !== -1) {
      const line = pending.slice(0, end);
      pending = pending.slice(end + 2);
      if (data !== null) {
        if (line === ".") {
          deliver({ from, to, data: data.join("\r\n") });
          data = null;
          await reply("250 2.0.0 queued");
        } else {
          data.push(line.startsWith("..") ? line.slice(1) : line);
        }
        continue;
      }
      if (authStep !== "none") {
        authStep = authStep === "user" ? "pass" : "none";
        await reply(authStep === "pass" ? "334 UGFzc3dvcmQ6" : "235 2.7.0 accepted");
        continue;
      }
      const verb = line.split(" ")[0].toUpperCase();
      if (verb === "EHLO") await reply("250-sink.test\r\n250-AUTH PLAIN LOGIN\r\n250 8BITMIME");
      else if (verb === "HELO") await reply("250 sink.test");
      else if (verb === "AUTH") {
        if (/^AUTH LOGIN/i.test(line)) {
          authStep = "user";
          await reply("334 VXNlcm5hbWU6");
        } else await reply("235 2.7.0 accepted");
      } else if (verb === "MAIL") {
        if (sink.refuse) {
          await reply("554 5.7.1 relaying refused");
          continue;
        }
        from = /<([^>]*)>/.exec(line)?.[1] ?? "";
        to = [];
        await reply("250 ok");
      } else if (verb === "RCPT") {
        to.push(/<([^>]*)>/.exec(line)?.[1] ?? "");
        await reply("250 ok");
      } else if (verb === "DATA") {
        data = [];
        await reply("354 end with <CRLF>.<CRLF>");
      } else if (verb === "QUIT") {
        await reply("221 bye");
        conn.close();
        return;
      } else await reply("250 ok");
    }
  }
}
