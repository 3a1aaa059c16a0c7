/*
 * families/cert.h -- the CERT family's case structs (spec/cert.md,
 * spec/vectors.md [VEC-CERT-01..07]).
 */
#ifndef KVQ_FAMILY_CERT_H
#define KVQ_FAMILY_CERT_H

#include "kvq.h"
#include "kvq_cert.h"
#include "registry.h"

/* Inputs of every CERT operation: the shape, the binary16 K and V [n][d]
 * (the ones the operation reads), and for cert-step the query, the softmax
 * scale and the step's parameters. */
typedef struct kvq_cert_in {
    kvq_cert_shape shape;
    float *k;               /* cert-keys, cert-step */
    float *v;               /* cert-values, cert-step */
    float *q;               /* cert-step: d */
    float qscale;           /* cert-step [CERT-L-01] */
    kvq_cert_params prm;    /* cert-step [CERT-DUMP-03] */
} kvq_cert_in;

/* cert-keys outputs [CERT-K8-01..05]: int8 codes (bit patterns, row-major over
 * the 16 nq quantized tokens), sigma and z per block-channel entry b*d+c. */
typedef struct kvq_cert_keys_out {
    uint8_t *codes;
    float *sigma, *z;
} kvq_cert_keys_out;

/* cert-values outputs [CERT-V4-01] [CERT-ANN-01..02]: packed 4-bit codes, the
 * binary16 scale and zero of every group, eta and nu of every block. */
typedef struct kvq_cert_values_out {
    uint8_t *codes;
    float *scale, *zero;
    float *eta, *nu;
} kvq_cert_values_out;

/* What the bounded level of the quantizers judges with. */
typedef struct kvq_cert_quant_ref {
    uint8_t *real;
    kvq_amb amb;
} kvq_cert_quant_ref;

/* cert-step outputs: d outputs, nb selection and promotion flags, the
 * record [CERT-REC-01], the declaration [CERT-AR-01], the Phase-1 radius. */
typedef struct kvq_cert_step_out {
    float *out;
    uint8_t *sel, *prom;
    kvq_cert_record rec;
    kvq_cert_decl decl;
    float delta1;
} kvq_cert_step_out;

extern const kvq_family kvq_family_cert;
extern const kvq_op kvq_op_cert_keys, kvq_op_cert_values, kvq_op_cert_step;

/* `kvq cert` (certcmd.c): check the certificate of decode-step dumps. */
int kvq_cert_main(int argc, char **argv);

/* Generation (cert_gen.c). */
uint64_t kvq_cert_gen_count(const char *levels);
kvq_status kvq_cert_gen_case(kvq_case *c, const char *levels, uint64_t seed, uint64_t k);
/* The operations' exact-path solvers (cert_gen.c, kvq_op.solve). */
kvq_status kvq_cert_solve_quant(kvq_case *c);
kvq_status kvq_cert_solve_step(kvq_case *c);

#endif /* KVQ_FAMILY_CERT_H */
