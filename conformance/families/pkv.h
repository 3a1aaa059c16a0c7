/*
 * families/pkv.h -- the PKV family's case structs (spec/pkv.md,
 * spec/vectors.md [VEC-PKV-01..09]).
 */
#ifndef KVQ_FAMILY_PKV_H
#define KVQ_FAMILY_PKV_H

#include "kvq.h"
#include "kvq_pkv.h"
#include "registry.h"

/* Inputs of every PKV operation (each reads the fields its schema names).
 * p holds the parameters a line carries; the others keep the defaults of
 * [PKV-P-01] (kvq_pkv_params_default(4)), residual = group unless the line
 * carries it, and the operation's variant sets its switch [VEC-PKV-02].
 * pkv-kmeans: tokens, dim, x [tokens][dim];
 * pkv-quant: kind, tokens, dim, npat, x [tokens][dim], bank [npat][dim];
 * pkv-dequant: kind, tokens, dim, npat, codes, scale, zero, index, bank;
 * pkv-key-flush: steps (flushes), dim, npat, room, x [steps * residual][dim], bank;
 * pkv-value-step: steps, dim, npat, room, x [steps][dim], bank. */
typedef struct kvq_pkv_in {
    kvq_pkv_params p;
    uint32_t kind;
    uint32_t tokens, dim, npat, room, steps;
    float *x;
    float *bank;
    uint8_t *codes;
    float *scale, *zero;
    uint16_t *index;
} kvq_pkv_in;

/* pkv-kmeans outputs [PKV-KM-05]: the set, each token's cluster, the
 * iterations run, 1 when the stopping rule ended the loop.  No expected
 * values: the judge checks properties [PKV-KM-06]. */
typedef struct kvq_pkv_kmeans_out {
    float *patterns;
    uint32_t *cluster;
    uint32_t iters, converged;
} kvq_pkv_kmeans_out;

/* pkv-quant, pkv-key-flush, pkv-value-step outputs: the bank after the
 * sequence (decode operations), the stored indices, residuals, KIVI codes and
 * metadata of every quantized block in order, the dequantized values
 * (pkv-quant; pkv-dequant's only output). */
typedef struct kvq_pkv_out {
    uint32_t npat;
    float *bank;
    uint16_t *index;
    float *resid;
    uint8_t *codes;
    float *scale, *zero;
    float *deq;
} kvq_pkv_out;

/* pkv-quant's reference (the bounded level): each token's real index
 * (0xFFFF: decisively stored raw) and its near-tie class, bit 0 an
 * assignment near-tie [PKV-A-04], bit 1 a V decision in the band [PKV-V-04]. */
typedef struct kvq_pkv_ref {
    uint16_t *real;
    uint8_t *ties;
} kvq_pkv_ref;

#define KVQ_PKV_TIE_ASSIGN 1u
#define KVQ_PKV_TIE_V 2u

extern const kvq_family kvq_family_pkv;
extern const kvq_op kvq_op_pkv_kmeans, kvq_op_pkv_quant, kvq_op_pkv_dequant, kvq_op_pkv_key_flush,
    kvq_op_pkv_value_step;

/* The parameters a case runs with: its fields, the defaults, its variant. */
kvq_pkv_params kvq_pkv_case_params(const kvq_case *c);

/* Generation and the exact-path solvers (pkv_gen.c). */
uint64_t kvq_pkv_gen_count(const char *levels);
kvq_status kvq_pkv_gen_case(kvq_case *c, const char *levels, uint64_t seed, uint64_t k);
kvq_status kvq_pkv_solve_kmeans(kvq_case *c);
kvq_status kvq_pkv_solve_quant(kvq_case *c);
kvq_status kvq_pkv_solve_dequant(kvq_case *c);
kvq_status kvq_pkv_solve_key_flush(kvq_case *c);
kvq_status kvq_pkv_solve_value_step(kvq_case *c);
/* The pinned binary32 min-max distance [PKV-A-01], evaluated exactly (for the
 * judges' messages). */
float kvq_pkv_pinned_dmm(const float *x, const float *m, uint32_t d);

#endif /* KVQ_FAMILY_PKV_H */
