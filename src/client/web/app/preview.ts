/// <reference lib="dom" />
/**
 * A look at the file just stored: an image through a blob: URL of the local
 * file (which the page's img-src allows), text as the first few KiB put in as
 * text, never as HTML, so an uploaded page or script is shown as its source
 * and cannot run; video and audio in the browser's own player, from the
 * file's URL on the server (/f/ for a split file), which answers the ranges a
 * player asks for when it seeks.
 */
import { el } from "./dom.ts";
import { formatBytes } from "./format.ts";

const TEXT_PREVIEW_BYTES = 4096;
const TEXT_TYPES =
  /^text\/|^application\/(json|xml|javascript|x-yaml|yaml|x-sh|toml)$|\+(json|xml)$/;
const TEXT_EXTENSIONS =
  /\.(txt|md|csv|tsv|json|xml|ya?ml|toml|log|ini|html?|css|[jt]sx?|sh|py|rs|go)$/i;

function isText(file: File): boolean {
  return TEXT_TYPES.test(file.type) || (file.type === "" && TEXT_EXTENSIONS.test(file.name));
}

/** A figure previewing the file (stored at url), or null for kinds the page does not preview. */
export async function previewOf(file: File, url: string): Promise<HTMLElement | null> {
  const media = file.type.startsWith("video/")
    ? "video"
    : file.type.startsWith("audio/")
    ? "audio"
    : null;
  if (media !== null) {
    const player = el(media, {
      src: url,
      controls: true,
      preload: "metadata",
      class: `preview-${media}`,
      "aria-label": `${media === "video" ? "Video" : "Audio"}: ${file.name}`,
    });
    return figure(player, "Preview, played from the stored file");
  }
  if (file.type.startsWith("image/")) {
    const url = URL.createObjectURL(file);
    const image = el("img", { src: url, alt: `Preview of ${file.name}`, class: "preview-image" });
    // Once decoded the image no longer needs the URL; revoking it frees the reference.
    const release = () => URL.revokeObjectURL(url);
    image.addEventListener("load", release, { once: true });
    image.addEventListener("error", release, { once: true });
    return figure(image, "Preview");
  }
  if (isText(file)) {
    const text = await file.slice(0, TEXT_PREVIEW_BYTES).text();
    const shown = file.size > TEXT_PREVIEW_BYTES
      ? `Preview: the first ${formatBytes(TEXT_PREVIEW_BYTES)} of ${formatBytes(file.size)}`
      : "Preview";
    return figure(el("pre", { class: "preview-text", tabindex: 0 }, text), shown);
  }
  return null;
}

function figure(content: HTMLElement, caption: string): HTMLElement {
  return el("figure", { class: "preview" }, el("figcaption", {}, caption), content);
}
