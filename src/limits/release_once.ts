/**
 * A hold's release that counts once, however often it is called. The holds
 * of limits/ (an upload's admission, a signup slot, a day's reserved bytes)
 * can be let go from more than one path (a failure and the end of the work,
 * a settle and a release), and a hold given back twice would free room that
 * another caller still holds.
 */

/** Wraps `release` so that only its first call gives anything back. */
export function releaseOnce(release: () => void): () => void {
  let released = false;
  return () => {
    if (released) return;
    released = true;
    release();
  };
}
