/**
 * Walking every piece the catalog names, as the operator's work does it
 * (scrub, backup, migrate; a lifecycle sweep later): pages in cid order, so
 * a catalog of millions never sits in memory, shared by N workers that stop
 * together at the first error.
 */
import type { CatalogRecords, PieceRecord } from "../domain/catalog_records.ts";

/**
 * Every piece, a page of `pageSize` rows at a time, in cid order. An async
 * generator answers concurrent next() calls in turn, so workers can share it.
 */
export async function* eachPiece(
  records: Pick<CatalogRecords, "piecesAfter">,
  pageSize: number,
): AsyncGenerator<PieceRecord> {
  let cursor = "";
  for (let page; (page = await records.piecesAfter(cursor, pageSize)).length > 0;) {
    yield* page;
    cursor = page.at(-1)!.cid;
  }
}

/**
 * Runs `work` on every item, `concurrency` at a time. The first error stops
 * every worker from taking another item, and is thrown only once all of
 * them are done: nothing is written after the caller has given up.
 */
export async function forEachConcurrently<T>(
  items: AsyncIterator<T>,
  options: { concurrency: number },
  work: (item: T) => Promise<void>,
): Promise<void> {
  let stopped = false;
  const worker = async () => {
    try {
      for (let next = await items.next(); !stopped && !next.done; next = await items.next()) {
        await work(next.value);
      }
    } catch (error) {
      stopped = true;
      throw error;
    }
  };
  const results = await Promise.allSettled(Array.from({ length: options.concurrency }, worker));
  const failure = results.find((result) => result.status === "rejected");
  if (failure) throw failure.reason;
}
