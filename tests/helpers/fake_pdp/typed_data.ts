/**
 * Why: the Warm Storage contract authorises every create, add and removal by
 * the EIP-712 signature inside `extraData`; Curio only forwards the bytes and
 * learns the verdict from an eth_call or a gas estimate. The fake plays the
 * contract's part: it decodes `extraData` with synapse-core's own ABI layouts
 * and recovers the signer with viem over synapse-core's own EIP-712 types and
 * domain (FilecoinWarmStorageService, version "1", chain id, verifying
 * contract = the record keeper), so a client that signs anything else is
 * refused as the chain would refuse it.
 */
import { decodeAbiParameters, type Hex, isHex, recoverTypedDataAddress } from "viem";
import type { Address } from "viem";
import {
  EIP712Types,
  getStorageDomain,
  signAddPiecesAbiParameters,
  signCreateDataSetAbiParameters,
  signcreateDataSetAndAddPiecesAbiParameters,
} from "@filoz/synapse-core/typed-data";
import type { Chain } from "@filoz/synapse-core/chains";

export interface CreatePayload {
  payer: Address;
  clientDataSetId: bigint;
  keys: readonly string[];
  values: readonly string[];
  signature: Hex;
}

export interface AddPayload {
  nonce: bigint;
  keys: readonly (readonly string[])[];
  values: readonly (readonly string[])[];
  signature: Hex;
}

/** Thrown where the contract would revert; the message is the revert reason. */
export class Revert extends Error {}

function hex(extraData: string): Hex {
  if (!isHex(extraData)) throw new Revert("extraData is not hex");
  return extraData;
}

function decoding<T>(what: string, decode: () => T): T {
  try {
    return decode();
  } catch {
    throw new Revert(`abi.decode of the ${what} extraData failed`);
  }
}

export function decodeCreate(extraData: string): CreatePayload {
  const [payer, clientDataSetId, keys, values, signature] = decoding(
    "CreateDataSet",
    () => decodeAbiParameters(signCreateDataSetAbiParameters, hex(extraData)),
  );
  return { payer, clientDataSetId, keys, values, signature };
}

export function decodeAdd(extraData: string): AddPayload {
  const [nonce, keys, values, signature] = decoding(
    "AddPieces",
    () => decodeAbiParameters(signAddPiecesAbiParameters, hex(extraData)),
  );
  return { nonce, keys, values, signature };
}

/** The create-and-add form: (bytes createPayload, bytes addPayload). */
export function decodeCreateAndAdd(extraData: string): { create: Hex; add: Hex } {
  const [create, add] = decoding(
    "create-and-add",
    () => decodeAbiParameters(signcreateDataSetAndAddPiecesAbiParameters, hex(extraData)),
  );
  return { create, add };
}

/** SchedulePieceRemovals extraData: abi.encode(bytes signature). */
export function decodeRemovals(extraData: string): Hex {
  const [signature] = decoding(
    "SchedulePieceRemovals",
    () => decodeAbiParameters([{ type: "bytes" }], hex(extraData)),
  );
  return signature;
}

export class Eip712 {
  readonly #domain: ReturnType<typeof getStorageDomain>;

  constructor(chainId: number, recordKeeper: Address) {
    const chain = { id: chainId } as Chain;
    this.#domain = getStorageDomain({ chain, verifyingContract: recordKeeper });
  }

  /** The signer of a CreateDataSet over (clientDataSetId, payee, metadata); null if unrecoverable. */
  createSigner(payload: CreatePayload, payee: Address): Promise<Address | null> {
    const metadata = payload.keys.map((key, i) => ({ key, value: payload.values[i] ?? "" }));
    return this.#recover(payload.signature, "CreateDataSet", {
      clientDataSetId: payload.clientDataSetId,
      payee,
      metadata,
    });
  }

  /** The signer of an AddPieces over the pieces' v2 bytes and their metadata. */
  addSigner(payload: AddPayload, clientDataSetId: bigint, pieces: Hex[]): Promise<Address | null> {
    return this.#recover(payload.signature, "AddPieces", {
      clientDataSetId,
      nonce: payload.nonce,
      pieceData: pieces.map((data) => ({ data })),
      pieceMetadata: pieces.map((_, i) => ({
        pieceIndex: BigInt(i),
        metadata: (payload.keys[i] ?? []).map((key, k) => ({
          key,
          value: payload.values[i]?.[k] ?? "",
        })),
      })),
    });
  }

  /** The signer of a SchedulePieceRemovals over (clientDataSetId, pieceIds). */
  removalsSigner(
    signature: Hex,
    clientDataSetId: bigint,
    pieceIds: bigint[],
  ): Promise<Address | null> {
    return this.#recover(signature, "SchedulePieceRemovals", { clientDataSetId, pieceIds });
  }

  async #recover(
    signature: Hex,
    primaryType: "CreateDataSet" | "AddPieces" | "SchedulePieceRemovals",
    message: Record<string, unknown>,
  ): Promise<Address | null> {
    try {
      return await recoverTypedDataAddress(
        {
          domain: this.#domain,
          types: EIP712Types,
          primaryType,
          message,
          signature,
        } as Parameters<typeof recoverTypedDataAddress>[0],
      );
    } catch {
      return null;
    }
  }
}
