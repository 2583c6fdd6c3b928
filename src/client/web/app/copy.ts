/// <reference lib="dom" />
/**
 * A value a person will want to paste elsewhere (a cid, a link, a new
 * token): shown in a read-only text field, with a Copy button. The button
 * uses the Clipboard API; where that is refused (no permission, an insecure
 * origin) it selects the field's text instead and says to press Ctrl+C, so
 * copying always works.
 */
import { el } from "./dom.ts";

/** A labelled read-only field holding `value`, with a Copy button; `label` names both. */
export function copyField(label: string, value: string, options: { id: string }): HTMLElement {
  const input = el("input", {
    id: options.id,
    type: "text",
    class: "copy-value",
    readonly: true,
    spellcheck: "false",
    value,
  });
  const button = el("button", { type: "button", class: "button-secondary" }, "Copy");
  button.setAttribute("aria-label", `Copy ${label.toLowerCase()}`);
  const status = el("span", { class: "copy-status", role: "status" });
  button.addEventListener("click", async () => {
    status.textContent = await copy(value, input)
      ? "Copied."
      : "Selected: press Ctrl+C (⌘C on a Mac) to copy.";
  });
  return el(
    "div",
    { class: "copy-field" },
    el("label", { for: options.id }, label),
    el("div", { class: "copy-row" }, input, button),
    status,
  );
}

/** Copies to the clipboard; on failure selects the field's text and answers false. */
async function copy(value: string, input: HTMLInputElement): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(value);
    return true;
  } catch {
    input.focus();
    input.select();
    return false;
  }
}
