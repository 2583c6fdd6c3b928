/// <reference lib="dom" />
/**
 * "Your tokens": GET /api/tokens (metadata only, never a token), each with a
 * Revoke button that asks once more before it acts, since a revoked token
 * stops working at once and for good. Revoking the token this tab uses
 * signs the tab out.
 */
import type { TokenInfo } from "../../sdk/mod.ts";
import { byId, dataTable, el, onClickBusy, say } from "./dom.ts";
import { formatBytes, formatDate } from "./format.ts";
import type { Session } from "./session.ts";

/** What a row's buttons act through. */
interface TokensView {
  session: Session;
  status: HTMLElement;
  refresh(): Promise<void>;
}

const HEADINGS = ["Name", "Permissions", "Daily quota", "Expires", "Status", "Actions"];

export function mountTokensView(session: Session): { refresh(): Promise<void> } {
  const container = byId("tokens", HTMLElement);
  const view: TokensView = {
    session,
    status: byId("tokens-status", HTMLElement),
    async refresh() {
      try {
        const { tokens } = await session.client.tokens();
        const body = el("tbody", {}, ...tokens.map((token) => row(token, view)));
        container.replaceChildren(dataTable("tokens-heading", HEADINGS, body));
      } catch (error) {
        say(view.status, session.explain(error), "error");
      }
    },
  };
  return view;
}

function row(token: TokenInfo, view: TokensView): HTMLTableRowElement {
  const state = token.revoked
    ? `Revoked ${formatDate(token.revokedAt!)}`
    : token.current
    ? "In use by this tab"
    : "Active";
  const actions = el("td");
  if (!token.revoked) {
    const revoke = el("button", { type: "button", class: "button-danger" }, "Revoke");
    revoke.setAttribute("aria-label", `Revoke ${token.label}`);
    revoke.addEventListener("click", () => {
      actions.replaceChildren(confirmation(token, view, () => {
        actions.replaceChildren(revoke);
        revoke.focus();
      }));
      actions.querySelector("button")?.focus();
    });
    actions.append(revoke);
  }
  return el(
    "tr",
    { "data-jti": token.jti, class: token.revoked && "revoked" },
    el("td", {}, token.label),
    el("td", { class: "nowrap" }, token.scopes.join(", ")),
    el("td", {}, token.quotaMb === null ? "Wallet balance" : formatBytes(token.quotaMb * 1048576)),
    el("td", { class: "nowrap" }, formatDate(token.expiresAt)),
    el("td", {}, state),
    actions,
  );
}

/** "Revoke it?" with the two answers; revoking the tab's own token signs out. */
function confirmation(token: TokenInfo, view: TokensView, cancel: () => void): HTMLElement {
  const yes = el(
    "button",
    { type: "button", class: "button-danger" },
    token.current ? "Revoke and sign out" : "Yes, revoke",
  );
  const no = el("button", { type: "button", class: "button-secondary" }, "Cancel");
  no.addEventListener("click", cancel);
  onClickBusy(yes, async () => {
    try {
      await view.session.client.revokeToken(token.jti);
      if (token.current) {
        await view.session.signOut(
          `You revoked the token this tab used (“${token.label}”), so it is signed out.`,
        );
        return;
      }
      say(view.status, `Revoked “${token.label}”: it no longer works.`);
      await view.refresh();
    } catch (error) {
      say(view.status, view.session.explain(error), "error");
    }
  });
  return el(
    "div",
    { class: "confirm", role: "group", "aria-label": `Revoke ${token.label}?` },
    el("span", {}, "Revoke it? It stops working at once. "),
    yes,
    " ",
    no,
  );
}
