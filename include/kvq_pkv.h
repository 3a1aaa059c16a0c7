/*
 * kvq_pkv.h -- PKV (PatternKV): pattern banks, min-max assignment, residual
 * quantization through the KIVI quantizer, the V threshold (spec/pkv.md).
 *
 * Parameters (with the variant switches), the storage layout of a quantized
 * block (KIVI codes and metadata of the residual plus one uint16 pattern index
 * per token) and the fast (binary32) path.  Plain C11 that nvcc also compiles;
 * the layout helpers are KVQ_HD static inline.  The layout helpers are the
 * only code that does PKV index arithmetic [PKV-L-01].
 */
#ifndef KVQ_PKV_H
#define KVQ_PKV_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kvq.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- constants [PKV-P-01] [PKV-L-03] [PKV-DOM-01] ----------------------- */
#define KVQ_PKV_NO_PATTERN   0xFFFFu   /* stored index of a V token quantized raw [PKV-V-03] */
#define KVQ_PKV_MAX_PATTERNS 65535u    /* indices 0 .. 65534: the uint16 format limit [PKV-L-03] */
#define KVQ_PKV_MAX_ABS      0x1p48f   /* |input|, |pattern| <= 2^48: the PKV domain [PKV-DOM-01] */
#define KVQ_PKV_TOL          0x1.a36e2ep-14f /* RN32(1e-4), the k-means stop tolerance [PKV-KM-05] */

/* Variant switches [PKV-P-02].  Value 0 is the default of every switch. */
#define KVQ_PKV_INIT_SPREAD   0u /* centroid j starts at token floor(j L / M) (default) */
#define KVQ_PKV_INIT_RANDOM   1u /* M distinct tokens drawn by a seeded Fisher-Yates (public code's idea) */
#define KVQ_PKV_DIST_MINMAX   0u /* keys at prefill assigned by min-max distance (paper, default) */
#define KVQ_PKV_DIST_EUCLID   1u /* keys at prefill assigned by Euclidean distance (public code) */
#define KVQ_PKV_UPDATE_AFTER  0u /* a flushed key window is matched after its own centre joins (default) */
#define KVQ_PKV_UPDATE_BEFORE 1u /* ... before it joins */
#define KVQ_PKV_ALPHA_05      0u /* alpha = 0.05 (kvq's default) */
#define KVQ_PKV_ALPHA_10      1u /* alpha = 0.10 */
#define KVQ_PKV_ALPHA_01      2u /* alpha = 0.01 */

/* What a quantize call stores [PKV-Q-01]. */
#define KVQ_PKV_KEY_PREFILL 0u /* keys, per channel, prefill blocks (key_dist applies) */
#define KVQ_PKV_KEY_DECODE  1u /* keys, per channel, a flushed decode window (always min-max) */
#define KVQ_PKV_VALUE       2u /* values, per token, with the V threshold when v_threshold = 1 */

/* Parameters of one PKV cache [PKV-P-01].  A frozen 56-byte record. */
typedef struct kvq_pkv_params {
    uint32_t bits;         /* n in {2, 4} */
    uint32_t group;        /* G (KIVI group), default 128 */
    uint32_t residual;     /* R (full-precision window), default 128, a multiple of G */
    uint32_t meta;         /* KVQ_META_F32 (default) or KVQ_META_F16 */
    uint32_t patterns;     /* |M| at prefill, default 32, 1 .. KVQ_PKV_MAX_PATTERNS */
    uint32_t max_iter;     /* Lloyd iterations at most, default 30, 1 .. 1000 */
    uint32_t init;         /* KVQ_PKV_INIT_* */
    uint32_t seed;         /* seed of KVQ_PKV_INIT_RANDOM, default 0 */
    uint32_t key_dist;     /* KVQ_PKV_DIST_* */
    uint32_t update;       /* KVQ_PKV_UPDATE_* */
    uint32_t window;       /* G_pattern: decoded tokens per Chebyshev centre, default 128 */
    uint32_t cap;          /* bank cap: 0 = none (the format limit only), else 1 .. 65535 */
    uint32_t v_threshold;  /* 1: the V threshold decides per token (default); 0: always the pattern */
    uint32_t alpha;        /* KVQ_PKV_ALPHA_* */
} kvq_pkv_params;

KVQ_STATIC_ASSERT(sizeof(kvq_pkv_params) == 56, "kvq_pkv_params is a frozen 56-byte record");
KVQ_STATIC_ASSERT(KVQ_PKV_MAX_PATTERNS < KVQ_PKV_NO_PATTERN + 1u,
                  "every pattern index fits uint16 below the no-pattern mark");

/* The defaults of [PKV-P-01] with n bits. */
KVQ_HD static inline kvq_pkv_params kvq_pkv_params_default(uint32_t bits)
{
    kvq_pkv_params p;
    p.bits = bits; p.group = 128u; p.residual = 128u; p.meta = KVQ_META_F32;
    p.patterns = 32u; p.max_iter = 30u; p.init = KVQ_PKV_INIT_SPREAD; p.seed = 0u;
    p.key_dist = KVQ_PKV_DIST_MINMAX; p.update = KVQ_PKV_UPDATE_AFTER; p.window = 128u;
    p.cap = 0u; p.v_threshold = 1u; p.alpha = KVQ_PKV_ALPHA_05;
    return p;
}

/* Every field holds a value [PKV-P-01] allows. */
KVQ_HD static inline int kvq_pkv_params_ok(const kvq_pkv_params *p)
{
    return (p->bits == 2u || p->bits == 4u)
        && p->group >= 8u && p->group <= KVQ_MAX_GROUP && p->group % 8u == 0u
        && p->residual > 0u && p->residual % p->group == 0u
        && (p->meta == KVQ_META_F32 || p->meta == KVQ_META_F16)
        && p->patterns >= 1u && p->patterns <= KVQ_PKV_MAX_PATTERNS
        && p->max_iter >= 1u && p->max_iter <= 1000u
        && p->init <= KVQ_PKV_INIT_RANDOM && p->key_dist <= KVQ_PKV_DIST_EUCLID
        && p->update <= KVQ_PKV_UPDATE_BEFORE && p->window >= 1u
        && p->cap <= KVQ_PKV_MAX_PATTERNS && p->v_threshold <= 1u
        && p->alpha <= KVQ_PKV_ALPHA_01;
}

/* ---- storage layout [PKV-L-01..04] ------------------------------------- */

/* The KIVI shape of the residual tensor of a block of `tokens` x `dim`:
 * keys per channel, values per token [PKV-L-01]. */
KVQ_HD static inline kvq_kivi_shape kvq_pkv_kivi_shape(const kvq_pkv_params *p, uint32_t kind,
                                                      uint32_t tokens, uint32_t dim)
{
    kvq_kivi_shape s;
    s.bits = p->bits;
    s.group = p->group;
    s.grouping = kind == KVQ_PKV_VALUE ? KVQ_GROUP_TOKEN : KVQ_GROUP_CHANNEL;
    s.meta = p->meta;
    s.tokens = tokens;
    s.channels = dim;
    return s;
}

/* Bytes of the pattern indices of a block: one uint16 per token [PKV-L-02]. */
/*@ assigns \nothing;
    ensures value: \result == 2 * tokens;                               // [PKV-L-02]
*/
KVQ_HD static inline uint64_t kvq_pkv_index_bytes(uint32_t tokens)
{
    return 2u * (uint64_t)tokens;
}

/* Bytes of a quantized block: the KIVI storage of the residual plus the
 * indices [PKV-L-02]. */
KVQ_HD static inline uint64_t kvq_pkv_block_bytes(const kvq_pkv_params *p, uint32_t kind,
                                                  uint32_t tokens, uint32_t dim)
{
    kvq_kivi_shape s = kvq_pkv_kivi_shape(p, kind, tokens, dim);
    return kvq_kivi_storage_bytes(&s) + kvq_pkv_index_bytes(tokens);
}

/* Offset (in floats) of pattern j in a bank of `dim`-vectors [PKV-L-03]. */
/*@ assigns \nothing;
    ensures value: \result == j * dim;                                  // [PKV-L-03]
*/
KVQ_HD static inline uint64_t kvq_pkv_pattern_offset(uint32_t j, uint32_t dim)
{
    return (uint64_t)j * dim;
}

/* Bytes of a bank of npat binary32 patterns [PKV-L-03]. */
/*@ requires bank: npat <= KVQ_PKV_MAX_PATTERNS && dim <= KVQ_MAX_DIM;
    assigns \nothing;
    ensures value: \result == 4 * npat * dim;                           // [PKV-L-03]
*/
KVQ_HD static inline uint64_t kvq_pkv_bank_bytes(uint32_t npat, uint32_t dim)
{
    return 4u * (uint64_t)npat * dim;
}

/* The largest bank the parameters allow: the cap, or the format limit. */
/*@ requires \valid_read(p);
    assigns \nothing;
    ensures value: \result == (p->cap == 0 ? KVQ_PKV_MAX_PATTERNS : p->cap); // [PKV-U-04]
*/
KVQ_HD static inline uint32_t kvq_pkv_bank_limit(const kvq_pkv_params *p)
{
    return p->cap == 0u ? KVQ_PKV_MAX_PATTERNS : p->cap;
}

/* Patterns in a bank after a prefill bank of `prefill` patterns and `decoded`
 * decoded tokens: one more per `window` decoded tokens, up to the limit
 * [PKV-U-01] [PKV-U-04]. */
KVQ_HD static inline uint32_t kvq_pkv_bank_size(const kvq_pkv_params *p, uint32_t prefill,
                                                uint64_t decoded)
{
    uint64_t n = (uint64_t)prefill + decoded / p->window;
    uint32_t lim = kvq_pkv_bank_limit(p);
    return n > lim ? lim : (uint32_t)n;
}

/* Stored bits of a quantized block, per value, as the exact fraction
 * num/den (den = tokens*dim); the bank is counted apart [PKV-L-04]. */
KVQ_HD static inline uint64_t kvq_pkv_block_bits(const kvq_pkv_params *p, uint32_t kind,
                                                 uint32_t tokens, uint32_t dim)
{
    return 8u * kvq_pkv_block_bytes(p, kind, tokens, dim);
}

/* ---- fast path (ref/fast/pkv.c) ----------------------------------------
 * Every call checks, in this order and before writing anything [PKV-ERR-01]:
 * NULL pointers, parameters and policy (KVQ_E_PARAM); the shape (KVQ_E_SHAPE);
 * every input and pattern finite (KVQ_E_NONFINITE); every input and pattern
 * within the PKV domain |v| <= 2^48 (KVQ_E_RANGE).
 * ------------------------------------------------------------------------- */

/*@ // The exact extremes of x_i - m_i over i < n, and the pinned binary32
    // min-max distance they give [PKV-A-01] (rounding is monotone, so the
    // largest rounded difference is the rounded largest one).
    logic real kvq_pkv_maxdiff_l{L}(float *x, float *m, integer n) =
        n <= 1 ? (real)x[0] - (real)m[0]
               : \max(kvq_pkv_maxdiff_l(x, m, n - 1), (real)x[n - 1] - (real)m[n - 1]);
    logic real kvq_pkv_mindiff_l{L}(float *x, float *m, integer n) =
        n <= 1 ? (real)x[0] - (real)m[0]
               : \min(kvq_pkv_mindiff_l(x, m, n - 1), (real)x[n - 1] - (real)m[n - 1]);
    logic float kvq_pkv_dmm_l{L}(float *x, float *m, integer n) =
        \round_float(\NearestEven,
            (real)\round_float(\NearestEven, kvq_pkv_maxdiff_l(x, m, n)) -
            (real)\round_float(\NearestEven, kvq_pkv_mindiff_l(x, m, n)));
*/

/* binary32 min-max distance RN32(RN32(max_i (x_i - m_i)) - RN32(min_i (x_i - m_i)))
 * [PKV-A-01]; x and m finite within the domain [PKV-DOM-01], d >= 1. */
/*@ requires d_range: 1 <= d <= KVQ_MAX_DIM;
    requires input: \valid_read(x + (0 .. d - 1)) && \valid_read(m + (0 .. d - 1));
    requires domain: \forall integer i; 0 <= i < d ==>
        -0x1p48 <= x[i] <= 0x1p48 && -0x1p48 <= m[i] <= 0x1p48;
    assigns \nothing;
    ensures value: \result == kvq_pkv_dmm_l(x, m, d);                 // [PKV-A-01]
    ensures finite: \is_finite(\result);
    ensures nonneg: \result >= 0;
*/
float kvq_pkv_dist_minmax(const float *x, const float *m, uint32_t d);

/*@ // The pinned binary32 squared Euclidean distance over i < n [PKV-KM-02].
    logic float kvq_pkv_diff_l{L}(float *x, float *m, integer i) =
        \round_float(\NearestEven, (real)x[i] - (real)m[i]);
    logic float kvq_pkv_euc_l{L}(float *x, float *m, integer n) =
        n <= 0 ? \round_float(\NearestEven, 0.0)
               : \round_float(\NearestEven, (real)kvq_pkv_euc_l(x, m, n - 1) +
                     (real)\round_float(\NearestEven, (real)kvq_pkv_diff_l(x, m, n - 1) *
                                                       (real)kvq_pkv_diff_l(x, m, n - 1)));
*/

/* binary32 squared Euclidean distance: acc = 0; acc = RN32(acc + RN32(t*t)),
 * t = RN32(x_i - m_i), i ascending [PKV-KM-02]. */
/*@ requires d_range: 1 <= d <= KVQ_MAX_DIM;
    requires input: \valid_read(x + (0 .. d - 1)) && \valid_read(m + (0 .. d - 1));
    requires domain: \forall integer i; 0 <= i < d ==>
        -0x1p48 <= x[i] <= 0x1p48 && -0x1p48 <= m[i] <= 0x1p48;
    assigns \nothing;
    ensures value: \result == kvq_pkv_euc_l(x, m, d);                 // [PKV-KM-02]
    ensures finite: \is_finite(\result);
    ensures nonneg: \result >= 0;
*/
float kvq_pkv_dist_euclid(const float *x, const float *m, uint32_t d);

/* The index of the least distance (`dist`: KVQ_PKV_DIST_*) to x among npat
 * patterns, the lowest index among equal distances [PKV-A-02]. */
/*@ requires shape: 1 <= d <= KVQ_MAX_DIM && 1 <= npat <= KVQ_PKV_MAX_PATTERNS;
    requires metric: dist == KVQ_PKV_DIST_MINMAX || dist == KVQ_PKV_DIST_EUCLID;
    requires input: \valid_read(x + (0 .. d - 1)) && \valid_read(bank + (0 .. npat * d - 1));
    requires patterns: \forall integer j; 0 <= j < npat ==> \valid_read(bank + j * d + (0 .. d - 1));
    requires domain: (\forall integer i; 0 <= i < d ==> -0x1p48 <= x[i] <= 0x1p48) &&
        \forall integer j, i; 0 <= j < npat && 0 <= i < d ==>
            -0x1p48 <= bank[j * d + i] <= 0x1p48;
    assigns \nothing;
    ensures index_range: 0 <= \result < npat;
    ensures least: dist == KVQ_PKV_DIST_MINMAX ==> \forall integer j; 0 <= j < npat ==>
        kvq_pkv_dmm_l(x, bank + \result * d, d) <= kvq_pkv_dmm_l(x, bank + j * d, d); // [PKV-A-02]
    ensures lowest: dist == KVQ_PKV_DIST_MINMAX ==> \forall integer j; 0 <= j < \result ==>
        kvq_pkv_dmm_l(x, bank + j * d, d) > kvq_pkv_dmm_l(x, bank + \result * d, d);  // [PKV-A-02]
    ensures least_euclid: dist == KVQ_PKV_DIST_EUCLID ==> \forall integer j; 0 <= j < npat ==>
        kvq_pkv_euc_l(x, bank + \result * d, d) <= kvq_pkv_euc_l(x, bank + j * d, d); // [PKV-KM-02]
    ensures lowest_euclid: dist == KVQ_PKV_DIST_EUCLID ==> \forall integer j; 0 <= j < \result ==>
        kvq_pkv_euc_l(x, bank + j * d, d) > kvq_pkv_euc_l(x, bank + \result * d, d);
*/
uint32_t kvq_pkv_nearest(const float *x, const float *bank, uint32_t npat, uint32_t d,
                         uint32_t dist);

/* index[t] = kvq_pkv_nearest of token t of x [T][d] [PKV-A-02]. */
kvq_status kvq_pkv_assign(uint16_t *index, const float *x, uint32_t tokens, uint32_t dim,
                          const float *bank, uint32_t npat, uint32_t dist);

/* Lloyd k-means of x [T][d] into p->patterns centroids (patterns [M][d])
 * [PKV-KM-01..07]; cluster (may be NULL) receives the Euclidean assignment of
 * every token to the returned set; *iters the Lloyd steps taken; *converged 1
 * when the stopping rule ended the loop.  T >= M (else KVQ_E_SHAPE). */
kvq_status kvq_pkv_kmeans(float *patterns, uint32_t *cluster, uint32_t *iters,
                          uint32_t *converged, const float *x, uint32_t tokens, uint32_t dim,
                          const kvq_pkv_params *p);

/*@ // Extremes of column c over the first n rows of a [.][d] array.
    logic real kvq_pkv_colmax_l{L}(float *x, integer d, integer c, integer n) =
        n <= 1 ? (real)x[c] : \max(kvq_pkv_colmax_l(x, d, c, n - 1), (real)x[(n - 1) * d + c]);
    logic real kvq_pkv_colmin_l{L}(float *x, integer d, integer c, integer n) =
        n <= 1 ? (real)x[c] : \min(kvq_pkv_colmin_l(x, d, c, n - 1), (real)x[(n - 1) * d + c]);
*/

/* The Chebyshev centre RN32((min_t x[t][c] + max_t x[t][c]) / 2) of T tokens,
 * per dimension c [PKV-U-02]. */
/*@ requires ptrs: centre == \null || \valid(centre + (0 .. dim - 1));
    requires input: x == \null || \valid_read(x + (0 .. tokens * dim - 1));
    requires separated: centre != \null && x != \null ==>
        \separated(centre + (0 .. dim - 1), x + (0 .. tokens * dim - 1));
    assigns centre[0 .. dim - 1];
    ensures status: \result == KVQ_OK || \result == KVQ_E_PARAM || \result == KVQ_E_SHAPE ||
                    \result == KVQ_E_NONFINITE || \result == KVQ_E_RANGE;     // [PKV-ERR-01]
    ensures centre_value: \result == KVQ_OK ==> \forall integer c; 0 <= c < dim ==>
        centre[c] == \round_float(\NearestEven,
            (kvq_pkv_colmin_l(x, dim, c, tokens) + kvq_pkv_colmax_l(x, dim, c, tokens)) / 2);
                                                                              // [PKV-U-02]
    ensures nothing_on_error: \result != KVQ_OK ==>
        \forall integer c; 0 <= c < dim ==> centre[c] == \old(centre[c]);   // [PKV-ERR-01]
*/
kvq_status kvq_pkv_chebyshev(float *centre, const float *x, uint32_t tokens, uint32_t dim);

/* The pinned evaluation of the threshold [PKV-V-02] for 8 <= dim <=
 * KVQ_MAX_DIM and alpha <= KVQ_PKV_ALPHA_01 (unchecked: kvq_pkv_rho_star checks
 * them): z_{1-alpha} as a binary64 constant (within 2^-52 relative of the
 * certified brackets; check_pkv's threshold tests hold them to it), c^2 =
 * 4 z^2 / (5 d) < 1 for d >= 8, rho*^2 = (1 - c^2) / (1 + sqrt(c^2 (2 - c^2))),
 * the cancellation-free form of the closed form, rounded once to binary32.
 * Each binary64 step has relative error 2^-53; the result is within 2^-23 of
 * rho*.  One definition for the fast path and the device launchers
 * (gpu/pkv/), which take the threshold from it on the host. */
static inline float kvq_pkv_rho_star_eval(uint32_t dim, uint32_t alpha)
{
    const double z = alpha == KVQ_PKV_ALPHA_10 ? 0x1.4813c36e26d34p+0  /* 1.2815515655446008 */
                   : alpha == KVQ_PKV_ALPHA_01 ? 0x1.29c5c4630ff0ep+1  /* 2.3263478740408408 */
                                               : 0x1.a515209676ab8p+0; /* 0.05: 1.6448536269514715 */
    const double c2 = (4.0 * (z * z)) / (5.0 * (double)dim);
    const double g = c2 * (2.0 - c2);
    const double u = (1.0 - c2) / (1.0 + sqrt(g));
    return (float)sqrt(u);
}

/* The binary32 threshold rho*(d, alpha) of the pinned evaluation [PKV-V-02]. */
kvq_status kvq_pkv_rho_star(float *rho, uint32_t dim, uint32_t alpha);

/* The V decision [PKV-V-01]: 1 to use the pattern m for v, 0 to store v raw,
 * with threshold t (kvq_pkv_rho_star).  *rho (may be NULL) receives the pinned
 * binary32 ratio (0 when range(v) is 0). */
/*@ requires d_range: 1 <= d <= KVQ_MAX_DIM;
    requires input: \valid_read(v + (0 .. d - 1)) && \valid_read(m + (0 .. d - 1));
    requires domain: \forall integer i; 0 <= i < d ==>
        -0x1p48 <= v[i] <= 0x1p48 && -0x1p48 <= m[i] <= 0x1p48;
    requires out: rho == \null || \valid(rho);
    assigns *rho;
    ensures bool: \result == 0 || \result == 1;
    behavior constant:                                                // [PKV-V-01]
      assumes kvq_pkv_colmax_l(v, 1, 0, d) == kvq_pkv_colmin_l(v, 1, 0, d);
      ensures raw: \result == 0;
    behavior ranged:
      assumes kvq_pkv_colmax_l(v, 1, 0, d) != kvq_pkv_colmin_l(v, 1, 0, d);
      ensures decision: \result == 1 <==>                              // [PKV-V-01]
          \round_float(\NearestEven, (real)kvq_pkv_dmm_l(v, m, d) /
              (real)\round_float(\NearestEven,
                  kvq_pkv_colmax_l(v, 1, 0, d) - kvq_pkv_colmin_l(v, 1, 0, d))) <= t;
    complete behaviors;
    disjoint behaviors;
*/
int kvq_pkv_v_use(float *rho, const float *v, const float *m, uint32_t d, float t);

/* Quantize a block x [T][d] against the bank [PKV-Q-01..04]: index[T] (the
 * assigned pattern, or KVQ_PKV_NO_PATTERN), resid [T][d] (the residuals the
 * KIVI quantizer read), then KIVI codes/scale/zero of resid with the shape
 * kvq_pkv_kivi_shape(p, kind, T, d).  flags as kvq_kivi_quantize. */
kvq_status kvq_pkv_quantize(uint8_t *codes, float *scale, float *zero, uint16_t *index,
                            float *resid, uint32_t *flags, const float *x, uint32_t kind,
                            uint32_t tokens, uint32_t dim, const float *bank, uint32_t npat,
                            const kvq_pkv_params *p, const kvq_policy *pol);

/* Dequantize [PKV-D-01..02]: y = RN32(fmaf(c, s, z) + m[index]), or fmaf(c, s, z)
 * for a token stored raw.  Metadata as kvq_kivi_dequantize; an index at or
 * past npat other than KVQ_PKV_NO_PATTERN is KVQ_E_PARAM. */
kvq_status kvq_pkv_dequantize(float *y, uint32_t *flags, const uint8_t *codes,
                              const float *scale, const float *zero, const uint16_t *index,
                              uint32_t kind, uint32_t tokens, uint32_t dim, const float *bank,
                              uint32_t npat, const kvq_pkv_params *p, const kvq_policy *pol);

/* Append the Chebyshev centre of window [n][d] to the bank unless the bank is
 * at its limit [PKV-U-01..04]; bank_cap is the room the caller allocated
 * (in patterns).  *appended (may be NULL) is 1 when a centre joined. */
kvq_status kvq_pkv_bank_update(float *bank, uint32_t *npat, uint32_t *appended,
                               uint32_t bank_cap, const float *window, uint32_t n, uint32_t dim,
                               const kvq_pkv_params *p);

/* A key decode flush [PKV-U-03]: the window of R = p->residual keys [R][d]
 * gets its centre appended (kvq_pkv_bank_update) and is quantized with kind
 * KVQ_PKV_KEY_DECODE, after the centre joins (KVQ_PKV_UPDATE_AFTER) or
 * before.  Nothing is written on error (the bank included). */
kvq_status kvq_pkv_key_flush(uint8_t *codes, float *scale, float *zero, uint16_t *index,
                             float *resid, uint32_t *flags, float *bank, uint32_t *npat,
                             uint32_t bank_cap, const float *window, uint32_t dim,
                             const kvq_pkv_params *p, const kvq_policy *pol);

/* A value decode step [PKV-U-05]: window [held][d] is the full-precision
 * value window after the step's append (oldest first, 1 <= held <= R + 1),
 * step the 1-based count of decoded tokens.  At step % window == 0 the
 * centre of the R most recent rows joins the bank (kvq_pkv_bank_update's
 * rules); then, when held == R + 1, row 0 is quantized as one value token
 * (kvq_pkv_quantize, KVQ_PKV_VALUE) against the bank as it now stands and
 * *count = 1, else *count = 0.  Nothing is written on error. */
kvq_status kvq_pkv_value_step(uint8_t *codes, float *scale, float *zero, uint16_t *index,
                              float *resid, uint32_t *flags, uint32_t *count, float *bank,
                              uint32_t *npat, uint32_t bank_cap, const float *window,
                              uint32_t held, uint64_t step, uint32_t dim,
                              const kvq_pkv_params *p, const kvq_policy *pol);

#ifdef __cplusplus
}
#endif

#endif /* KVQ_PKV_H */
