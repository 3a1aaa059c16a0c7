/*
 * kvq_sage_layout.h -- the SAGE formats (spec/sage.md): shapes, the per-thread
 * token-to-scale map of the mma accumulator layout, its per-warp and per-block
 * policies, the sizes of every SAGE array and the packing of the signed INT4 /
 * INT8 codes.
 *
 * The one owner of SAGE index arithmetic: the fast and exact paths, the tests
 * and (later) the kernels call these helpers, and no other file computes a
 * scale slot, a slot's tokens or a code's byte.  Plain C11 that nvcc also
 * compiles (KVQ_HD).  Contracts are stated in / % * only (no bit operators),
 * which this toolchain's provers handle.
 */
#ifndef KVQ_SAGE_LAYOUT_H
#define KVQ_SAGE_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "kvq_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Roles of the Q/K quantizer [SAGE-MAP-02]. */
#define KVQ_SAGE_ROLE_Q 0u
#define KVQ_SAGE_ROLE_K 1u

/* Granularities [SAGE-MAP-03]: which tokens share a scale. */
#define KVQ_SAGE_GRAN_THREAD 0u /* the paper's per-thread map (default) */
#define KVQ_SAGE_GRAN_WARP   1u /* the public code's per_warp (K: per block) */
#define KVQ_SAGE_GRAN_BLOCK  2u /* SageAttention's per_block */

/* Rounding of the Q/K quantizer [SAGE-Q-02..05]. */
#define KVQ_SAGE_ROUND_PAPER  0u /* s = RN32(m/cmax), round(RN32(x/s)) by the policy's ties */
#define KVQ_SAGE_ROUND_PUBLIC 1u /* the public Triton sequence: +1e-7, +-0.5, truncation */

/* FP8 formats of P~ and V [SAGE-P-03]. */
#define KVQ_SAGE_FP8_E4M3 0u /* F = 448 (default) */
#define KVQ_SAGE_FP8_E5M2 1u /* F = 57344 */

/* Smoothing segment variants [SAGE-SM-04] are a segment length, not a code:
 * per_head passes seg = tokens, per_block passes seg = b_q. */

/* Limits [SAGE-L-02] [SAGE-MAP-02]. */
#define KVQ_SAGE_MAX_TOKENS (1u << 24)
#define KVQ_SAGE_MAX_BLOCK  1024u
#define KVQ_SAGE_MAX_WARPS  16u
#define KVQ_SAGE_Q_SLOTS_PER_WARP  8u /* thread map: lane groups l/4 = 0..7 [SAGE-MAP-04] */
#define KVQ_SAGE_K_SLOTS_PER_BLOCK 4u /* thread map: lanes l%4 = 0..3 [SAGE-MAP-05] */

/* One head's tensor [SAGE-L-01]: row-major [tokens][dim]. */
typedef struct kvq_sage_shape {
    uint32_t tokens;  /* N, 1 .. 2^24 */
    uint32_t dim;     /* d, 64 or 128 */
} kvq_sage_shape;

/* A Q/K quantizer [SAGE-MAP-02]. */
typedef struct kvq_sage_qk {
    uint32_t role;      /* KVQ_SAGE_ROLE_Q or KVQ_SAGE_ROLE_K */
    uint32_t bits;      /* 4 (INT4, mma.m16n8k64) or 8 (INT8, mma.m16n8k32) */
    uint32_t gran;      /* KVQ_SAGE_GRAN_* */
    uint32_t block;     /* b_q (Q) or b_k (K) */
    uint32_t warps;     /* c_w (Q); 1 for K */
    uint32_t rounding;  /* KVQ_SAGE_ROUND_* */
} kvq_sage_qk;

KVQ_STATIC_ASSERT(sizeof(kvq_sage_shape) == 8, "kvq_sage_shape is a frozen 8-byte record");
KVQ_STATIC_ASSERT(sizeof(kvq_sage_qk) == 24, "kvq_sage_qk is a frozen 24-byte record");

/*@ // [SAGE-L-02] and [SAGE-MAP-02] in logic terms.
    predicate kvq_sage_shape_l(integer n, integer d) =
        1 <= n <= 16777216 && (d == 64 || d == 128);
    predicate kvq_sage_qk_l(integer role, integer bits, integer gran, integer b, integer cw,
                            integer rnd) =
        (bits == 4 || bits == 8) && 0 <= gran <= 2 && 0 <= rnd <= 1 &&
        ((role == 0 && 1 <= cw <= 16 && 16 * cw <= b <= 1024 && b % (16 * cw) == 0) ||
         (role == 1 && cw == 1 && 32 <= b <= 1024 && b % 32 == 0));
    logic integer kvq_sage_cmax_l(integer bits) = bits == 4 ? 7 : 127;
    // Warp segment w: b_q / c_w for Q, b_k for K.
    logic integer kvq_sage_seg_l(integer role, integer b, integer cw) = role == 0 ? b / cw : b;
    // Slots per block [SAGE-MAP-03].
    logic integer kvq_sage_slots_per_block_l(integer role, integer gran, integer cw) =
        role == 0 ? (gran == 0 ? 8 * cw : gran == 1 ? cw : 1) : (gran == 0 ? 4 : 1);
    logic integer kvq_sage_scale_count_l(integer n, kvq_sage_qk q) =
        ((n + q.block - 1) / q.block) * kvq_sage_slots_per_block_l(q.role, q.gran, q.warps);
    // The slot of token n [SAGE-MAP-03].
    logic integer kvq_sage_slot_l(integer role, integer gran, integer b, integer cw, integer n) =
        role == 0 ?
            (gran == 0 ? (n / (b / cw)) * 8 + n % 8 : gran == 1 ? n / (b / cw) : n / b) :
            (gran == 0 ? (n / b) * 4 + (n % 8) / 2 : n / b);
    // Tokens of a full slot.
    logic integer kvq_sage_slot_size_l(integer role, integer gran, integer b, integer cw) =
        role == 0 ? (gran == 0 ? (b / cw) / 8 : gran == 1 ? b / cw : b) :
                    (gran == 0 ? b / 4 : b);
    // The k-th token of slot s.
    logic integer kvq_sage_slot_token_l(integer role, integer gran, integer b, integer cw,
                                        integer s, integer k) =
        role == 0 ?
            (gran == 0 ? (s / 8) * (b / cw) + 8 * k + s % 8 :
             gran == 1 ? s * (b / cw) + k : s * b + k) :
            (gran == 0 ? (s / 4) * b + 8 * (k / 2) + 2 * (s % 4) + k % 2 : s * b + k);
    // Two's-complement field of a code k, -2^(bits-1) <= k < 2^(bits-1) [SAGE-Q-06].
    logic integer kvq_sage_field_l(integer k, integer bits) =
        (k + kvq_pow2_l(bits)) % kvq_pow2_l(bits);
    logic integer kvq_sage_value_l(integer f, integer bits) =
        f >= kvq_pow2_l(bits) / 2 ? f - kvq_pow2_l(bits) : f;
    // The signed code of element e of the packed codes [SAGE-Q-06] [LAY-PACK-01]:
    // byte e*bits/8, element ((e*bits) % 8)/bits of that byte.
    logic integer kvq_sage_code_at_l{L}(uint8_t *codes, integer e, integer bits) =
        kvq_sage_value_l(kvq_code_l{L}(codes + (e * bits) / 8, ((e * bits) % 8) / bits, bits), bits);
*/

/* ---- shapes and parameters ------------------------------------------- */

/* [SAGE-L-02] */
/*@ requires \valid_read(s);
    assigns \nothing;
    ensures ok: \result != 0 <==> kvq_sage_shape_l(s->tokens, s->dim);
*/
KVQ_HD static inline int kvq_sage_shape_ok(const kvq_sage_shape *s)
{
    return s->tokens >= 1u && s->tokens <= KVQ_SAGE_MAX_TOKENS && (s->dim == 64u || s->dim == 128u);
}

/* [SAGE-MAP-02] */
/*@ requires \valid_read(q);
    assigns \nothing;
    ensures ok: \result != 0 <==>
        kvq_sage_qk_l(q->role, q->bits, q->gran, q->block, q->warps, q->rounding);
*/
KVQ_HD static inline int kvq_sage_qk_ok(const kvq_sage_qk *q)
{
    if (q->bits != 4u && q->bits != 8u) return 0;
    if (q->gran > KVQ_SAGE_GRAN_BLOCK || q->rounding > KVQ_SAGE_ROUND_PUBLIC) return 0;
    if (q->role == KVQ_SAGE_ROLE_Q)
        return q->warps >= 1u && q->warps <= KVQ_SAGE_MAX_WARPS && q->block <= KVQ_SAGE_MAX_BLOCK &&
               q->block >= 16u * q->warps && q->block % (16u * q->warps) == 0u;
    if (q->role == KVQ_SAGE_ROLE_K)
        return q->warps == 1u && q->block >= 32u && q->block <= KVQ_SAGE_MAX_BLOCK &&
               q->block % 32u == 0u;
    return 0;
}

/* The defaults of the public code [SAGE-MAP-02]: Q b_q = 128, c_w = 4; K b_k = 64;
 * per-thread, paper rounding. */
KVQ_HD static inline kvq_sage_qk kvq_sage_qk_default(uint32_t role, uint32_t bits)
{
    kvq_sage_qk q;
    q.role = role;
    q.bits = bits;
    q.gran = KVQ_SAGE_GRAN_THREAD;
    q.block = role == KVQ_SAGE_ROLE_Q ? 128u : 64u;
    q.warps = role == KVQ_SAGE_ROLE_Q ? 4u : 1u;
    q.rounding = KVQ_SAGE_ROUND_PAPER;
    return q;
}

/* cmax: 7 (INT4) or 127 (INT8). */
/*@ requires bits == 4 || bits == 8;
    assigns \nothing;
    ensures def: \result == kvq_sage_cmax_l(bits);
*/
KVQ_HD static inline uint32_t kvq_sage_cmax(uint32_t bits)
{
    return bits == 4u ? 7u : 127u;
}

/* ---- the token-to-scale map [SAGE-MAP-03..06] -------------------------- */

/* Warp segment w (Q: b_q / c_w; K: b_k). */
/*@ requires \valid_read(q) && kvq_sage_qk_l(q->role, q->bits, q->gran, q->block, q->warps, q->rounding);
    assigns \nothing;
    ensures def: \result == kvq_sage_seg_l(q->role, q->block, q->warps);
*/
KVQ_HD static inline uint32_t kvq_sage_seg(const kvq_sage_qk *q)
{
    return q->role == KVQ_SAGE_ROLE_Q ? q->block / q->warps : q->block;
}

/* Scale slots per block. */
/*@ requires \valid_read(q) && kvq_sage_qk_l(q->role, q->bits, q->gran, q->block, q->warps, q->rounding);
    assigns \nothing;
    ensures def: \result == kvq_sage_slots_per_block_l(q->role, q->gran, q->warps);
*/
KVQ_HD static inline uint32_t kvq_sage_slots_per_block(const kvq_sage_qk *q)
{
    if (q->role == KVQ_SAGE_ROLE_Q)
        return q->gran == KVQ_SAGE_GRAN_THREAD ? KVQ_SAGE_Q_SLOTS_PER_WARP * q->warps
             : q->gran == KVQ_SAGE_GRAN_WARP ? q->warps : 1u;
    return q->gran == KVQ_SAGE_GRAN_THREAD ? KVQ_SAGE_K_SLOTS_PER_BLOCK : 1u;
}

/* Blocks of b tokens covering N tokens: ceil(N / b). */
/*@ requires b_range: 1 <= b;
    assigns \nothing;
    ensures def: \result == (tokens + b - 1) / b;
*/
KVQ_HD static inline uint32_t kvq_sage_blocks(uint32_t tokens, uint32_t b)
{
    return (uint32_t)(((uint64_t)tokens + b - 1u) / b);
}

/* Number of scale slots of a tensor [SAGE-MAP-03]: ceil(N / b) * slots per block. */
/*@ requires \valid_read(s) && \valid_read(q);
    requires kvq_sage_qk_l(q->role, q->bits, q->gran, q->block, q->warps, q->rounding);
    assigns \nothing;
    ensures def: \result == kvq_sage_scale_count_l(s->tokens, *q);
*/
KVQ_HD static inline uint64_t kvq_sage_scale_count(const kvq_sage_shape *s, const kvq_sage_qk *q)
{
    return (uint64_t)kvq_sage_blocks(s->tokens, q->block) * kvq_sage_slots_per_block(q);
}

/* The scale slot of token n [SAGE-MAP-03]. */
/*@ requires \valid_read(q) && kvq_sage_qk_l(q->role, q->bits, q->gran, q->block, q->warps, q->rounding);
    assigns \nothing;
    ensures def: \result == kvq_sage_slot_l(q->role, q->gran, q->block, q->warps, n);
*/
KVQ_HD static inline uint64_t kvq_sage_scale_slot(const kvq_sage_qk *q, uint32_t n)
{
    uint32_t w = kvq_sage_seg(q);
    if (q->role == KVQ_SAGE_ROLE_Q) {
        if (q->gran == KVQ_SAGE_GRAN_THREAD) return (uint64_t)(n / w) * 8u + n % 8u;
        if (q->gran == KVQ_SAGE_GRAN_WARP) return n / w;
        return n / q->block;
    }
    if (q->gran == KVQ_SAGE_GRAN_THREAD) return (uint64_t)(n / q->block) * 4u + (n % 8u) / 2u;
    return n / q->block;
}

/* Tokens of a full slot: w/8, w, b_q (Q); b_k/4, b_k, b_k (K). */
/*@ requires \valid_read(q) && kvq_sage_qk_l(q->role, q->bits, q->gran, q->block, q->warps, q->rounding);
    assigns \nothing;
    ensures def: \result == kvq_sage_slot_size_l(q->role, q->gran, q->block, q->warps);
*/
KVQ_HD static inline uint32_t kvq_sage_slot_size(const kvq_sage_qk *q)
{
    uint32_t w = kvq_sage_seg(q);
    if (q->role == KVQ_SAGE_ROLE_Q)
        return q->gran == KVQ_SAGE_GRAN_THREAD ? w / 8u : q->gran == KVQ_SAGE_GRAN_WARP ? w : q->block;
    return q->gran == KVQ_SAGE_GRAN_THREAD ? q->block / 4u : q->block;
}

/* The k-th token (ascending, k < kvq_sage_slot_size) of slot s; it may be >= N
 * in the last block [SAGE-L-03].  The inverse of kvq_sage_scale_slot. */
/*@ requires \valid_read(q) && kvq_sage_qk_l(q->role, q->bits, q->gran, q->block, q->warps, q->rounding);
    requires s_range: s <= 4294967296;          // slots of at most 2^24 tokens
    assigns \nothing;
    ensures def: \result == kvq_sage_slot_token_l(q->role, q->gran, q->block, q->warps, s, k);
*/
KVQ_HD static inline uint64_t kvq_sage_slot_token(const kvq_sage_qk *q, uint64_t s, uint32_t k)
{
    uint32_t w = kvq_sage_seg(q), b = q->block;
    uint64_t base, r;
    //@ assert w_range: 1 <= w <= 1024 && 1 <= b <= 1024;
    //@ assert w_def: q->role == 0 ==> w == q->block / q->warps;
    if (q->role == KVQ_SAGE_ROLE_Q) {
        if (q->gran == KVQ_SAGE_GRAN_THREAD) {
            //@ assert no_wrap: (s / 8) * w <= 536870912 * 1024;
            base = (s / 8u) * w;
            r = base + 8u * (uint64_t)k + s % 8u;
            //@ assert r_def: r == (s / 8) * (q->block / q->warps) + 8 * k + s % 8;
            //@ assert ret: r == kvq_sage_slot_token_l(q->role, q->gran, q->block, q->warps, s, k);
            return r;
        }
        //@ assert no_wrap: s * w <= 4294967296 * 1024 && s * b <= 4294967296 * 1024;
        base = q->gran == KVQ_SAGE_GRAN_WARP ? s * w : s * b;
        r = base + k;
        //@ assert r_def: r == (q->gran == 1 ? s * (q->block / q->warps) : s * q->block) + k;
        //@ assert ret: r == kvq_sage_slot_token_l(q->role, q->gran, q->block, q->warps, s, k);
        return r;
    }
    if (q->gran == KVQ_SAGE_GRAN_THREAD) {
        //@ assert no_wrap: (s / 4) * b <= 1073741824 * 1024;
        base = (s / 4u) * b;
        r = base + 8u * (uint64_t)(k / 2u) + 2u * (s % 4u) + k % 2u;
        //@ assert r_def: r == (s / 4) * q->block + 8 * (k / 2) + 2 * (s % 4) + k % 2;
        //@ assert ret: r == kvq_sage_slot_token_l(q->role, q->gran, q->block, q->warps, s, k);
        return r;
    }
    //@ assert no_wrap: s * b <= 4294967296 * 1024;
    base = s * b;
    r = base + k;
    //@ assert r_def: r == s * q->block + k;
    //@ assert ret: r == kvq_sage_slot_token_l(q->role, q->gran, q->block, q->warps, s, k);
    return r;
}

/* The mma.m16n8k{32,64} accumulator layout [SAGE-MAP-01]: accumulator i
 * (0..3) of lane l (0..31) sits at row l/4 + 8*(i/2) of the 16-row A tile and
 * column 2*(l%4) + i%2 of the 8-column B tile. */
/*@ requires lane < 32 && i < 4;
    assigns \nothing;
    ensures def: \result == lane / 4 + 8 * (i / 2);
    ensures range: \result < 16;
*/
KVQ_HD static inline uint32_t kvq_sage_mma_row(uint32_t lane, uint32_t i)
{
    return lane / 4u + 8u * (i / 2u);
}

/*@ requires lane < 32 && i < 4;
    assigns \nothing;
    ensures def: \result == 2 * (lane % 4) + i % 2;
    ensures range: \result < 8;
*/
KVQ_HD static inline uint32_t kvq_sage_mma_col(uint32_t lane, uint32_t i)
{
    return 2u * (lane % 4u) + i % 2u;
}

/* ---- sizes ------------------------------------------------------------- */

/* Elements of a tensor: N * d. */
/*@ requires \valid_read(s);
    assigns \nothing;
    ensures def: \result == s->tokens * s->dim;
*/
KVQ_HD static inline uint64_t kvq_sage_elems(const kvq_sage_shape *s)
{
    return (uint64_t)s->tokens * s->dim;
}

/* Packed Q/K code bytes: N * d * bits / 8 [SAGE-Q-06]. */
/*@ requires \valid_read(s) && (bits == 4 || bits == 8);
    requires shape: kvq_sage_shape_l(s->tokens, s->dim);
    assigns \nothing;
    ensures def: \result == s->tokens * s->dim * bits / 8;
*/
KVQ_HD static inline uint64_t kvq_sage_code_bytes(const kvq_sage_shape *s, uint32_t bits)
{
    return kvq_sage_elems(s) * bits / 8u;
}

/* Mean rows of a smoothing with segments of seg tokens: ceil(N / seg) [SAGE-SM-01]. */
/*@ requires seg_range: 1 <= seg;
    assigns \nothing;
    ensures def: \result == (tokens + seg - 1) / seg;
*/
KVQ_HD static inline uint32_t kvq_sage_mean_rows(uint32_t tokens, uint32_t seg)
{
    return kvq_sage_blocks(tokens, seg);
}

/* ---- signed code fields [SAGE-Q-06] ------------------------------------ */

/* The two's-complement field of code k (-2^(bits-1) <= k < 2^(bits-1)). */
/*@ requires bits == 4 || bits == 8;
    requires range: -kvq_pow2_l(bits) / 2 <= k < kvq_pow2_l(bits) / 2;
    assigns \nothing;
    ensures def: \result == kvq_sage_field_l(k, bits);
    ensures range: 0 <= \result < kvq_pow2_l(bits);
    ensures round_trip: kvq_sage_value_l(\result, bits) == k;
*/
KVQ_HD static inline uint32_t kvq_sage_code_field(int32_t k, uint32_t bits)
{
    int32_t p = (int32_t)kvq_pow2_small(bits);
    return (uint32_t)((k + p) % p);
}

/* The code a field f (0 <= f < 2^bits) holds. */
/*@ requires bits == 4 || bits == 8;
    requires range: f < kvq_pow2_l(bits);
    assigns \nothing;
    ensures def: \result == kvq_sage_value_l(f, bits);
*/
KVQ_HD static inline int32_t kvq_sage_code_value(uint32_t f, uint32_t bits)
{
    uint32_t p = kvq_pow2_small(bits);
    return f >= p / 2u ? (int32_t)f - (int32_t)p : (int32_t)f;
}

/* Write code k of element e = n*d + c into the packed codes [SAGE-Q-06]
 * [LAY-PACK-01]: byte e*bits/8, bit (e*bits) % 8; other codes of the byte kept.
 * e < 2^32 covers every tensor (N d <= 2^31). */
/*@ requires bits: bits == 4 || bits == 8;
    requires e_range: e < 4294967296;
    requires k_range: -kvq_pow2_l(bits) / 2 <= k < kvq_pow2_l(bits) / 2;
    requires writable: \valid(codes + (e * bits) / 8);
    assigns codes[(e * bits) / 8];
    ensures new_byte: codes[(e * bits) / 8] ==
        kvq_field_set_l(\old(codes[(e * bits) / 8]), (e * bits) % 8, bits, kvq_sage_field_l(k, bits));
    ensures round_trip: kvq_sage_code_at_l{Post}(codes, e, bits) == k;          // [SAGE-Q-06]
    ensures others_kept: \forall integer j; 0 <= j < 4294967296 && j != e &&
        (j * bits) / 8 == (e * bits) / 8 ==>
        kvq_sage_code_at_l{Post}(codes, j, bits) == kvq_sage_code_at_l{Pre}(codes, j, bits);
*/
KVQ_HD static inline void kvq_sage_pack_code(uint8_t *codes, uint64_t e, uint32_t bits, int32_t k)
{
    uint64_t at = e * bits / 8u;
    uint32_t i = (uint32_t)((e * bits) % 8u) / bits; /* element within its byte */
    /* the element's bit offset, i bits, by cases of the width (the solvers do
     * not close the product with bits symbolic) */
    //@ assert i_4: bits == 4 ==> i * 4 == (e * 4) % 8;
    //@ assert i_8: bits == 8 ==> i == 0 && (e * 8) % 8 == 0;
    kvq_pack_code(codes + at, i, bits, kvq_sage_code_field(k, bits));
}

/* Read the code of element e. */
/*@ requires bits: bits == 4 || bits == 8;
    requires e_range: e < 4294967296;
    requires readable: \valid_read(codes + (e * bits) / 8);
    assigns \nothing;
    ensures def: \result == kvq_sage_code_at_l(codes, e, bits);               // [SAGE-Q-06]
    ensures range: -kvq_pow2_l(bits) / 2 <= \result < kvq_pow2_l(bits) / 2;
*/
KVQ_HD static inline int32_t kvq_sage_unpack_code(const uint8_t *codes, uint64_t e, uint32_t bits)
{
    uint64_t at = e * bits / 8u;
    uint32_t i = (uint32_t)((e * bits) % 8u) / bits;
    return kvq_sage_code_value(kvq_unpack_code(codes + at, i, bits), bits);
}

#ifdef __cplusplus
}
#endif
#endif /* KVQ_SAGE_LAYOUT_H */
