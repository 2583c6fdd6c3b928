/**
 * `storage download CID [-o PATH] [--force]`: a file appears at PATH only
 * whole and verified. The bytes go to a temporary file beside the target
 * (same directory, so the final rename cannot cross file systems), created
 * exclusively; only when the SDK's stream has ended without error (every
 * piece checked against its cid) is it synced and renamed into place. On any
 * failure, Ctrl-C included, the temporary file is removed and nothing is left.
 *
 * An existing target is kept unless --force: the check is made before the
 * download starts and again, atomically, at the end (a hard link refuses to
 * replace a file, where a rename would not).
 */
import { parseCid } from "../../kernel/piece_cid/mod.ts";
import { basename, dirname, join } from "node:path";
import type { StorageClient } from "../sdk/mod.ts";
import type { DownloadProgress } from "../sdk/types.ts";
import type { Flags, GlobalOptions } from "./args.ts";
import { EXIT, InterruptedError, LocalFileError } from "./errors.ts";
import { fileErrorText } from "./files.ts";
import { printJson, printLines } from "./output.ts";
import type { CliIo } from "./output.ts";
import { formatBytes } from "./progress.ts";

export interface DownloadCommandOptions {
  io: CliIo;
  global: GlobalOptions;
  client: StorageClient;
  cid: string;
  flags: Flags;
}

export async function downloadCommand(options: DownloadCommandOptions): Promise<number> {
  const { io, global, client, cid, flags } = options;
  const output = typeof flags.output === "string" ? flags.output : cid;
  const force = flags.force === true;
  const onProgress = (p: DownloadProgress) =>
    io.progress.update({
      // The file being written is what a person recognises; the cid only when it goes to stdout.
      label: `download ${output === "-" ? shortCid(cid) : basename(output)}`,
      done: p.bytesReceived,
      total: p.totalBytes,
      note: p.piecesTotal > 1
        ? `piece ${Math.min(p.piecesDone + 1, p.piecesTotal)}/${p.piecesTotal}`
        : undefined,
    });

  if (output === "-") {
    const body = await client.download(cid, { onProgress, signal: io.signal });
    await pipeOrInterrupt(io, body, io.stdoutBytes, { preventClose: true });
    io.progress.clear();
    return EXIT.ok;
  }

  const target = await resolveTarget(output, cid, force);
  const temp = await createTempBeside(target);
  let bytes = 0;
  try {
    const body = await client.download(cid, { onProgress, signal: io.signal });
    const counted = body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          bytes += chunk.byteLength;
          controller.enqueue(chunk);
        },
      }),
    );
    await pipeOrInterrupt(io, counted, fileSink(temp.file, temp.path));
    await temp.file.syncData().catch((error) => {
      throw writeFailed(temp.path, error);
    });
    temp.file.close();
    temp.closed = true;
    await moveIntoPlace(temp.path, target, force);
  } catch (error) {
    if (!temp.closed) {
      try {
        temp.file.close();
      } catch { /* already closed by the stream */ }
    }
    await Deno.remove(temp.path).catch(() => {});
    throw error;
  }
  io.progress.clear();
  // An opaque cid names bytes without fixing them: say so rather than claim a check.
  const verified = parseCid(cid.toLowerCase()).kind !== "opaque";
  if (global.json) await printJson(io, { cid, path: target, size: bytes, verified });
  else {
    const how = verified ? `verified against ${cid}` : `not verified (${cid} is an opaque name)`;
    await printLines(io, [`${target}: ${formatBytes(bytes)}, ${how}`]);
  }
  return EXIT.ok;
}

/** The file to write: `output`, or `output/<cid>` when output is a directory. */
async function resolveTarget(output: string, cid: string, force: boolean): Promise<string> {
  let target = output;
  const info = await Deno.stat(output).catch(() => null);
  if (info?.isDirectory) target = join(output, cid);
  const existing = target === output ? info : await Deno.stat(target).catch(() => null);
  if (existing?.isDirectory) throw new LocalFileError(`cannot write ${target}: it is a directory`);
  if (existing && !force) {
    throw new LocalFileError(`${target} exists; pass --force to replace it`);
  }
  const dir = await Deno.stat(dirname(target)).catch(() => null);
  if (!dir?.isDirectory) {
    throw new LocalFileError(`cannot write ${target}: ${dirname(target)} is not a directory`);
  }
  return target;
}

interface TempFile {
  path: string;
  file: Deno.FsFile;
  closed: boolean;
}

/** `.<name>.<random>.part` in the target's directory, created exclusively. */
async function createTempBeside(target: string): Promise<TempFile> {
  for (let attempt = 0;; attempt++) {
    const random = crypto.getRandomValues(new Uint8Array(6)).toHex();
    const path = join(dirname(target), `.${basename(target)}.${random}.part`);
    try {
      const file = await Deno.open(path, { write: true, createNew: true });
      return { path, file, closed: false };
    } catch (error) {
      if (error instanceof Deno.errors.AlreadyExists && attempt < 5) continue;
      throw new LocalFileError(`cannot create a file beside ${target}: ${fileErrorText(error)}`, {
        cause: error,
      });
    }
  }
}

/** The file's writable, with write failures (disk full, I/O error) as exit status 5. */
function fileSink(file: Deno.FsFile, path: string): WritableStream<Uint8Array> {
  return new WritableStream({
    async write(chunk) {
      let offset = 0;
      try {
        while (offset < chunk.byteLength) offset += await file.write(chunk.subarray(offset));
      } catch (error) {
        throw writeFailed(path, error);
      }
    },
  });
}

function writeFailed(path: string, error: unknown): LocalFileError {
  return new LocalFileError(`cannot write ${path}: ${fileErrorText(error)}`, {
    exitCode: EXIT.localFile,
    cause: error,
  });
}

/** Pipes, and reports an abort caused by Ctrl-C as InterruptedError. */
async function pipeOrInterrupt(
  io: CliIo,
  from: ReadableStream<Uint8Array>,
  to: WritableStream<Uint8Array>,
  options: StreamPipeOptions = {},
): Promise<void> {
  try {
    await from.pipeTo(to, { ...options, signal: io.signal });
  } catch (error) {
    if (io.signal.aborted) throw new InterruptedError();
    throw error;
  }
}

async function moveIntoPlace(temp: string, target: string, force: boolean): Promise<void> {
  try {
    if (force) {
      await Deno.rename(temp, target);
      return;
    }
    try {
      await Deno.link(temp, target);
    } catch (error) {
      if (error instanceof Deno.errors.AlreadyExists) throw error;
      // No hard links on this file system: check, then rename.
      if (await Deno.lstat(target).then(() => true, () => false)) {
        throw new Deno.errors.AlreadyExists(target);
      }
      await Deno.rename(temp, target);
      return;
    }
    await Deno.remove(temp);
  } catch (error) {
    if (error instanceof Deno.errors.AlreadyExists) {
      throw new LocalFileError(
        `${target} appeared during the download; pass --force to replace it`,
      );
    }
    throw new LocalFileError(`cannot write ${target}: ${fileErrorText(error)}`, {
      exitCode: EXIT.localFile,
      cause: error,
    });
  }
}

function shortCid(cid: string): string {
  return cid.length > 20 ? `${cid.slice(0, 10)}…${cid.slice(-6)}` : cid;
}
