/*
 * families/kivi.h -- the KIVI family's case structs (spec/kivi.md,
 * spec/vectors.md [VEC-FMT-03..05]).
 */
#ifndef KVQ_FAMILY_KIVI_H
#define KVQ_FAMILY_KIVI_H

#include "kvq.h"
#include "registry.h"

/* kivi-quant inputs: the shape and the T*D values, row-major. */
typedef struct kvq_kivi_in {
    kvq_kivi_shape shape;
    float *x;
} kvq_kivi_in;

/* kivi-quant outputs (expected or a subject's): packed codes, the metadata
 * of every group in the shape's format, the dequantized values. */
typedef struct kvq_kivi_out {
    uint8_t *codes;
    float *scale, *zero;
    float *deq;
} kvq_kivi_out;

/* What the bounded level judges with: the real codes and the near-ties. */
typedef struct kvq_kivi_ref {
    uint8_t *real;
    kvq_amb amb;
} kvq_kivi_ref;

extern const kvq_family kvq_family_kivi;
extern const kvq_op kvq_op_kivi_quant;

/* `kvq bench`: throughput of the exact and fast paths (kivi_bench.c). */
int kvq_bench_main(int argc, char **argv);

/* Generation (kivi_gen.c). */
uint64_t kvq_kivi_gen_count(const char *levels);
kvq_status kvq_kivi_gen_case(kvq_case *c, const char *levels, uint64_t seed, uint64_t k);
kvq_status kvq_kivi_solve(kvq_case *c);

#endif /* KVQ_FAMILY_KIVI_H */
