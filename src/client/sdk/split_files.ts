/**
 * A split file listed as one file. GET /api/files lists deals, and a split
 * file is several: one per piece (named "<name>.part1" …) and its manifest's
 * ("<name>.manifest.json", a few hundred bytes). People think of the file,
 * so the web page and the CLI's `files` show one row: the file's name and
 * real size (the manifest's), its /f/ URL, and its parts folded under it.
 *
 * A deal is folded into a split file when its cid is one of the manifest's
 * pieces and its name is that piece's part name: the same bytes uploaded as
 * a file of their own stay a row of their own. Listings are newest first and
 * a split file's parts are stored before its manifest, so its parts come
 * after it, possibly on a later page: one SplitFiles is fed page after page.
 */
import type { Deal } from "./api_types.ts";
import { pieceFilename } from "./manifest.ts";
import type { Manifest } from "./types.ts";
import { MANIFEST_CONTENT_TYPE } from "./types.ts";

export interface ListedPart {
  cid: string;
  size: number;
  /** The part's name ("video.mp4.part1"); null when the file has none. */
  name: string | null;
}

export interface ListedFile {
  /** The deal the row stands for: a split file's is its manifest's deal. */
  deal: Deal;
  /** The file's name: for a split file the manifest's, not "<name>.manifest.json". */
  name: string | null;
  /** The file's bytes: for a split file all of them, not the manifest's. */
  size: number;
  /** The split file's manifest; null for a file stored whole. */
  manifest: Manifest | null;
  /** A split file's pieces, in order; empty for a file stored whole. */
  parts: ListedPart[];
}

/** Reads a manifest by its cid (StorageClient.downloadInfo's); null when it cannot. */
export type ManifestReader = (cid: string) => Promise<Manifest | null>;

export class SplitFiles {
  readonly #read: ManifestReader;
  /** "<cid> <name>" of every part of every split file listed so far. */
  readonly #parts = new Set<string>();

  constructor(read: ManifestReader) {
    this.#read = read;
  }

  /** The page's deals as files: split files whole, their part deals folded into them. */
  async add(deals: readonly Deal[]): Promise<ListedFile[]> {
    const files: ListedFile[] = [];
    for (const deal of deals) {
      if (this.#parts.has(partKey(deal.cid, deal.filename))) continue;
      const manifest = isManifestType(deal.contentType) ? await this.#read(deal.cid) : null;
      if (manifest === null) {
        files.push({ deal, name: deal.filename, size: deal.size, manifest: null, parts: [] });
        continue;
      }
      const parts = manifest.pieces.map((piece, index) => ({
        cid: piece.cid,
        size: piece.size,
        name: pieceFilename(manifest.name, index, manifest.pieces.length),
      }));
      for (const part of parts) this.#parts.add(partKey(part.cid, part.name));
      files.push({ deal, name: manifest.name, size: manifest.size, manifest, parts });
    }
    return files;
  }
}

function partKey(cid: string, name: string | null): string {
  return `${cid} ${name ?? ""}`;
}

function isManifestType(contentType: string): boolean {
  return contentType.split(";")[0].trim().toLowerCase() === MANIFEST_CONTENT_TYPE;
}
