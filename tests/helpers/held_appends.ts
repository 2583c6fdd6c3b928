/**
 * A store whose resumable (tus) appends let the first bytes of each request
 * in and then hold the body until the request is aborted (the client left,
 * or a newer request for the upload arrived) or the test releases them: a
 * client caught mid-piece, for tests of what it does when interrupted.
 */
import { withOverrides } from "./overrides.ts";
import type { PartialStore, PieceStore } from "../../src/driver/driver.ts";

/** A store whose resumable appends pass `first` bytes, then hold until aborted or released. */
export function holdingAppends(partials: PartialStore, first: number) {
  const state = { held: false, release: Promise.withResolvers<void>() };
  const append: PartialStore["append"] = (partial, body, options) => {
    let passed = 0;
    const reader = body.getReader();
    const held = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (passed >= first) {
          state.held = true;
          const aborted = new Promise<void>((resolve) =>
            options.signal?.addEventListener("abort", () => resolve(), { once: true })
          );
          await Promise.race([state.release.promise, aborted]);
          if (options.signal?.aborted) return controller.close();
        }
        const { value, done } = await reader.read();
        if (done) return controller.close();
        passed += value.byteLength;
        controller.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    });
    return partials.append(partial, held, options);
  };
  return { state, partials: withOverrides(partials, { append }) };
}

/** startTestServer's wrapStore holding appends; `hold.state` once the server is built. */
export function holdingStore(first: number) {
  const hold = { state: null as ReturnType<typeof holdingAppends>["state"] | null };
  const wrapStore = (store: PieceStore) => {
    const held = holdingAppends(store.partials, first);
    hold.state = held.state;
    return withOverrides(store, { partials: held.partials });
  };
  return { hold, wrapStore };
}
