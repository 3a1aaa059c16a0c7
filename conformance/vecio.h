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

/* Operation of a case. */
#define KVQ_OP_KIVI_QUANT 0u

/* One KIVI quantization case: inputs and the exact path's expected outputs. */
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
} kvq_vcase;

typedef struct kvq_vfile {
    uint32_t version;
    char family[32];        /* "kivi" */
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
    float *scale, *zero, *deq;
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

#endif /* KVQ_VECIO_H */
