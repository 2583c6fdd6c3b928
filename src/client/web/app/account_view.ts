/// <reference lib="dom" />
/**
 * The account panel. Signed out: create a token (e-mail and a name for it;
 * on a server in verify mode a mailed code comes first) or paste one. Signed
 * in: who the token belongs to and what it may do, and, right after signing
 * up, the new token itself, once: it is in no other answer of the server,
 * and the page keeps none (it signs in with a cookie session, which no
 * script can read; after a reload the panel is gone, the session stays).
 */
import type { Scope, SignupResult } from "../../sdk/mod.ts";
import { copyField } from "./copy.ts";
import { byId, el, say, show } from "./dom.ts";
import { formatBytes, formatDate } from "./format.ts";
import { describeError } from "./messages.ts";
import { claimsOf } from "./session.ts";
import type { Session } from "./session.ts";

/** What a scope lets the person do (`get` is reserved: downloads are public). */
const SCOPE_WORDS: Partial<Record<Scope, string>> = {
  list: "see your files, usage and tokens",
  pin: "extend how long files are kept",
};

export function mountAccountView(session: Session): void {
  const message = byId("account-message", HTMLElement);
  const signupForm = byId("signup-form", HTMLFormElement);
  const verifyForm = byId("verify-form", HTMLFormElement);
  const tokenForm = byId("token-form", HTMLFormElement);
  const tokenInput = byId("token-input", HTMLInputElement);
  const newToken = byId("new-token", HTMLElement);
  let verifyEmail = "";

  const sayError = (words: string) => say(message, words, "error");
  const signedUp = async (result: SignupResult) => {
    await session.signIn(result.token);
    newToken.replaceChildren(newTokenPanel(result.token, () => newToken.replaceChildren()));
    byId("new-token-heading", HTMLElement).focus();
  };

  onSubmit(signupForm, async () => {
    const email = byId("signup-email", HTMLInputElement).value.trim();
    const label = byId("signup-label", HTMLInputElement).value.trim();
    const result = await session.client.signup({ email, label });
    if ("token" in result) return await signedUp(result);
    verifyEmail = result.email;
    byId("verify-sent", HTMLElement).textContent =
      `We sent a code to ${result.email}. It works once, for 15 minutes.`;
    show(signupForm, false);
    show(verifyForm, true);
    byId("verify-code", HTMLInputElement).focus();
  }, sayError);

  onSubmit(verifyForm, async () => {
    const code = byId("verify-code", HTMLInputElement).value.trim();
    await signedUp(await session.client.verifySignup(verifyEmail, code));
    show(verifyForm, false);
    show(signupForm, true);
  }, sayError);

  onSubmit(tokenForm, async () => {
    const token = tokenInput.value.trim();
    if (claimsOf(token) === null) {
      sayError(
        "That is not a token this page can use: a token starts with pk_live_ and must not " +
          "have expired.",
      );
      return;
    }
    // The server checks it as it starts the session: a mistyped or revoked token is said so.
    await session.signIn(token);
    tokenInput.value = "";
  }, sayError);

  byId("sign-out", HTMLButtonElement).addEventListener("click", () => void session.signOut());

  const render = (reason: string | null) => {
    const claims = session.claims;
    say(message, reason ?? "");
    show(byId("signed-out", HTMLElement), claims === null);
    show(byId("signed-in", HTMLElement), claims !== null);
    show(byId("sign-out", HTMLButtonElement), claims !== null);
    show(byId("sign-in-link", HTMLElement), claims === null);
    const who = claims?.email ?? claims?.wallet ?? null;
    byId("session-who", HTMLElement).textContent = who ? `Signed in as ${who}` : "Not signed in";
    if (claims === null) {
      newToken.replaceChildren();
      return;
    }
    const can = claims.scopes.includes("put")
      ? [
        claims.quotaMb === undefined
          ? "upload as much a day as your wallet's USDC balance allows"
          : `upload up to ${formatBytes(claims.quotaMb * 1024 * 1024)} a day`,
      ]
      : [];
    can.push(...claims.scopes.flatMap((scope) => SCOPE_WORDS[scope] ?? []));
    const expires = formatDate(new Date(claims.exp * 1000).toISOString());
    byId("account-summary", HTMLElement).textContent = `Signed in as ${who}. ${
      can.length > 0 ? `With this token you can ${listed(can)}. ` : ""
    }It expires on ${expires}.`;
  };
  session.onChange(render);
  render(null);
}

/** "a", "a and b", "a, b and c". */
function listed(items: string[]): string {
  return items.length < 2 ? items.join("") : `${items.slice(0, -1).join(", ")} and ${items.at(-1)}`;
}

/** Handles a form's submit in script (the page's policy lets no form submit natively). */
export function onSubmit(
  form: HTMLFormElement,
  handler: () => Promise<void>,
  onError: (words: string) => void,
): void {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = form.querySelector("button[type=submit]");
    if (button instanceof HTMLButtonElement) button.disabled = true;
    onError("");
    try {
      await handler();
    } catch (error) {
      onError(describeError(error));
    } finally {
      if (button instanceof HTMLButtonElement) button.disabled = false;
    }
  });
}

/** The new token, shown this once, with Copy and a button to put it away. */
function newTokenPanel(token: string, dismiss: () => void): HTMLElement {
  const done = el("button", { type: "button" }, "I have saved it");
  done.addEventListener("click", dismiss);
  return el(
    "div",
    { class: "new-token", role: "region", "aria-labelledby": "new-token-heading" },
    el("h3", { id: "new-token-heading", tabindex: -1 }, "Your new token"),
    el(
      "p",
      {},
      el("strong", {}, "Copy it now and keep it somewhere safe: it will not be shown again."),
      " This browser stays signed in with it until you sign out or close the browser. Anyone who has " +
        "the token can upload as you and see your files.",
    ),
    copyField("Your new token", token, { id: "new-token-value" }),
    done,
  );
}
