/// <reference lib="dom" />
/**
 * "Your files": GET /api/files page by page (newest first; "Show more"
 * follows the API's cursor). A split file is one row (SplitFiles folds its
 * part deals into it): its name, its real size, its /f/ link (the whole
 * file) and its parts listed under it. Each row shows its state (active,
 * expired, deleted), dates, on a server that hands pieces to a storage
 * provider where each stands there (its state, and once live the data set
 * and piece ids on chain), and, when the token has the `pin` scope, Extend
 * (one more term: POST /api/deals/{dealId}/extend) and Delete, which asks
 * once more before it ends the deal (a split file's parts' deals too).
 */
import type { Deal, ListedFile, SplitFiles } from "../../sdk/mod.ts";
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
  let folding: SplitFiles = session.client.splitFiles();

  const load = async (first: boolean) => {
    try {
      const page = await session.client.files({ limit: PAGE_SIZE, cursor: first ? null : cursor });
      cursor = page.nextCursor;
      if (first) {
        body = el("tbody");
        folding = session.client.splitFiles();
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
      for (const file of await folding.add(page.files)) body!.append(row(file, session, status));
      show(more, cursor !== null);
    } catch (error) {
      say(status, session.explain(error), "error");
    }
  };
  onClickBusy(more, () => load(false));
  return { refresh: () => load(true) };
}

function headings(canChange: boolean, handedOff: boolean): string[] {
  return [
    "File",
    "Size",
    "Uploaded",
    "Kept until",
    "State",
    ...(handedOff ? ["Storage provider"] : []),
    ...(canChange ? ["Actions"] : []),
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

/** A deal's state in words (docs/api.md's deal states). */
function stateText(deal: Deal): string {
  if (deal.state === "deleted") return `Deleted ${formatDate(deal.deletedAt ?? deal.termEndsAt)}`;
  return deal.state === "expired" ? "Expired" : "Active";
}

function row(file: ListedFile, session: Session, status: HTMLElement): HTMLTableRowElement {
  const { deal } = file;
  const name = file.name ?? "Unnamed file";
  // A split file's link is /f/, the whole file; its manifest's own /p/ is not for people.
  const href = file.manifest ? session.client.fileUrl(deal.cid) : deal.retrievalUrl;
  const keptUntil = el("td", { class: "nowrap" }, formatDate(deal.termEndsAt));
  const state = el("td", { class: "nowrap", "data-state": deal.state }, stateText(deal));
  const cells = [
    el(
      "td",
      {},
      el("a", { href, target: "_blank", rel: "noopener" }, name),
      file.manifest
        ? el("span", { class: "hint" }, ` (split file, ${file.parts.length} parts)`)
        : null,
      el("code", { class: "cid" }, deal.cid),
      file.manifest ? partsList(file) : null,
    ),
    el("td", { class: "nowrap" }, formatBytes(file.size)),
    el("td", { class: "nowrap" }, formatDate(deal.createdAt)),
    keptUntil,
    state,
    ...(deal.handoff === undefined ? [] : [handoffCell(deal.handoff)]),
  ];
  if (session.can("pin")) {
    const actions = el("td", { class: "actions" });
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
    const remove = el("button", { type: "button", class: "button-danger" }, "Delete");
    remove.setAttribute("aria-label", `Delete ${name}`);
    const buttons = el("span", { class: "actions-buttons" }, extend, " ", remove);
    remove.addEventListener("click", () => {
      const deleted = (ended: Deal) => {
        state.textContent = stateText(ended);
        state.dataset.state = ended.state;
        actions.replaceChildren();
        say(status, `Deleted “${name}”: its link stops working once the server removes it.`);
      };
      actions.replaceChildren(deleteConfirmation({ file, name, session, status, deleted }, () => {
        actions.replaceChildren(buttons);
        remove.focus();
      }));
      actions.querySelector("button")?.focus();
    });
    if (deal.state !== "deleted") actions.append(buttons);
    cells.push(actions);
  }
  return el("tr", { "data-deal": deal.dealId }, ...cells);
}

/** A split file's parts, folded: each part's name, size and cid. */
function partsList(file: ListedFile): HTMLElement {
  return el(
    "details",
    { class: "parts" },
    el("summary", {}, `${file.parts.length} parts`),
    el(
      "ol",
      {},
      ...file.parts.map((part) =>
        el(
          "li",
          {},
          `${part.name ?? "part"}, ${formatBytes(part.size)} `,
          el("code", { class: "cid" }, part.cid),
        )
      ),
    ),
  );
}

interface DeleteRequest {
  file: ListedFile;
  name: string;
  session: Session;
  status: HTMLElement;
  deleted(deal: Deal): void;
}

/** "Delete it?" with the two answers: a deletion cannot be undone. */
function deleteConfirmation(request: DeleteRequest, cancel: () => void): HTMLElement {
  const { file, name, session, status } = request;
  const yes = el("button", { type: "button", class: "button-danger" }, "Yes, delete");
  const no = el("button", { type: "button", class: "button-secondary" }, "Cancel");
  no.addEventListener("click", cancel);
  onClickBusy(yes, async () => {
    try {
      const [ended] = await session.client.deleteFile(file);
      request.deleted(ended);
    } catch (error) {
      say(status, session.explain(error), "error");
    }
  });
  return el(
    "div",
    { class: "confirm", role: "group", "aria-label": `Delete ${name}?` },
    el("span", {}, "Delete it? This cannot be undone. "),
    yes,
    " ",
    no,
  );
}
