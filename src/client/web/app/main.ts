/// <reference lib="dom" />
/**
 * The web page's entry: asks the server for the page's session, mounts the upload and
 * account panels, and keeps what depends on who is signed in (the tier line
 * above the drop zone, wallet sign-in, usage, files, tokens) current after
 * every sign-in, sign-out and stored file. Built into src/client/web/assets.gen.ts
 * by scripts/build_web.ts; docs/web.md describes the page.
 */
import { mountAccountView } from "./account_view.ts";
import { tierSummary } from "./admission.ts";
import { byId, say, show } from "./dom.ts";
import { mountFilesView } from "./files_view.ts";
import { Session } from "./session.ts";
import { mountTokensView } from "./tokens_view.ts";
import { mountUploadView } from "./upload_view.ts";
import { mountUsageView } from "./usage_view.ts";
import { mountWalletView } from "./wallet_view.ts";

const session = new Session();
const accountMessage = byId("account-message", HTMLElement);
const wallet = mountWalletView(session, (words) => say(accountMessage, words, "error"));
const usage = mountUsageView(session);
const files = mountFilesView(session);
const tokens = mountTokensView(session);
const cards = ["usage-card", "files-card", "tokens-card"].map((id) => byId(id, HTMLElement));

async function refreshLimits(): Promise<void> {
  const line = byId("upload-tier", HTMLElement);
  try {
    const limits = await session.client.limits();
    line.textContent = tierSummary(limits);
    wallet.update(limits);
  } catch (error) {
    line.textContent = session.explain(error);
  }
}

async function refreshAccount(): Promise<void> {
  const listing = session.can("list");
  for (const card of cards) show(card, listing);
  if (listing) await Promise.all([usage.refresh(), files.refresh(), tokens.refresh()]);
}

async function refreshAll(): Promise<void> {
  await Promise.all([refreshLimits(), refreshAccount()]);
  document.body.dataset.ready = "true";
}

mountAccountView(session);
mountUploadView({ session, onUploaded: () => void refreshAll() });
session.onChange(() => void refreshAll());
// Who the page is signed in as (its cookie's session) comes from the server; then all is shown.
void session.load();
