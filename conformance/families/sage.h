/*
 * families/sage.h -- the SAGE family's case structs (spec/sage.md,
 * spec/vectors.md [VEC-SAGE-01..06]).
 */
#ifndef KVQ_FAMILY_SAGE_H
#define KVQ_FAMILY_SAGE_H

#include "kvq.h"
#include "kvq_sage.h"
#include "registry.h"

/* Inputs of every SAGE operation (each reads the fields its schema names):
 * sage-qk: shape, qk, seg, x [N][d]; sage-p: rows, cols, fmt, x = p
 * [rows][cols]; sage-v: shape, fmt, x = v [N][d]; sage-ds: shape (of the
 * keys), rows, tau, qm [rows][d], x = ks [N][d]; sage-pv: rows, n, fmt, model,
 * buffer, a and b [rows][n] (FP8 codes), c [rows]; sage-attn: the record
 * attn, x = q [nq][128], qm = k, v [nk][128]; sage-mha: attn, hq, hkv,
 * in_fmt, x = q [hq][nq][128], qm = k, v [hkv][nk][128]. */
typedef struct kvq_sage_in {
    kvq_sage_shape shape;
    kvq_sage_qk qk;
    uint32_t seg;
    uint32_t fmt;
    uint32_t rows, cols;
    float tau;
    float *x;
    float *qm;
    uint32_t n, model, buffer;
    uint8_t *a, *b;
    float *c;
    kvq_sage_attn attn;
    float *v;
    uint32_t hq, hkv, in_fmt;
} kvq_sage_in;

/* sage-qk outputs [SAGE-SM-01..02] [SAGE-Q-01..07]: the smoothing means
 * [R][d], the scales in slot order, the packed signed codes. */
typedef struct kvq_sage_qk_out {
    float *mean;
    float *scale;
    uint8_t *codes;
} kvq_sage_qk_out;

/* sage-dq outputs [SAGE-Q-08]: the dequantized values [N][d]. */
typedef struct kvq_sage_dq_out {
    float *y;
} kvq_sage_dq_out;

/* sage-p outputs [SAGE-P-01..04]: FP8 codes [rows][cols], row sums. */
typedef struct kvq_sage_p_out {
    uint8_t *codes;
    float *rowsum;
} kvq_sage_p_out;

/* sage-v outputs [SAGE-V-01..04]: the d channel scales, FP8 codes [N][d]. */
typedef struct kvq_sage_v_out {
    float *scale;
    uint8_t *codes;
} kvq_sage_v_out;

/* sage-ds outputs [SAGE-DS-01..02]: dS [rows][N]. */
typedef struct kvq_sage_ds_out {
    float *ds;
} kvq_sage_ds_out;

/* sage-pv outputs [SAGE-ACC-07]: one value a row; its reference (the
 * bounded level [SAGE-ACC-06]): the interval a conforming value lies in. */
typedef struct kvq_sage_pv_out {
    float *d;
} kvq_sage_pv_out;

typedef struct kvq_sage_pv_ref {
    float *lo, *hi;
} kvq_sage_pv_ref;

/* sage-attn [SAGE-ATT-01..07]: the output [nq][128]; its reference (the
 * bounded level, the only one): exact attention enclosed in [lo, hi] and the
 * bound, binary32 rounded outward.  sage-mha [SAGE-MHA-01..04]: the same
 * structs, [hq][nq][128]. */
typedef struct kvq_sage_attn_out {
    float *o;
} kvq_sage_attn_out;

typedef struct kvq_sage_attn_ref {
    float *lo, *hi, *bound;
} kvq_sage_attn_ref;

extern const kvq_family kvq_family_sage;
extern const kvq_op kvq_op_sage_qk, kvq_op_sage_p, kvq_op_sage_v, kvq_op_sage_ds, kvq_op_sage_pv,
    kvq_op_sage_attn, kvq_op_sage_dq, kvq_op_sage_mha;

/* Generation (sage_gen.c). */
uint64_t kvq_sage_gen_count(const char *levels);
kvq_status kvq_sage_gen_case(kvq_case *c, const char *levels, uint64_t seed, uint64_t k);
/* The operations' exact-path solvers (sage_gen.c, kvq_op.solve). */
kvq_status kvq_sage_solve_qk(kvq_case *c);
kvq_status kvq_sage_solve_p(kvq_case *c);
kvq_status kvq_sage_solve_v(kvq_case *c);
kvq_status kvq_sage_solve_ds(kvq_case *c);
kvq_status kvq_sage_solve_pv(kvq_case *c);
kvq_status kvq_sage_solve_attn(kvq_case *c);
kvq_status kvq_sage_solve_dq(kvq_case *c);
kvq_status kvq_sage_solve_mha(kvq_case *c);
/* `kvq probe` (sage_probe.c): runs the accumulator probe program. */
int kvq_sage_probe_main(int argc, char **argv);
#define KVQ_SAGE_PROBE_USAGE                                                                     \
    "  kvq probe [--program PATH] [--confirm] [--tiles N] [--sample S] [--seed X]\n"              \
    "            [--out DIR] [--commit TEXT] | kvq probe [--program PATH] --judge DIR\n"

#endif /* KVQ_FAMILY_SAGE_H */
