/**
 * Signed upload links: a token holder (a browser app's backend, a CI job's
 * controller) mints a link for one upload of exactly one cid, size and
 * Content-Type (and a filename if it names one), for at most an hour; whoever
 * holds the link makes that one `POST`, from any origin and without any
 * credentials, and the upload counts as the owner's (tier, caps, quota, deal
 * owner). The link's URL carries a random secret; the database keeps its
 * SHA-256 and the terms, so a copied database holds no working link. A link
 * is spent by the upload that uses it (one DELETE: of two racing, one wins),
 * ends at its expiry or its token's (revocation included), and anything else
 * (spent, expired, altered, other terms) is 401 invalid_link.
 */
import { ApiError } from "../kernel/errors.ts";
import type { Clock } from "../kernel/clock.ts";
import type { UploadLinkRecord, UploadLinkRecords } from "../domain/auth_records.ts";
import type { TokenCaller } from "./caller.ts";
import { hashOfSecret, newSecret, SECRET_PATTERN } from "./secrets.ts";
import type { TokenService } from "./tokens.ts";

/** The longest a link may live. */
export const MAX_LINK_SECONDS = 3600;

/** What a link lets one upload store. */
export interface LinkTerms {
  cid: string;
  size: number;
  contentType: string;
  filename: string | null;
}

export interface UploadLinksOptions {
  tokens: TokenService;
  records: UploadLinkRecords;
  clock: Clock;
}

/** A live link, found by its secret: its terms, and how to spend it. */
export interface OpenLink extends LinkTerms {
  /** The owner's token as a caller; 401 invalid_link when it was revoked or expired. */
  owner(): Promise<TokenCaller>;
  /** Spends the link; 401 invalid_link when another upload spent it first. */
  spend(): Promise<void>;
}

export class UploadLinks {
  readonly #options: UploadLinksOptions;

  constructor(options: UploadLinksOptions) {
    this.#options = options;
  }

  /** Mints a link for `owner`; it ends after `seconds` (≤ 1 hour) or with the token. */
  async mint(
    owner: TokenCaller,
    terms: LinkTerms,
    seconds: number,
  ): Promise<{ secret: string; expiresMs: number }> {
    const { records, clock } = this.#options;
    const now = clock.now();
    const expiresMs = Math.min(now + Math.min(seconds, MAX_LINK_SECONDS) * 1000, owner.exp * 1000);
    const secret = newSecret();
    await records.pruneExpired(now);
    await records.insert({ idHash: hashOfSecret(secret), jti: owner.jti, ...terms, expiresMs });
    return { secret, expiresMs };
  }

  /** The live link of a secret: 401 invalid_link when it is unknown, spent or expired. */
  async open(secret: string): Promise<OpenLink> {
    const { records, tokens, clock } = this.#options;
    const idHash = SECRET_PATTERN.test(secret) ? hashOfSecret(secret) : null;
    const link: UploadLinkRecord | null = idHash === null
      ? null
      : await records.get(idHash, clock.now());
    if (idHash === null || link === null) {
      throw invalidLink("This upload link is not valid: it was used already, expired, or altered");
    }
    return {
      cid: link.cid,
      size: link.size,
      contentType: link.contentType,
      filename: link.filename,
      owner: async () => {
        try {
          return await tokens.callerOfJti(link.jti, { via: "link" });
        } catch (error) {
          if (!(error instanceof ApiError)) throw error;
          throw invalidLink("The token that made this upload link is no longer valid");
        }
      },
      spend: async () => {
        if (!await records.consume(idHash, clock.now())) {
          throw invalidLink("This upload link was used already");
        }
      },
    };
  }
}

export function invalidLink(message: string): ApiError {
  return new ApiError("invalid_link", message);
}
