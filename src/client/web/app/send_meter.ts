/// <reference lib="dom" />
/**
 * Real send progress. In a browser the SDK counts a request's bytes as sent
 * only when the server has answered for them (a small piece's POST, a large
 * piece's 8 MiB PATCH), and fetch() reports nothing while a request body goes
 * out; XMLHttpRequest does (xhr.upload.onprogress). So the page hands the
 * SDK a fetch that sends upload bodies (a POST or PATCH with a Blob or bytes)
 * through XHR and keeps, per request still waiting for its answer, how many
 * bytes have left the browser. Everything else goes through the browser's
 * own fetch.
 */

/** Bytes of upload bodies on the wire whose answer is not in yet. */
export class SendMeter {
  readonly #inFlight = new Map<XMLHttpRequest, number>();
  #listener: (() => void) | null = null;

  /** Sum over the requests still in flight. */
  get bytes(): number {
    let sum = 0;
    for (const loaded of this.#inFlight.values()) sum += loaded;
    return sum;
  }

  /** Who to tell when the count moves (one listener: the upload on screen). */
  listen(listener: (() => void) | null): void {
    this.#listener = listener;
  }

  update(request: XMLHttpRequest, loaded: number | null): void {
    if (loaded === null) this.#inFlight.delete(request);
    else this.#inFlight.set(request, loaded);
    this.#listener?.();
  }
}

/** A fetch for the SDK that meters upload bodies as they are sent. */
export function meteredFetch(meter: SendMeter): typeof fetch {
  return (input, init) => {
    const body = init?.body;
    const sends = init?.method === "POST" || init?.method === "PATCH";
    if (sends && (body instanceof Blob || body instanceof Uint8Array)) {
      return xhrFetch(String(input instanceof Request ? input.url : input), init, meter);
    }
    return globalThis.fetch(input, init);
  };
}

function xhrFetch(url: string, init: RequestInit, meter: SendMeter): Promise<Response> {
  const { signal } = init;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const xhr = new XMLHttpRequest();
    const settle = () => {
      meter.update(xhr, null);
      signal?.removeEventListener("abort", onAbort);
    };
    const onAbort = () => {
      settle();
      xhr.abort();
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    const method = init.method ?? "POST";
    xhr.open(method, url);
    xhr.responseType = "arraybuffer";
    new Headers(init.headers).forEach((value, name) => xhr.setRequestHeader(name, value));
    xhr.upload.onprogress = (event) => meter.update(xhr, event.loaded);
    xhr.onload = () => {
      settle();
      // A 204 (a tus PATCH's answer) may have no body, not even an empty one.
      const bodiless = xhr.status === 204 || xhr.status === 205 || xhr.status === 304;
      resolve(
        new Response(bodiless ? null : xhr.response as ArrayBuffer, {
          status: xhr.status,
          statusText: xhr.statusText,
          headers: headersOf(xhr.getAllResponseHeaders()),
        }),
      );
    };
    // As fetch does: a failure without an answer is a TypeError (the SDK's NetworkError).
    xhr.onerror = () => {
      settle();
      reject(new TypeError(`${method} ${url} failed: no answer`));
    };
    xhr.send(init.body as XMLHttpRequestBodyInit);
  });
}

/** XHR's raw "name: value\r\n" header block as Headers. */
function headersOf(raw: string): Headers {
  const headers = new Headers();
  for (const line of raw.trim().split(/[\r\n]+/)) {
    const colon = line.indexOf(":");
    if (colon > 0) headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
  }
  return headers;
}
