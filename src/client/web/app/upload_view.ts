/// <reference lib="dom" />
/**
 * The upload panel: files are dropped on the drop zone or picked with it (a
 * real button, so it is reachable and usable from the keyboard: pressing it
 * opens the one file picker). Files are taken one after another: ask
 * GET /api/limits?size=N first and say in words why a file would not fit;
 * otherwise the SDK computes its PieceCIDv2 on Web Workers (the WASM kernel),
 * splits it if it is over the per-file cap, and sends it. Two progress bars
 * show hashing and sending (sending from the bytes XHR reports on the wire,
 * see send_meter.ts); phase changes and the outcome are announced in a
 * polite live region. A file over RESUMABLE_ABOVE_BYTES goes through the
 * server's resumable endpoint, its pieces' URLs kept in this browser
 * (unfinished.ts): after a reload or a dropped network, picking it again
 * sends only what the server lacks.
 */
import { NetworkError, RESUMABLE_ABOVE_BYTES } from "../../sdk/mod.ts";
import type { UploadPhase, UploadProgress, UploadResult } from "../../sdk/mod.ts";
import { admissionOf } from "./admission.ts";
import { copyField } from "./copy.ts";
import { byId, el } from "./dom.ts";
import { formatBytes, percent } from "./format.ts";
import { describeError } from "./messages.ts";
import { previewOf } from "./preview.ts";
import type { Session } from "./session.ts";
import {
  forgetUnfinished,
  localResumeStore,
  markSending,
  rememberUnfinished,
  unfinishedEntryOf,
} from "./unfinished.ts";
import { mountUnfinishedView } from "./unfinished_view.ts";
import type { UnfinishedView } from "./unfinished_view.ts";

export interface UploadViewOptions {
  session: Session;
  /** After each stored file (to refresh the files list, usage and limits). */
  onUploaded: () => void;
}

let nextItemId = 1;

export function mountUploadView({ session, onUploaded }: UploadViewOptions): void {
  const input = byId("file-input", HTMLInputElement);
  const dropZone = byId("drop-zone", HTMLButtonElement);
  const list = byId("upload-list", HTMLOListElement);
  const status = byId("upload-status", HTMLElement);
  const queue: File[] = [];
  let draining = false;
  const unfinished = mountUnfinishedView({ choose: () => input.click() });

  const enqueue = (files: FileList | null) => {
    if (!files || files.length === 0) return;
    queue.push(...files);
    if (draining) return;
    draining = true;
    void (async () => {
      try {
        for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
          const item = new UploadItem(file);
          list.prepend(item.element);
          if (await uploadOne(session, file, item, { status, unfinished })) onUploaded();
        }
      } finally {
        draining = false;
      }
    })();
  };

  dropZone.addEventListener("click", () => input.click());
  input.addEventListener("change", () => {
    enqueue(input.files);
    // The same file can be chosen again.
    input.value = "";
  });
  dropZone.addEventListener("dragover", (event) => {
    event.preventDefault();
    if (event.dataTransfer) event.dataTransfer.dropEffect = "copy";
    dropZone.classList.add("drop-zone-active");
  });
  dropZone.addEventListener("dragleave", () => dropZone.classList.remove("drop-zone-active"));
  dropZone.addEventListener("drop", (event) => {
    event.preventDefault();
    dropZone.classList.remove("drop-zone-active");
    enqueue(event.dataTransfer?.files ?? null);
  });
  // A file dropped beside the zone (or the file input, which takes drops itself) must not
  // make the browser navigate away to it.
  for (const type of ["dragover", "drop"]) {
    addEventListener(type, (event) => {
      if (event.target !== input) event.preventDefault();
    });
  }
}

/** Checks, hashes and sends one file; true when it was stored. */
async function uploadOne(
  session: Session,
  file: File,
  item: UploadItem,
  views: { status: HTMLElement; unfinished: UnfinishedView },
): Promise<boolean> {
  const announce = (text: string) => views.status.textContent = text;
  if (file.size === 0) {
    item.fail("Not sent: the file is empty, and the service does not store empty files.");
    announce(`${file.name} was not sent: it is empty.`);
    return false;
  }
  const client = session.client;
  try {
    item.state("Checking the limits…");
    const limits = await client.limits({ size: file.size });
    const admission = admissionOf(limits, file.size);
    if (!admission.send) {
      item.fail(admission.text ?? "Not sent.");
      announce(`${file.name} was not sent. ${admission.text}`);
      return false;
    }
    if (admission.text) item.note(admission.text);
    const term = limits.tiers.find((tier) => tier.tier === limits.tier)?.termDays;
    const resumable = file.size > RESUMABLE_ABOVE_BYTES;
    if (resumable) {
      if (unfinishedEntryOf(file)) item.note("Continuing: only what the server lacks is sent.");
      rememberUnfinished(file);
      markSending(file, true);
      views.unfinished.refresh();
    }
    let sentShown = 0;
    let phase: UploadPhase | null = null;
    let latest: UploadProgress | null = null;
    const render = () => {
      if (!latest) return;
      // Acknowledged pieces plus what is on the wire; never moves backwards on a retry.
      sentShown = Math.max(sentShown, latest.bytesSent + session.sendMeter.bytes);
      item.progress(latest.bytesHashed, Math.min(sentShown, file.size), file.size);
    };
    session.sendMeter.listen(render);
    const result = await client.upload(file, {
      filename: file.name,
      contentType: file.type || "application/octet-stream",
      resumeStore: localResumeStore,
      onProgress: (progress) => {
        latest = progress;
        render();
        if (progress.phase !== phase) {
          phase = progress.phase;
          const words = PHASE_WORDS[phase];
          item.state(words);
          if (phase !== "done") announce(`${file.name}: ${words}`);
        }
      },
    }).finally(() => {
      session.sendMeter.listen(null);
      markSending(file, false);
    });
    forgetUnfinished(file);
    views.unfinished.refresh();
    await item.done(result, term ?? null, !session.signedIn);
    announce(`${file.name} is stored.`);
    return true;
  } catch (error) {
    // A lost connection can be continued later; a refusal cannot.
    if (!(error instanceof NetworkError)) forgetUnfinished(file);
    views.unfinished.refresh();
    const words = describeError(error);
    item.fail(`Not stored: ${words}`);
    announce(`${file.name} was not stored. ${words}`);
    return false;
  }
}

const PHASE_WORDS: Record<UploadPhase, string> = {
  hashing: "Computing the content id…",
  uploading: "Sending…",
  manifest: "Sending the manifest…",
  done: "Stored.",
};

/** One file's entry in the list: name, progress, then the result or why it failed. */
class UploadItem {
  readonly element: HTMLLIElement;
  readonly #id = nextItemId++;
  readonly #file: File;
  readonly #state = el("p", { class: "upload-state" });
  readonly #bars = el("div", { class: "upload-bars" });
  readonly #hashing: ProgressRow;
  readonly #sending: ProgressRow;

  constructor(file: File) {
    this.#file = file;
    this.#hashing = new ProgressRow(`hash-${this.#id}`, "Content id");
    this.#sending = new ProgressRow(`send-${this.#id}`, "Sending");
    this.#bars.append(this.#hashing.element, this.#sending.element);
    this.element = el(
      "li",
      { class: "upload-item", "aria-labelledby": `upload-name-${this.#id}` },
      el(
        "p",
        { class: "upload-name" },
        el("strong", { id: `upload-name-${this.#id}` }, file.name),
        " ",
        el("span", { class: "hint" }, formatBytes(file.size)),
      ),
      this.#state,
      this.#bars,
    );
  }

  state(text: string): void {
    this.#state.textContent = text;
  }

  note(text: string): void {
    this.#state.before(el("p", { class: "upload-note" }, text));
  }

  progress(hashed: number, sent: number, total: number): void {
    this.#hashing.set(hashed, total);
    this.#sending.set(sent, total);
  }

  fail(text: string): void {
    this.#bars.remove();
    this.#state.textContent = text;
    this.#state.classList.add("error");
    this.element.classList.add("upload-failed");
  }

  async done(result: UploadResult, termDays: number | null, sponsored: boolean): Promise<void> {
    this.#bars.remove();
    const split = result.manifest ? ` as ${result.pieces.length} pieces and a manifest` : "";
    const kept = termDays === null ? "" : `, kept for ${termDays} days`;
    const how = sponsored ? " without an account" : "";
    this.state(`Stored${split}${how}${kept}.`);
    this.element.classList.add("upload-done");
    this.element.dataset.cid = result.cid;
    // A split file's link is /f/: the whole file from its pieces (the /p/ link is its manifest).
    const link = el(
      "a",
      { href: result.fileUrl, target: "_blank", rel: "noopener" },
      "Open the link",
    );
    this.element.append(
      copyField("Content id (cid)", result.cid, { id: `cid-${this.#id}` }),
      copyField("Link to the file", result.fileUrl, { id: `url-${this.#id}` }),
      el("p", { class: "open-link" }, link),
    );
    const preview = await previewOf(this.#file, result.fileUrl);
    if (preview) this.element.append(preview);
  }
}

/** A labelled <progress> with its percentage beside it (hidden from screen readers, who hear the bar). */
class ProgressRow {
  readonly element: HTMLElement;
  readonly #bar: HTMLProgressElement;
  readonly #percent = el("span", { class: "progress-percent", "aria-hidden": "true" }, "0%");

  constructor(id: string, label: string) {
    this.#bar = el("progress", { id, max: 1, value: 0 });
    this.element = el(
      "div",
      { class: "progress-row" },
      el("label", { for: id }, label),
      this.#bar,
      this.#percent,
    );
  }

  set(done: number, total: number): void {
    this.#bar.max = Math.max(total, 1);
    this.#bar.value = done;
    this.#percent.textContent = `${percent(done, total)}%`;
  }
}
