/**
 * Why: Curio cannot decide anything about a data set by itself; it asks the
 * chain (PDPVerifier, whose listener is the Warm Storage contract) by gas
 * estimate or eth_call and reports what comes back. This module is that
 * chain, small: the data sets with their payer and clientDataSetId, their
 * live pieces and next piece id, the payer's single-use nonces (one table,
 * `clientNonces[payer]`, for clientDataSetIds and AddPieces nonces alike, as
 * in FilOzone/filecoin-services FilecoinWarmStorageService.sol), and sent
 * transactions that land after `confirmAfterMs`, re-checked against the state
 * at landing. Scheduled removals take effect at the next proving period.
 */
import type { Address, Hex } from "viem";
import { bytesToHex } from "viem";
import type { FakePdpOptions } from "./config.ts";
import type { PieceInfo } from "./piece.ts";
import {
  type AddPayload,
  type CreatePayload,
  decodeAdd,
  decodeCreate,
  decodeCreateAndAdd,
  decodeRemovals,
  Eip712,
  Revert,
} from "./typed_data.ts";

export type SignatureKind = "CreateDataSet" | "AddPieces" | "SchedulePieceRemovals";

/** One recovered signature, for inspection. */
export interface SignatureRecord {
  kind: SignatureKind;
  /** The request that carried it ("POST /pdp/piece/pull", …). */
  route: string;
  recovered: Address | null;
  /** Who had to have signed: the payer. */
  payer: Address;
  accepted: boolean;
}

export type Call =
  | { kind: "create"; extraData: string }
  | { kind: "createAndAdd"; pieces: PieceInfo[]; extraData: string }
  | { kind: "add"; dataSetId: number; pieces: PieceInfo[]; extraData: string }
  | { kind: "remove"; dataSetId: number; pieceIds: number[]; extraData: string };

/** What a landed transaction did. */
export interface Effect {
  dataSetId?: number;
  pieceIds?: number[];
}

export interface Tx {
  hash: Hex;
  call: Call;
  sentAt: number;
  landedAt?: number;
  success?: boolean;
  revert?: string;
  effect?: Effect;
}

interface ChainDataSet {
  id: number;
  payer: Address;
  clientDataSetId: bigint;
  nextPieceId: number;
  /** pieceId → PieceCIDv2 */
  live: Map<number, string>;
}

/** A call decoded and its signatures recovered: what the state is checked against. */
interface Prepared {
  call: Call;
  create?: CreatePayload;
  add?: AddPayload;
  payer: Address;
  signers: (Address | null)[];
}

const same = (a: Address | null, b: Address) => a !== null && a.toLowerCase() === b.toLowerCase();

export class FakeChain {
  readonly signatures: SignatureRecord[] = [];
  readonly #options: FakePdpOptions;
  readonly #eip712: Eip712;
  readonly #dataSets = new Map<number, ChainDataSet>();
  readonly #nonces = new Map<string, Set<bigint>>();
  readonly #pending: Tx[] = [];
  readonly #removals: { dataSetId: number; pieceIds: number[]; at: number }[] = [];
  #nextDataSetId = 1;

  constructor(options: FakePdpOptions) {
    this.#options = options;
    this.#eip712 = new Eip712(options.chainId, options.recordKeeper);
  }

  /** eth_call / estimateGas: throws a Revert where the transaction would revert. */
  async simulate(call: Call, route: string): Promise<Prepared> {
    const prepared = await this.#prepare(call, route);
    this.#check(prepared);
    return prepared;
  }

  /** Estimates gas (a revert throws), then queues the transaction to land. */
  async send(call: Call, route: string): Promise<Tx> {
    await this.simulate(call, route);
    const tx: Tx = {
      hash: bytesToHex(crypto.getRandomValues(new Uint8Array(32))),
      call,
      sentAt: this.#options.now(),
    };
    this.#pending.push(tx);
    return tx;
  }

  /** The payer of a data set on chain (Curio's GetDataSetPayer), or null. */
  payerOf(dataSetId: number): Address | null {
    return this.#dataSets.get(dataSetId)?.payer ?? null;
  }

  isLive(dataSetId: number, pieceId: number): boolean {
    return this.#dataSets.get(dataSetId)?.live.has(pieceId) ?? false;
  }

  /** Lands due transactions (re-checked against the state then) and runs due proving periods. */
  async advance(now: number): Promise<Tx[]> {
    const landed: Tx[] = [];
    while (
      this.#pending.length > 0 && this.#pending[0].sentAt + this.#options.confirmAfterMs <= now
    ) {
      const tx = this.#pending.shift()!;
      tx.landedAt = now;
      try {
        const prepared = await this.#prepare(tx.call, null);
        this.#check(prepared);
        tx.effect = this.#apply(prepared, now);
        tx.success = true;
      } catch (error) {
        if (!(error instanceof Revert)) throw error;
        tx.success = false;
        tx.revert = error.message;
      }
      landed.push(tx);
    }
    for (let i = this.#removals.length - 1; i >= 0; i--) {
      const removal = this.#removals[i];
      if (removal.at > now) continue;
      this.#removals.splice(i, 1);
      const dataSet = this.#dataSets.get(removal.dataSetId);
      for (const pieceId of removal.pieceIds) dataSet?.live.delete(pieceId);
    }
    return landed;
  }

  /** Decodes the call and recovers its signatures; `route` null: a landing, not logged. */
  async #prepare(call: Call, route: string | null): Promise<Prepared> {
    const payee = this.#options.payee;
    const log = (kind: SignatureKind, recovered: Address | null, payer: Address) => {
      if (route === null) return;
      this.signatures.push({ kind, route, recovered, payer, accepted: same(recovered, payer) });
    };
    if (call.kind === "create" || call.kind === "createAndAdd") {
      if (call.extraData === "" || call.extraData === "0x") throw new Revert("ExtraDataRequired()");
      const parts = call.kind === "create" ? null : decodeCreateAndAdd(call.extraData);
      const create = decodeCreate(parts ? parts.create : call.extraData);
      const createSigner = await this.#eip712.createSigner(create, payee);
      log("CreateDataSet", createSigner, create.payer);
      if (!parts) return { call, create, payer: create.payer, signers: [createSigner] };
      const add = decodeAdd(parts.add);
      const pieces = (call as { pieces: PieceInfo[] }).pieces.map((p) => p.bytesHex);
      const addSigner = await this.#eip712.addSigner(add, create.clientDataSetId, pieces);
      log("AddPieces", addSigner, create.payer);
      return { call, create, add, payer: create.payer, signers: [createSigner, addSigner] };
    }
    const dataSet = this.#dataSets.get(call.dataSetId);
    if (!dataSet) throw new Revert(`DataSetNotRegistered(${call.dataSetId})`);
    if (call.extraData === "" || call.extraData === "0x") throw new Revert("ExtraDataRequired()");
    if (call.kind === "add") {
      const add = decodeAdd(call.extraData);
      const pieces = call.pieces.map((p) => p.bytesHex);
      const signer = await this.#eip712.addSigner(add, dataSet.clientDataSetId, pieces);
      log("AddPieces", signer, dataSet.payer);
      return { call, add, payer: dataSet.payer, signers: [signer] };
    }
    const signature = decodeRemovals(call.extraData);
    const ids = call.pieceIds.map(BigInt);
    const signer = await this.#eip712.removalsSigner(signature, dataSet.clientDataSetId, ids);
    log("SchedulePieceRemovals", signer, dataSet.payer);
    return { call, payer: dataSet.payer, signers: [signer] };
  }

  /** The contract's state checks, in its order. */
  #check(prepared: Prepared): void {
    const { call, create, add, payer } = prepared;
    const used = this.#nonces.get(payer.toLowerCase()) ?? new Set<bigint>();
    if (create) {
      if (/^0x0{40}$/i.test(create.payer)) throw new Revert("ZeroAddress(Payer)");
      if (used.has(create.clientDataSetId)) {
        throw new Revert(`ClientDataSetAlreadyRegistered(${create.clientDataSetId})`);
      }
    }
    if (add) {
      const pieceCount = "pieces" in call ? call.pieces.length : 0;
      if (used.has(add.nonce) || add.nonce === create?.clientDataSetId) {
        throw new Revert(`ClientDataSetAlreadyRegistered(${add.nonce})`);
      }
      if (add.keys.length !== pieceCount || add.values.length !== pieceCount) {
        throw new Revert(`MetadataArrayCountMismatch(${add.keys.length}, ${pieceCount})`);
      }
    }
    if (call.kind === "remove") {
      const dataSet = this.#dataSets.get(call.dataSetId)!;
      for (const id of call.pieceIds) {
        if (!dataSet.live.has(id)) throw new Revert("Can only schedule removal of live pieces");
      }
    }
    for (const signer of prepared.signers) {
      if (!same(signer, payer)) throw new Revert(`InvalidSignature(${payer}, ${signer})`);
    }
  }

  #apply(prepared: Prepared, now: number): Effect {
    const { call, create, add, payer } = prepared;
    const nonces = this.#nonces.get(payer.toLowerCase()) ?? new Set<bigint>();
    this.#nonces.set(payer.toLowerCase(), nonces);
    let dataSet: ChainDataSet;
    if (create) {
      nonces.add(create.clientDataSetId);
      dataSet = {
        id: this.#nextDataSetId++,
        payer,
        clientDataSetId: create.clientDataSetId,
        nextPieceId: 0,
        live: new Map(),
      };
      this.#dataSets.set(dataSet.id, dataSet);
    } else {
      dataSet = this.#dataSets.get((call as { dataSetId: number }).dataSetId)!;
    }
    if (call.kind === "remove") {
      const at = now + this.#options.provingPeriodMs;
      this.#removals.push({ dataSetId: dataSet.id, pieceIds: call.pieceIds, at });
      return { dataSetId: dataSet.id, pieceIds: call.pieceIds };
    }
    if (!add) return { dataSetId: dataSet.id };
    nonces.add(add.nonce);
    const pieceIds = (call as { pieces: PieceInfo[] }).pieces.map((piece) => {
      const id = dataSet.nextPieceId++;
      dataSet.live.set(id, piece.v2);
      return id;
    });
    return { dataSetId: dataSet.id, pieceIds };
  }
}
