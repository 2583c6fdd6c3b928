/**
 * `storage cid` and `storage upload`: files in, cids out. The work is the
 * SDK's (StorageClient.upload splits, hashes piece k+1 while piece k is on the
 * wire, sends no bytes the server already has but makes the caller's deal on
 * them, resumes a piece after a dropped connection, writes the manifest);
 * with --keep, unfinished pieces outlive the run (resume_file.ts), and a
 * later run continues them; this module checks the files first, turns SDK progress (bytes on the wire)
 * into the progress bar, and prints the results: one file's object, or
 * `{"files": [...]}` for several.
 */
import { HashWorkerPool, pieceCid } from "../sdk/mod.ts";
import type { Deal, ResumeStore, StorageClient } from "../sdk/mod.ts";
import { fileSource } from "../sdk/fs.ts";
import type { UploadProgress, UploadResult } from "../sdk/types.ts";
import { integerFlag, sizeFlag, UsageError } from "./args.ts";
import type { Flags, GlobalOptions } from "./args.ts";
import { checkInputFiles, contentTypeOf } from "./files.ts";
import type { InputFile } from "./files.ts";
import { printJson, printLines } from "./output.ts";
import type { CliIo } from "./output.ts";
import { formatBytes } from "./progress.ts";
import { hashThenUpload } from "./sequential.ts";
import { InterruptedError } from "./errors.ts";
import { fileResumeStore, hasKeptPieces } from "./resume_file.ts";

export interface CidCommandOptions {
  io: CliIo;
  global: GlobalOptions;
  paths: readonly string[];
}

/** `cid FILE…`: the PieceCIDv2 of each whole file, as POST /api/piece-cids would answer. */
export async function cidCommand({ io, global, paths }: CidCommandOptions): Promise<number> {
  const files = await checkInputFiles(paths);
  const results: { path: string; cid: string; size: number }[] = [];
  // One pool of hashing Workers (one per CPU) for all the files.
  const pool = new HashWorkerPool();
  try {
    for (const file of files) {
      const source = await fileSource(file.path);
      const { cid, size } = await pieceCid(source, {
        pool,
        signal: io.signal,
        onProgress: (bytes: number) =>
          io.progress.update({ label: `hashing ${file.name}`, done: bytes, total: file.size }),
      });
      io.progress.clear();
      results.push({ path: file.path, cid, size });
    }
  } finally {
    pool.close();
  }
  if (global.json) {
    await printJson(io, results.length === 1 ? results[0] : { files: results });
  } else {
    await printLines(io, results.map((r) => `${r.cid}  ${r.path}`));
  }
  return 0;
}

export interface UploadCommandOptions {
  io: CliIo;
  global: GlobalOptions;
  client: StorageClient;
  paths: readonly string[];
  flags: Flags;
}

/** `upload FILE…`: uploads one file after the other; the first failure stops the command. */
export async function uploadCommand(options: UploadCommandOptions): Promise<number> {
  const { io, global, client, paths, flags } = options;
  const pieceSize = typeof flags["piece-size"] === "string"
    ? sizeFlag("--piece-size", flags["piece-size"])
    : undefined;
  const concurrency = typeof flags.concurrency === "string"
    ? integerFlag("--concurrency", flags.concurrency, 1, 64)
    : undefined;
  const name = typeof flags.name === "string" ? flags.name : undefined;
  const type = typeof flags.type === "string" ? flags.type : undefined;
  if (name !== undefined && paths.length > 1) {
    throw new UsageError("--name names one file: upload the files one at a time to name each");
  }
  const files = await checkInputFiles(paths);
  const empty = files.find((f) => f.size === 0);
  if (empty) {
    throw new UsageError(
      `cannot upload ${empty.path}: it is empty (the service stores no empty files)`,
    );
  }
  const results: (UploadResult & { path: string })[] = [];
  for (const file of files) {
    // --keep, or pieces an earlier run kept: their URLs in a file beside it (resume_file.ts).
    const keep = flags.keep === true || await hasKeptPieces(file.path);
    const result = await uploadOne({
      io,
      client,
      file,
      filename: name ?? file.name,
      contentType: type ?? contentTypeOf(file.name),
      pieceSize,
      concurrency,
      sequential: flags.sequential === true,
      resumeStore: keep ? fileResumeStore(file.path) : undefined,
    }).catch((error) => {
      if (keep && io.signal.aborted) {
        throw new InterruptedError(
          `interrupted; unfinished pieces of ${file.path} are kept on the server (holding ` +
            "their quota for up to 24 h): run the same upload again to send only the rest",
        );
      }
      throw error;
    });
    results.push({ path: file.path, ...result });
    if (!global.json) await printLines(io, describeUpload(file, result));
  }
  if (global.json) {
    const shaped = [];
    for (const result of results) {
      shaped.push({ ...uploadJson(result), ...await handoffsOf(client, result.deals) });
    }
    await printJson(io, shaped.length === 1 ? shaped[0] : { files: shaped });
  }
  return 0;
}

/**
 * On a server that hands pieces to a storage provider, where each of the
 * upload's deals stands there (`handoff`, by deal id); nothing otherwise, and
 * nothing for a sponsored upload (its deals have no owner to read them).
 */
async function handoffsOf(
  client: StorageClient,
  dealIds: readonly string[],
): Promise<{ handoff?: Record<string, Deal["handoff"]> }> {
  const found: Record<string, Deal["handoff"]> = {};
  for (const dealId of dealIds) {
    const deal = await client.deal(dealId).catch(() => null);
    if (deal === null || deal.handoff === undefined) return {};
    found[dealId] = deal.handoff;
  }
  return dealIds.length === 0 ? {} : { handoff: found };
}

interface UploadOne {
  io: CliIo;
  client: StorageClient;
  file: InputFile;
  filename: string;
  contentType: string;
  pieceSize: number | undefined;
  concurrency: number | undefined;
  sequential: boolean;
  resumeStore: ResumeStore | undefined;
}

async function uploadOne(o: UploadOne): Promise<UploadResult> {
  const file = await fileSource(o.file.path);
  const source = o.sequential ? hashThenUpload(file) : file;
  const onProgress = (p: UploadProgress) => o.io.progress.update(uploadProgressState(o.file, p));
  const result = await o.client.upload(source, {
    filename: o.filename,
    contentType: o.contentType,
    pieceSize: o.pieceSize,
    concurrency: o.concurrency,
    signal: o.io.signal,
    onProgress,
    resumeStore: o.resumeStore,
  });
  o.io.progress.clear();
  return result;
}

function uploadProgressState(file: InputFile, p: UploadProgress) {
  if (p.phase === "hashing" && p.bytesSent === 0) {
    return { label: `hashing ${file.name}`, done: p.bytesHashed, total: p.totalBytes };
  }
  const hashing = p.bytesHashed < p.totalBytes
    ? `hashed ${Math.floor((p.bytesHashed / Math.max(1, p.totalBytes)) * 100)}%, `
    : "";
  return {
    label: p.phase === "manifest" ? `manifest ${file.name}` : `upload ${file.name}`,
    done: p.bytesSent,
    total: p.totalBytes,
    note: `${hashing}piece ${Math.min(p.piecesDone + 1, p.piecesTotal)}/${p.piecesTotal}`,
  };
}

function describeUpload(file: InputFile, r: UploadResult): string[] {
  const count = (via: string) => r.pieces.filter((p) => p.via === via).length;
  const [dealt, owned] = [count("deal"), count("owned")];
  const notes = [
    dealt ? `${dealt} stored already: deal made without sending the bytes` : "",
    owned ? `${owned} yours already` : "",
  ].filter(Boolean).join("; ");
  const split = r.pieces.length > 1
    ? `, ${r.pieces.length} pieces + manifest${notes ? ` (${notes})` : ""}`
    : dealt
    ? ", stored already: a deal made without sending the bytes"
    : owned
    ? ", yours already"
    : "";
  const lines = [`${file.path}: ${formatBytes(r.size)}${split}`, `  cid  ${r.cid}`];
  // A split file's URL is /f/: the whole file in one body (ranges too); /p/ is its manifest.
  if (r.manifest !== null) lines.push(`  url  ${r.fileUrl}`, `  manifest  ${r.retrievalUrl}`);
  else lines.push(`  url  ${r.retrievalUrl}`);
  return lines;
}

/** The --json shape of one upload (docs/client.md#json-output). */
function uploadJson(r: UploadResult & { path: string }) {
  return {
    path: r.path,
    cid: r.cid,
    retrievalUrl: r.retrievalUrl,
    fileUrl: r.fileUrl,
    size: r.size,
    pieces: r.pieces,
    deals: r.deals,
    manifest: r.manifest !== null,
  };
}
