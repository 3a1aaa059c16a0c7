/*
 * families/vidkv.h -- the VIDKV family's case structs (spec/vidkv.md,
 * spec/vectors.md [VEC-VIDKV-01..07]).
 */
#ifndef KVQ_FAMILY_VIDKV_H
#define KVQ_FAMILY_VIDKV_H

#include "kvq.h"
#include "kvq_vidkv.h"
#include "registry.h"

/* Inputs of every VIDKV operation (each reads the fields its schema names):
 * vidkv-keys: prm (heads, tokens, dim, group, meta, split, normal, key_frac),
 * abnormal (n_a), k [H][T][d]; vidkv-values: prm (heads, tokens, dim, group,
 * meta, vdeq, vpack, gamma, protect), the STP scalars, protected (n_p),
 * v [H][T][d], xs [rows][sdim]; vidkv-stream: prm (every switch, f, gamma,
 * p), prefill, decode, the STP scalars, k and v [H][prefill + decode][d],
 * xs. */
typedef struct kvq_vidkv_case_in {
    kvq_vidkv_params prm;
    uint32_t abnormal, protect_n;
    uint32_t rows, sdim, vis_first, vis_count, txt_first, txt_count;
    uint32_t prefill, decode;
    float *k, *v, *xs;
    /* vidkv-deq-keys, vidkv-deq-values: the stored data a dequantizer reads
     * [VIDKV-K-10] [VIDKV-V-05] (protect_n: its n_p argument) */
    uint8_t *mask, *abn_codes, *nrm_codes, *tern, *prot, *p_codes;
    float *abn_scale, *abn_zero, *nrm_scale, *nrm_zero, *beta, *p_scale, *p_zero;
} kvq_vidkv_case_in;

/* vidkv-keys outputs [VIDKV-K-10] [VIDKV-K-11]: the stored keys, then the
 * dequantization of the subject's own stored keys. */
typedef struct kvq_vidkv_keys_out {
    uint8_t *mask, *abn_codes;
    float *abn_scale, *abn_zero;
    uint8_t *nrm_codes;
    float *nrm_scale, *nrm_zero;
    float *deq;
} kvq_vidkv_keys_out;

/* What the bounded level judges FFT keys with [VIDKV-B-01..02]: the
 * ambiguous components (index (h*T + t)*m + j, alternative code 0 or 1: the
 * other one) and the accepted stored scales of every normal group. */
typedef struct kvq_vidkv_keys_ref {
    kvq_amb amb;
    float *s_lo, *s_hi;
} kvq_vidkv_keys_ref;

/* vidkv-values outputs [VIDKV-V-05] [VIDKV-V-06]. */
typedef struct kvq_vidkv_values_out {
    uint8_t *tern;
    float *beta;
    uint8_t *prot, *p_codes;
    float *p_scale, *p_zero;
    float *deq;
} kvq_vidkv_values_out;

/* What the bounded level judges raw ternary values with [VIDKV-B-04]: the
 * ambiguous elements (index (h*T + t)*d + c) with their other accepted code
 * (0 or sign(v)); every other element's only accepted code is the expected
 * one.  Listed for raw values only (the only ones with a bounded level). */
typedef struct kvq_vidkv_values_ref {
    kvq_amb amb;
} kvq_vidkv_values_ref;

/* vidkv-stream outputs [VIDKV-W-01..02]: the dequantized key and value
 * caches after the last flush, [H][Tq][d] each. */
typedef struct kvq_vidkv_stream_out {
    float *keys, *values;
} kvq_vidkv_stream_out;

/* vidkv-deq-keys, vidkv-deq-values outputs [VIDKV-K-11] [VIDKV-V-06]; the
 * reference of FFT keys (bounded level): the accepted interval of every
 * element [VIDKV-B-03], binary32 rounded outward. */
typedef struct kvq_vidkv_deq_out {
    float *deq;
} kvq_vidkv_deq_out;

typedef struct kvq_vidkv_deq_ref {
    float *lo, *hi;
} kvq_vidkv_deq_ref;

extern const kvq_family kvq_family_vidkv;
extern const kvq_op kvq_op_vidkv_keys, kvq_op_vidkv_values, kvq_op_vidkv_stream, kvq_op_vidkv_deq_keys,
    kvq_op_vidkv_deq_values;

/* Generation and the exact-path solvers (vidkv_gen.c). */
uint64_t kvq_vidkv_gen_count(const char *levels);
kvq_status kvq_vidkv_gen_case(kvq_case *c, const char *levels, uint64_t seed, uint64_t k);
kvq_status kvq_vidkv_solve_keys(kvq_case *c);
kvq_status kvq_vidkv_solve_values(kvq_case *c);
kvq_status kvq_vidkv_solve_stream(kvq_case *c);
kvq_status kvq_vidkv_solve_deq_keys(kvq_case *c);
kvq_status kvq_vidkv_solve_deq_values(kvq_case *c);

#endif /* KVQ_FAMILY_VIDKV_H */
