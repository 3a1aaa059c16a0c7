/*
 * kvq_exact_vidkv.h -- the VIDKV family, exact path (GNU MPFR): the pinned
 * sequences of spec/vidkv.md evaluated exactly and rounded once per step
 * (exact level), the DFT enclosed at 256 bits with the ambiguity rule and the
 * radii of spec/bounds/vidkv.md rounded outward (bounded level).
 */
#ifndef KVQ_EXACT_VIDKV_H
#define KVQ_EXACT_VIDKV_H

#include "kvq_exact.h"
#include "kvq_vidkv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Everything the exact path says about one key quantization.  Caller-owned
 * arrays sized as the fast path's; comp_amb holds H*T*m bytes (m =
 * kvq_vidkv_nrm_per_block), s_lo and s_hi one value per normal group (FFT). */
typedef struct kvq_exact_vidkv_keys_out {
    kvq_vidkv_keys k;   /* pinned mask, abnormal groups, MINMAX / SIGNMEAN groups [VIDKV-B-05];
                           under FFT: nrm_codes the real codes (1 where ambiguous), nrm_scale
                           the storage rounding of the real scale's enclosure midpoint */
    uint8_t *comp_amb;  /* FFT: 1 where a component is ambiguous [VIDKV-B-01], index
                           (h*T + t)*m + j */
    float *s_lo, *s_hi; /* FFT: accepted stored scales [VIDKV-B-02] */
    uint32_t flags;     /* events of the pinned sequences (FFT groups excluded), plus AMBIGUOUS */
    uint64_t ambiguous; /* ambiguous components and abnormal / MINMAX near-ties */
} kvq_exact_vidkv_keys_out;

kvq_status kvq_exact_vidkv_quantize_keys(kvq_exact_vidkv_keys_out *out, const float *k,
                                         const kvq_vidkv_params *prm, const kvq_policy *pol);

/* Accepted dequantized keys of stored keys `in` (a subject's own codes and
 * metadata), per element of [H][T][d]: lo[e] <= y[e] <= hi[e].  Abnormal,
 * MINMAX and SIGNMEAN elements: lo = hi = the pinned value [VIDKV-K-11]; FFT
 * normal elements: the real inverse DFT +- rho_i [VIDKV-B-03], outward.  The
 * stored data must pass [VIDKV-D-02..03] (same statuses as the fast path). */
kvq_status kvq_exact_vidkv_key_deq_bounds(double *lo, double *hi, const kvq_vidkv_keys *in,
                                          const kvq_vidkv_params *prm);

/* Everything the exact path says about one value quantization. */
typedef struct kvq_exact_vidkv_values_out {
    kvq_vidkv_values v; /* pinned [VIDKV-V-01..05] [VIDKV-STP-01..03] */
    float *deq;         /* [H][T][d]: pinned dequantization [VIDKV-V-06] */
    int8_t *code_real;  /* [H][T][d]: real ternary code (0 at protected tokens) [VIDKV-B-04] */
    uint8_t *amb;       /* [H][T][d]: 1 where ambiguous */
    float *score;       /* vis_count pinned scores (STP; may be NULL without STP) */
    uint32_t np;        /* protected tokens */
    uint32_t flags;     /* events of the pinned sequences, plus AMBIGUOUS */
    uint64_t ambiguous;
} kvq_exact_vidkv_values_out;

kvq_status kvq_exact_vidkv_quantize_values(kvq_exact_vidkv_values_out *out, const float *v,
                                           const kvq_vidkv_params *prm,
                                           const kvq_vidkv_stp *stp, const kvq_policy *pol);

/* The real twiddles' distance to the reference's (kvq_vidkv_twiddle), for the
 * assumption tau of spec/bounds/vidkv.md §2: the largest |c - cos|, |s - sin|
 * over m < N, rounded upward. */
double kvq_exact_vidkv_twiddle_err(uint32_t N);

#ifdef __cplusplus
}
#endif
#endif /* KVQ_EXACT_VIDKV_H */
