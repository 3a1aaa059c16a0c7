/*
 * vecio.h -- conformance vector and results files (spec/vectors.md).
 *
 * Text, one case per line, versioned header, hex for every bit pattern.  Every
 * reader error names the file, the line and what is wrong.
 */
#ifndef KVQ_VECIO_H
#define KVQ_VECIO_H

#include <stdio.h>
#include <stdint.h>

#include "kvq.h"

#define KVQ_VEC_VERSION 1u
#define KVQ_VEC_MAGIC "kvq-vectors"
#define KVQ_RES_MAGIC "kvq-results"
#define KVQ_ID_MAX 64

/* Conformance level of a case [VEC-LVL-01]. */
#define KVQ_LEVEL_EXACT   0u
#define KVQ_LEVEL_BOUNDED 1u

/* Operation of a case [VEC-FMT-03] [VEC-CERT-02]. */
#define KVQ_OP_KIVI_QUANT  0u
#define KVQ_OP_CERT_KEYS   1u
#define KVQ_OP_CERT_VALUES 2u
#define KVQ_OP_CERT_STEP   3u

/* Vector families [VEC-FMT-02] [VEC-CERT-01]. */
#define KVQ_FAMILY_KIVI 0u
#define KVQ_FAMILY_CERT 1u

/* One case: inputs and the exact path's expected outputs.  A KIVI case uses
 * shape and x; a CERT case [VEC-CERT-*] uses cshape and, by op:
 *   cert-keys:   x = K [n][d]; codes/real: key code bytes (int8 bit patterns,
 *                row-major over the 16 nq quantized tokens), scale/zero: sigma/z
 *                (binary32), amb_alt: the alternative int8 code's bit pattern;
 *   cert-values: x = V [n][d]; codes/real: packed 4-bit codes, scale/zero: the
 *                binary16 metadata, eta/nu: nb annotations;
 *   cert-step:   x = K, vin = V, q, qscale, prm (no expected outputs). */
typedef struct kvq_vcase {
    char id[KVQ_ID_MAX];
    long line;              /* line number in its file */
    uint32_t level;         /* KVQ_LEVEL_* */
    uint32_t op;            /* KVQ_OP_* */
    kvq_kivi_shape shape;
    kvq_policy pol;
    float *x;               /* kvq_kivi_elems values */
    int status;             /* expected status */
    uint32_t flags;         /* expected flags (exact path's, AMBIGUOUS included) */
    /* Present when status == KVQ_OK: */
    uint8_t *codes;         /* packed pinned codes (exact level) */
    float *scale, *zero;    /* per group */
    float *deq;             /* per element, row-major */
    uint8_t *real;          /* packed real codes (bounded level) */
    uint64_t namb;          /* ambiguous elements: row-major index and alternative code */
    uint64_t *amb_idx;
    uint8_t *amb_alt;
    /* CERT cases */
    kvq_cert_shape cshape;
    float *vin, *q;         /* cert-step: V [n][d], q [d] */
    float qscale;           /* cert-step: the softmax scale [CERT-L-01] */
    kvq_cert_params prm;    /* cert-step [CERT-DUMP-03] */
    float *eta, *nu;        /* cert-values, status 0: nb expected annotations */
} kvq_vcase;

typedef struct kvq_vfile {
    uint32_t version;
    char family[32];        /* "kivi" | "cert" */
    uint32_t fam;           /* KVQ_FAMILY_* */
    char levels[32];        /* "smoke" | "standard" */
    uint64_t seed;
    char generator[64];
    kvq_vcase *cases;
    size_t ncases;
} kvq_vfile;

/* One subject result as read: the hex fields stay text until they are decoded
 * against their case (the results file does not repeat the shape). */
typedef struct kvq_rcase {
    char id[KVQ_ID_MAX];
    long line;
    int status;
    uint32_t flags;
    char *codes, *scale, *zero, *deq; /* NULL when absent */
    char *sigma, *z, *eta, *nu;       /* CERT outputs [VEC-CERT-05] */
    char *out, *sel, *prom, *rec, *decl, *delta1;
    char *skipped;                    /* non-NULL: the subject has no entry for the op */
    uint32_t op;                      /* the operation its output fields belong to */
} kvq_rcase;

typedef struct kvq_rfile {
    uint32_t version;
    char subject[64];
    char unavailable[256]; /* non-empty: the subject could not run here (SKIPPED) */
    kvq_rcase *cases;
    size_t ncases;
} kvq_rfile;

/* A subject's decoded outputs for one case. */
typedef struct kvq_rout {
    uint8_t *codes;
    float *scale, *zero, *deq;  /* cert-keys: scale = sigma, zero = z */
    float *eta, *nu;            /* cert-values: nb annotations */
    float *out;                 /* cert-step: d outputs */
    uint8_t *sel, *prom;        /* cert-step: nb flags */
    kvq_cert_record rec;        /* cert-step [CERT-REC-01] */
    kvq_cert_decl decl;         /* cert-step [CERT-AR-01] */
    float delta1;               /* cert-step: Phase-1 radius */
} kvq_rout;

/* Readers: KVQ_OK, or KVQ_E_IO / KVQ_E_FORMAT / KVQ_E_NOMEM with a message
 * "path:line: what" in err.  On error *vf is left empty. */
kvq_status kvq_vec_read(kvq_vfile *vf, const char *path, char *err, size_t errlen);
kvq_status kvq_res_read(kvq_rfile *rf, const char *path, char *err, size_t errlen);
/* Parse from an in-memory buffer (name used in messages). */
kvq_status kvq_vec_parse(kvq_vfile *vf, const char *buf, size_t len, const char *name,
                         char *err, size_t errlen);
kvq_status kvq_res_parse(kvq_rfile *rf, const char *buf, size_t len, const char *name,
                         char *err, size_t errlen);

/* Decode a result's hex fields against its case (sizes from the case's shape
 * and metadata format); errors name the results file and line. */
kvq_status kvq_res_decode(kvq_rout *o, const kvq_rcase *r, const kvq_vcase *c,
                          const char *path, char *err, size_t errlen);
void kvq_rout_free(kvq_rout *o);

/* Writers (to a stream). */
kvq_status kvq_vec_write_header(FILE *f, const kvq_vfile *vf);
kvq_status kvq_vec_write_case(FILE *f, const kvq_vcase *c);
kvq_status kvq_res_write_header(FILE *f, const char *subject, const char *unavailable);
kvq_status kvq_res_write_case(FILE *f, const char *id, int status, uint32_t flags,
                              const kvq_rout *o, const kvq_kivi_shape *shape);
/* A CERT result [VEC-CERT-05]: the output fields of c->op when status is 0. */
kvq_status kvq_res_write_cert(FILE *f, const kvq_vcase *c, int status, uint32_t flags,
                              const kvq_rout *o);
/* A skipped case: the subject has no entry point for its operation
 * [VEC-CERT-06]; reason is one token (no blanks). */
kvq_status kvq_res_write_skip(FILE *f, const char *id, const char *reason);

/* Output sizes of a CERT case (cshape): code bytes and metadata entries of
 * its operation (keys or values), blocks nb. */
uint64_t kvq_vcase_cert_code_bytes(const kvq_vcase *c);
uint64_t kvq_vcase_cert_meta_count(const kvq_vcase *c);

/* Generate the CERT vectors of a level set [VEC-CERT-07] (gen.c); same
 * contract as kvq_gen_kivi (conf.h). */
kvq_status kvq_gen_cert(kvq_vfile *vf, const char *levels, uint64_t seed, uint32_t shard_i,
                        uint32_t shard_n, char *err, size_t errlen);

/* Allocate the arrays of a case for its shape (status OK parts included). */
kvq_status kvq_vcase_alloc(kvq_vcase *c);
void kvq_vcase_free(kvq_vcase *c);
void kvq_vfile_free(kvq_vfile *vf);
void kvq_rcase_free(kvq_rcase *r);
void kvq_rfile_free(kvq_rfile *rf);

/* Names used in the files. */
const char *kvq_level_name(uint32_t level);
const char *kvq_grouping_name(uint32_t grouping);
const char *kvq_meta_name(uint32_t meta);
const char *kvq_op_name(uint32_t op);

#endif /* KVQ_VECIO_H */
