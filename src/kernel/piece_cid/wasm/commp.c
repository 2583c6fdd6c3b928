// Piece commitment (CommP) kernel: Fr32 padding and the SHA-256 "trunc254"
// binary Merkle tree of FRC-0069, compiled to WebAssembly with 128-bit SIMD.
// Built by scripts/build_wasm.sh; the .wasm and its base64 wrapper are committed
// and CI rebuilds them bit for bit.
//
// Why it is fast:
// - every tree node hashes exactly 64 bytes, so the second SHA-256 block (the
//   padding block) is a constant: its message schedule, plus the round
//   constants, is computed once at start-up;
// - nodes of one level are independent, so four are hashed at once, one per
//   32-bit SIMD lane, with the first block's message schedule interleaved
//   with its rounds;
// - the whole tree is built here: JavaScript only copies input in and reads
//   the root out, so there is no per-node call overhead.
//
// Layout: input is written to io[] (up to IO_CHUNKS chunks of 127 bytes);
// update() pads and hashes it into subtrees pushed onto an incremental stack
// (one pending node per level, like a binary counter); finish() hashes the
// final partial chunk, fills the tree up with precomputed all-zero subtrees and
// writes the 32-byte root to io[].

#include <stdint.h>
#include <wasm_simd128.h>

#ifndef KERNEL4
#define KERNEL4 hash_nodes_x4
#endif
#define EXPORT(name) __attribute__((export_name(#name)))

#define IO_CHUNKS 8192            // 127 * 8192 bytes of input per update() call
#define MAX_LEVELS 64

static uint8_t io[127 * IO_CHUNKS];
static uint8_t leaves[128 * IO_CHUNKS];
static uint8_t stack[MAX_LEVELS][32];
static uint8_t stack_used[MAX_LEVELS];
static uint8_t zero_root[MAX_LEVELS][32];
static uint64_t chunks_done;

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static const uint32_t IV[8] = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

// K[t] + W[t] of the padding block of a 64-byte message: 0x80, zeros, length 512 bits.
static uint32_t pad_wk[64];
static v128_t pad_wk4[64];

static inline uint32_t rotr32(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static inline uint32_t load_be32(const uint8_t *p) {
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static inline void store_be32(uint8_t *p, uint32_t v) {
  p[0] = v >> 24;
  p[1] = v >> 16;
  p[2] = v >> 8;
  p[3] = v;
}

// ---- scalar SHA-256 of one 64-byte message (used for leftovers and the stack) ----

static void compress_scalar(uint32_t state[8], const uint32_t wk[64]) {
  uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
  uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
  for (int t = 0; t < 64; t++) {
    uint32_t s1 = rotr32(e, 6) ^ rotr32(e, 11) ^ rotr32(e, 25);
    uint32_t ch = (e & f) ^ (~e & g);
    uint32_t t1 = h + s1 + ch + wk[t];
    uint32_t s0 = rotr32(a, 2) ^ rotr32(a, 13) ^ rotr32(a, 22);
    uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + s0 + maj;
  }
  state[0] += a;
  state[1] += b;
  state[2] += c;
  state[3] += d;
  state[4] += e;
  state[5] += f;
  state[6] += g;
  state[7] += h;
}

// out = trunc254(SHA-256(in[0..64])); in and out may overlap.
static void hash_node_scalar(const uint8_t *in, uint8_t *out) {
  uint32_t w[64];
  for (int t = 0; t < 16; t++) w[t] = load_be32(in + 4 * t);
  for (int t = 16; t < 64; t++) {
    uint32_t s0 = rotr32(w[t - 15], 7) ^ rotr32(w[t - 15], 18) ^ (w[t - 15] >> 3);
    uint32_t s1 = rotr32(w[t - 2], 17) ^ rotr32(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  for (int t = 0; t < 64; t++) w[t] += K[t];
  uint32_t state[8];
  for (int i = 0; i < 8; i++) state[i] = IV[i];
  compress_scalar(state, w);
  compress_scalar(state, pad_wk);
  for (int i = 0; i < 8; i++) store_be32(out + 4 * i, state[i]);
  out[31] &= 0x3f;
}

// ---- four nodes at once, one per SIMD lane ----

#define ROTR(x, n) wasm_v128_or(wasm_u32x4_shr((x), (n)), wasm_i32x4_shl((x), 32 - (n)))
#define ADD(x, y) wasm_i32x4_add((x), (y))
#define XOR(x, y) wasm_v128_xor((x), (y))

static inline v128_t bswap32(v128_t x) {
  return wasm_i8x16_shuffle(x, x, 3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12);
}

// Rows r0..r3 (one message each) -> columns (one word index each).
static inline void transpose4(v128_t *r0, v128_t *r1, v128_t *r2, v128_t *r3) {
  v128_t t0 = wasm_i32x4_shuffle(*r0, *r1, 0, 4, 1, 5);
  v128_t t1 = wasm_i32x4_shuffle(*r2, *r3, 0, 4, 1, 5);
  v128_t t2 = wasm_i32x4_shuffle(*r0, *r1, 2, 6, 3, 7);
  v128_t t3 = wasm_i32x4_shuffle(*r2, *r3, 2, 6, 3, 7);
  *r0 = wasm_i32x4_shuffle(t0, t1, 0, 1, 4, 5);
  *r1 = wasm_i32x4_shuffle(t0, t1, 2, 3, 6, 7);
  *r2 = wasm_i32x4_shuffle(t2, t3, 0, 1, 4, 5);
  *r3 = wasm_i32x4_shuffle(t2, t3, 2, 3, 6, 7);
}

#define ROUND(a, b, c, d, e, f, g, h, wk)                                        \
  do {                                                                           \
    v128_t s1 = XOR(XOR(ROTR(e, 6), ROTR(e, 11)), ROTR(e, 25));                  \
    v128_t ch = wasm_v128_bitselect(f, g, e);                                    \
    v128_t t1 = ADD(ADD(ADD(h, s1), ch), wk);                                    \
    v128_t s0 = XOR(XOR(ROTR(a, 2), ROTR(a, 13)), ROTR(a, 22));                  \
    v128_t maj = wasm_v128_bitselect(c, a, XOR(a, b));                           \
    d = ADD(d, t1);                                                              \
    h = ADD(t1, ADD(s0, maj));                                                   \
  } while (0)

// Eight rounds with the registers renamed instead of moved.
#define ROUNDS8(wk, t)                                 \
  ROUND(a, b, c, d, e, f, g, h, wk[(t) + 0]);          \
  ROUND(h, a, b, c, d, e, f, g, wk[(t) + 1]);          \
  ROUND(g, h, a, b, c, d, e, f, wk[(t) + 2]);          \
  ROUND(f, g, h, a, b, c, d, e, wk[(t) + 3]);          \
  ROUND(e, f, g, h, a, b, c, d, wk[(t) + 4]);          \
  ROUND(d, e, f, g, h, a, b, c, wk[(t) + 5]);          \
  ROUND(c, d, e, f, g, h, a, b, wk[(t) + 6]);          \
  ROUND(b, c, d, e, f, g, h, a, wk[(t) + 7])

// Adds the working variables back into the state at the end of a block.
#define FEED_FORWARD(s)  \
  do {                   \
    s[0] = ADD(s[0], a); \
    s[1] = ADD(s[1], b); \
    s[2] = ADD(s[2], c); \
    s[3] = ADD(s[3], d); \
    s[4] = ADD(s[4], e); \
    s[5] = ADD(s[5], f); \
    s[6] = ADD(s[6], g); \
    s[7] = ADD(s[7], h); \
  } while (0)

static inline void compress4(v128_t s[8], const v128_t wk[64]) {
  v128_t a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
  for (int t = 0; t < 64; t += 8) {
    ROUNDS8(wk, t);
  }
  FEED_FORWARD(s);
}

// One schedule step: w[t] from w[t-16], w[t-15], w[t-7], w[t-2] in a 16-word ring.
#define SCHEDULE(w, t)                                                          \
  do {                                                                          \
    v128_t x = w[((t) + 1) & 15], y = w[((t) + 14) & 15];                       \
    v128_t s0 = XOR(XOR(ROTR(x, 7), ROTR(x, 18)), wasm_u32x4_shr(x, 3));        \
    v128_t s1 = XOR(XOR(ROTR(y, 17), ROTR(y, 19)), wasm_u32x4_shr(y, 10));      \
    w[(t) & 15] = ADD(ADD(w[(t) & 15], s0), ADD(w[((t) + 9) & 15], s1));        \
  } while (0)

// The first block, with its message schedule computed between the rounds: the
// schedule does not depend on the round chain, so it fills the chain's gaps.
static inline void compress4_message(v128_t s[8], v128_t w[16]) {
  v128_t a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
  v128_t wk[64];
  for (int t = 0; t < 64; t += 8) {
    if (t >= 16) {
      for (int i = 0; i < 8; i++) SCHEDULE(w, t + i);
    }
    for (int i = 0; i < 8; i++) wk[t + i] = ADD(w[(t + i) & 15], wasm_i32x4_splat((int32_t)K[t + i]));
    ROUNDS8(wk, t);
  }
  FEED_FORWARD(s);
}

// out[32*i..] = trunc254(SHA-256(in[64*i..64*i+64])) for i = 0..3. out may overlap in
// as long as out <= in: all input is loaded before anything is stored.
static void hash_nodes_x4(const uint8_t *in, uint8_t *out) {
  v128_t w[16];
  for (int q = 0; q < 4; q++) {
    v128_t r0 = bswap32(wasm_v128_load(in + 0 * 64 + 16 * q));
    v128_t r1 = bswap32(wasm_v128_load(in + 1 * 64 + 16 * q));
    v128_t r2 = bswap32(wasm_v128_load(in + 2 * 64 + 16 * q));
    v128_t r3 = bswap32(wasm_v128_load(in + 3 * 64 + 16 * q));
    transpose4(&r0, &r1, &r2, &r3);
    w[4 * q + 0] = r0;
    w[4 * q + 1] = r1;
    w[4 * q + 2] = r2;
    w[4 * q + 3] = r3;
  }
  v128_t s[8];
  for (int i = 0; i < 8; i++) s[i] = wasm_i32x4_splat((int32_t)IV[i]);
  compress4_message(s, w);
  compress4(s, pad_wk4);
  // Clear the top two bits of byte 31, the low byte of big-endian word 7.
  s[7] = wasm_v128_and(s[7], wasm_i32x4_splat((int32_t)0xffffff3f));
  transpose4(&s[0], &s[1], &s[2], &s[3]);
  transpose4(&s[4], &s[5], &s[6], &s[7]);
  for (int i = 0; i < 4; i++) {
    wasm_v128_store(out + 32 * i, bswap32(s[i]));
    wasm_v128_store(out + 32 * i + 16, bswap32(s[4 + i]));
  }
}

// buf holds 2n nodes; afterwards its first n nodes are their parents.
static void reduce_level(uint8_t *buf, uint32_t parents) {
  uint32_t i = 0;
  for (; i + 4 <= parents; i += 4) hash_nodes_x4(buf + 64 * i, buf + 32 * i);
  for (; i < parents; i++) hash_node_scalar(buf + 64 * i, buf + 32 * i);
}

// ---- Fr32: 127 bytes (1016 bits) become four 254-bit words in 32-byte leaves ----

static void fr32_pad(const uint8_t *in, uint8_t *out, uint32_t chunks) {
  for (uint32_t c = 0; c < chunks; c++, in += 127, out += 128) {
    for (int i = 0; i < 31; i++) out[i] = in[i];
    out[31] = in[31] & 0x3f;
    for (int i = 0; i < 31; i++) out[32 + i] = (uint8_t)((in[31 + i] >> 6) | (in[32 + i] << 2));
    out[63] = (uint8_t)((in[62] >> 6) | (in[63] << 2)) & 0x3f;
    for (int i = 0; i < 31; i++) out[64 + i] = (uint8_t)((in[63 + i] >> 4) | (in[64 + i] << 4));
    out[95] = (uint8_t)((in[94] >> 4) | (in[95] << 4)) & 0x3f;
    for (int i = 0; i < 31; i++) out[96 + i] = (uint8_t)((in[95 + i] >> 2) | (in[96 + i] << 6));
    out[127] = in[126] >> 2;
  }
}

// ---- the incremental tree ----

static void copy32(uint8_t *dst, const uint8_t *src) {
  for (int i = 0; i < 32; i++) dst[i] = src[i];
}

// Adds a complete subtree root at `level`, carrying like a binary counter.
static void push_node(uint32_t level, const uint8_t node[32]) {
  uint8_t pair[64];
  copy32(pair + 32, node);
  while (stack_used[level]) {
    copy32(pair, stack[level]);
    stack_used[level] = 0;
    hash_node_scalar(pair, pair + 32);
    level++;
  }
  copy32(stack[level], pair + 32);
  stack_used[level] = 1;
}

static uint32_t log2u(uint32_t x) {
  uint32_t n = 0;
  while (x >>= 1) n++;
  return n;
}

// Hashes `chunks` whole chunks (aligned to a power of two) into one subtree and pushes it.
static void add_aligned(const uint8_t *in, uint32_t chunks) {
  fr32_pad(in, leaves, chunks);
  uint32_t nodes = chunks * 4;
  while (nodes > 1) {
    reduce_level(leaves, nodes / 2);
    nodes /= 2;
  }
  push_node(2 + log2u(chunks), leaves);
  chunks_done += chunks;
}

EXPORT(io_pointer) uint8_t *io_pointer(void) { return io; }

EXPORT(io_chunks) uint32_t io_chunks(void) { return IO_CHUNKS; }

EXPORT(reset) void reset(void) {
  for (int i = 0; i < MAX_LEVELS; i++) stack_used[i] = 0;
  chunks_done = 0;
}

EXPORT(init) void init(void) {
  uint32_t w[64];
  w[0] = 0x80000000;
  for (int t = 1; t < 15; t++) w[t] = 0;
  w[15] = 512;
  for (int t = 16; t < 64; t++) {
    uint32_t s0 = rotr32(w[t - 15], 7) ^ rotr32(w[t - 15], 18) ^ (w[t - 15] >> 3);
    uint32_t s1 = rotr32(w[t - 2], 17) ^ rotr32(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  for (int t = 0; t < 64; t++) {
    pad_wk[t] = w[t] + K[t];
    pad_wk4[t] = wasm_i32x4_splat((int32_t)pad_wk[t]);
  }
  uint8_t pair[64];
  for (int i = 0; i < 32; i++) zero_root[0][i] = 0;
  for (int level = 1; level < MAX_LEVELS; level++) {
    copy32(pair, zero_root[level - 1]);
    copy32(pair + 32, zero_root[level - 1]);
    hash_node_scalar(pair, zero_root[level]);
  }
  reset();
}

// Hashes the `chunks` whole 127-byte chunks in io[].
EXPORT(update) void update(uint32_t chunks) {
  const uint8_t *in = io;
  while (chunks > 0) {
    // The largest power of two that fits and keeps the stack aligned.
    uint32_t group = 1u << log2u(chunks);
    while (group > 1 && (chunks_done & (group - 1)) != 0) group >>= 1;
    add_aligned(in, group);
    in += 127 * group;
    chunks -= group;
  }
}

// Adds a subtree root computed elsewhere (another instance, another thread): the
// 32 bytes at the start of io[] are the root of 2^(level-2) whole chunks.
EXPORT(push_subtree) void push_subtree(uint32_t level) {
  uint8_t node[32];
  copy32(node, io);
  push_node(level, node);
  chunks_done += (uint64_t)1 << (level - 2);
}

// Hashes the last partial chunk (tail bytes at the start of io[]), pads the tree with zero
// subtrees up to `height` and writes the root to io[0..32].
EXPORT(finish) void finish(uint32_t tail, uint32_t height) {
  if (tail > 0) {
    for (uint32_t i = tail; i < 127; i++) io[i] = 0;
    add_aligned(io, 1);
  }
  uint8_t pair[64];
  int have = 0;
  uint8_t *acc = pair + 32;
  for (uint32_t level = 0; level < height; level++) {
    if (stack_used[level]) {
      copy32(pair, stack[level]);
      if (!have) copy32(acc, zero_root[level]);
      hash_node_scalar(pair, acc);
      have = 1;
    } else if (have) {
      copy32(pair, acc);
      copy32(pair + 32, zero_root[level]);
      hash_node_scalar(pair, acc);
    }
  }
  if (stack_used[height]) copy32(io, stack[height]);
  else if (have) copy32(io, acc);
  else copy32(io, zero_root[height]);
}
