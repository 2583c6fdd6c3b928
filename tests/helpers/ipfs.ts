/**
 * IPFS tools for the tests, all the ecosystem's own: ipfs-car packs files
 * into a CAR as its CLI does (UnixFS, 1 MiB raw leaves, CIDv1), @ipld/car
 * writes hand-made CARs and reads the gateway's, multiformats hashes and
 * names blocks, and cardex writes a CARv2 index.
 */
import { CAREncoderStream, createDirectoryEncoderStream } from "ipfs-car";
import { CarReader, CarWriter } from "@ipld/car";
import { CarIndexer } from "@ipld/car/indexer";
import { MultihashIndexSortedWriter } from "cardex";
import { CID } from "multiformats/cid";
import * as raw from "multiformats/codecs/raw";
import * as dagCbor from "@ipld/dag-cbor";
import { sha256 } from "multiformats/hashes/sha2";
import { create as createDigest } from "multiformats/hashes/digest";

export const CAR_TYPE = "application/vnd.ipld.car";
export const RAW_TYPE = "application/vnd.ipld.raw";

export interface Block {
  cid: CID;
  bytes: Uint8Array;
}

/**
 * Packs files (paths inside the root directory) into a CARv1 with ipfs-car,
 * the root in its header, as `ipfs-car pack DIR --output out.car` does.
 */
export async function packFiles(
  files: Record<string, Uint8Array>,
): Promise<{ root: string; car: Uint8Array<ArrayBuffer> }> {
  const names = Object.keys(files).sort();
  const fileLikes = names.map((name) => ({
    name,
    stream: () => ReadableStream.from([files[name]]),
  }));
  const blocks: { cid: unknown; bytes: Uint8Array }[] = [];
  await createDirectoryEncoderStream(fileLikes).pipeTo(
    new WritableStream({ write: (block) => void blocks.push(block) }),
  );
  const root = blocks.at(-1)!.cid; // ipfs-car emits the root last
  const chunks: Uint8Array[] = [];
  await ReadableStream.from(blocks)
    .pipeThrough(new CAREncoderStream([root as never]))
    .pipeTo(new WritableStream({ write: (chunk) => void chunks.push(chunk) }));
  return { root: String(root), car: concat(chunks) };
}

/**
 * Writes the files into a directory and packs it with the ipfs-car command line
 * (`ipfs-car pack DIR --output FILE`, run by Deno from npm): the CAR and the root
 * it prints. The directory needs two entries at its top, or ipfs-car drops its
 * common prefix from the paths.
 */
export async function packDirectoryWithCli(
  files: Record<string, Uint8Array>,
): Promise<{ root: string; car: Uint8Array<ArrayBuffer> }> {
  const dir = await Deno.makeTempDir({ prefix: "ipfs-car-" });
  try {
    for (const [name, bytes] of Object.entries(files)) {
      const path = `${dir}/site/${name}`;
      await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
      await Deno.writeFile(path, bytes);
    }
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-read",
        "--allow-env",
        `--allow-write=${dir}`,
        "npm:ipfs-car@3.1.0",
        "pack",
        `${dir}/site`,
        "--output",
        `${dir}/site.car`,
      ],
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!output.success) throw new Error(new TextDecoder().decode(output.stderr));
    const root = new TextDecoder().decode(output.stdout).trim();
    return { root, car: await Deno.readFile(`${dir}/site.car`) };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** A CARv1 of the given blocks, written by @ipld/car (no check of the blocks' hashes). */
export async function carOf(roots: CID[], blocks: Block[]): Promise<Uint8Array<ArrayBuffer>> {
  const { writer, out } = CarWriter.create(roots);
  const chunks: Uint8Array[] = [];
  const collected = (async () => {
    for await (const chunk of out) chunks.push(chunk);
  })();
  for (const block of blocks) await writer.put(block);
  await writer.close();
  await collected;
  return concat(chunks);
}

/** The same CAR as a CARv2: pragma, header, `padding` zero bytes, the CARv1, a cardex index. */
export async function carV2Of(v1: Uint8Array, padding = 0): Promise<Uint8Array<ArrayBuffer>> {
  const indexer = await CarIndexer.fromBytes(v1);
  const indexChunks: Uint8Array[] = [];
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const collected = (async () => {
    for await (const chunk of readable) indexChunks.push(chunk);
  })();
  const writer = MultihashIndexSortedWriter.createWriter({ writer: writable.getWriter() });
  for await (const { cid, offset } of indexer) await writer.add(cid, offset);
  await writer.close();
  await collected;
  const pragma = Uint8Array.of(0x0a, 0xa1, 0x67, 0x76, 0x65, 0x72, 0x73, 0x69, 0x6f, 0x6e, 0x02);
  const dataOffset = pragma.length + 40 + padding;
  const header = new Uint8Array(40);
  const view = new DataView(header.buffer);
  view.setBigUint64(16, BigInt(dataOffset), true);
  view.setBigUint64(24, BigInt(v1.length), true);
  view.setBigUint64(32, BigInt(dataOffset + v1.length), true);
  return concat([pragma, header, new Uint8Array(padding), v1, ...indexChunks]);
}

/** A raw block of these bytes under its sha2-256 cid (bafkrei…). */
export async function rawBlock(bytes: Uint8Array): Promise<Block> {
  return { cid: CID.createV1(raw.code, await sha256.digest(bytes)), bytes };
}

/** A cid with a multihash of this code and a zero digest (a hash the service does not check). */
export function cidWithHash(code: number, digestBytes = 32): CID {
  return CID.createV1(raw.code, createDigest(code, new Uint8Array(digestBytes)));
}

/**
 * Reads a CAR answer with @ipld/car and checks every block against its cid;
 * the blocks in the order they came.
 */
export async function readVerifiedCar(
  bytes: Uint8Array,
): Promise<{ roots: string[]; blocks: Block[] }> {
  const reader = await CarReader.fromBytes(bytes);
  const blocks: Block[] = [];
  for await (const block of reader.blocks()) {
    const digest = await sha256.digest(block.bytes);
    if (
      block.cid.multihash.code !== sha256.code ||
      digest.bytes.toHex() !== block.cid.multihash.bytes.toHex()
    ) {
      throw new Error(`block ${block.cid} does not hash to its cid`);
    }
    blocks.push({ cid: block.cid as CID, bytes: block.bytes });
  }
  return { roots: (await reader.getRoots()).map(String), blocks };
}

/** Every block of a CAR, as @ipld/car reads it (not checked). */
export async function blocksOf(car: Uint8Array): Promise<Block[]> {
  const reader = await CarReader.fromBytes(car);
  const blocks: Block[] = [];
  for await (const block of reader.blocks()) {
    blocks.push({ cid: block.cid as CID, bytes: block.bytes });
  }
  return blocks;
}

export function concat(chunks: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(chunks.reduce((n, chunk) => n + chunk.length, 0));
  chunks.reduce((at, chunk) => (out.set(chunk, at), at + chunk.length), 0);
  return out;
}

/**
 * A DAG as a CAR: a dag-cbor root linking `leaves` raw leaves (1 + leaves
 * blocks; each leaf's bytes from `leaf`), for the bounds on blocks (a CAR's
 * cap, a gateway walk's).
 */
export async function linkedCar(
  leaves = 2,
  leaf: (i: number) => Uint8Array = (i) => new TextEncoder().encode(`leaf ${i}`),
): Promise<{ root: CID; car: Uint8Array<ArrayBuffer> }> {
  const blocks: Block[] = [];
  for (let i = 0; i < leaves; i++) blocks.push(await rawBlock(leaf(i)));
  const bytes = dagCbor.encode({ leaves: blocks.map((b) => b.cid) });
  const root = CID.createV1(dagCbor.code, await sha256.digest(bytes));
  return { root, car: await carOf([root], [{ cid: root, bytes }, ...blocks]) };
}
