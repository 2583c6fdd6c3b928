/// <reference lib="dom" />
/**
 * Wallet sign-in, offered only where it can work: the server lists a
 * `wallet` tier in GET /api/limits and the browser has an Ethereum wallet
 * (EIP-1193, window.ethereum). The wallet is asked for its account, then to
 * sign the Sign-In with Ethereum message the SDK writes (personal_sign); the
 * server answers a 24-hour token, which goes straight into the page's
 * cookie session, like any other.
 */
import { signInWithWallet } from "../../sdk/wallet.ts";
import type { Limits } from "../../sdk/mod.ts";
import { byId, onClickBusy, show } from "./dom.ts";
import type { Session } from "./session.ts";

/** The EIP-1193 provider a wallet extension puts on window.ethereum. */
interface Eip1193Provider {
  request(args: { method: string; params?: unknown[] }): Promise<unknown>;
}

function browserWallet(): Eip1193Provider | null {
  const provider = (globalThis as { ethereum?: Eip1193Provider }).ethereum;
  return typeof provider?.request === "function" ? provider : null;
}

/** "0x" and the hex of the message's UTF-8 bytes, as personal_sign takes it. */
function utf8Hex(message: string): string {
  const bytes = new TextEncoder().encode(message);
  return "0x" + Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

export function mountWalletView(session: Session, say: (words: string) => void): {
  update(limits: Limits): void;
} {
  const panel = byId("wallet-panel", HTMLElement);
  onClickBusy(byId("wallet-button", HTMLButtonElement), async () => {
    const wallet = browserWallet();
    if (wallet === null) return;
    say("");
    try {
      const accounts = await wallet.request({ method: "eth_requestAccounts" }) as string[];
      const address = accounts[0];
      const { token } = await signInWithWallet({
        server: location.origin,
        account: {
          address,
          signMessage: async ({ message }) =>
            await wallet.request({
              method: "personal_sign",
              params: [utf8Hex(message), address],
            }) as string,
        },
      });
      await session.signIn(token);
    } catch (error) {
      say(session.explain(error));
    }
  });
  return {
    update(limits) {
      show(panel, browserWallet() !== null && limits.tiers.some((tier) => tier.tier === "wallet"));
    },
  };
}
