/**
 * A segment is the unit of parallel hashing: 8192 whole chunks (1,040,384
 * payload bytes), whose tree is a complete subtree at level 15. Segments at
 * aligned offsets are independent, so any thread can hash them.
 */

export const SEGMENT_CHUNKS = 8192;
export const SEGMENT_BYTES = 127 * SEGMENT_CHUNKS;
/** Tree level of a segment's root: log2(4 leaves per chunk * 8192 chunks). */
export const SEGMENT_LEVEL = 15;
