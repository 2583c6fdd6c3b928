/**
 * The payer's signatures: every `extraData` the provider forwards to the Warm
 * Storage contract, signed with EIP-712 (domain FilecoinWarmStorageService,
 * version "1", the configured chain, the record keeper as verifying contract)
 * by synapse-core's own typed-data signers and ABI encoders, never by hand.
 *
 * synapse-core signs for its chain object's Warm Storage address; a record
 * keeper of the operator's own (a devnet, a new deployment) gets a copy of the
 * chain object with that address, which is all its signers read.
 *
 * The key file holds a hex private key: the payer's, or a session key the
 * payer authorised (then `payer` names the payer, which `CreateDataSet`
 * carries). It must not be readable by group or others, and it is never
 * logged: only the address it signs as is.
 */
import { createWalletClient, custom, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { type Chain, getChain } from "@filoz/synapse-core/chains";
import * as Piece from "@filoz/synapse-core/piece";
import { PayerKeyError } from "./errors.ts";
import {
  signAddPieces,
  signCreateDataSet,
  signSchedulePieceRemovals,
} from "@filoz/synapse-core/typed-data";

export interface PayerOptions {
  keyFile: string;
  chainId: number;
  recordKeeper: string;
  payee: string;
  /** The payer when the key is a session key; null: the key's own address. */
  payer: string | null;
}

export class Payer {
  readonly #client;
  readonly #options: PayerOptions;
  /** The address that signs (the payer, or its session key). */
  readonly signer: string;
  /** The address that pays. */
  readonly payer: string;

  private constructor(key: Hex, options: PayerOptions) {
    const account = privateKeyToAccount(key);
    const base = getChain(options.chainId);
    const chain: Chain = {
      ...base,
      contracts: {
        ...base.contracts,
        fwss: { ...base.contracts.fwss, address: options.recordKeeper as Hex },
      },
    };
    // Signing with a local account never calls the transport.
    const transport = custom({
      request: () => Promise.reject(new Error("the hand-off signs only; it sends no transaction")),
    });
    this.#client = createWalletClient({ account, chain, transport });
    this.#options = options;
    this.signer = account.address;
    this.payer = options.payer ?? account.address;
  }

  /** Reads the key file: a 0x-prefixed or bare 64-digit hex key, mode 0600 or stricter. */
  static async fromKeyFile(options: PayerOptions): Promise<Payer> {
    const { keyFile } = options;
    let text: string;
    try {
      const info = await Deno.stat(keyFile);
      if (info.mode !== null && (info.mode & 0o077) !== 0) {
        throw new PayerKeyError(
          `--pdp-key-file ${keyFile} is readable by others (mode ${
            (info.mode & 0o777).toString(8)
          }): chmod 600 it`,
        );
      }
      text = (await Deno.readTextFile(keyFile)).trim();
    } catch (error) {
      if (error instanceof PayerKeyError) throw error;
      throw new PayerKeyError(`--pdp-key-file ${keyFile}: ${(error as Error).message}`);
    }
    const hex = text.startsWith("0x") ? text : `0x${text}`;
    if (!/^0x[0-9a-fA-F]{64}$/.test(hex)) {
      throw new PayerKeyError(`--pdp-key-file ${keyFile} must hold a 32-byte hex private key`);
    }
    return new Payer(hex as Hex, options);
  }

  /** CreateDataSet over the provider's payee, with a single-use clientDataSetId. */
  signCreateDataSet(clientDataSetId: bigint): Promise<Hex> {
    return signCreateDataSet(this.#client, {
      clientDataSetId,
      payee: this.#options.payee as Hex,
      payer: this.payer as Hex,
    });
  }

  /** AddPieces of these PieceCIDv2s (in this order) to the data set, with a single-use nonce. */
  signAddPieces(
    clientDataSetId: bigint,
    pieceCids: readonly string[],
    nonce: bigint,
  ): Promise<Hex> {
    return signAddPieces(this.#client, {
      clientDataSetId,
      nonce,
      pieces: pieceCids.map((cid) => ({ pieceCid: Piece.parse(cid) })),
    });
  }

  signRemoval(clientDataSetId: bigint, pieceIds: readonly number[]): Promise<Hex> {
    return signSchedulePieceRemovals(this.#client, {
      clientDataSetId,
      pieceIds: pieceIds.map(BigInt),
    });
  }
}

/** A fresh uint256 for a clientDataSetId or a nonce: single-use per payer, so never reused. */
export function randomUint256(): bigint {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return BigInt(`0x${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`);
}
