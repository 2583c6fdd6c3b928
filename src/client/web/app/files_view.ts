/// <reference lib="dom" />
/**
 * "Your files": GET /api/files page by page (newest first; "Show more"
 * follows the API's cursor), each with its link (a split file's manifest by
 * its /f/ URL, the whole file), size, dates, on a server that hands pieces
 * to a storage provider where each stands there (its state, and once live the
 * data set and piece ids on chain), and, when the token has the `pin` scope,
 * an Extend button that adds one term to that deal (POST
 * /api/deals/{dealId}/extend).
 */
import { MANIFEST_CONTENT_TYPE } from "../../sdk/mod.ts";
import type { Deal } from "../../sdk/mod.ts";
import { byId, dataTable, el, onClickBusy, say, show } from "./dom.ts";
import { formatBytes, formatDate } from "./format.ts";
import type { Session } from "./session.ts";

const PAGE_SIZE = 20;

export function mountFilesView(session: Session): { refresh(): Promise<void> } {
  const container = byId("files", HTMLElement);
  const more = byId("files-more", HTMLButtonElement);
  const status = byId("files-status", HTMLElement);
  let cursor: string | null = null;
  let body: HTMLTableSectionElement | null = null;

  const load = async (first: boolean) => {
    try {
      const page = await session.client.files({ limit: PAGE_SIZE, cursor: first ? null : cursor });
      cursor = page.nextCursor;
      if (first) {
        body = el("tbody");
        container.replaceChildren(
          page.files.length === 0
            ? el("p", {}, "No files yet. Files you upload while signed in appear here.")
            : dataTable(
              "files-heading",
              headings(session.can("pin"), page.files.some((d) => d.handoff !== undefined)),
              body,
            ),
        );
        say(status, "");
      }
      for (const deal of page.files) body!.append(row(deal, session, status));
      show(more, cursor !== null);
    } catch (error) {
      say(status, session.explain(error), "error");
    }
  };
  onClickBusy(more, () => load(false));
  return { refresh: () => load(true) };
}

function headings(canExtend: boolean, handedOff: boolean): string[] {
  return [
    "File",
    "Size",
    "Uploaded",
    "Kept until",
    ...(handedOff ? ["Storage provider"] : []),
    ...(canExtend ? ["Actions"] : []),
  ];
}

/** What people read of a piece's hand-off (docs/handoff.md#states). */
const HANDOFF_WORDS: Record<string, string> = {
  queued: "Waiting to be sent",
  pulling: "Being copied by the provider",
  adding: "Being recorded on chain",
  live: "Stored and proven on chain",
  failed: "Not taken by the provider",
  ineligible: "Kept here only (too small or too large for the provider)",
  removing: "Being removed from the provider",
  removed: "Removed from the provider",
};

function handoffCell(handoff: Deal["handoff"]): HTMLTableCellElement {
  if (!handoff) return el("td", {}, "Not sent yet");
  const ids = handoff.state === "live" || handoff.state === "removing"
    ? el(
      "span",
      { class: "hint handoff-ids" },
      ` data set ${handoff.dataSetId}, piece ${handoff.pieceId}`,
    )
    : null;
  const why = handoff.state === "failed" && handoff.error
    ? el("span", { class: "hint" }, ` (${handoff.error})`)
    : null;
  return el(
    "td",
    { "data-handoff": handoff.state, title: handoff.provider },
    HANDOFF_WORDS[handoff.state] ?? handoff.state,
    ids,
    why,
  );
}

function row(deal: Deal, session: Session, status: HTMLElement): HTMLTableRowElement {
  // A split file's manifest stands for the file: its link is /f/, the whole file.
  const split = isManifest(deal.contentType);
  const stored = deal.filename ?? "Unnamed file";
  const name = split ? stored.replace(/\.manifest\.json$/, "") : stored;
  const href = split ? session.client.fileUrl(deal.cid) : deal.retrievalUrl;
  const keptUntil = el("td", { class: "nowrap" }, formatDate(deal.termEndsAt));
  const cells = [
    el(
      "td",
      {},
      el("a", { href, target: "_blank", rel: "noopener" }, name),
      split ? el("span", { class: "hint" }, " (split file)") : null,
      el("code", { class: "cid" }, deal.cid),
    ),
    el("td", { class: "nowrap" }, formatBytes(deal.size)),
    el("td", { class: "nowrap" }, formatDate(deal.createdAt)),
    keptUntil,
    ...(deal.handoff === undefined ? [] : [handoffCell(deal.handoff)]),
  ];
  if (session.can("pin")) {
    const extend = el("button", { type: "button", class: "button-secondary" }, "Extend");
    extend.setAttribute("aria-label", `Extend ${name}`);
    onClickBusy(extend, async () => {
      try {
        const extended = await session.client.extendDeal(deal.dealId);
        keptUntil.textContent = formatDate(extended.termEndsAt);
        say(status, `${name} is now kept until ${formatDate(extended.termEndsAt)}.`);
      } catch (error) {
        say(status, session.explain(error), "error");
      }
    });
    cells.push(el("td", {}, extend));
  }
  return el("tr", { "data-deal": deal.dealId }, ...cells);
}

function isManifest(contentType: string): boolean {
  return contentType.split(";")[0].trim().toLowerCase() === MANIFEST_CONTENT_TYPE;
}
