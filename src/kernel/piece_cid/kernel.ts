/**
 * Loads the CommP WebAssembly kernel (src/kernel/piece_cid/wasm/commp.c). Each
 * PieceHasher owns one instance: the kernel keeps its tree state in its own
 * linear memory, so instances never share state. Compiling happens once per
 * process (or Worker).
 */
import { COMMP_WASM_BASE64 } from "./wasm/commp_wasm.ts";

export interface CommpKernel {
  /** The kernel's input/output window (127 * chunksPerUpdate bytes). */
  io: Uint8Array;
  chunksPerUpdate: number;
  /** Hashes `chunks` whole 127-byte chunks from the start of io. */
  update(chunks: number): void;
  /** Hashes the `tail` leftover bytes at the start of io, fills the tree to `height`, root → io[0..32]. */
  finish(tail: number, height: number): void;
  /** Adds a subtree root (at io[0..32]) of 2^(level-2) whole chunks hashed elsewhere. */
  pushSubtree(level: number): void;
  reset(): void;
}

interface Exports {
  memory: WebAssembly.Memory;
  io_pointer(): number;
  io_chunks(): number;
  init(): void;
  reset(): void;
  update(chunks: number): void;
  finish(tail: number, height: number): void;
  push_subtree(level: number): void;
}

let compiled: WebAssembly.Module | null = null;

function module(): WebAssembly.Module {
  if (compiled === null) {
    const binary = Uint8Array.fromBase64(COMMP_WASM_BASE64);
    compiled = new WebAssembly.Module(binary);
  }
  return compiled;
}

export function createKernel(): CommpKernel {
  const exports = new WebAssembly.Instance(module(), {}).exports as unknown as Exports;
  exports.init();
  const chunksPerUpdate = exports.io_chunks();
  const io = new Uint8Array(exports.memory.buffer, exports.io_pointer(), 127 * chunksPerUpdate);
  return {
    io,
    chunksPerUpdate,
    update: (chunks) => exports.update(chunks),
    finish: (tail, height) => exports.finish(tail, height),
    pushSubtree: (level) => exports.push_subtree(level),
    reset: () => exports.reset(),
  };
}
