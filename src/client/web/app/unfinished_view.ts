/// <reference lib="dom" />
/**
 * "Not finished in this browser": the uploads a reload, a closed tab or a
 * dropped network cut short (unfinished.ts remembers them). Each can be
 * continued by picking the same file again (the browser cannot reopen a file
 * by itself), which sends only what the server lacks, or forgotten.
 */
import { byId, el, show } from "./dom.ts";
import { formatBytes, formatTime } from "./format.ts";
import { forgetUnfinished, unfinishedNotSending } from "./unfinished.ts";

export interface UnfinishedView {
  /** Draws the list again (after an upload started, finished or failed). */
  refresh(): void;
}

export function mountUnfinishedView(options: { choose(): void }): UnfinishedView {
  const section = byId("unfinished", HTMLElement);
  const list = byId("unfinished-list", HTMLUListElement);
  const refresh = () => {
    // A file this tab is still sending is not unfinished (yet): it is in the list of uploads.
    const files = unfinishedNotSending();
    list.replaceChildren(...files.map((file) => {
      const choose = el("button", { type: "button", class: "button-secondary" }, "Choose it again");
      choose.addEventListener("click", () => options.choose());
      const forget = el("button", { type: "button", class: "button-secondary" }, "Forget it");
      forget.addEventListener("click", () => {
        forgetUnfinished(file);
        refresh();
      });
      return el(
        "li",
        { class: "unfinished-item", "data-name": file.name },
        el("strong", {}, file.name),
        ` (${formatBytes(file.size)}), started at ${
          formatTime(new Date(file.startedAt).toISOString())
        }: pick the same file to send the rest. `,
        // The two buttons wrap together, never "Forget it" alone on a line.
        el("span", { class: "actions-buttons" }, choose, " ", forget),
      );
    }));
    show(section, files.length > 0);
  };
  refresh();
  return { refresh };
}
