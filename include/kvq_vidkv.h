/*
 * kvq_vidkv.h -- the VIDKV family (spec/vidkv.md): parameters and variant
 * switches, every size and offset of its packed formats, the trit packing, the
 * residual window, and the fast (binary32) reference path.
 *
 * The one owner of VIDKV index arithmetic: the fast and exact paths and the
 * tests call these helpers, and no other file computes a group number, a
 * code byte or a trit digit.  Plain C11 that nvcc also compiles (KVQ_HD).
 * Status codes are kvq_status, flags the kvq flags word (include/kvq.h).
 * Contracts are stated in / % * only, which this toolchain's provers handle.
 */
#ifndef KVQ_VIDKV_H
#define KVQ_VIDKV_H

#include <stddef.h>
#include <stdint.h>

#include "kvq.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Variant switches [VIDKV-L-02].  Numbers are frozen. */
#define KVQ_VIDKV_SPLIT_POOLED   0u /* one split over all heads (paper Alg. 3, default) */
#define KVQ_VIDKV_SPLIT_PER_HEAD 1u /* one split per head (kvq variant) */

#define KVQ_VIDKV_NORMAL_AUTO     0u /* FFT iff f is 0.5 or 0.75, else MINMAX (default) */
#define KVQ_VIDKV_NORMAL_FFT      1u /* DFT, 1 bit per real/imaginary component [VIDKV-K-05..07] */
#define KVQ_VIDKV_NORMAL_MINMAX   2u /* Eq. 4 with n = 1: KIVI bits 1 [VIDKV-K-08] */
#define KVQ_VIDKV_NORMAL_SIGNMEAN 3u /* code x >= 0, scale mean|x| (kvq variant) [VIDKV-K-08] */

#define KVQ_VIDKV_VDEQ_RAW    0u /* ternary values dequantize to -1, 0, +1 (default) */
#define KVQ_VIDKV_VDEQ_SCALED 1u /* code * beta, beta = mean |v| of the nonzero codes */

#define KVQ_VIDKV_PACK_BASE3 0u /* 5 trits per byte, digits {2, 0, 1} (default) */
#define KVQ_VIDKV_PACK_BITS2 1u /* one 2-bit field per trit, LSB first */

#define KVQ_VIDKV_KFLUSH_REQUANT 0u /* requantize the whole key cache (Alg. 1, default) */
#define KVQ_VIDKV_KFLUSH_APPEND  1u /* quantize the flushed block on its own */
#define KVQ_VIDKV_VFLUSH_APPEND  0u /* quantize the flushed value block (Alg. 1, default) */
#define KVQ_VIDKV_VFLUSH_REQUANT 1u /* requantize all values (public code) */

/* Limits [VIDKV-L-02] [VIDKV-STP-01]. */
#define KVQ_VIDKV_MAX_HEADS  1024u
#define KVQ_VIDKV_MAX_DIM    1024u
#define KVQ_VIDKV_MAX_TOKENS (1u << 24)
#define KVQ_VIDKV_MAX_SDIM   4096u
#define KVQ_VIDKV_MAX_GAMMA  16.0f
/* Domain [VIDKV-L-03]: |key|, |value| < 2^100, |score input| < 2^32. */
#define KVQ_VIDKV_DOMAIN     0x1p100f
#define KVQ_VIDKV_SDOMAIN    0x1p32f

/* The parameters of one quantization [VIDKV-L-02]: a frozen 56-byte record. */
typedef struct kvq_vidkv_params {
    uint32_t heads;    /* H */
    uint32_t tokens;   /* T: a multiple of G */
    uint32_t dim;      /* d: channels per head */
    uint32_t group;    /* G: a multiple of 8, 8 .. 4096 (32) */
    uint32_t meta;     /* KVQ_META_F16 (default) or KVQ_META_F32 */
    uint32_t split;    /* KVQ_VIDKV_SPLIT_* */
    uint32_t normal;   /* KVQ_VIDKV_NORMAL_* */
    uint32_t vdeq;     /* KVQ_VIDKV_VDEQ_* */
    uint32_t vpack;    /* KVQ_VIDKV_PACK_* */
    uint32_t kflush;   /* KVQ_VIDKV_KFLUSH_* */
    uint32_t vflush;   /* KVQ_VIDKV_VFLUSH_* */
    float key_frac;    /* f in [0, 1] (0.5) */
    float gamma;       /* ternary threshold factor in [0, 16] (0.7) */
    float protect;     /* p in [0, 1] (0: no STP) */
} kvq_vidkv_params;

KVQ_STATIC_ASSERT(sizeof(kvq_vidkv_params) == 56, "kvq_vidkv_params is a frozen 56-byte record");
KVQ_STATIC_ASSERT(sizeof(float) == 4, "binary32 floats");

/* The STP inputs [VIDKV-STP-01]: score vectors xs [rows][ds], the visual rows
 * [vis_first, vis_first + vis_count) (quantized tokens) and the text rows. */
typedef struct kvq_vidkv_stp {
    const float *xs;
    uint32_t rows, ds;
    uint32_t vis_first, vis_count;
    uint32_t txt_first, txt_count;
} kvq_vidkv_stp;

/* The stored keys [VIDKV-K-10] [VIDKV-L-06].  Caller-owned arrays sized by the
 * functions below; nrm_zero is used only under MINMAX (may be NULL otherwise). */
typedef struct kvq_vidkv_keys {
    uint8_t *mask;       /* kvq_vidkv_mask_bytes */
    uint8_t *abn_codes;  /* kvq_vidkv_abn_code_bytes */
    float *abn_scale;    /* kvq_vidkv_abn_groups each */
    float *abn_zero;
    uint8_t *nrm_codes;  /* kvq_vidkv_nrm_code_bytes */
    float *nrm_scale;    /* kvq_vidkv_nrm_groups each */
    float *nrm_zero;     /* MINMAX only */
} kvq_vidkv_keys;

/* The stored values [VIDKV-V-05].  prot, p_codes, p_scale, p_zero are used only
 * with STP (may be NULL otherwise); beta only under SCALED. */
typedef struct kvq_vidkv_values {
    uint8_t *tern;       /* kvq_vidkv_tern_code_bytes */
    float *beta;         /* kvq_vidkv_tern_groups */
    uint8_t *prot;       /* kvq_vidkv_prot_mask_bytes */
    uint8_t *p_codes;    /* kvq_vidkv_prot_code_bytes */
    float *p_scale;      /* kvq_vidkv_prot_groups each */
    float *p_zero;
} kvq_vidkv_values;

/* ---- parameters ----------------------------------------------------------- */

/* The paper's defaults for H heads, T tokens, d channels [VIDKV-L-02]. */
KVQ_HD static inline kvq_vidkv_params kvq_vidkv_params_default(uint32_t H, uint32_t T,
                                                               uint32_t d)
{
    kvq_vidkv_params p;
    p.heads = H;
    p.tokens = T;
    p.dim = d;
    p.group = 32u;
    p.meta = KVQ_META_F16;
    p.split = KVQ_VIDKV_SPLIT_POOLED;
    p.normal = KVQ_VIDKV_NORMAL_AUTO;
    p.vdeq = KVQ_VIDKV_VDEQ_RAW;
    p.vpack = KVQ_VIDKV_PACK_BASE3;
    p.kflush = KVQ_VIDKV_KFLUSH_REQUANT;
    p.vflush = KVQ_VIDKV_VFLUSH_APPEND;
    p.key_frac = 0.5f;
    p.gamma = 0.7f;
    p.protect = 0.0f;
    return p;
}

/* 1 iff v is in [lo, hi] (a NaN is not). */
KVQ_HD static inline int kvq_vidkv_in(float v, float lo, float hi)
{
    return v >= lo && v <= hi;
}

/* Parameters alone are well formed (KVQ_E_PARAM otherwise) [VIDKV-L-02]. */
KVQ_HD static inline int kvq_vidkv_params_ok(const kvq_vidkv_params *p)
{
    return p->group >= 8u && p->group <= KVQ_MAX_GROUP && p->group % 8u == 0u &&
           (p->meta == KVQ_META_F16 || p->meta == KVQ_META_F32) && p->split <= 1u &&
           p->normal <= 3u && p->vdeq <= 1u && p->vpack <= 1u && p->kflush <= 1u &&
           p->vflush <= 1u && kvq_vidkv_in(p->key_frac, 0.0f, 1.0f) &&
           kvq_vidkv_in(p->gamma, 0.0f, KVQ_VIDKV_MAX_GAMMA) &&
           kvq_vidkv_in(p->protect, 0.0f, 1.0f);
}

/* The extent (KVQ_E_SHAPE otherwise) [VIDKV-L-02]; parameters already ok. */
KVQ_HD static inline int kvq_vidkv_shape_ok(const kvq_vidkv_params *p)
{
    return p->heads >= 1u && p->heads <= KVQ_VIDKV_MAX_HEADS && p->dim >= 1u &&
           p->dim <= KVQ_VIDKV_MAX_DIM && p->tokens >= 1u &&
           p->tokens <= KVQ_VIDKV_MAX_TOKENS && p->tokens % p->group == 0u;
}

/* Elements of the [H][T][d] tensor, and the index of (h, t, c) [VIDKV-L-01]. */
KVQ_HD static inline uint64_t kvq_vidkv_elems(const kvq_vidkv_params *p)
{
    return (uint64_t)p->heads * p->tokens * p->dim;
}
KVQ_HD static inline uint64_t kvq_vidkv_index(const kvq_vidkv_params *p, uint32_t h, uint32_t t,
                                              uint32_t c)
{
    return ((uint64_t)h * p->tokens + t) * p->dim + c;
}

/* round(f*d) with ties to even on the exact product [VIDKV-K-02]: f has 24
 * significant bits and d <= 2^10, so (double)f * d is exact. */
/*@ requires f_range: 0 <= f <= 1;
    requires d_range: d <= 1024;
    assigns \nothing;
    ensures range: \result <= d;
*/
KVQ_HD static inline uint32_t kvq_vidkv_round_half_even(float f, uint32_t d)
{
    double x = (double)f * (double)d;   /* exact */
    uint32_t i = (uint32_t)x;           /* floor: x >= 0 */
    double r = x - (double)i;           /* exact */
    if (r > 0.5 || (r == 0.5 && i % 2u == 1u)) i++;
    return i;
}

/* n_a abnormal and n_n normal channels [VIDKV-K-02]. */
KVQ_HD static inline uint32_t kvq_vidkv_n_abn(const kvq_vidkv_params *p)
{
    return kvq_vidkv_round_half_even(p->key_frac, p->dim);
}
KVQ_HD static inline uint32_t kvq_vidkv_n_nrm(const kvq_vidkv_params *p)
{
    return p->dim - kvq_vidkv_n_abn(p);
}

/* The normal path in force: AUTO resolved [VIDKV-K-04]. */
KVQ_HD static inline uint32_t kvq_vidkv_normal_mode(const kvq_vidkv_params *p)
{
    if (p->normal != KVQ_VIDKV_NORMAL_AUTO) return p->normal;
    return (p->key_frac == 0.5f || p->key_frac == 0.75f) ? KVQ_VIDKV_NORMAL_FFT
                                                         : KVQ_VIDKV_NORMAL_MINMAX;
}

/* Normal groups per head and token block: 2 n_n components (FFT) or n_n
 * channels [VIDKV-K-10]. */
KVQ_HD static inline uint32_t kvq_vidkv_nrm_per_block(const kvq_vidkv_params *p)
{
    uint32_t n = kvq_vidkv_n_nrm(p);
    return kvq_vidkv_normal_mode(p) == KVQ_VIDKV_NORMAL_FFT ? 2u * n : n;
}

/* ---- key layout [VIDKV-K-10] [VIDKV-L-06..07] ------------------------------ */

KVQ_HD static inline uint32_t kvq_vidkv_blocks(const kvq_vidkv_params *p)
{
    return p->tokens / p->group;
}
/* One split mask row: ceil(d/8) bytes; rows: 1 (pooled) or H (per head). */
KVQ_HD static inline uint32_t kvq_vidkv_mask_row_bytes(const kvq_vidkv_params *p)
{
    return (p->dim + 7u) / 8u;
}
KVQ_HD static inline uint32_t kvq_vidkv_mask_rows(const kvq_vidkv_params *p)
{
    return p->split == KVQ_VIDKV_SPLIT_PER_HEAD ? p->heads : 1u;
}
KVQ_HD static inline uint64_t kvq_vidkv_mask_bytes(const kvq_vidkv_params *p)
{
    return (uint64_t)kvq_vidkv_mask_rows(p) * kvq_vidkv_mask_row_bytes(p);
}
/* The mask row of head h. */
KVQ_HD static inline uint64_t kvq_vidkv_mask_row(const kvq_vidkv_params *p, uint32_t h)
{
    return p->split == KVQ_VIDKV_SPLIT_PER_HEAD ? (uint64_t)h * kvq_vidkv_mask_row_bytes(p) : 0u;
}
/* Bit c of a mask row (LSB first) [VIDKV-L-06]. */
/*@ requires readable: \valid_read(row + c / 8);
    assigns \nothing;
    ensures bit: \result == kvq_field_l(row[c / 8], c % 8, 1);      // [VIDKV-L-06]
*/
KVQ_HD static inline uint32_t kvq_vidkv_mask_get(const uint8_t *row, uint32_t c)
{
    return ((uint32_t)row[c / 8u] / kvq_pow2_small(c % 8u)) % 2u;
}
/* Set bit c of a mask row. */
/*@ requires writable: \valid(row + c / 8);
    assigns row[c / 8];
    ensures set: kvq_field_l(row[c / 8], c % 8, 1) == 1;              // [VIDKV-L-06]
*/
KVQ_HD static inline void kvq_vidkv_mask_set(uint8_t *row, uint32_t c)
{
    if (kvq_vidkv_mask_get(row, c) == 0u) {
        uint32_t y = row[c / 8u], p = kvq_pow2_small(c % 8u);
        /* bit c % 8 of y is 0: adding 2^(c%8) sets it and stays a byte */
        //@ assert up: (y + p) / p == y / p + 1;
        //@ assert byte: y + p < 256;
        row[c / 8u] = (uint8_t)(y + p);
    }
}

KVQ_HD static inline uint64_t kvq_vidkv_abn_groups(const kvq_vidkv_params *p)
{
    return (uint64_t)p->heads * kvq_vidkv_blocks(p) * kvq_vidkv_n_abn(p);
}
KVQ_HD static inline uint32_t kvq_vidkv_abn_group_bytes(const kvq_vidkv_params *p)
{
    return p->group / 4u;                 /* 2-bit codes */
}
KVQ_HD static inline uint64_t kvq_vidkv_abn_code_bytes(const kvq_vidkv_params *p)
{
    return kvq_vidkv_abn_groups(p) * kvq_vidkv_abn_group_bytes(p);
}
/* Group of the j-th abnormal channel of head h, token block b. */
KVQ_HD static inline uint64_t kvq_vidkv_abn_group(const kvq_vidkv_params *p, uint32_t h,
                                                  uint32_t b, uint32_t j)
{
    return ((uint64_t)h * kvq_vidkv_blocks(p) + b) * kvq_vidkv_n_abn(p) + j;
}

KVQ_HD static inline uint64_t kvq_vidkv_nrm_groups(const kvq_vidkv_params *p)
{
    return (uint64_t)p->heads * kvq_vidkv_blocks(p) * kvq_vidkv_nrm_per_block(p);
}
KVQ_HD static inline uint32_t kvq_vidkv_nrm_group_bytes(const kvq_vidkv_params *p)
{
    return p->group / 8u;                 /* 1-bit codes */
}
KVQ_HD static inline uint64_t kvq_vidkv_nrm_code_bytes(const kvq_vidkv_params *p)
{
    return kvq_vidkv_nrm_groups(p) * kvq_vidkv_nrm_group_bytes(p);
}
/* Group of normal component / channel j of head h, token block b. */
KVQ_HD static inline uint64_t kvq_vidkv_nrm_group(const kvq_vidkv_params *p, uint32_t h,
                                                  uint32_t b, uint32_t j)
{
    return ((uint64_t)h * kvq_vidkv_blocks(p) + b) * kvq_vidkv_nrm_per_block(p) + j;
}
/* Normal metadata values per group: 2 under MINMAX (scale, zero), else 1. */
KVQ_HD static inline uint32_t kvq_vidkv_nrm_meta_per_group(const kvq_vidkv_params *p)
{
    return kvq_vidkv_normal_mode(p) == KVQ_VIDKV_NORMAL_MINMAX ? 2u : 1u;
}

/* ---- value layout [VIDKV-V-01] [VIDKV-V-04..05] ---------------------------- */

/* n_p = floor(p * lv) on the exact product [VIDKV-STP-03] (p has 24 bits and
 * lv <= 2^24: exact in binary64). */
KVQ_HD static inline uint32_t kvq_vidkv_prot_count(float p, uint32_t lv)
{
    return (uint32_t)((double)p * (double)lv);
}
/* Blocks of a token list of length l: ceil(l/G) [VIDKV-V-01]. */
KVQ_HD static inline uint32_t kvq_vidkv_list_blocks(uint32_t l, uint32_t G)
{
    return (l + G - 1u) / G;
}
/* Members of block b of a list of length l (G, or l mod G for a short last). */
KVQ_HD static inline uint32_t kvq_vidkv_block_members(uint32_t l, uint32_t G, uint32_t b)
{
    return l - b * G < G ? l - b * G : G;
}
/* Group of block b, channel c, head h of a list with nb blocks. */
KVQ_HD static inline uint64_t kvq_vidkv_value_group(const kvq_vidkv_params *p, uint32_t nb,
                                                    uint32_t h, uint32_t b, uint32_t c)
{
    return ((uint64_t)h * nb + b) * p->dim + c;
}
KVQ_HD static inline uint64_t kvq_vidkv_tern_groups(const kvq_vidkv_params *p, uint32_t np)
{
    return (uint64_t)p->heads * kvq_vidkv_list_blocks(p->tokens - np, p->group) * p->dim;
}
KVQ_HD static inline uint32_t kvq_vidkv_tern_group_bytes(const kvq_vidkv_params *p)
{
    return p->vpack == KVQ_VIDKV_PACK_BASE3 ? (p->group + 4u) / 5u : p->group / 4u;
}
KVQ_HD static inline uint64_t kvq_vidkv_tern_code_bytes(const kvq_vidkv_params *p, uint32_t np)
{
    return kvq_vidkv_tern_groups(p, np) * kvq_vidkv_tern_group_bytes(p);
}
KVQ_HD static inline uint64_t kvq_vidkv_prot_groups(const kvq_vidkv_params *p, uint32_t np)
{
    return (uint64_t)p->heads * kvq_vidkv_list_blocks(np, p->group) * p->dim;
}
KVQ_HD static inline uint64_t kvq_vidkv_prot_code_bytes(const kvq_vidkv_params *p, uint32_t np)
{
    return kvq_vidkv_prot_groups(p, np) * (p->group / 4u);
}
KVQ_HD static inline uint32_t kvq_vidkv_prot_mask_bytes(const kvq_vidkv_params *p)
{
    return (p->tokens + 7u) / 8u;
}

/* ---- trits [VIDKV-V-02] [VIDKV-V-04] --------------------------------------- */

/*@ // The digit of a trit and back, the base-3 byte of five digits [VIDKV-V-04].
    logic integer kvq_trit_digit_l(integer t) = t == -1 ? 2 : t == 1 ? 1 : 0;
    logic integer kvq_digit_trit_l(integer d) = d == 2 ? -1 : d == 1 ? 1 : 0;
    logic integer kvq_pow3_l(integer j) =
        j == 0 ? 1 : j == 1 ? 3 : j == 2 ? 9 : j == 3 ? 27 : 81;
    logic integer kvq_base3_byte_l(integer d0, integer d1, integer d2, integer d3, integer d4) =
        d0 + 3 * d1 + 9 * d2 + 27 * d3 + 81 * d4;
    logic integer kvq_base3_digit_l(integer y, integer j) = (y / kvq_pow3_l(j)) % 3;
*/

/* The ternary code of v against the threshold alpha [VIDKV-V-02]. */
/*@ assigns \nothing;
    ensures trit: \is_finite(v) && \is_finite(alpha) ==>
        \result == (v > alpha ? 1 : v < -alpha ? -1 : 0);              // [VIDKV-V-02]
    ensures plus: \result == 1 <==> \gt_float(v, alpha);
    ensures nan: \is_NaN(v) || \is_NaN(alpha) ==> \result == 0;
    ensures trit_range: -1 <= \result <= 1;
*/
KVQ_HD static inline int32_t kvq_vidkv_trit(float v, float alpha)
{
    if (v > alpha) return 1;
    if (v < -alpha) return -1;
    return 0;
}

/* Digit of a trit: -1 -> 2, 0 -> 0, +1 -> 1 [VIDKV-V-04]. */
/*@ requires trit_range: -1 <= t <= 1;
    assigns \nothing;
    ensures digit: \result == kvq_trit_digit_l(t);
    ensures digit_range: \result <= 2;
*/
KVQ_HD static inline uint32_t kvq_vidkv_trit_digit(int32_t t)
{
    return t == -1 ? 2u : t == 1 ? 1u : 0u;
}
/*@ requires digit_range: d <= 2;
    assigns \nothing;
    ensures trit: \result == kvq_digit_trit_l(d);
*/
KVQ_HD static inline int32_t kvq_vidkv_digit_trit(uint32_t d)
{
    return d == 2u ? -1 : d == 1u ? 1 : 0;
}

/* 3^j, j <= 4. */
/*@ requires j <= 4;
    assigns \nothing;
    ensures \result == kvq_pow3_l(j);
*/
KVQ_HD static inline uint32_t kvq_vidkv_pow3(uint32_t j)
{
    return j == 0u ? 1u : j == 1u ? 3u : j == 2u ? 9u : j == 3u ? 27u : 81u;
}

/* The base-3 byte of five digits [VIDKV-V-04]. */
/*@ requires digits: d0 <= 2 && d1 <= 2 && d2 <= 2 && d3 <= 2 && d4 <= 2;
    assigns \nothing;
    ensures byte: \result == kvq_base3_byte_l(d0, d1, d2, d3, d4);  // [VIDKV-V-04]
    ensures byte_range: \result <= 242;
*/
KVQ_HD static inline uint32_t kvq_vidkv_base3_byte(uint32_t d0, uint32_t d1, uint32_t d2,
                                                   uint32_t d3, uint32_t d4)
{
    return d0 + 3u * d1 + 9u * d2 + 27u * d3 + 81u * d4;
}

/* Digit j of a base-3 byte y (y <= 242 for a valid byte). */
/*@ requires j <= 4;
    assigns \nothing;
    ensures digit: \result == kvq_base3_digit_l(y, j);
    ensures digit_range: \result <= 2;
*/
KVQ_HD static inline uint32_t kvq_vidkv_base3_digit(uint32_t y, uint32_t j)
{
    return (y / kvq_vidkv_pow3(j)) % 3u;
}

/* The digit of slot i of a ternary group under pack (BASE3 or BITS2). */
/*@ requires pack_ok: pack <= 1;
    requires i_range: i < KVQ_MAX_GROUP;
    requires readable: \valid_read(grp + (pack == 0 ? i / 5 : i / 4));
    assigns \nothing;
    ensures base3: pack == 0 ==> \result == kvq_base3_digit_l(grp[i / 5], i % 5); // [VIDKV-V-04]
    ensures bits2: pack == 1 ==> \result == kvq_code_l{Pre}((uint8_t *)grp, i, 2); // [LAY-PACK-01]
*/
KVQ_HD static inline uint32_t kvq_vidkv_tern_get(const uint8_t *grp, uint32_t i, uint32_t pack)
{
    if (pack == KVQ_VIDKV_PACK_BASE3) return kvq_vidkv_base3_digit(grp[i / 5u], i % 5u);
    return kvq_unpack_code(grp, i, 2u);
}

/* Write the digit of slot i; the group's bytes start zeroed (all digits 0), and
 * each slot is written at most once. */
/*@ requires digit_range: dg <= 2;
    requires pack_ok: pack <= 1;
    requires i_range: i < KVQ_MAX_GROUP;
    requires writable: \valid(grp + (pack == 0 ? i / 5 : i / 4));
    requires base3_byte: pack == 0 ==> grp[i / 5] <= 242;
    assigns grp[pack == 0 ? i / 5 : i / 4];
    ensures base3_digit: pack == 0 ==>
        kvq_base3_digit_l(grp[i / 5], i % 5) == dg;                  // [VIDKV-V-04]
    ensures bits2_field: pack == 1 ==> kvq_code_l{Post}(grp, i, 2) == dg; // [LAY-PACK-01]
*/
KVQ_HD static inline void kvq_vidkv_tern_put(uint8_t *grp, uint32_t i, uint32_t pack, uint32_t dg)
{
    if (pack == KVQ_VIDKV_PACK_BASE3) {
        uint32_t y = grp[i / 5u], j = i % 5u;
        uint32_t old = kvq_vidkv_base3_digit(y, j), p = kvq_vidkv_pow3(j);
        uint32_t nb = y - old * p + dg * p;   /* y with its digit j replaced by dg */
        /* y = (y / 3^(j+1)) 3^(j+1) + old 3^j + y % 3^j: one case per j, each linear */
        //@ assert d0: j == 0 ==> kvq_base3_digit_l(nb, 0) == dg && nb <= 242;
        //@ assert d1: j == 1 ==> kvq_base3_digit_l(nb, 1) == dg && nb <= 242;
        //@ assert d2: j == 2 ==> kvq_base3_digit_l(nb, 2) == dg && nb <= 242;
        //@ assert d3: j == 3 ==> kvq_base3_digit_l(nb, 3) == dg && nb <= 242;
        //@ assert d4: j == 4 ==> kvq_base3_digit_l(nb, 4) == dg && nb <= 242;
        //@ assert dj: kvq_base3_digit_l(nb, i % 5) == dg && nb <= 242;
        grp[i / 5u] = (uint8_t)nb;
        //@ assert written: grp[i / 5] == nb;
    } else {
        kvq_pack_code(grp, i, 2u, dg);
    }
}

/* 1 iff every used slot (i < m) of a stored ternary group holds a valid digit
 * and every BASE3 byte is at most 242 [VIDKV-D-03]. */
KVQ_HD static inline int kvq_vidkv_tern_group_ok(const uint8_t *grp, uint32_t m, uint32_t pack)
{
    for (uint32_t i = 0; i < m; i++) {
        if (pack == KVQ_VIDKV_PACK_BASE3) {
            if (grp[i / 5u] > 242u) return 0;
        } else if (kvq_unpack_code(grp, i, 2u) == 3u) {
            return 0;
        }
    }
    return 1;
}

/* ---- the channel split's order [VIDKV-K-02] -------------------------------- */

/* 1 iff channel a (rank key ra) comes before channel b (rb): greater range
 * first, equal range by lower index.  NaN never occurs (finite inputs); the
 * order is stated on the values for finite keys and on IEEE comparison for
 * every key. */
/*@ assigns \nothing;
    ensures order: \is_finite(ra) && \is_finite(rb) ==>
        (\result == 1 <==> (ra > rb || (ra == rb && a < b)));            // [VIDKV-K-02]
    ensures order_ieee: \result == 1 <==> (\gt_float(ra, rb) || (\eq_float(ra, rb) && a < b));
    ensures bool: \result == 0 || \result == 1;
*/
KVQ_HD static inline int kvq_vidkv_before(float ra, uint32_t a, float rb, uint32_t b)
{
    return ra > rb || (ra == rb && a < b);
}

/* ---- stored bits [VIDKV-L-08] --------------------------------------------- */

/* Bits of the stored keys: codes, metadata, masks. */
KVQ_HD static inline uint64_t kvq_vidkv_key_bits(const kvq_vidkv_params *p)
{
    uint64_t mb = p->meta == KVQ_META_F16 ? 16u : 32u;
    return 8u * (kvq_vidkv_abn_code_bytes(p) + kvq_vidkv_nrm_code_bytes(p) +
                 kvq_vidkv_mask_bytes(p)) +
           mb * (2u * kvq_vidkv_abn_groups(p) +
                 (uint64_t)kvq_vidkv_nrm_meta_per_group(p) * kvq_vidkv_nrm_groups(p));
}
/* Bits of the stored values with np protected tokens (np > 0: STP). */
KVQ_HD static inline uint64_t kvq_vidkv_value_bits(const kvq_vidkv_params *p, uint32_t np)
{
    uint64_t mb = p->meta == KVQ_META_F16 ? 16u : 32u;
    uint64_t b = 8u * kvq_vidkv_tern_code_bytes(p, np);
    if (p->vdeq == KVQ_VIDKV_VDEQ_SCALED) b += mb * kvq_vidkv_tern_groups(p, np);
    if (p->protect > 0.0f)
        b += 8u * ((uint64_t)kvq_vidkv_prot_mask_bytes(p) + kvq_vidkv_prot_code_bytes(p, np)) +
             2u * mb * kvq_vidkv_prot_groups(p, np);
    return b;
}

/* ---- residual window [VIDKV-W-01..02] -------------------------------------- */

typedef struct kvq_vidkv_window {
    uint32_t group;      /* G = R */
    uint32_t quantized;  /* tokens in the quantized cache */
    uint32_t pending;    /* residual tokens after them, < G */
} kvq_vidkv_window;

/* Prefill of L tokens: quantized = L - L mod G, pending = L mod G. */
kvq_status kvq_vidkv_window_prefill(kvq_vidkv_window *w, uint32_t group, uint32_t L);
/* One decoded token; *flush = 1 when the residual now holds G tokens and is
 * flushed (then quantized += G, pending = 0). */
kvq_status kvq_vidkv_window_append(kvq_vidkv_window *w, uint32_t *flush);

/* ---- streaming [VIDKV-W-01..02] ------------------------------------------- */

/* A prefill of `prefill` tokens then `decode` decoded tokens, each flush
 * composed of the calls below as [VIDKV-W-01..02] say: the prefill's first
 * Tp = prefill - prefill mod G tokens quantized (values with STP when
 * prm->protect > 0, stp then required and its visual rows within Tp), then
 * every G decoded tokens flushed (keys by prm->kflush, values by prm->vflush,
 * plain ternary values, no STP); prm->tokens is not read.  k and v are
 * [H][N][d], N = prefill + decode; kdeq and vdeq receive the dequantized caches
 * after the last flush, [H][Tq][d] each with Tq = N - N mod G.  Checks, in
 * order, before writing anything: NULL (KVQ_E_PARAM), the policy and the
 * parameters as [VIDKV-L-02] (KVQ_E_PARAM), the extent (H, d as [VIDKV-L-02],
 * G <= N <= 2^24: KVQ_E_SHAPE), a NULL stp or xs when protect > 0
 * (KVQ_E_PARAM), the STP ranges [VIDKV-STP-01] over Tp (KVQ_E_SHAPE), every
 * key, value and score input finite (KVQ_E_NONFINITE) and in the domain
 * [VIDKV-L-03] (KVQ_E_RANGE), then the calls' own statuses.  *flags: the OR
 * of the quantizations' flags. */
kvq_status kvq_vidkv_stream(float *kdeq, float *vdeq, uint32_t *flags, const float *k, const float *v,
                            const kvq_vidkv_stp *stp, uint32_t prefill, uint32_t decode,
                            const kvq_vidkv_params *prm, const kvq_policy *pol);

/* ---- fast path ------------------------------------------------------------- */

/* The split mask of keys k [H][T][d] [VIDKV-K-01..02] [VIDKV-L-06]. */
kvq_status kvq_vidkv_split(uint8_t *mask, uint32_t *flags, const float *k,
                           const kvq_vidkv_params *prm, const kvq_policy *pol);

/* Quantize keys k [H][T][d] into out [VIDKV-K-01..10]. */
kvq_status kvq_vidkv_quantize_keys(const kvq_vidkv_keys *out, uint32_t *flags, const float *k,
                                   const kvq_vidkv_params *prm, const kvq_policy *pol);

/* Dequantize stored keys into y [H][T][d] [VIDKV-K-11] [VIDKV-D-01..03]. */
kvq_status kvq_vidkv_dequantize_keys(float *y, uint32_t *flags, const kvq_vidkv_keys *in,
                                     const kvq_vidkv_params *prm, const kvq_policy *pol);

/* Quantize values v [H][T][d] into out [VIDKV-V-01..05], with STP when
 * prm->protect > 0 (stp then required, else ignored).  *np receives n_p. */
kvq_status kvq_vidkv_quantize_values(const kvq_vidkv_values *out, uint32_t *np, uint32_t *flags,
                                     const float *v, const kvq_vidkv_params *prm,
                                     const kvq_vidkv_stp *stp, const kvq_policy *pol);

/* Dequantize stored values (np protected tokens) into y [H][T][d] [VIDKV-V-06]. */
kvq_status kvq_vidkv_dequantize_values(float *y, uint32_t *flags, const kvq_vidkv_values *in,
                                       uint32_t np, const kvq_vidkv_params *prm,
                                       const kvq_policy *pol);

/* The STP scores of the visual rows [VIDKV-STP-02] (score[i] for visual row
 * vis_first + i), and the protection mask [VIDKV-STP-03]. */
kvq_status kvq_vidkv_stp_select(float *score, uint8_t *prot, uint32_t *flags,
                                const kvq_vidkv_params *prm, const kvq_vidkv_stp *stp,
                                const kvq_policy *pol);

/* The reference's twiddle pair for m / N [VIDKV-K-09]: *c = RN32(cos 2 pi m/N),
 * *s = RN32(sin 2 pi m/N) as the reference computes them. */
void kvq_vidkv_twiddle(float *c, float *s, uint32_t m, uint32_t N);

#ifdef __cplusplus
}
#endif
#endif /* KVQ_VIDKV_H */
